"""Exercises of notebook 05 (`05_shard_map`): the named-axis ideas with `jax.shard_map`.

Every answer is a *global* function that takes its mesh as an argument, e.g.
`sharded_scaled_sum(x, mesh)`. The checks build meshes with `jax.make_mesh`
(Explicit axis types, the default on this JAX) over the first k devices and
run each answer under `jax.jit` with the mesh static, so that a `shard_map`
written without `jit` is still compiled once instead of run op by op.

The exercises ask for what the notebook has not shown verbatim:

1. `sharded_scaled_sum(x, mesh)`: notebook 02's `scaled_sum` per column of a matrix whose rows
   are split over DEVICES (padded with zero rows when they do not divide by the devices): a block reduced
   along one axis only, and a replicated vector result.
2. `replica_totals(x, mesh)`: each row's total, on a 2-D mesh: a local sum over a block's columns, then a
   psum over the *other* axis than section 3's, and the out_specs of a result of lower rank.
3. `dp_train_step(params, batch, mesh)`: one SGD step on a batch whose examples carry
   weights (`batch['weight']`; 0 marks padding, so the devices hold unequal numbers
   of real examples). The step is the weighted mean over *unequal* shards, written
   per device: each device's sums, combined by a psum over DATA_PARALLEL. A plain
   `pmean` of the local losses or gradients weighs every device equally and is
   wrong; gathering the whole batch onto every device (`all_gather`) computes the
   right numbers but is not data parallelism, and is refused (visible check and
   the hidden structure case, `only_collectives`).
4. `jit_train_step(params, batch, mesh)`: the same weighted step as one global
   function under `jax.jit` on sharded inputs: no `shard_map`, no collective
   written; the compiler inserts the all-reduce.
5. `weighted_total_shard_map(w, x, mesh)`: migrate a `pmap` that maps over axis 1 on the way in and on the
   way out (`out_axes=(None, 1)`: the total once, the weighted columns stacked along axis 1)
   (`in_axes=(None, 1)`), a translation the notebook's table does not spell out.

Expected values come from NumPy and from the course's reference model,
`namedaxes.model` (the weighted step is `model.sgd_step_np` on the batch with
each example repeated `weight` times: the visible checks use whole-number
weights), never from a model restated here.

Grading contract: `observe` records no values; it exports each answer with its
mesh fixed (`_bound`) on abstract inputs for meshes of 8, 4 and 2 devices; the
clean grader draws the inputs (uniform in [0.25, 4) for the weighted steps, so no
device's weights sum to zero), compares outputs with the reference program's,
and reads the communication from the optimized HLO. `dp_train_step` adds a
structure case (`values=False, only_collectives=True`): the reference's psum
(all-reduce) over DATA_PARALLEL and no other collective.

Student-facing strings: every message of this module's checks is a template in
the `TEXT` table below (named `{fields}`, whole sentences), and each exercise's
hints are full strings in its `Exercise(...)`; the logic only picks and fills
templates. The shared core (`namedaxes.checking`) words "not written yet",
unbound axis names and errors in the student's own code.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from namedaxes import DATA_PARALLEL, DATA_SHARDS, DEVICES, MODEL_REPLICAS, model
from namedaxes.checking import TEXT as checking_text  # the list separator of the language
from namedaxes.checking import (
    examined,
    exercises_for,
    expect_array,
    expect_communication,
    expect_regions,
    explained,
    fail,
    progress_of,
    same_values,
    unbound_axis_name,
)
from namedaxes.grading import Case, programs, spec
from namedaxes.i18n import Messages
from namedaxes.judging import region_takes
from namedaxes.meshes import grid_mesh, line_mesh
from namedaxes.meshes import placed as _placed
from namedaxes.meshes import with_mesh as _bound

__all__ = [
    "sharded_scaled_sum",
    "replica_totals",
    "dp_train_step",
    "jit_train_step",
    "weighted_total_shard_map",
    "line_mesh",
    "grid_mesh",
    "loss_fn",
    "sgd_step",
    "weighted_total",
    "LEARNING_RATE",
    "TEXT",
    "progress",
]
exercise = exercises_for(__name__)  # this notebook's exercises: exercise(name, check, hints=..., observe=...)
progress = progress_of(__name__)  # q.progress(): which exercises of the notebook pass

LEARNING_RATE = model.LEARNING_RATE  # the course's reference model: namedaxes.model
# Primitives that name an axis without moving data between devices.
# Collectives that reduce (what the weighted step's sums need); anything else moves whole blocks.
# what an all-reduce is called once compiled (`namedaxes.judging.describe_collective`): a pmean is a psum there
_COMPILED_REDUCTIONS = {"psum", "pmax", "pmin", "pprod", "pand", "por"}

# ---------------------------------------------------------------- every student-facing string
TEXT = {
    # crashes, any exercise
    "empty_assertion": (
        "`{name}` stopped with an empty AssertionError from inside JAX. On this JAX that is what a "
        "collective (`lax.psum`, `lax.pmean`, ...) inside `jax.shard_map` raises when its axis name is "
        "not an axis of the mesh, e.g. a typo such as 'device'. Use the course's constants (`DEVICES`, "
        "`DATA_SHARDS`, `MODEL_REPLICAS`, `DATA_PARALLEL`).{axes}"
    ),
    "mesh_axes": " This mesh has the axes {axes}.",
    "unbound": (
        "`{name}` calls a collective over '{axis}' where no mesh axis of that name is bound (JAX says: "
        '"{first}"). Collectives work inside the function you give `jax.shard_map`, over the axis '
        "names of its `mesh`: put the `lax.psum`/`lax.pmean` in that per-device function, and use the "
        "course's constants for the names.{axes}"
    ),
    "set_mesh_in_jit": (
        "`{name}` uses `jax.set_mesh`, which only works outside `jax.jit`, and the check runs your "
        "function under `jax.jit`. Place the inputs with `jax.device_put(x, NamedSharding(mesh, P(...)))` "
        "and pass `mesh=mesh` to `jax.shard_map` instead."
    ),
    "set_mesh_in_jit_no_shard_map": (
        "`{name}` uses `jax.set_mesh`, which only works outside `jax.jit`, and the check runs your "
        "function under `jax.jit`. Place the inputs with `jax.device_put(x, NamedSharding(mesh, P(...)))` "
        "(or `jax.reshard(x, NamedSharding(mesh, P(...)))`), then call the jitted step on them: no "
        "`set_mesh` and no `shard_map` is needed."
    ),
    "spec_without_mesh": (
        '`{name}` failed with JAX\'s error "{first}": a bare `P(...)` only means something under '
        "`jax.set_mesh`, which is not available under `jax.jit`. Give `jax.device_put` or `jax.reshard` "
        "a `NamedSharding(mesh, P(...))` built on the `mesh` argument."
    ),
    "mixed_devices": (
        '`{name}` failed with JAX\'s error "{first}": an input that lives on one device met the mesh '
        "inside `jax.jit`. Place every input on the `mesh` argument with "
        "`jax.device_put(x, NamedSharding(mesh, P(...)))` before the computation uses it."
    ),
    "other_mesh": (
        "`{name}` ran on {n} devices {where}, but the `mesh` argument has {k}: build every `NamedSharding` "
        "(and `jax.shard_map`'s `mesh=`) on the `mesh` argument the check passes, not on a mesh from another cell."
    ),
    "spec_mismatch": (
        '`{name}` failed with JAX\'s error "{first}". The mesh from `jax.make_mesh` has Explicit axes, '
        "so `shard_map` checks that each input already has the sharding your `in_specs` names. Place "
        "the inputs first, e.g. `jax.device_put(x, NamedSharding(mesh, P(...)))` with the same spec as "
        "in_specs."
    ),
    "varying_output": (
        "`{name}` failed with JAX's error \"{first}\": an output's `out_specs` says it is the same on "
        "every device along some mesh axis, but JAX's type of the value says it still varies along "
        "that axis. In JAX's types only a reducing collective over that axis (`lax.psum`, `lax.pmean`, "
        "`lax.pmax`, ...) makes a value the same on every device; a value computed from the device's own "
        "block, or from an `all_gather` or a `ppermute`, still varies. Reduce over that axis, or name "
        "the axis in the output's `out_specs`."
    ),
    "not_divisible": (
        '`{name}` failed with JAX\'s error "{first}": an array dimension cannot be cut into that many '
        "equal blocks. Split over the `mesh` argument the check passes (it has 2, 4 or 8 devices), not "
        "over a mesh from another cell, and split only the dimension the exercise says. A dimension whose "
        "length is no multiple of the devices is padded first, with values that change nothing (zero rows "
        "for a sum: `jnp.pad`).{axes}"
    ),
    "out_specs_too_long": (
        '`{name}` failed with JAX\'s error "{first}": an `out_specs` names more dimensions than your per-device '
        "result has. A sum along an axis (`jnp.sum(block, axis=1)`) removes that dimension: give one entry "
        "per dimension that is left, e.g. `P(DATA_SHARDS)` for a vector split over DATA_SHARDS."
    ),
    "specs": (
        '`{name}` failed with JAX\'s error "{first}". Check that `in_specs` and `out_specs` name the '
        "mesh's axes for the array dimensions that are split, and `P()` for values that are the same "
        "on every device."
    ),
    # results, any exercise
    "values": "`{name}` has the wrong values {where}: expected {want}, got {got}. {hint}",
    "seen_nothing": "no collective at all",
    "where_line": "(mesh of {k} devices, {what})",
    # 1. sharded_scaled_sum
    "scaled_x": "x of shape {shape}",
    "scaled_shape": (
        "`{name}` should return shape {want}, the total of 2 * x in each of x's {m} columns, but it "
        "returned shape {got} {where}.{hint}"
    ),
    "scaled_shape_scalar": (
        " A scalar is the total of a whole block, all columns mixed: let each device add up its rows "
        "only, so that every column keeps its own total."
    ),
    "scaled_shape_block": (
        " Shape {got} is one device's block of rows: `lax.psum` adds the blocks of all devices element "
        "by element, but the rows of each block still have to be added up."
    ),
    "scaled_shape_row_totals": (
        " Shape {got} has one number per row of a device's block: that sums along the columns. Add up "
        "the rows instead, so that one number per column is left."
    ),
    "scaled_shape_per_device": (
        " That is {k} results side by side: with `out_specs=P(DEVICES)` the devices' results are "
        "concatenated along dimension 0. After a psum every device holds the same column totals: "
        "`out_specs=P()`."
    ),
    "scaled_wrong": "`{name}` returned {got} {where}, but the column totals of 2 * x are {want}. {hint}",
    "scaled_plain_sum": "Those are the plain column totals of x: multiply by 2.0.",
    "scaled_rows_dropped": (
        "Those are the totals of the first {kept} rows only: the last {dropped} were cut off to make the rows "
        "divide evenly. Pad x with zero rows instead (`jnp.pad`): zeros change no total."
    ),
    "scaled_first_share": (
        "Those are only the first device's shares (the column totals of device 0's rows). Add the "
        "shares of all devices with `lax.psum(..., DEVICES)` inside the shard_map."
    ),
    "scaled_mean": "That is the mean of the devices' shares (`lax.pmean`): use `lax.psum` for the totals.",
    "scaled_by_hand": (
        "The result does not change when `x` does: if you wrote numbers by hand, compute them "
        "instead: the check uses several meshes and shapes."
    ),
    "scaled_other": (
        "Those are not 2.0 times the column totals of all of `x`: each device should add up 2.0 "
        "times its own rows, and `lax.psum(..., DEVICES)` adds the devices' shares."
    ),
    "scaled_why": (
        "The point is the shard_map form: each device adds up only its own rows, and "
        "`lax.psum(..., DEVICES)` inside `jax.shard_map` adds the devices' shares."
    ),
    "total": "column totals",
    # 2. replica_totals
    "replica_where": "({rows} x {cols} mesh, x of shape {shape})",
    "replica_shape": (
        "`{name}` should return shape {want} {where}: one total per row of x, all of its columns added up, "
        "with the rows split over DATA_SHARDS. It returned shape {got}.{hint}"
    ),
    "replica_shape_blocks_added": (
        " That is the {cols} column blocks added up (section 3's `psum_over` for the other axis), not yet "
        "each row's total: first add up the columns of the device's own block (`jnp.sum(block, axis=1)`), "
        "then the row partners' numbers."
    ),
    "replica_shape_copies": (
        " That is {cols} copies of the row totals side by side: after the psum every device of a row holds "
        "the same numbers, so the `out_specs` names only DATA_SHARDS: `out_specs=P(DATA_SHARDS)`."
    ),
    "replica_shape_block": (
        " Those are one data shard's rows only: the result still differs between data shards, so its "
        "out_specs must name DATA_SHARDS for dimension 0."
    ),
    "replica_shape_data_sum": " That shape is what a sum over DATA_SHARDS gives. Reduce over MODEL_REPLICAS only.",
    "replica_over_both": (
        "Those are the totals over the whole mesh: reduce over MODEL_REPLICAS only, so each data shard "
        "keeps its own rows."
    ),
    "replica_row_partners": (
        "Each device should add up its block's columns, then add its numbers to those of its row's other devices."
    ),
    "replica_pmean": (
        "Those are the row totals divided by the {k} replicas: `lax.pmean` averages the row partners' "
        "numbers, and a total adds them, `lax.psum`."
    ),
    "replica_own_block": (
        "Those are the totals of each device's own block only: add them to the row partners' with a psum "
        "over MODEL_REPLICAS."
    ),
    "replica_why": (
        "Use `jax.shard_map` and let each device add its block to its row partners' with "
        "`lax.psum(..., MODEL_REPLICAS)`."
    ),
    "replica_extra_axis": (
        "`{name}` communicates over '{axis}' too ({seen}), but the data shards never need each other's "
        "values here: reduce over MODEL_REPLICAS only."
    ),
    "values_word": "values",
    # 3./4. the weighted training steps
    "step_where": "(mesh of {k} devices, {n} examples, weights per device {weights})",
    "step_not_dict": (
        "`{name}` should return the new parameters as a dict with keys 'w' and 'b' (like `params`), but "
        "it returned {kind} {where}. `jax.tree.map` over `params` and the gradients keeps the structure."
    ),
    "step_kind_dict": "a dict with keys {keys}",
    "step_kind_type": "a `{type}`",
    "step_not_scalar": (
        "`{name}(...)['{key}']` should be a scalar like `params['{key}']`, but it has shape {shape} {where}.{hint}"
    ),
    "step_per_device": (
        " One value per device: the new parameters are the same on every device, so their `out_specs` is `P()`."
    ),
    "step_wrong": (
        "`{name}` returned w = {got_w}, b = {got_b} {where}, but one SGD step on the weighted loss of "
        "the whole batch gives w = {want_w}, b = {want_b}. {hint}"
    ),
    "step_unweighted": (
        "That is the step of the *unweighted* loss: every example counted once. The loss of the batch "
        "is the weighted mean of the squared errors, sum(weight * error²) / sum(weight): an example "
        "with weight 0 (padding) must not count at all."
    ),
    "step_devices_equal": (
        "That is the mean of the devices' own weighted-mean steps: every device counted equally, "
        "although their weights add up to different totals ({totals}). A `pmean` of the local losses "
        "or gradients is only right for equal shards. Add up each device's weighted sums across "
        "devices instead (`lax.psum` of the numerator and of the weights, then divide)."
    ),
    "step_k_times": (
        "Your update is {k} times too large: the gradients were summed over the {k} devices, not "
        "averaged. Either a `lax.psum` stands where a division belongs, or you met the shard_map trap "
        "(Pitfall 4): `params` enter with `in_specs=P()`, so `jax.grad` with respect to them already "
        "sums the devices' gradients."
    ),
    "step_k_small": (
        "Your update is {k} times too small: the devices' gradients were averaged over the {k} devices "
        "(`lax.pmean`) and divided by the total weight as well. Add them up with `lax.psum`, then divide once."
    ),
    "step_divided_by_examples": (
        "That divides the weighted sum by the number of examples ({n}, padding included), but the weighted "
        "mean divides by the sum of the weights ({total}): `lax.psum(jnp.sum(weight), DATA_PARALLEL)`."
    ),
    "step_unchanged": "The parameters did not change: subtract LEARNING_RATE * gradient from each one.",
    "step_100x": "The step is 100 times too large: the learning rate is LEARNING_RATE, 0.01.",
    "step_ascent": "The step goes the wrong way: subtract the gradient, do not add it.",
    "step_other": (
        "Compare with one plain SGD step on one device, on the weighted loss "
        "sum(weight * error²) / sum(weight) of the whole batch."
    ),
    "parameters": "parameters",
    "dp_why": (
        "Here the communication is yours to write: inside `jax.shard_map`, each device computes its own "
        "sums and a `lax.psum` over DATA_PARALLEL combines them. (Exercise 4 is where the compiler does "
        "it for you.)"
    ),
    "dp_gathers": (
        "`{name}` returns the right parameters, but it moves whole blocks between devices ({seen}): "
        "every device ends up with the whole batch, which is one-device training repeated on every "
        "device, not data parallelism. Keep each device on its own examples and combine only their "
        "sums (a few numbers) with `lax.psum` over DATA_PARALLEL."
    ),
    "jit_writes_collectives": (
        "`{name}` returns the right parameters, but it writes its own collectives ({seen}). In this "
        "exercise the compiler does the communication: no `shard_map` and no `lax.psum`/`lax.pmean`, "
        "just `jax.jit` of a one-device step on the weighted loss, applied to sharded arrays."
    ),
    "jit_no_all_reduce": (
        "`{name}` returns the right parameters, but its compiled program has no all-reduce: everything "
        "ran without communication, so the batch was not split over the mesh. Place it with "
        "`jax.device_put(batch, NamedSharding(mesh, P(DATA_PARALLEL)))` (and `params` with `P()`) "
        "before calling the jitted step."
    ),
    # 5. weighted_total_shard_map
    "migration_where": "(mesh of {k} devices, w of shape {w_shape}, x of shape {x_shape})",
    "migration_shape": (
        "`{name}` should return what the pmap version returns, shape {want} {where}, but it returned shape {got}.{hint}"
    ),
    "migration_block_axis": (
        " The mapped axis is still there: pmap removed it, so `weighted_total` saw columns of shape "
        "(d,); shard_map keeps it, so each device's block of x has shape (d, 1), and `w * x_block` "
        "broadcasts (d,) against (d, 1) into (d, d). Take the column (`x_block[:, 0]`) before calling "
        "`weighted_total`."
    ),
    "migration_pair": (
        "`{name}` should return what the pmap version returns {where}: a pair, the total (`out_axes` None) and "
        "the weighted columns (`out_axes` 1), but it returned {kind}."
    ),
    "migration_kind": "a `{type}` of length {n}",
    "migration_columns_dim0": (
        " Those columns are stacked along dimension 0 (`out_specs` P(DEVICES)): `out_axes=1` stacks them "
        "along dimension 1, `P(None, DEVICES)`, each device handing back its column as shape (d, 1) "
        "(`col[:, None]`)."
    ),
    "migration_per_device": (
        " One result per device: that is what `out_specs` naming DEVICES gives. `out_axes=None` "
        "translates to `out_specs=P()`."
    ),
    "migration_wrong": (
        "`{name}` has the wrong values {where}: the pmap version gives {want}, yours gives {got}. {hint}"
    ),
    "migration_mean": "That is the mean over devices: keep `weighted_total`'s `lax.psum`.",
    "migration_first": "That is only device 0's term: the psum over DEVICES is missing.",
    "migration_why": "Keep `weighted_total` (with its `lax.psum`) as the per-device function of `jax.shard_map`.",
    # the grader's judging steps, on the visible inputs (`judge_region`)
    "not_own_shard": (
        "`{name}` returns the right {what}, but no `jax.shard_map` over {axes} in it gives each device only "
        "its own shard of the inputs ({want}); read from the exported program, it has {got}. The grader runs "
        "your program with each device holding only its shard: keep the inputs split as they are placed "
        "(the same `in_specs`), and do not gather them or make them replicated first."
    ),
    "layout_whole": "the whole value on every device",
    "layout_split": "split over {axes} along dimension {dim}",
    "layout_input": "input {n} {layout}",
    "regions_got": "a `jax.shard_map` over {axes} that takes {inputs}",
    "regions_none": "no `jax.shard_map` at all",
    "region_dead": (
        "`{name}` returns the right {what}, but the `jax.shard_map` over {axes} in it that gives each device "
        "its own shard ({want}) does not reach the result: changing what it returns leaves the result as it "
        "is (read from the exported program, the way the grader reads it): what it returns is discarded "
        "(multiplied by zero, say) and the result is computed elsewhere. Compute the {what} from what the "
        "`jax.shard_map` returns."
    ),
    "not_reaching": (
        "`{name}` returns the right {what}, but no collective over '{axis}' reaches its result (read from the "
        "compiled program, the way the grader reads it: {seen}). Communication that is discarded or "
        "multiplied by zero counts for nothing, and a total computed outside the per-device function needs "
        "no collective of yours. {why}"
    ),
    "reaching_seen": "{ops} reach the result",
    "reaching_none": "no collective reaches the result",
}
TEXT = Messages(TEXT)  # the table above, each lookup in the kernel's language


_say = TEXT.say  # a template of this module's TEXT, in the kernel's language, filled in


def _fmt(value) -> str:
    return np.array2string(np.asarray(value), precision=4, threshold=16)


def _num(value) -> str:
    return f"{float(value):.6g}"


def _layout_words(layout) -> str:
    parts = [
        _say("layout_split", axes=" x ".join(repr(a) for a in axes), dim=d) for d, axes in enumerate(layout) if axes
    ]
    return checking_text["list_sep"].join(parts) if parts else _say("layout_whole")


def _inputs_words(ins) -> str:
    return checking_text["list_sep"].join(
        _say("layout_input", n=n + 1, layout=_layout_words(layout)) for n, layout in enumerate(ins)
    )


def _axes_words(axes) -> str:
    return " x ".join(repr(a) for a in axes)


def expect_own_shard(name: str, got, region: tuple, what: str) -> None:
    """The grader's layout step on examined facts (`got`): a live per-device region over `region[0]` that
    takes each input split over at least the mesh axes of `region[1]` (the reference's `in_specs`)."""
    axes, ins = region
    if got.takes(axes, ins):
        return
    if region_takes(got.dead_regions, axes, ins):
        fail(_say("region_dead", name=name, what=what, axes=_axes_words(axes), want=_inputs_words(ins)))
    seen = checking_text["list_sep"].join(
        _say("regions_got", axes=_axes_words(a), inputs=_inputs_words(i)) for a, i, _ in got.regions
    ) or _say("regions_none")
    fail(_say("not_own_shard", name=name, what=what, axes=_axes_words(axes), want=_inputs_words(ins), got=seen))


def judge_region(
    name: str,
    fn: Callable,
    mesh,
    *args,
    region: tuple,
    what: str,
    axis: str,
    why: str,
    shard_map_allowed: bool = True,
    context=None,
    facts=None,
):
    """The grader's judging steps (`namedaxes.judging.examine`, as `autograder.judge.programs.Judge` takes them)
    on the visible inputs: `fn(*args, mesh)` exported and compiled; a per-device region over `region[0]`
    must take each input split over at least the mesh axes of `region[1]` (the reference's `in_specs`),
    and some collective over `axis` must reach the result. Returns what was read (`Examined`).
    `context`: where the answer is traced (notebook 06: as a process of a cluster), else `_explained`;
    `facts`: what `examined` already read of this very program (then nothing is compiled again).
    Public: the collectives and multi_process exercises judge their regions with it too."""
    got = facts
    if got is None:
        with context if context is not None else _explained(name, mesh, shard_map_allowed=shard_map_allowed):
            got = examined(lambda *a: fn(*a, mesh), *args)
    expect_own_shard(name, got, region, what)
    reaching = [c for c in got.matters if c.endswith(f" over '{axis}'")]
    if not reaching:
        seen = (
            _say("reaching_seen", ops=checking_text["list_sep"].join(got.matters))
            if got.matters
            else _say("reaching_none")
        )
        fail(_say("not_reaching", name=name, what=what, axis=axis, seen=seen, why=why))
    return got


# ---------------------------------------------------------------- meshes and the reference model
loss_fn = model.loss  # mean squared error of w * x + b: the reference model of notebook 04
sgd_step = model.sgd_step  # one plain SGD step on one device


def weighted_total(w, x_col):
    """The per-device function of the migration exercise (pmap form: `in_axes=(None, 1)`,
    `out_axes=(None, 1)`): the total of the weighted columns, and this device's weighted column."""
    weighted = w * x_col
    return jax.lax.psum(weighted, axis_name=DEVICES), weighted


@functools.cache
def _weighted_total_pmap():
    return jax.pmap(weighted_total, axis_name=DEVICES, in_axes=(None, 1), out_axes=(None, 1))


# ---------------------------------------------------------------- running answers
def _shard_map_rules(name: str, mesh=None, *, shard_map_allowed: bool = True):
    """This notebook's own translations (shard_map, meshes, specs); `checking.translate` does the rest."""
    axes = _say("mesh_axes", axes=tuple(mesh.axis_names)) if mesh is not None else ""

    def rule(err: BaseException) -> str | None:
        if type(err) is AssertionError and not str(err):
            return _say("empty_assertion", name=name, axes=axes)
        axis = unbound_axis_name(err)
        if axis is not None:
            return _say("unbound", name=name, axis=axis, first=str(err).splitlines()[0], axes=axes)
        if isinstance(err, ValueError):
            return _value_error_message(name, str(err), axes, shard_map_allowed)
        return None

    return (rule,)


def _explained(name: str, mesh=None, *, shard_map_allowed: bool = True):
    """Run an answer; crashes become readable messages (`checking.explained` plus this notebook's rules)."""
    return explained(name, rules=_shard_map_rules(name, mesh, shard_map_allowed=shard_map_allowed))


def _value_error_message(name: str, text: str, axes: str, shard_map_allowed: bool) -> str | None:
    """The message for a shard_map/mesh `ValueError` of `name`, or None for the core to translate."""
    first = (text.splitlines()[0] if text else "ValueError")[:300]
    if "set_mesh" in text and "can only be used outside" in text:
        return _say("set_mesh_in_jit" if shard_map_allowed else "set_mesh_in_jit_no_shard_map", name=name)
    if "PartitionSpec when you are not under a mesh context" in text:
        return _say("spec_without_mesh", name=name, first=first)
    if "Length of device assignment" in text and "size of the mesh" in text:
        return _say("mixed_devices", name=name, first=first)
    if "does not match the specs of the input" in text:
        return _say("spec_mismatch", name=name, first=first)
    if "out_specs" in text and ("replicat" in text or "varying" in text):
        return _say("varying_output", name=name, first=first[:200])
    if "evenly divide" in text:
        return _say("not_divisible", name=name, first=first, axes=axes)
    if "out_specs entry which is too long" in text:
        return _say("out_specs_too_long", name=name, first=first)
    if "out_specs" in text or "in_specs" in text:
        return _say("specs", name=name, first=first)
    return None


@functools.cache
def _jitted(fn: Callable, n_args: int):
    """`fn` compiled with its last argument (the mesh) static: cached per answer."""
    return jax.jit(fn, static_argnums=(n_args - 1,))


def _compiled(fn: Callable, n_args: int):
    try:
        return _jitted(fn, n_args)
    except TypeError:  # an unhashable callable: compile it without the cache
        return jax.jit(fn, static_argnums=(n_args - 1,))


def _call(fn: Callable, *args):
    """Run the answer `fn(*args, mesh)` compiled (the mesh is the last argument)."""
    return _compiled(fn, len(args))(*args)


def _f32(values) -> jax.Array:
    return jnp.asarray(values, jnp.float32)


# ---------------------------------------------------------------- 1. sharded_scaled_sum
# Visible inputs (rows split over DEVICES: blocks of 2, 2 and 3 rows on 8, 4 and 2 devices; the
# column counts differ from the block heights, so a sum over the wrong axis shows in the shape).
# The hidden observations use random values of the same shapes, so the compiled answers are reused.
_SCALED_SUM_CASES = [  # the rows of the last two do not divide by the devices: padded with zero rows first
    (8, _f32(np.arange(48).reshape(16, 3))),
    (4, _f32(np.arange(50).reshape(10, 5) * 0.5 - 9.0)),
    (2, _f32([[1.0, -2.0], [3.0, 0.5], [4.0, 1.5], [-1.0, 2.0], [0.25, 0.0], [2.0, -3.0], [1.5, 5.0]])),
]


def _check_sharded_scaled_sum(fn: Callable) -> None:
    name = "sharded_scaled_sum"
    for k, x in _SCALED_SUM_CASES:
        mesh = line_mesh(k)
        rows, m = x.shape
        where = _say("where_line", k=k, what=_say("scaled_x", shape=(rows, m)))
        with _explained(name, mesh):
            out = _call(fn, x, mesh)
        expect_array(name, out, dtype=jnp.float32)
        if 1 < len(out.sharding.device_set) != k:  # padded rows divide by another mesh's devices too
            fail(_say("other_mesh", name=name, n=len(out.sharding.device_set), k=k, where=where))
        block = -(-rows // k)  # rows per device, x padded with zero rows to a multiple of k
        xs = np.asarray(x, np.float64)
        want = 2.0 * xs.sum(axis=0)
        got_shape = tuple(out.shape)
        if got_shape != (m,):
            hint = ""
            if got_shape == ():
                hint = _say("scaled_shape_scalar")
            elif got_shape == (block, m):
                hint = _say("scaled_shape_block", got=got_shape)
            elif got_shape == (block,):
                hint = _say("scaled_shape_row_totals", got=got_shape)
            elif got_shape in ((k * m,), (k, m)):
                hint = _say("scaled_shape_per_device", k=k)
            fail(_say("scaled_shape", name=name, want=(m,), m=m, got=got_shape, where=where, hint=hint))
        got = np.asarray(out, np.float64)
        if not same_values(got, want, 1e-4, dtype=float):
            first = 2.0 * xs[:block].sum(axis=0)
            kept = rows - rows % k
            if same_values(got, want / 2, 1e-4, dtype=float):
                hint = _say("scaled_plain_sum")
            elif kept < rows and same_values(got, 2.0 * xs[:kept].sum(axis=0), 1e-4, dtype=float):
                hint = _say("scaled_rows_dropped", kept=kept, dropped=rows - kept)
            elif same_values(got, first, 1e-4, dtype=float):
                hint = _say("scaled_first_share")
            elif same_values(got, want / k, 1e-4, dtype=float):
                hint = _say("scaled_mean")
            else:
                with _explained(name, mesh):
                    moved = np.asarray(_call(fn, _f32(np.asarray(x) + 1.0), mesh), np.float64)
                # "by hand" only when the result does not follow x at all
                hint = _say("scaled_by_hand") if same_values(moved, got, 1e-4, dtype=float) else _say("scaled_other")
            fail(_say("scaled_wrong", name=name, got=_fmt(got), where=where, want=_fmt(want), hint=hint))
    k, x = _SCALED_SUM_CASES[-1]  # the smallest mesh: the same verdict, the cheapest compiles
    judge_region(
        name,
        fn,
        line_mesh(k),
        x,
        region=((DEVICES,), (((DEVICES,),),)),
        what=_say("total"),
        axis=DEVICES,
        why=_say("scaled_why"),
    )


def _observe_sharded_scaled_sum(fn: Callable) -> dict:
    """Exported programs of `fn(x, mesh)` on 8, 4 and 2 devices (the grader draws x)."""
    return programs(
        {
            f"out_k{k}_{x.shape[0]}x{x.shape[1]}": Case(_bound(fn, line_mesh(k)), spec(x.shape, jnp.float32))
            for k, x in _SCALED_SUM_CASES
        }
    )


sharded_scaled_sum = exercise(
    "sharded_scaled_sum",
    _check_sharded_scaled_sum,
    hints=[
        "Before any code: when the rows of x are split over DEVICES, what does one device's block look "
        "like, which part of the column totals can that device compute alone, and what does it need "
        "from the others?",
        "A device holds some rows of every column, so it can add up its own rows column by column; "
        "adding those partial totals of all devices is section 2's collective. The result is the same "
        "on every device, whatever its shape: which `out_specs` promises that?",
        "Per block: `2.0 * jnp.sum(block, axis=0)`, then `lax.psum` over DEVICES, with "
        "`in_specs=P(DEVICES)` and `out_specs=P()`. When the rows do not divide by the devices, first add "
        "zero rows: `jnp.pad(x, ((0, -x.shape[0] % k), (0, 0)))`. Build the `NamedSharding` for "
        "`jax.device_put` on the `mesh` argument, not on the notebook's `mesh` (Pitfall 1).",
    ],
    observe=_observe_sharded_scaled_sum,
)


# ---------------------------------------------------------------- 2. replica_totals
def _replica_totals_reference(x: np.ndarray) -> np.ndarray:
    return x.sum(axis=1)


# Mesh shapes and x shapes of the visible checks; the hidden observations reuse the shapes.
_REPLICA_CASES = [
    ((2, 4), np.arange(32, dtype=np.float32).reshape(4, 8)),
    ((4, 2), np.arange(8, dtype=np.float32).reshape(4, 2) - 3.0),
    ((2, 2), np.asarray([[1.0, 2.0, 10.0, 20.0], [3.0, 4.0, 30.0, 40.0]], np.float32)),
]


def _replica_shape_hint(got: tuple, x_shape: tuple, mesh_shape: tuple) -> str:
    """What a result of the wrong shape is, for the shapes the typical mistakes give."""
    (rows, cols), (n_data, n_rep) = x_shape, mesh_shape
    known = {
        (rows, cols // n_rep): "replica_shape_blocks_added",
        (rows * n_rep,): "replica_shape_copies",
        (rows, n_rep): "replica_shape_copies",
        (rows // n_data,): "replica_shape_block",
        (rows // n_data, cols): "replica_shape_data_sum",
    }
    return _say(known[got], cols=n_rep) if got in known else ""


def _replica_hint(got: np.ndarray, x_np: np.ndarray, mesh_shape: tuple) -> str:
    """What wrong row totals are: those of each device's own block, or the totals over the whole mesh."""
    n_data, n_rep = mesh_shape
    x64 = x_np.astype(np.float64)
    rows = x64.shape[0]
    own = x64[:, : x64.shape[1] // n_rep].sum(axis=1)  # the first replica's block, as `out_specs` keeps it
    over_both = np.tile(x64.sum(axis=1).reshape(n_data, rows // n_data).sum(axis=0), n_data)
    if same_values(got, x64.sum(axis=1) / n_rep, 1e-4, dtype=float):
        return _say("replica_pmean", k=n_rep)
    if same_values(got, own, 1e-4, dtype=float):
        return _say("replica_own_block")
    if same_values(got, over_both, 1e-4, dtype=float):
        return _say("replica_over_both")
    return _say("replica_row_partners")


def _check_replica_totals(fn: Callable) -> None:
    name = "replica_totals"
    for shape, x_np in _REPLICA_CASES:
        mesh = grid_mesh(shape)
        x = _placed(_f32(x_np), mesh, P(DATA_SHARDS, MODEL_REPLICAS))
        n_data, n_rep = shape
        where = _say("replica_where", rows=n_data, cols=n_rep, shape=x_np.shape)
        with _explained(name, mesh):
            out = _call(fn, x, mesh)
        expect_array(name, out, dtype=jnp.float32)
        want = _replica_totals_reference(x_np.astype(np.float64))
        got_shape = tuple(out.shape)
        if got_shape != want.shape:
            hint = _replica_shape_hint(got_shape, x_np.shape, shape)
            fail(_say("replica_shape", name=name, want=want.shape, where=where, got=got_shape, hint=hint))
        got = np.asarray(out, np.float64)
        if not same_values(got, want, 1e-4, dtype=float):
            fail(
                _say(
                    "values",
                    name=name,
                    where=where,
                    want=_fmt(want),
                    got=_fmt(got),
                    hint=_replica_hint(got, x_np, shape),
                )
            )
    shape, x_np = _REPLICA_CASES[-1]  # the smallest mesh: the same verdict, the cheapest compiles
    mesh = grid_mesh(shape)
    x = _placed(_f32(x_np), mesh, P(DATA_SHARDS, MODEL_REPLICAS))
    got = judge_region(
        name,
        fn,
        mesh,
        x,
        region=(tuple(sorted((DATA_SHARDS, MODEL_REPLICAS))), (((DATA_SHARDS,), (MODEL_REPLICAS,)),)),
        what=_say("values_word"),
        axis=MODEL_REPLICAS,
        why=_say("replica_why"),
    )
    extra = [c for c in got.present if c.endswith(f" over '{DATA_SHARDS}'")]
    if extra:  # a surplus collective counts against, used or not (as the grader counts it)
        fail(_say("replica_extra_axis", name=name, axis=DATA_SHARDS, seen=checking_text["list_sep"].join(extra)))


def _observe_replica_totals(fn: Callable) -> dict:
    """Exported programs of `fn(x, mesh)`, x placed P(DATA_SHARDS, MODEL_REPLICAS) on three meshes.

    The grader requires the reference's communication (a psum over MODEL_REPLICAS) and nothing over
    DATA_SHARDS (`only_axes`): the rows stay on their data shard."""
    cases = {}
    for shape, x_np in _REPLICA_CASES:
        mesh = grid_mesh(shape)
        placed = spec(x_np.shape, jnp.float32, sharding=NamedSharding(mesh, P(DATA_SHARDS, MODEL_REPLICAS)))
        cases[f"out_{shape[0]}x{shape[1]}_{x_np.shape[0]}x{x_np.shape[1]}"] = Case(
            _bound(fn, mesh), placed, only_axes=True
        )
    return programs(cases)


replica_totals = exercise(
    "replica_totals",
    _check_replica_totals,
    hints=[
        "x arrives already placed with P(DATA_SHARDS, MODEL_REPLICAS): inside "
        "`jax.shard_map(..., in_specs=P(DATA_SHARDS, MODEL_REPLICAS))` each device sees one block.",
        "A row's total needs two sums: over the columns a device holds (local work, no communication), "
        "then over the devices of its mesh row, which hold the row's other columns (a `psum` over "
        "MODEL_REPLICAS).",
        "`lax.psum(jnp.sum(block, axis=1), MODEL_REPLICAS)`: one number per row the device holds. The result "
        "has one dimension and still differs between data shards, but no longer between replicas: "
        "`out_specs=P(DATA_SHARDS)`. `x` is already placed, so no `device_put`.",
    ],
    observe=_observe_replica_totals,
)


# ---------------------------------------------------------------- 3./4. the weighted training steps
def _padded_weights(k: int, per: int) -> np.ndarray:
    """Device i holds `per - i` real examples (weight 1) and `i` padding examples (weight 0)."""
    return np.concatenate([np.r_[np.ones(per - i), np.zeros(i)] for i in range(k)])


def _visible_training_cases():
    """(devices, params, batch): padding on 8 devices; whole-number weights on 4."""
    x = np.linspace(-1.0, 1.0, 64)
    padded = (
        {"w": _f32(1.0), "b": _f32(0.0)},
        {"x": _f32(x), "y": _f32(2.0 * x + 0.5), "weight": _f32(_padded_weights(8, 8))},
    )
    r = np.random.RandomState(5)
    x4 = r.uniform(-2.0, 2.0, size=12)
    counts = np.array([3, 1, 2, 1, 1, 3, 2, 2, 1, 3, 3, 1], float)
    other = ({"w": _f32(-0.5), "b": _f32(0.25)}, {"x": _f32(x4), "y": _f32(3.0 * x4 - 1.0), "weight": _f32(counts)})
    return [(8, *padded), (4, *other)]


def _repeated(batch, weight) -> dict:
    """The batch with each example repeated `weight` times (whole-number weights): the weighted loss
    of `batch` is the plain loss of this batch, so the reference model gives the expected step."""
    counts = np.asarray(weight).astype(int)
    return {key: np.repeat(np.asarray(batch[key], float), counts) for key in ("x", "y")}


def _floats(tree) -> dict:
    return {key: float(np.asarray(tree[key])) for key in ("w", "b")}


def _expect_params(name: str, out, where: str) -> None:
    if not isinstance(out, dict) or set(out) != {"w", "b"}:
        kind = (
            _say("step_kind_dict", keys=sorted(map(str, out)))
            if isinstance(out, dict)
            else _say("step_kind_type", type=type(out).__name__)
        )
        fail(_say("step_not_dict", name=name, kind=kind, where=where))
    for key in ("w", "b"):
        value = out[key]
        expect_array(f"{name}(...)['{key}']", value, dtype=jnp.float32)
        if tuple(value.shape) != ():
            hint = _say("step_per_device") if value.ndim == 1 else ""
            fail(_say("step_not_scalar", name=name, key=key, shape=tuple(value.shape), where=where, hint=hint))


def _diagnose_step(params: dict, batch, k: int, got: dict, ref: dict) -> str:
    old = _floats(params)
    weight = np.asarray(batch["weight"], float)

    def same_step(other: dict, factor: float = 1.0) -> bool:
        return all(same_values(got[key] - old[key], factor * (other[key] - old[key]), 1e-4, dtype=float) for key in old)

    unweighted = model.sgd_step_np(old, {key: np.asarray(batch[key], float) for key in ("x", "y")})
    blocks = [slice(i * len(weight) // k, (i + 1) * len(weight) // k) for i in range(k)]
    local = [
        model.gradients_np(old, _repeated({key: np.asarray(batch[key])[s] for key in ("x", "y")}, weight[s]))
        for s in blocks
    ]
    equal = {key: old[key] - LEARNING_RATE * float(np.mean([g[key] for g in local])) for key in old}
    if same_step(unweighted):
        return _say("step_unweighted")
    if same_step(equal):
        return _say("step_devices_equal", totals=_fmt([weight[s].sum() for s in blocks]))
    if same_step(ref, k):
        return _say("step_k_times", k=k)
    if same_step(ref, 1.0 / k):
        return _say("step_k_small", k=k)
    if same_step(ref, weight.sum() / len(weight)):
        return _say("step_divided_by_examples", n=len(weight), total=f"{weight.sum():g}")
    if all(same_values(got[key], old[key], 1e-4, dtype=float) for key in old):
        return _say("step_unchanged")
    if same_step(ref, 100.0):
        return _say("step_100x")
    if same_step(ref, -1.0):
        return _say("step_ascent")
    return _say("step_other")


def _check_weighted_step(name: str, fn: Callable, k: int, params, batch, *, shard_map_allowed: bool) -> None:
    mesh = line_mesh(k, DATA_PARALLEL)
    weight = np.asarray(batch["weight"])
    totals = [float(t) for t in weight.reshape(k, -1).sum(axis=1)]
    where = _say("step_where", k=k, n=batch["x"].shape[0], weights=_fmt(totals))
    with _explained(name, mesh, shard_map_allowed=shard_map_allowed):
        out = _call(fn, params, batch, mesh)
    _expect_params(name, out, where)
    got = _floats(out)
    ref = model.sgd_step_np(_floats(params), _repeated(batch, weight))
    if all(same_values(got[key], ref[key], 1e-4, dtype=float) for key in ref):
        return
    fail(
        _say(
            "step_wrong",
            name=name,
            got_w=_num(got["w"]),
            got_b=_num(got["b"]),
            where=where,
            want_w=_num(ref["w"]),
            want_b=_num(ref["b"]),
            hint=_diagnose_step(params, batch, k, got, ref),
        )
    )


def _training_probe():
    k, params, batch = _visible_training_cases()[0]
    return line_mesh(k, DATA_PARALLEL), params, batch


def _check_dp_train_step(fn: Callable) -> None:
    name = "dp_train_step"
    for k, params, batch in _visible_training_cases():
        _check_weighted_step(name, fn, k, params, batch, shard_map_allowed=True)
    mesh, params, batch = _training_probe()
    with _explained(name, mesh):
        facts = examined(lambda p, b: fn(p, b, mesh), params, batch)
    # the grader's steps: the reference's region (params whole, every batch leaf split), no collective the
    # reference does not perform (present is enough: a surplus counts against), a psum that reaches the result
    split = ((DATA_PARALLEL,),)
    expect_regions(name, facts, (((DATA_PARALLEL,), ((), (), split, split, split)),), hint=_say("dp_why"))
    moves = [d for d in facts.present if d.split(" over ")[0] not in _COMPILED_REDUCTIONS]
    if moves:
        fail(_say("dp_gathers", name=name, seen=checking_text["list_sep"].join(moves)))
    expect_communication(name, facts, DATA_PARALLEL, "psum", hint=_say("dp_why"))


# (devices, examples) of the hidden training observations: the visible shapes, and 2 devices
_OBSERVED_TRAINING = ((8, 64), (4, 12), (2, 10))
# Every input of a weighted-step case is drawn from this: positive weights, so no total is 0.
_TRAINING_DRAW = {"kind": "uniform", "low": 0.25, "high": 4.0}


def _training_args(n: int):
    params = {"w": spec((), jnp.float32), "b": spec((), jnp.float32)}
    batch = {key: spec((n,), jnp.float32) for key in ("x", "y", "weight")}
    return params, batch


def _observe_training(fn: Callable, *, structure: bool) -> dict:
    """Exported programs of one step `fn(params, batch, mesh)` on 8, 4 and 2 devices (the grader draws
    params and batch; the new params are compared with the reference step's). With `structure`, one
    more case grades only the communication: the reference's collectives and no other."""
    cases = {
        f"k{k}_n{n}": Case(_bound(fn, line_mesh(k, DATA_PARALLEL)), *_training_args(n), draw=_TRAINING_DRAW)
        for k, n in _OBSERVED_TRAINING
    }
    if structure:
        k, n = _OBSERVED_TRAINING[0]
        cases["structure"] = Case(
            _bound(fn, line_mesh(k, DATA_PARALLEL)),
            *_training_args(n),
            draw=_TRAINING_DRAW,
            values=False,
            only_collectives=True,
        )
    return programs(cases)


def _observe_dp_train_step(fn: Callable) -> dict:
    return _observe_training(fn, structure=True)


dp_train_step = exercise(
    "dp_train_step",
    _check_dp_train_step,
    hints=[
        "Write the weighted loss of the whole batch as a fraction, sum(weight * error²) / sum(weight). "
        "Which parts of that fraction can one device compute from its own examples alone, and how do "
        "the devices then combine those parts?",
        "Inside `jax.shard_map(..., in_specs=(P(), P(DATA_PARALLEL)), out_specs=P())`, each device adds "
        "up `weight * error ** 2` over its examples, and its weights; a `lax.psum` over DATA_PARALLEL of "
        "each gives the whole batch's numerator and denominator. `jax.grad` of their ratio is the "
        "full-batch gradient on every device (that loss is the same everywhere, so Pitfall 4's factor "
        "does not appear).",
        "A `lax.pmean` of the devices' own weighted means would count a device with 1 real example as "
        "much as one with 8. Place `params` with `P()` and the whole `batch` dict with "
        "`P(DATA_PARALLEL)` first, and update with `sgd_update`.",
    ],
    observe=_observe_dp_train_step,
)


def _check_jit_train_step(fn: Callable) -> None:
    name = "jit_train_step"
    for k, params, batch in _visible_training_cases():
        _check_weighted_step(name, fn, k, params, batch, shard_map_allowed=False)
    mesh, params, batch = _training_probe()
    with _explained(name, shard_map_allowed=False):
        facts = examined(lambda p, b: fn(p, b, mesh), params, batch)
    if facts.found:  # a shard_map of its own: the grader's signature step fails it
        seen = checking_text["list_sep"].join(facts.present) or _say("seen_nothing")
        fail(_say("jit_writes_collectives", name=name, seen=seen))
    # the compiler's all-reduce: a global-view program has no collective of its own to perturb, so the
    # judge (and the grader) count what the optimized program performs (`namedaxes.judging.examine`)
    if f"psum over '{DATA_PARALLEL}'" not in facts.matters:
        fail(_say("jit_no_all_reduce", name=name))


def _observe_jit_train_step(fn: Callable) -> dict:
    """Like `dp_train_step`'s value cases; the reference program has no per-device (shard_map) region,
    so an answer that writes one fails the signature, and its compiled all-reduce must be there."""
    return _observe_training(fn, structure=False)


jit_train_step = exercise(
    "jit_train_step",
    _check_jit_train_step,
    hints=[
        "In section 5, what made `jax.jit(sgd_step)` communicate although `sgd_step` names no axis? "
        "If that is the arrays rather than the code, what does your weighted step's code still have "
        "to say, and what does the data have to carry?",
        "Exercise 3's loss without the per-device view: the same fraction, with both sums taken over "
        "the whole batch as one array, needs no collective at all. Differentiate it and update as "
        "`sgd_step` does, and compile that with `jax.jit`.",
        "Place the inputs as section 4 places `params_r` and `batch_s`, but with a `NamedSharding` on the "
        "`mesh` argument. Write no collective: the compiler sees sums over a split dimension and inserts "
        "the all-reduce itself (section 5).",
    ],
    observe=_observe_jit_train_step,
)


# ---------------------------------------------------------------- 5. weighted_total_shard_map
# Visible inputs (w of shape (d,), x of shape (d, k): pmap maps over axis 1); the hidden
# observations use random values of the same shapes.
_WEIGHTED_CASES = [
    (8, _f32([1.0, 0.5, -1.0]), _f32(np.arange(24).reshape(3, 8))),
    (4, _f32([2.0, -1.0]), _f32(np.arange(8).reshape(2, 4) / 4.0 - 1.0)),
    (2, _f32([0.5, 1.0, -2.0]), _f32([[3.0, -1.0], [0.5, 2.0], [1.0, 1.0]])),
]


def _migration_shape_hint(i: int, got: tuple, d: int, k: int) -> str:
    """What a wrong shape of the total (`i` 0) or of the weighted columns (`i` 1) is."""
    if i == 0 and got in ((d, 1), (d, d)):
        return _say("migration_block_axis")
    if i == 0 and got in ((d, k), (k * d,), (k, d)):
        return _say("migration_per_device")
    if i == 1 and got == (k * d,):
        return _say("migration_columns_dim0")
    return ""


def _migration_value_hint(got, w, x, k: int) -> str:
    """What a wrong total is: the mean over devices, or device 0's term only."""
    want = np.asarray(w, np.float64)[:, None] * np.asarray(x, np.float64)  # the weighted columns
    if same_values(got, want.sum(axis=1) / k, 1e-4, dtype=float):
        return _say("migration_mean")
    if same_values(got, want[:, 0], 1e-4, dtype=float):
        return _say("migration_first")
    return ""


def _check_weighted_total_shard_map(fn: Callable) -> None:
    name = "weighted_total_shard_map"
    for k, w, x in _WEIGHTED_CASES:
        mesh = line_mesh(k)
        where = _say("migration_where", k=k, w_shape=tuple(w.shape), x_shape=tuple(x.shape))
        with _explained(name, mesh):
            out = _call(fn, w, x, mesh)
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            kind = (
                _say("migration_kind", type=type(out).__name__, n=len(out))
                if isinstance(out, (tuple, list))
                else (_say("step_kind_type", type=type(out).__name__))
            )
            fail(_say("migration_pair", name=name, where=where, kind=kind))
        for i, (got, want) in enumerate(zip(out, _weighted_total_pmap()(w, x))):
            label, want = f"{name}(w, x, mesh)[{i}]", np.asarray(want)
            expect_array(label, got, dtype=jnp.float32)
            if tuple(got.shape) != want.shape:
                hint = _migration_shape_hint(i, tuple(got.shape), want.shape[0], k)
                fail(_say("migration_shape", name=label, want=want.shape, where=where, got=tuple(got.shape), hint=hint))
            if not same_values(got, want, 1e-4, dtype=float):
                hint = _migration_value_hint(got, w, x, k) if i == 0 else ""
                fail(_say("migration_wrong", name=label, where=where, want=_fmt(want), got=_fmt(got), hint=hint))
    k, w, x = _WEIGHTED_CASES[-1]  # the smallest mesh: the same verdict, the cheapest compiles
    judge_region(
        name,
        fn,
        line_mesh(k),
        w,
        x,
        region=((DEVICES,), ((), ((), (DEVICES,)))),
        what=_say("values_word"),
        axis=DEVICES,
        why=_say("migration_why"),
    )


def _observe_weighted_total_shard_map(fn: Callable) -> dict:
    """Exported programs of `fn(w, x, mesh)` on 8, 4 and 2 devices (the grader draws w and x)."""
    return programs(
        {
            f"out_k{k}_d{w.shape[0]}": Case(
                _bound(fn, line_mesh(k)), spec(w.shape, jnp.float32), spec(x.shape, jnp.float32)
            )
            for k, w, x in _WEIGHTED_CASES
        }
    )


weighted_total_shard_map = exercise(
    "weighted_total_shard_map",
    _check_weighted_total_shard_map,
    hints=[
        "This pmap splits x along axis 1, not axis 0, so the table's first rows do not apply word for "
        "word. A PartitionSpec lists, dimension by dimension, the mesh axis that splits it: which spec "
        "says 'dimension 0 whole, dimension 1 split over DEVICES'?",
        "With `in_specs=(P(), P(None, DEVICES))` each device's block of x has shape (d, 1), where pmap "
        "handed `weighted_total` a column of shape (d,): pass `x_block[:, 0]` on.",
        "`out_axes=(None, 1)` translates to `out_specs=(P(), P(None, DEVICES))`: the total once, and the "
        "columns side by side along dimension 1, each device handing back its column as shape (d, 1) "
        "(`col[:, None]`). On an Explicit mesh, place x with `NamedSharding(mesh, P(None, DEVICES))` first "
        "(w can stay as it is), and use the `mesh` argument.",
    ],
    observe=_observe_weighted_total_shard_map,
)
