"""Exercises of notebook 03 (nested axes): checks, hints and observations.

Two named axes share the 8 devices as a 2 x 4 grid: `DATA_SHARDS` (outer,
rows) and `MODEL_REPLICAS` (inner, columns). In the notebook's data-parallel x
tensor-parallel step, device (i, j) holds data shard i and model shard j: the
devices of a row share their data and hold *different* shards of the weights,
the devices of a column hold *copies* (replicas) of the same weight shard and
different data. The constant keeps the seed's name `model_replicas`; the
notebook says what it means.

- `grid_sums` and `device_numbers` are *per-device* functions, checked in the
  pmap-over-vmap form `jax.pmap(jax.vmap(fn, axis_name=MODEL_REPLICAS),
  axis_name=DATA_SHARDS)` on inputs of shape (rows, columns, ...), and graded
  with the same function run once per device of real grids (`shard_map`).
- `row_normalize(x, mesh)` and `tp_dp_step(w, batch, mesh)` are global
  functions that use `jax.shard_map` over a 2-D mesh (Auto axis types, so plain
  arrays go in). Their checks and observations run on several mesh shapes
  (2 x 4 and 4 x 2 at least), so a hard-coded device count cannot pass. The
  checks run them under `jax.jit` with the mesh closed over, as the grader's
  exported programs do (an eager `shard_map` costs seconds per call here).

Checks go type -> shape/dtype -> value -> structure, and when a value is wrong
they say which plausible mistake (a reduction over the other axis, a `pmean`
for a `psum`, an unaveraged or over-counted gradient) it matches.

Grading contract (`namedaxes.grading.programs`): `observe` records no values;
it exports each graded program on abstract inputs and the grader draws the
inputs, runs the programs and compares them with the reference's; the
communication is read from the compiled program. `tp_dp_step` adds a
`values=False` case so that its psums (partial products over MODEL_REPLICAS,
gradients over DATA_SHARDS) cannot be swapped for gathering the whole model.

One judge (issue 16): after their values, the visible checks of `row_normalize` and
`tp_dp_step` judge the answer's exported program on their own inputs with the grader's
steps (`checking.examined`, i.e. `namedaxes.judging`): communication read from the
optimized HLO and counted only when it reaches the result, each per-device region's
inputs split at least as the exercise's specs split them (`region_difference`), and the
result left where the exercise's lives (`placed_layout`). So an answer that hands every
device all of w, or whole rows, or adds a collective multiplied by zero, fails both.

Student-facing strings: every message of this module's checks is a template
in the `TEXT` table below; each exercise's hints are full sentences in its
`Exercise(...)` call. The logic only fills in fields, so a translation touches
no logic; the shared core (`namedaxes.checking`) words the rest.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType
from jax.sharding import PartitionSpec as P

from namedaxes import DATA_SHARDS, GRID_AXES, GRID_SHAPE, MODEL_REPLICAS, meshes
from namedaxes.checking import TEXT as checking_text  # the list separator of the language
from namedaxes.checking import (
    examined,
    exercises_for,
    expect_communication,
    expect_output_layouts,
    expect_regions,
    explained,
    fail,
    progress_of,
    same_values,
)
from namedaxes.grading import Case, programs, rng, spec
from namedaxes.i18n import Messages
from namedaxes.judging import Work, exported_work, work_excess
from namedaxes.model import LEARNING_RATE

__all__ = [
    "grid_sums",
    "device_numbers",
    "row_normalize",
    "tp_dp_step",
    "grid_map",
    "grid_mesh",
    "tp_dp_step_np",
    "LEARNING_RATE",
    "FEATURES",
    "EXAMPLES",
    "TEXT",
    "progress",
]
exercise = exercises_for(__name__)  # this notebook's exercises: exercise(name, check, hints=..., observe=...)
progress = progress_of(__name__)  # q.progress(): which exercises of the notebook pass

FEATURES, EXAMPLES = 8, 16  # tp_dp_step: w has FEATURES entries, a batch EXAMPLES examples
# tp_dp_step's work case: a wide w and few examples, so that all of w is the largest array a device could hold
# (a device of the 2 x 4 grid holds 1/4 of w, 64 entries, and a 2 x 64 block of x). The grader
# (`Case(work=...)`) and the visible check judge the largest array one device materializes, read from the
# compiled per-device program, at most `_TP_LARGEST_FACTOR` times the reference's (`_TP_REFERENCE_LARGEST`
# bytes, measured from the solution notebook's program; a test keeps it true). Gathering all of w: 2x.
_TP_WORK_FEATURES, _TP_WORK_EXAMPLES, _TP_WORK_GRID = 256, 4, (2, 4)
_TP_LARGEST_FACTOR = 1.5
_TP_REFERENCE_LARGEST = 512

# ---------------------------------------------------------------- every student-facing string
TEXT = {
    # where a check ran
    "grid_words": "a {rows} x {cols} grid ('{d}' x '{m}')",
    "on_grid": "on {grid}",
    "on_mesh": "on {grid}, x of shape {shape}",
    "on_mesh_step": "on {grid}, w of {features} entries, {examples} examples",
    "the_check_runs": "The check, which runs `{name}` {where},",
    # crashes
    "nested_pmap": (
        '`{name}` failed {where}: "{first}". Nested `jax.pmap` does not work on this JAX; use '
        "collectives over the names the grid already binds."
    ),
    "shard_map_specs": ('`{name}` failed {where} with JAX\'s error "ValueError: {first}". {fix}'),
    "fix_row_normalize": (
        "Split x with `in_specs=P(DATA_SHARDS, MODEL_REPLICAS)`, put the blocks back with the "
        "same `out_specs`, and use the `mesh` argument (its axis types are Auto, so a plain "
        "array can go in)."
    ),
    "fix_tp_dp_step": (
        "Give `jax.shard_map` one spec per argument, in order (w, x, y): "
        "`P(MODEL_REPLICAS)`, `P(DATA_SHARDS, MODEL_REPLICAS)`, `P(DATA_SHARDS)`, the "
        "`out_specs` of the new w `P(MODEL_REPLICAS)`, and use the `mesh` argument."
    ),
    "still_varying": (
        '`{name}` failed {where} with JAX\'s error "{first}": the new w you return still '
        "differs from one data shard to the next, while `out_specs=P(MODEL_REPLICAS)` says the "
        "two copies of a model shard are equal. The copies of a shard must take the same step: "
        "combine the data shards' gradients over the data axis before the update."
    ),
    "block_shapes": (
        '`{name}` failed {where} with JAX\'s error "{first}". Inside `jax.shard_map` each '
        "device sees only its blocks: its examples' columns x_block of shape {x_block} and its "
        "part of w of shape {w_block}. Multiply those two blocks."
    ),
    # result types and shapes
    "not_a_tuple": "`{name}(x)` should return a tuple of {n} {what}, but it returns {got}.",
    "tuple_of": "a {kind} of length {n}",
    "single_array": "a single array (all devices together: shape {shape})",
    "a_type": "a `{type}`",
    "three_arrays": "arrays ({parts})",
    "two_scalars": "int32 scalars (row-major number, column-major number)",
    "not_jax_array": "`{label}` should be a `jax.Array`, but it is a `{type}`: {value}",
    "per_device_shape": (
        "On each device, `{label}` should have shape {want}, but it has shape {got} (all devices "
        "together: {got_all}, expected {want_all})."
    ),
    "dtype": "`{label}` should have dtype {want}, but it has dtype {got}.",
    "global_shape": "`{label}` should return an array of shape {want}, but it returns shape {got} ({where}). {hint}",
    "values": "`{label}` has the wrong values {where}: expected {want}, got {got}. {hint}",
    # 1. grid_sums
    "part_same_data": "the sum over the devices that hold the same data shard as this one",
    "part_same_model": "the sum over the devices that hold the same model shard as this one",
    "part_neither": (
        "the sum over the devices that hold neither the same data shard nor the same model shard as this one"
    ),
    "parts_list": "same data shard, same model shard, neither",
    "seen_sum": "the sum over {axes}",
    "seen_mean": "the mean over {axes}",
    "seen_nothing": "x itself (nothing was reduced)",
    "axes_one": "'{axis}'",
    "axes_both": "both axes",
    "group_row": (
        "the devices of this device's row: they differ only in their position along "
        "'{m}', so they hold the same data shard and different model shards"
    ),
    "group_column": (
        "the devices of this device's column: they differ only in their position along "
        "'{d}', so they hold the same model shard and different data shards"
    ),
    "group_all": "every device of the grid",
    "group_neither": (
        "the devices outside this device's row and its column: they differ from it along both '{d}' and '{m}'"
    ),
    "grid_sums_seen": (
        "`{label}` should be {want}, but {where} its values are {seen}, which combines {group}. {advice}"
    ),
    "advice_part": "Which devices share what you need, and along which axis do they differ?",
    "advice_mean": "A mean divides by the number of devices: this part asks for a sum.",
    "grid_sums_generic": "Expected {want}: each device adds up x over {group}.",
    "grid_sums_unreduced": "`{label}` should be {want}, but {where} it is x itself: nothing was reduced.",
    "grid_sums_structure": "Use a collective over `{constant}` as well.",
    "grid_sums_neither_all": (
        "That is the sum over every device of the grid: leave out this device's row and its column (subtract "
        "their sums; x itself is in both, so add it back once)."
    ),
    "grid_sums_neither_twice": (
        "This device's own x was subtracted twice, once with its row and once with its column: add it back once."
    ),
    # 2. device_numbers
    "number_row_major": "the row-major number (rows one after the other: row * row length + column)",
    "number_column_major": "the column-major number (columns one after the other: column * column length + row)",
    "numbers_part": "Part {k} is {what}. {diagnosis}",
    "numbers_swapped": "These are the numbers of the other order: the {other} ones.",
    "order_row_major": "row-major",
    "order_column_major": "column-major",
    "numbers_hard_coded": (
        "They are right on a 2 x 4 grid only: the length of a row or a column was written as a "
        "number. The checks use grids of other shapes; ask the named axes."
    ),
    "numbers_wrong_length": (
        "They multiply by the length of the wrong axis: in the {order} order, a whole "
        "{line} comes before this device's own {line}, and a {line} is as long as "
        "'{axis}'."
    ),
    "line_row": "row",
    "line_column": "column",
    "numbers_one_axis": "That is the position along '{axis}' only; the number needs both positions.",
    "numbers_one_based": (
        "Each number is 1 too large: devices are numbered from 0, as `lax.axis_index` counts, so the "
        "first device of the order is number 0."
    ),
    "numbers_generic": "Count, for a device of the grid, how many devices come before it in that order.",
    # 3. row_normalize
    "row_normalize_shape_hint": (
        "Use `out_specs=P(DATA_SHARDS, MODEL_REPLICAS)` so the blocks are put back where they came from."
    ),
    "row_normalize_expected": "Expected each row of x divided by that row's sum. {diagnosis}",
    "rn_elementwise_column": (
        "It divides by the sum over '{d}' (down each column, across data shards); a row "
        "lives on one data shard, spread over '{m}'."
    ),
    "rn_local_block": (
        "It divides by each device's own part of the row: those partial sums still have to be added up across '{m}'."
    ),
    "rn_elementwise_row": (
        "It sums over '{m}' element by element, but a row also has several entries on each "
        "device: add up the block's own part of the row first, then combine the devices' "
        "partial sums."
    ),
    "rn_whole_array": "It divides by the sum over both axes (the whole array), not by each row's sum.",
    "rn_partials_wrong_axis": (
        "It adds up the partial row sums over '{d}': the devices of a column, which hold "
        "other rows of x (other data shards). Every entry is divided by a mix of "
        "different rows. The devices that share a row differ in their position along "
        "'{m}': combine over that axis."
    ),
    "rn_partials_mean": (
        "It averages the partial row sums with `lax.pmean` over '{m}': that is the row's sum "
        "divided by the {n} devices of a row, so every entry comes out {n} times too large. "
        "The row's sum is the total of the partial sums: `lax.psum`."
    ),
    "rn_partials_mean_wrong_axis": (
        "It averages the partial row sums over '{d}' (the devices of a column, which "
        "hold other rows of x), and a mean, not a sum. Add them up over '{m}', the "
        "axis along which the devices of one row differ."
    ),
    "rn_partials_mean_both": (
        "It averages the partial row sums over both axes: that mixes the rows (across "
        "'{d}') and divides by the number of devices. Add them up over '{m}' only."
    ),
    "rn_no_collective": (
        "`{name}` should add up partial row sums across '{m}' with a collective inside "
        "`jax.shard_map`, but it performs {seen}. The values are right, but the point is that "
        "each device only holds its own block: use `jax.shard_map` and a collective over "
        "MODEL_REPLICAS."
    ),
    "no_collective_at_all": "no collective at all",
    "collective_over": "{primitive} over {axes}",
    # 4. tp_dp_step
    "tp_shape_hint": (
        "Return only the new w, one entry per feature: its shards stay split over MODEL_REPLICAS "
        "(`out_specs=P(MODEL_REPLICAS)`)."
    ),
    "tp_update": ("`{name}` returned w = {got} {where}, but one SGD step on the whole batch gives w = {want}. {hint}"),
    "tp_data_sum": (
        "Your step is {k} times too large, {k} being the number of data shards: the gradients of the "
        "data shards were added, not averaged. (Under `jax.shard_map`, `jax.grad` with respect to "
        "a w that is the same on every data shard already adds them up itself: use the gradient "
        "formula of the exercise, or differentiate the mean of the losses over the data axis.)"
    ),
    "tp_model_sum": (
        "Your step is {k} times too large, {k} being the number of model shards. `jax.grad` "
        "through a psum with `check_vma=False` counts the prediction once per device of the "
        "row; use the gradient formula of the exercise, with the default `check_vma`."
    ),
    "tp_data_small": (
        "Your step is {k} times too small, {k} being the number of data shards: the data shards' gradients "
        "were averaged twice (a `lax.pmean` and a division by their number as well). Average them once."
    ),
    "tp_predictions_averaged": (
        "That step predicts with the *mean* of a row's partial products (`lax.pmean` over MODEL_REPLICAS): "
        "a prediction `x @ w` is their *sum*, each device's `x_shard @ w_shard` added with `lax.psum`."
    ),
    "tp_right_on": (
        "It is right on {good} but not on this mesh, which has another shape: look for a number "
        "of devices written as a number (dividing by 2, say), and take it from the mesh or let a "
        "collective that averages count the devices."
    ),
    "tp_unchanged": "w did not change: subtract LEARNING_RATE times the gradient from your shard of w.",
    "tp_sign": "The step goes the wrong way: subtract the gradient, do not add it.",
    "tp_partial_products": (
        "Each device predicted with its own partial product only: an example's prediction "
        "is the sum of the partial products of all devices of its row (each holds other "
        "features). Combine them before computing the error."
    ),
    "tp_mixed_shards": (
        "The gradients were averaged over the model axis as well: that mixes the gradients of "
        "different model shards (different entries of w). Only the copies of one shard, "
        "across the data shards, may be averaged."
    ),
    "tp_local_examples": (
        "That is a step on the first data shard's examples only: the data shards' gradients "
        "must be averaged before the update."
    ),
    "tp_generic": "Compare with `tp_dp_step_np(w, batch)`, the same step in NumPy on one device.",
    "tp_needs_psum_model": (
        "`{name}` returns the right values, but over '{m}' it performs {seen}. The point of "
        "tensor parallelism is that no device ever holds all of w: each computes a partial "
        "product with its own shard, and a `lax.psum` over MODEL_REPLICAS adds the partial "
        "products of a row."
    ),
    "tp_gathers": (
        "`{name}` returns the right values, but over '{m}' it performs {seen} and no `lax.psum`. "
        "Gathering blocks (of w, of x or of the partial products) hands every device of a row all of "
        "its partners' blocks; tensor parallelism keeps each device on its own shard of w and adds "
        "the partial products of a row with one `lax.psum` over MODEL_REPLICAS."
    ),
    "tp_holds_w": (
        "`{name}` returns the right values with the right collectives, but one device materializes an "
        "array of {got} bytes, {ratio}× the largest of the reference's ({want} bytes; read from the "
        "compiled per-device program with w of {features} entries and {examples} examples on a 2 x 4 grid, "
        "where at most {factor}× is allowed): a device gathers all of w (or another whole array). No device "
        "may hold all of w: each keeps its own shard and the partial predictions of a row are added with "
        "`lax.psum` over MODEL_REPLICAS."
    ),
    "tp_needs_data": (
        "`{name}` returns the right values, but over '{d}' it performs {seen}. The copies of a "
        "model shard must average their data shards' gradients with `lax.pmean` over DATA_SHARDS "
        "(a psum divided by the number of data shards), as the exercise's step does."
    ),
    "rn_layout_hint": (
        "Split x with `in_specs=P(DATA_SHARDS, MODEL_REPLICAS)` and put the blocks back with the "
        "same `out_specs`: each device holds only its own block of x, and so does the result."
    ),
    "tp_layout_hint": (
        "Give each device only its blocks: `in_specs=(P(MODEL_REPLICAS), P(DATA_SHARDS, "
        "MODEL_REPLICAS), P(DATA_SHARDS))` and `out_specs=P(MODEL_REPLICAS)`, with one `lax.psum` "
        "over MODEL_REPLICAS for the predictions and one `lax.pmean` over DATA_SHARDS for the "
        "gradients: no device holds all of w."
    ),
}
TEXT = Messages(TEXT)  # the table above, each lookup in the kernel's language


_say = TEXT.say  # a template of this module's TEXT, in the kernel's language, filled in


def _fmt(value) -> str:
    """An array on one line (the message is wrapped when shown)."""
    array = np.asarray(value)
    array = array if np.issubdtype(array.dtype, np.integer) else array.astype(float)
    text = np.array2string(array, precision=4, threshold=16, separator=", ", max_line_width=10**6)
    return " ".join(text.split())


def _first_line(err: BaseException) -> str:
    text = str(err)
    return (text.splitlines()[0] if text else type(err).__name__)[:240]


# ---------------------------------------------------------------- shared helpers
def grid_map(fn):
    """The pmap-over-vmap form: `fn` runs once per (data shard, model replica) cell of the grid."""
    return jax.pmap(jax.vmap(fn, axis_name=MODEL_REPLICAS), axis_name=DATA_SHARDS)


def grid_mesh(shape=GRID_SHAPE):
    """A (DATA_SHARDS, MODEL_REPLICAS) mesh of `shape` devices, Auto axis types (plain arrays go in)."""
    return meshes.grid_mesh(shape, GRID_AXES, AxisType.Auto)


def _grid_words(shape) -> str:
    return _say("grid_words", rows=shape[0], cols=shape[1], d=DATA_SHARDS, m=MODEL_REPLICAS)


def _grid_rules(name: str, where: str, fix: str | None, mesh_shape=None):
    """This notebook's own translations (nested pmap, shard_map specs); `checking.translate` does the rest."""

    def rule(err: BaseException) -> str | None:
        text = str(err)
        first = _first_line(err)
        if isinstance(err, ValueError) and "context mesh" in text:
            return _say("nested_pmap", name=name, where=where, first=first)
        if (
            fix == "fix_tp_dp_step"
            and isinstance(err, ValueError)
            and "out_specs" in text
            and ("varying" in text or "replicat" in text)
        ):
            return _say("still_varying", name=name, where=where, first=first)
        if (
            fix == "fix_tp_dp_step"
            and isinstance(err, TypeError)
            and ("dot_general requires contracting dimensions" in text or "Incompatible shapes" in text)
        ):
            rows, cols = mesh_shape
            return _say(
                "block_shapes",
                name=name,
                where=where,
                first=first,
                x_block=(EXAMPLES // rows, FEATURES // cols),
                w_block=(FEATURES // cols,),
            )
        if fix is not None and isinstance(err, ValueError) and ("specs" in text or "shard_map" in text):
            return _say("shard_map_specs", name=name, where=where, first=first, fix=_say(fix))
        return None

    return (rule,)


def _run(name: str, call, where: str, *, fix: str | None = None, mesh_shape=None):
    """Run `call()`; crashes become readable messages (`checking.explained` plus this notebook's rules)."""
    with explained(
        name,
        run=_say("the_check_runs", name=name, where=where),
        binds=GRID_AXES,
        rules=_grid_rules(name, where, fix, mesh_shape),
    ):
        return call()


def _describe(out) -> str:
    if isinstance(out, (tuple, list)):
        return _say("tuple_of", kind=type(out).__name__, n=len(out))
    if isinstance(out, jax.Array):
        return _say("single_array", shape=tuple(out.shape))
    return _say("a_type", type=type(out).__name__)


def _expect_grid_array(label: str, value, grid: tuple, per_device: tuple, dtype) -> None:
    """`value` is the stacked output of the grid: shape grid + per_device, dtype `dtype`."""
    if not isinstance(value, jax.Array):
        fail(_say("not_jax_array", label=label, type=type(value).__name__, value=f"{value!r:.80}"))
    if tuple(value.shape[:2]) != tuple(grid) or tuple(value.shape[2:]) != tuple(per_device):
        fail(
            _say(
                "per_device_shape",
                label=label,
                want=tuple(per_device),
                got=tuple(value.shape[2:]),
                got_all=tuple(value.shape),
                want_all=tuple(grid) + tuple(per_device),
            )
        )
    if np.dtype(value.dtype) != np.dtype(dtype):
        fail(_say("dtype", label=label, want=np.dtype(dtype).name, got=np.dtype(value.dtype).name))


def _values_failure(label: str, got, want, where: str, hint: str) -> None:
    fail(_say("values", label=label, where=where, want=_fmt(want), got=_fmt(got), hint=hint))


def _uniform(r, shape) -> jax.Array:
    return jnp.asarray(r.uniform(0.5, 2.0, size=shape), jnp.float32)


_UNIFORM = {"kind": "uniform", "low": 0.5, "high": 2.0}  # the same values, drawn by the grader


def _explained_run(name: str, where: str, fix: str, mesh_shape=None):
    """`explained` as `_run` uses it, for a step that exports and examines the answer's program."""
    return explained(
        name,
        run=_say("the_check_runs", name=name, where=where),
        binds=GRID_AXES,
        rules=_grid_rules(name, where, fix, mesh_shape),
    )


def _seen_descs(descs) -> str:
    """Collectives as the compiled program names them ("psum over 'model_replicas'"), or none at all."""
    return checking_text["list_sep"].join(descs) or _say("no_collective_at_all")


def _seen(found) -> str:
    return checking_text["list_sep"].join(
        _say("collective_over", primitive=p, axes=axes) for p, axes in sorted(found)
    ) or _say("no_collective_at_all")


def _on_devices(fn, grid):
    """The per-device `fn` on a real grid of devices: `shard_map` over `grid_mesh(grid)`, one cell per device.

    What the grader runs (the visible checks use `grid_map`): here both axes are devices, so the
    communication over each of them is visible in the compiled program.
    """
    block_spec = P(DATA_SHARDS, MODEL_REPLICAS)

    def per_block(block):
        return jax.tree.map(lambda part: jnp.asarray(part)[None, None], fn(block[0, 0]))

    return jax.shard_map(per_block, mesh=grid_mesh(grid), in_specs=block_spec, out_specs=block_spec, check_vma=False)


def _observe_on_grids(fn, cases, draw) -> dict:
    """Exported programs: `fn` once per device of each grid, x of shape (*grid, *per_device) drawn by the grader."""
    out = {}
    for grid, per_device in cases:
        tag = f"{grid[0]}x{grid[1]}_{'x'.join(map(str, per_device)) or 'scalar'}"
        out[tag] = Case(_on_devices(fn, grid), spec((*grid, *per_device), jnp.float32), draw=draw)
    return programs(out)


# ---------------------------------------------------------------- 1. grid_sums
# Part k of the answer: (what it is, which devices it combines, the array axes it reduces).
_GRID_SUMS_PARTS = (
    ("part_same_data", "group_row", (1,)),
    ("part_same_model", "group_column", (0,)),
    ("part_neither", "group_neither", None),  # no single collective: the grid, minus the row and the column
)
_GROUP_OF_AXES = {(1,): "group_row", (0,): "group_column", (0, 1): "group_all"}


def _grid_part(x, axes) -> np.ndarray:
    """Part of `grid_sums` on the grid `x`: the sum over `axes` of the grid, broadcast back; `None`: the sum
    over the devices in neither this device's row nor its column."""
    x = np.asarray(x, np.float64)
    if axes is None:
        return _grid_part(x, (0, 1)) - _grid_part(x, (1,)) - _grid_part(x, (0,)) + x
    return np.broadcast_to(x.sum(axis=axes, keepdims=True), x.shape)


def _neither_hint(got, x) -> str | None:
    """What a wrong "neither" part is: the whole grid, or the row and the column both subtracted from it."""
    if same_values(got, _grid_part(x, (0, 1))):
        return _say("grid_sums_neither_all")
    if same_values(got, _grid_part(x, None) - np.asarray(x, np.float64)):
        return _say("grid_sums_neither_twice")
    return None


def _axes_words(axes) -> str:
    if axes == (0, 1):
        return _say("axes_both")
    return _say("axes_one", axis=GRID_AXES[axes[0]])


def _grid_reductions(x: np.ndarray) -> list[tuple[str, str | None, bool, np.ndarray]]:
    """Every reduction a per-device answer might plausibly have computed: (words, group, is_mean, values)."""
    x = np.asarray(x, dtype=np.float64)
    full = lambda a: np.broadcast_to(a, x.shape)  # noqa: E731
    found = []
    for axes in ((0,), (1,), (0, 1)):
        found.append(
            (
                _say("seen_sum", axes=_axes_words(axes)),
                _GROUP_OF_AXES[axes],
                False,
                full(x.sum(axis=axes, keepdims=True)),
            )
        )
        found.append(
            (
                _say("seen_mean", axes=_axes_words(axes)),
                _GROUP_OF_AXES[axes],
                True,
                full(x.mean(axis=axes, keepdims=True)),
            )
        )
    found.append((_say("seen_nothing"), None, False, x))
    return found


def _group_words(group: str) -> str:
    return _say(group, d=DATA_SHARDS, m=MODEL_REPLICAS)


def _check_grid_sums(fn) -> None:
    name = "grid_sums"
    r = rng("grid_sums_check")
    for grid, per_device in ((GRID_SHAPE, (3,)), ((4, 2), ()), ((2, 2), (2,))):
        x = _uniform(r, (*grid, *per_device))
        where = _say("on_grid", grid=_grid_words(grid))
        out = _run(name, lambda: grid_map(fn)(x), where)  # noqa: B023 - run in this iteration
        if not isinstance(out, (tuple, list)) or len(out) != 3:
            fail(
                _say(
                    "not_a_tuple",
                    name=name,
                    n=3,
                    what=_say("three_arrays", parts=_say("parts_list")),
                    got=_describe(out),
                )
            )
        options = _grid_reductions(x)
        for k, ((want_key, group, axes), got) in enumerate(zip(_GRID_SUMS_PARTS, out)):
            label = f"{name}(x)[{k}]"
            _expect_grid_array(label, got, grid, per_device, jnp.float32)
            want = _grid_part(x, axes)
            if same_values(got, want):
                continue
            neither = _neither_hint(got, x) if axes is None else None
            if neither is not None:
                _values_failure(label, got, want, where, neither)
            seen = next(
                (
                    (words, seen_group, is_mean)
                    for words, seen_group, is_mean, value in options
                    if same_values(got, value)
                ),
                None,
            )
            if seen is not None and seen[1] is None:
                fail(_say("grid_sums_unreduced", label=label, want=_say(want_key), where=where))
            if seen is not None:
                words, seen_group, is_mean = seen
                advice = _say("advice_mean") if is_mean and seen_group == group else _say("advice_part")
                fail(
                    _say(
                        "grid_sums_seen",
                        label=label,
                        want=_say(want_key),
                        where=where,
                        seen=words,
                        group=_group_words(seen_group),
                        advice=advice,
                    )
                )
            _values_failure(
                label, got, want, where, _say("grid_sums_generic", want=_say(want_key), group=_group_words(group))
            )
    # Structure (a guard: under pmap-over-vmap the values above cannot be right without both axes), read the
    # grader's way from the program it runs (`_on_devices`: both axes are devices there): a collective over
    # each axis that reaches the results (`namedaxes.judging.examine`).
    probe = _uniform(rng("grid_sums_check"), (*GRID_SHAPE, 3))
    facts = _run(
        name, lambda: examined(_on_devices(fn, GRID_SHAPE), probe), _say("on_grid", grid=_grid_words(GRID_SHAPE))
    )
    for axis, constant in zip(GRID_AXES, ("DATA_SHARDS", "MODEL_REPLICAS")):
        expect_communication(name, facts, axis, hint=_say("grid_sums_structure", constant=constant))


def _observe_grid_sums(fn) -> dict:
    return _observe_on_grids(
        fn, ((GRID_SHAPE, (3,)), (GRID_SHAPE, ()), ((4, 2), (2,)), ((2, 2), (2, 3)), ((1, 4), (5,))), _UNIFORM
    )


grid_sums = exercise(
    "grid_sums",
    _check_grid_sums,
    hints=[
        "For each part, first find the group of devices on the grid: which devices hold the same data shard "
        "as this one, which hold the same model shard? Then ask along which axis the devices of that group "
        "differ.",
        "A collective over one axis combines the devices that differ only along that axis. The devices of a "
        "row share their data shard and differ along MODEL_REPLICAS; the devices of a column share their "
        "model shard and differ along DATA_SHARDS.",
        "No collective combines exactly the devices of the third part. Start from the sum over the whole grid "
        '(one collective with both names as a tuple, the way section "Form (a)" takes the maximum of the '
        "whole grid) and take away this device's row and its column: which value did you take away twice?",
    ],
    observe=_observe_grid_sums,
)


# ---------------------------------------------------------------- 2. device_numbers
def _check_device_numbers(fn) -> None:
    name = "device_numbers"
    r = rng("device_numbers_check")
    for grid in (GRID_SHAPE, (4, 2), (2, 2), (1, 4)):
        x = jnp.asarray(r.normal(size=grid), jnp.float32)
        where = _say("on_grid", grid=_grid_words(grid))
        out = _run(name, lambda: grid_map(fn)(x), where)  # noqa: B023 - run in this iteration
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            fail(_say("not_a_tuple", name=name, n=2, what=_say("two_scalars"), got=_describe(out)))
        rows, cols = np.indices(grid)
        n_rows, n_cols = grid
        row_major, column_major = rows * n_cols + cols, cols * n_rows + rows
        parts = (
            ("number_row_major", row_major, column_major, "order_column_major"),
            ("number_column_major", column_major, row_major, "order_row_major"),
        )
        for k, ((what, want, other, other_order), got) in enumerate(zip(parts, out)):
            label = f"{name}(x)[{k}]"
            _expect_grid_array(label, got, grid, (), jnp.int32)
            if same_values(got, want):
                continue
            if same_values(got, other):
                diagnosis = _say("numbers_swapped", other=_say(other_order))
            elif k == 0 and same_values(got, rows * 4 + cols) or k == 1 and same_values(got, cols * 2 + rows):
                diagnosis = _say("numbers_hard_coded")
            elif k == 0 and same_values(got, rows * n_rows + cols):
                diagnosis = _say(
                    "numbers_wrong_length", order=_say("order_row_major"), line=_say("line_row"), axis=MODEL_REPLICAS
                )
            elif k == 1 and same_values(got, cols * n_cols + rows):
                diagnosis = _say(
                    "numbers_wrong_length", order=_say("order_column_major"), line=_say("line_column"), axis=DATA_SHARDS
                )
            elif same_values(got, rows) and n_rows > 1:
                diagnosis = _say("numbers_one_axis", axis=DATA_SHARDS)
            elif same_values(got, cols):
                diagnosis = _say("numbers_one_axis", axis=MODEL_REPLICAS)
            elif same_values(got, want + 1):
                diagnosis = _say("numbers_one_based")
            else:
                diagnosis = _say("numbers_generic")
            _values_failure(label, got, want, where, _say("numbers_part", k=k, what=_say(what), diagnosis=diagnosis))


def _observe_device_numbers(fn) -> dict:
    return _observe_on_grids(
        fn, ((GRID_SHAPE, ()), ((4, 2), ()), ((2, 2), (3,)), ((1, 4), ()), ((2, 1), (2,))), {"kind": "normal"}
    )


device_numbers = exercise(
    "device_numbers",
    _check_device_numbers,
    hints=[
        "A device's number in an order is how many devices come before it. In the row-major order, which "
        "devices come before this one: how many whole rows, and how many devices of its own row?",
        "`lax.axis_index` and `lax.axis_size` give this device's position along one axis and that axis's "
        "length; the checks use grids of other shapes, so no length may be written as a number.",
        "Like the collectives, `lax.axis_index` also accepts a tuple of axis names: it then numbers the "
        "devices of all those axes together, and the order of the names in the tuple decides which axis "
        "counts slowest. Try both orders on the grid and compare with `device_ids`.",
    ],
    observe=_observe_device_numbers,
)


# ---------------------------------------------------------------- 3. row_normalize
def _row_normalize_wrong(xs: np.ndarray, grid, k: int) -> list[tuple[np.ndarray, str]]:
    """Values of the plausible wrong answers on `xs`, each with its diagnosis."""
    n_rows, n_cols = grid
    blocks = xs.reshape(n_rows, n_cols, k)
    partial = blocks.sum(axis=2, keepdims=True)  # each device's part of its row's sum

    def by(denominator):  # divide each block by a per-device value
        return (blocks / np.broadcast_to(denominator, partial.shape)).reshape(xs.shape)

    words = dict(d=DATA_SHARDS, m=MODEL_REPLICAS)
    wrong = [
        (xs / xs.sum(axis=0, keepdims=True), _say("rn_elementwise_column", **words)),
        (by(partial), _say("rn_local_block", **words)),
        ((blocks / blocks.sum(axis=1, keepdims=True)).reshape(xs.shape), _say("rn_elementwise_row", **words)),
        (xs / xs.sum(), _say("rn_whole_array")),
        (by(partial.sum(axis=0, keepdims=True)), _say("rn_partials_wrong_axis", **words)),
        (by(partial.mean(axis=1, keepdims=True)), _say("rn_partials_mean", n=n_cols, **words)),
        (by(partial.mean(axis=0, keepdims=True)), _say("rn_partials_mean_wrong_axis", **words)),
        (by(partial.mean(axis=(0, 1), keepdims=True)), _say("rn_partials_mean_both", **words)),
    ]
    return wrong


def _check_row_normalize(fn) -> None:
    name = "row_normalize"
    label = f"{name}(x, mesh)"
    r = rng("row_normalize_check")
    for grid, k in ((GRID_SHAPE, 3), ((2, 2), 1), ((4, 2), 2)):
        mesh = grid_mesh(grid)
        n_rows, n_cols = grid
        x = _uniform(r, (n_rows, n_cols * k))
        where = _say("on_mesh", grid=_grid_words(grid), shape=tuple(x.shape))
        out = _run(name, lambda: jax.jit(lambda a: fn(a, mesh))(x), where, fix="fix_row_normalize")  # noqa: B023 - run in this iteration
        if not isinstance(out, jax.Array):
            fail(_say("not_jax_array", label=label, type=type(out).__name__, value=f"{out!r:.80}"))
        if tuple(out.shape) != tuple(x.shape):
            fail(
                _say(
                    "global_shape",
                    label=label,
                    want=tuple(x.shape),
                    got=tuple(out.shape),
                    where=where,
                    hint=_say("row_normalize_shape_hint"),
                )
            )
        if np.dtype(out.dtype) != np.float32:
            fail(_say("dtype", label=label, want="float32", got=np.dtype(out.dtype).name))
        xs = np.asarray(x, dtype=np.float64)
        want = xs / xs.sum(axis=1, keepdims=True)
        if same_values(out, want):
            continue
        diagnosis = next((words for value, words in _row_normalize_wrong(xs, grid, k) if same_values(out, value)), "")
        _values_failure(label, out, want, where, _say("row_normalize_expected", diagnosis=diagnosis).strip())
    # the grader's steps, on these inputs: communication read from the compiled program (present, then
    # reaching the result), the per-device program's input split as the exercise's, the result's layout
    with _explained_run(name, where, "fix_row_normalize"):
        facts = examined(lambda a: fn(a, mesh), x)
    over_model = [d for d in facts.present if d.endswith(f" over '{MODEL_REPLICAS}'")]
    if not over_model:
        fail(_say("rn_no_collective", name=name, seen=_seen_descs(facts.present), m=MODEL_REPLICAS))
    expect_communication(name, facts, MODEL_REPLICAS, hint=_say("rn_layout_hint"))
    block = ((DATA_SHARDS,), (MODEL_REPLICAS,))
    expect_regions(name, facts, ((tuple(sorted(GRID_AXES)), (block,)),), hint=_say("rn_layout_hint"))
    expect_output_layouts(name, facts, (block,), hint=_say("rn_layout_hint"))


def _observe_row_normalize(fn) -> dict:
    """Exported programs of `fn(x, mesh)` for four meshes (the grader draws x, reads the psum's axes)."""
    cases = {}
    for grid, k in ((GRID_SHAPE, 3), ((4, 2), 2), ((2, 2), 2), ((1, 4), 1)):
        mesh = grid_mesh(grid)
        cases[f"{grid[0]}x{grid[1]}_k{k}"] = Case(
            lambda x, mesh=mesh: fn(x, mesh), spec((grid[0], grid[1] * k), jnp.float32), draw=_UNIFORM
        )
    return programs(cases)


row_normalize = exercise(
    "row_normalize",
    _check_row_normalize,
    hints=[
        "Inside `jax.shard_map(..., in_specs=P(DATA_SHARDS, MODEL_REPLICAS))` each device sees a block of "
        "one row: its own columns of that row. The row's sum is spread over the row's devices.",
        "Each device can add up its own part of the row (keep the dimensions, so it divides the block "
        "cleanly). Which devices hold the other parts of the same row, and along which axis do they differ?",
        "Those partial sums must be added, not averaged. Write a per-block function (partial sum, "
        "collective, divide), wrap it with `jax.shard_map` over the `mesh` argument with the same spec for "
        'input and output, and call the result on `x`: section "Form (b)" shows the pattern.',
    ],
    observe=_observe_row_normalize,
)


# ---------------------------------------------------------------- 4. tp_dp_step
def tp_dp_step_np(w, batch, learning_rate: float = LEARNING_RATE) -> np.ndarray:
    """The step every `tp_dp_step` must match, in float64 NumPy on one device: one SGD step of the mean
    squared error of the linear model `x @ w` on the whole batch (gradient in closed form)."""
    x, y, w = (np.asarray(a, np.float64) for a in (batch["x"], batch["y"], w))
    return w - learning_rate * 2.0 * x.T @ (x @ w - y) / x.shape[0]


_TP_MESHES = ((2, 4), (4, 2))  # the visible checks; the hidden test adds 2 x 2


def _tp_inputs(grid, seed: int):
    r = np.random.RandomState(30 + seed)
    w = r.normal(size=FEATURES)
    x = r.normal(size=(EXAMPLES, FEATURES))
    y = x @ np.linspace(1.0, -1.0, FEATURES) + 0.1 * r.normal(size=EXAMPLES)
    f32 = lambda a: jnp.asarray(a, jnp.float32)  # noqa: E731
    return f32(w), {"x": f32(x), "y": f32(y)}


def _tp_partial_products_step(w, batch, grid) -> np.ndarray:
    """What device (i, j) computes when it predicts with its own partial product only, averaged over i."""
    n_rows, n_cols = grid
    x, y, w = (np.asarray(a, np.float64) for a in (batch["x"], batch["y"], w))
    ex, ft = EXAMPLES // n_rows, FEATURES // n_cols
    new = w.copy()
    for j in range(n_cols):
        cols = slice(j * ft, (j + 1) * ft)
        grads = []
        for i in range(n_rows):
            xb, yb = x[i * ex : (i + 1) * ex, cols], y[i * ex : (i + 1) * ex]
            grads.append(2.0 * xb.T @ (xb @ w[cols] - yb) / ex)
        new[cols] = w[cols] - LEARNING_RATE * np.mean(grads, axis=0)
    return new


def _tp_diagnosis(got, w, batch, grid, passed_on) -> str:
    if passed_on is not None:
        return _say("tp_right_on", good=_grid_words(passed_on))
    old = np.asarray(w, np.float64)
    ref = tp_dp_step_np(w, batch)
    step, ref_step = got - old, ref - old
    n_rows, n_cols = grid
    if same_values(got, old, 1e-7):
        return _say("tp_unchanged")
    if same_values(step, -ref_step, 1e-4):
        return _say("tp_sign")
    if same_values(step, n_rows * ref_step, 1e-4):
        return _say("tp_data_sum", k=n_rows)
    if same_values(step, n_cols * ref_step, 1e-4):
        return _say("tp_model_sum", k=n_cols)
    if same_values(step, ref_step / n_rows, 1e-4):
        return _say("tp_data_small", k=n_rows)
    x, y = (np.asarray(batch[key], np.float64) for key in ("x", "y"))
    if same_values(got, old - LEARNING_RATE * 2.0 * x.T @ (x @ old / n_cols - y) / x.shape[0], 1e-4):
        return _say("tp_predictions_averaged")
    if same_values(got, _tp_partial_products_step(w, batch, grid), 1e-4):
        return _say("tp_partial_products")
    ft = FEATURES // n_cols
    mixed = np.tile(ref_step.reshape(n_cols, ft).mean(axis=0), n_cols)
    if same_values(step, mixed, 1e-4):
        return _say("tp_mixed_shards")
    first = {"x": np.asarray(batch["x"])[: EXAMPLES // n_rows], "y": np.asarray(batch["y"])[: EXAMPLES // n_rows]}
    if same_values(got, tp_dp_step_np(w, first), 1e-4):
        return _say("tp_local_examples")
    return _say("tp_generic")


def _check_tp_dp_step(fn) -> None:
    name = "tp_dp_step"
    label = f"{name}(w, batch, mesh)"
    facts, passed_on = None, None
    for seed, grid in enumerate(_TP_MESHES):
        mesh = grid_mesh(grid)
        w, batch = _tp_inputs(grid, seed)
        where = _say("on_mesh_step", grid=_grid_words(grid), features=FEATURES, examples=EXAMPLES)
        out = _run(
            name,
            lambda: jax.jit(lambda w_, b_: fn(w_, b_, mesh))(w, batch),  # noqa: B023 - run in this iteration
            where,
            fix="fix_tp_dp_step",
            mesh_shape=grid,
        )
        if not isinstance(out, jax.Array):
            fail(_say("not_jax_array", label=label, type=type(out).__name__, value=f"{out!r:.80}"))
        if tuple(out.shape) != (FEATURES,):
            fail(
                _say(
                    "global_shape",
                    label=label,
                    want=(FEATURES,),
                    got=tuple(out.shape),
                    where=where,
                    hint=_say("tp_shape_hint"),
                )
            )
        if np.dtype(out.dtype) != np.float32:
            fail(_say("dtype", label=label, want="float32", got=np.dtype(out.dtype).name))
        got = np.asarray(out, np.float64)
        want = tp_dp_step_np(w, batch)
        if not same_values(got, want, 1e-5):
            fail(
                _say(
                    "tp_update",
                    name=name,
                    got=_fmt(got),
                    want=_fmt(want),
                    where=where,
                    hint=_tp_diagnosis(got, w, batch, grid, passed_on),
                )
            )
        passed_on = passed_on or grid
        if facts is None:  # the grader's steps, on the first mesh's inputs (see row_normalize)
            with _explained_run(name, where, "fix_tp_dp_step", grid):
                facts = examined(lambda w_, x_, y_: fn(w_, {"x": x_, "y": y_}, mesh), w, batch["x"], batch["y"])  # noqa: B023 - run in this iteration
    over_model = [d for d in facts.present if d.endswith(f" over '{MODEL_REPLICAS}'")]
    if f"psum over '{MODEL_REPLICAS}'" not in over_model:
        fail(
            _say(
                "tp_gathers" if over_model else "tp_needs_psum_model",
                name=name,
                seen=_seen_descs(over_model),
                m=MODEL_REPLICAS,
            )
        )
    over_data = [d for d in facts.present if d.endswith(f" over '{DATA_SHARDS}'")]
    if f"psum over '{DATA_SHARDS}'" not in over_data:
        fail(_say("tp_needs_data", name=name, seen=_seen_descs(over_data), d=DATA_SHARDS))
    expect_communication(name, facts, MODEL_REPLICAS, "psum", hint=_say("tp_layout_hint"))
    expect_communication(name, facts, DATA_SHARDS, "psum", hint=_say("tp_layout_hint"))
    specs = (((MODEL_REPLICAS,),), ((DATA_SHARDS,), (MODEL_REPLICAS,)), ((DATA_SHARDS,),))
    expect_regions(name, facts, ((tuple(sorted(GRID_AXES)), specs),), hint=_say("tp_layout_hint"))
    expect_output_layouts(name, facts, (((MODEL_REPLICAS,),),), hint=_say("tp_layout_hint"))
    _expect_tp_work(name, fn)


def _tp_work_args():
    return (
        jax.ShapeDtypeStruct((_TP_WORK_FEATURES,), jnp.float32),
        jax.ShapeDtypeStruct((_TP_WORK_EXAMPLES, _TP_WORK_FEATURES), jnp.float32),
        jax.ShapeDtypeStruct((_TP_WORK_EXAMPLES,), jnp.float32),
    )


def _expect_tp_work(name: str, fn) -> None:
    """No device holds all of w: the largest array one device of the work case materializes (read from the
    compiled per-device program, as the grader reads it) is at most `_TP_LARGEST_FACTOR` times the
    reference's."""
    mesh = grid_mesh(_TP_WORK_GRID)
    where = _say(
        "on_mesh_step", grid=_grid_words(_TP_WORK_GRID), features=_TP_WORK_FEATURES, examples=_TP_WORK_EXAMPLES
    )
    with _explained_run(name, where, "fix_tp_dp_step", _TP_WORK_GRID):
        program = jax.jit(lambda w_, x_, y_: fn(w_, {"x": x_, "y": y_}, mesh))
        work = exported_work(jax.export.export(program)(*_tp_work_args()))
    excess = work_excess(work, Work(0.0, 0, _TP_REFERENCE_LARGEST), {"largest_bytes": _TP_LARGEST_FACTOR})
    if excess is not None:
        fail(
            _say(
                "tp_holds_w",
                name=name,
                got=work.largest_bytes,
                ratio=f"{excess[1]:.1f}",
                want=_TP_REFERENCE_LARGEST,
                features=_TP_WORK_FEATURES,
                examples=_TP_WORK_EXAMPLES,
                factor=f"{_TP_LARGEST_FACTOR:g}",
            )
        )


def _observe_tp_dp_step(fn) -> dict:
    """Programs of `fn(w, batch, mesh)` on 2 x 4, 4 x 2 and 2 x 2 meshes (plain inputs, drawn by the grader),
    plus the 2 x 4 one again as a structure case: the reference's psums over both axes are required."""
    cases = {}
    for grid in ((2, 4), (4, 2), (2, 2)):
        mesh = grid_mesh(grid)
        program = lambda w, x, y, mesh=mesh: fn(w, {"x": x, "y": y}, mesh)  # noqa: E731
        args = (spec((FEATURES,), jnp.float32), spec((EXAMPLES, FEATURES), jnp.float32), spec((EXAMPLES,), jnp.float32))
        cases[f"{grid[0]}x{grid[1]}"] = Case(program, *args)
        if grid == (2, 4):
            cases["collectives"] = Case(program, *args, values=False)
            cases["work"] = Case(program, *_tp_work_args(), work={"largest_bytes": _TP_LARGEST_FACTOR})
    return programs(cases)


tp_dp_step = exercise(
    "tp_dp_step",
    _check_tp_dp_step,
    hints=[
        "Draw the blocks first: which part of w, which examples and which features of x does device "
        "(i, j) hold? Then ask what it is missing to predict its examples, and what it is missing to "
        "update its part of w.",
        "A device's product of its x block with its part of w is only a partial prediction: the devices of "
        "its row hold the other features, and their partial products add up to the prediction. The "
        "gradient formula then needs only the device's own blocks, but it covers only its data shard.",
        "The copies of a model shard (the devices of a column) must take the same step: combine their "
        "gradients over the axis along which they differ, as an average, then subtract LEARNING_RATE "
        "times it from the shard. The new w stays split like the old one.",
    ],
    observe=_observe_tp_dp_step,
)
