"""Exercises of notebook 09 (`09_large_models`): how large models are split over devices.

Every answer is a *global* function whose last argument is its mesh (a 1-D Explicit mesh over 8, 4 or 2
devices); its array inputs arrive **already placed** on that mesh. The checks run each answer as
`jax.jit(lambda *args: fn(*args, mesh))`, and each exercise asks for something the notebook did not show
verbatim:

1. `pipeline_loss(params, x, y, mesh)`: the notebook's GPipe forward pass had one weight matrix per stage
   and returned the last stage's outputs; here each stage is an affine layer with a bias
   (`tanh(h @ w + b)`), the answer splits the batch into `MICROBATCHES` microbatches itself, and returns
   the mean squared error, whole on every device, computed where the outputs are (the last stage). Its
   gradient (`jax.grad`) must equal the sequential model's, laid out like the parameters.
2. `moe_layer(x, router, w, mesh)`: the notebook's dispatch sent tokens to their experts; here the whole
   layer: dispatch, the expert's `relu`, the combine back to the tokens' devices, the gate applied,
   and tokens over `CAPACITY` dropped (zero output).
3. `causal_ring_attention(q, k, v, mesh)`: the notebook's ring attention had no mask and its blockwise
   causal attention ran on one device; here both at once: each device's queries against the key blocks
   that travel the ring, masked by *global* positions.

What each check looks at, in order: the answer runs (JAX's errors become messages that name the fix: a
mesh of the notebook used for the `mesh` argument, say), type and dtype, shape, layout (the result's
sharding), values against NumPy (with a diagnosis of the usual mistakes, a device count read from a
notebook global among them), then how the work was done, read from the optimized per-device program
compiled as the grader compiles it (`namedaxes.judging.work_of`, `COMPILER_OPTIONS`): its collectives
(which kinds, over which axis; gathering the stages' parameters, the experts' weights or the sequence's
keys and values is refused by name), and each device's share of the work on every mesh: the largest
array it materializes and its FLOPs, each within a stated factor of the reference's (`_PIPE_WORK`,
`_MOE_WORK`, `_RING_WORK`). Where the excess has a known cause the message names it from the program's
schedule (`namedaxes.judging.collective_sends`): the whole batch sent at once (no microbatches), every
stage's `w` or every expert's weights on every device, the whole sequence's keys assembled.

Grading contract (`namedaxes.grading.programs`): `observe` exports each answer with its mesh fixed on
abstract inputs for three meshes (values compared with the reference's on the grader's own inputs, the
results' layouts, and each device's work: `Case(work=...)` with the same factors as the visible check),
exercise 1 adds its derivative along a drawn direction on 8 devices (`jax.jvp`), and each exercise a
structure case (`only_collectives`): the reference's collectives over the exercise's axis and nothing
else.

Student-facing strings: every message is a template in `TEXT` (whole sentences, named fields), every hint
a full string in its `exercise(...)`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from namedaxes import EXPERTS, SEQUENCE, STAGES
from namedaxes.checking import exercises_for, expect_array, explained, fail, progress_of, same_values, show_values
from namedaxes.checking.compiled import compiled_once
from namedaxes.grading import Case, programs
from namedaxes.i18n import Messages
from namedaxes.judging import COMPILER_OPTIONS, Work, collective_sends, work_excess, work_of
from namedaxes.meshes import abstract_on as _on
from namedaxes.meshes import describe as _mesh_name
from namedaxes.meshes import line_mesh
from namedaxes.meshes import with_mesh as _bound

__all__ = [
    "pipeline_loss",
    "moe_layer",
    "causal_ring_attention",
    "MICROBATCHES",
    "CAPACITY",
    "stage_mesh",
    "expert_mesh",
    "sequence_mesh",
    "TEXT",
    "progress",
    "known_mistakes",
]
exercise = exercises_for(__name__)  # this notebook's exercises: exercise(name, check, hints=..., observe=...)
progress = progress_of(__name__)  # q.progress(): which exercises of the notebook pass

MICROBATCHES = 4  # exercise 1: the batch is split into this many microbatches
CAPACITY = 2  # exercise 2: how many tokens of one device each expert takes, at most

# ---------------------------------------------------------------- every student-facing string
TEXT = {
    # crashes, any exercise
    "in_specs": (
        '`{name}` failed with JAX\'s error "{first}". The inputs are already placed: give `jax.shard_map` '
        "the specs they were placed with (the exercise states them), and use the `mesh` argument."
    ),
    "varying_output": (
        '`{name}` failed with JAX\'s error "{first}": an `out_specs` says a result is the same on every '
        "device, but JAX types it as varying over the mesh axis. Make it the same everywhere with a "
        "collective, or name the axis in that `out_specs`."
    ),
    "ring_size": (
        '`{name}` failed with JAX\'s error "{first}": the pairs of a `ppermute` name more devices than the '
        "mesh has. The check runs your function on meshes of 8, 4 and 2 devices: read the number of devices "
        "from the mesh (`mesh.shape[...]`), not from a global of the notebook."
    ),
    "carry_varying": (
        "`{name}` failed with JAX's error \"{first}\": a loop's carry starts the same on every device (a "
        "`jnp.zeros`, say) but comes out of the body varying over the mesh axis. Cast the initial carry first: "
        "`lax.pcast(init, (axis,), to='varying')`."
    ),
    "mesh_global": (
        '`{name}` failed with JAX\'s error "{first}": its `jax.shard_map` runs on another mesh than the one its '
        "inputs are placed on. Use the `mesh` argument (the check calls your function with meshes of 8, 4 and 2 "
        "devices), not a mesh of the notebook such as `{mesh_global}`."
    ),
    "global_count": (
        "It gives the right values on {right} devices but not on {k}: does it take the number of devices from "
        "a global of the notebook such as `{glob}` (= {right})? Read it from the `mesh` argument: "
        "`mesh.shape[{axis}]`."
    ),
    "unbound": (
        "`{name}` calls a collective over '{axis}', but no `jax.shard_map` binds that axis there (JAX says: "
        '"{first}"). Collectives run inside the function you give `jax.shard_map`, over its mesh\'s axes.'
    ),
    # results, any exercise
    "result_type": "`{name}` should return a `jax.Array`, but it returned a `{type}` {where}.",
    "shape": "`{name}` should return shape {want} {where}, but it returned shape {got}.",
    "values": "`{name}` has the wrong values {where}: expected {want}, got {got}. {hint}",
    "values_row": (
        "`{name}` has the wrong values {where}: row {row} (the first that differs) should be {want}, but it is "
        "{got}. {hint}"
    ),
    "where_mesh": "(mesh {mesh}, {shapes})",
    "layout": "`{name}` returns the right shape {where}, but laid out as {got}; the exercise asks for {want}.",
    "layout_replicated": "P() (replicated: the same whole array on every device)",
    "seen_nothing": "no collective at all",
    "seen_join": ", ",
    "other_collectives": (
        "`{name}` returns the right values, but its compiled program on {mesh} also performs {seen}. The "
        "exercise allows {allowed} only."
    ),
    "no_collective": (
        "`{name}` returns the right values, but its compiled program on {mesh} has no {want}: {seen}. {why}"
    ),
    "work_largest": (
        "`{name}` returns the right values, but on {mesh} one device materializes an array of {got} bytes: "
        "{ratio}× the reference's largest ({want} bytes, read from the compiled per-device program; the "
        "exercise allows {factor}×). {why}"
    ),
    "work_flops": (
        "`{name}` returns the right values, but on {mesh} one device computes {ratio}× the reference's FLOPs "
        "({got} against {want}, read from the compiled per-device program; the exercise allows {factor}×). {why}"
    ),
    "work_sent": (
        "`{name}` returns the right values, but on {mesh} one device receives {got} bytes through its "
        "collectives in one call: {ratio}× the reference's {want} (each collective counted as often as it runs, "
        "read from the compiled per-device program; the exercise allows {factor}×). {why}"
    ),
    # 1. pipeline_loss
    "pipe_whole_model": (
        "`{name}` returns the right values, but its compiled program on {mesh} performs {seen}: the stages' "
        "parameters are gathered, so every device holds the whole model. Each device should hold only its "
        "stage's `w` and `b` (as placed, `P(STAGES)`) and pass activations on with `lax.ppermute`."
    ),
    "pipe_gathers_activations": (
        "`{name}` returns the right values, but its compiled program on {mesh} performs {seen}: every stage "
        "collects the activations of every other stage. Pass a microbatch's activations to the next stage "
        "only, with `lax.ppermute`, compute the loss where the outputs are (the last stage), and make it the "
        "same on every device with one `lax.psum`."
    ),
    "pipe_holds_w": (
        "Every device holds all of `w` ({whole} bytes): the whole model on every device. Each device should "
        "keep only its stage's `w` and `b` (as placed, `P(STAGES)`) and pass activations on with `lax.ppermute`."
    ),
    "pipe_large": (
        "Each device should hold its stage's parameters and the activations of one microbatch at a time (the "
        "outputs of every microbatch, the size of the batch, at most)."
    ),
    "pipe_no_microbatches": (
        "Its ppermutes each send {sent} bytes, the whole batch's activations ({runs} of them): without "
        "microbatches the stages work one after another, and each device idles (k - 1)/k of the time. Split "
        "the batch into MICROBATCHES and send one microbatch at a time: GPipe's schedule runs m + k - 2 = "
        "{want_runs} ppermutes of {want_sent} bytes each."
    ),
    "pipe_flops": "In each step a device should apply only its own stage, to one microbatch.",
    "pipe_targets": (
        "The outputs were compared with another microbatch's targets: in step t the last stage finishes "
        "microbatch t - (k - 1), the k - 1 stages before it delay it, so its targets are `ys[t - (k - 1)]`."
    ),
    "pipe_no_ppermute_why": "The activations should travel from stage to stage with `lax.ppermute`.",
    "pipe_short": (
        "That is the loss without the last microbatch(es): with k stages and m microbatches the schedule "
        "takes m + k - 1 steps before the last microbatch leaves the last stage."
    ),
    "pipe_sum": "That is the sum of the squared errors; the mean divides by every entry of `y`.",
    "pipe_generic": (
        "Compare with the sequential model: `h = tanh(h @ w[s] + b[s])` for s = 0 .. k - 1, then the mean of (h - y)²."
    ),
    "pipe_grad_values": (
        "`{name}` returns the right loss, but its gradient (`jax.grad` with respect to `params`) differs from "
        "the sequential model's {where}: expected {want}, got {got}. A value that `jax.grad` cannot see "
        "through (a `lax.stop_gradient`, a value computed outside) breaks the backward pass."
    ),
    # 2. moe_layer
    "moe_gathers": (
        "`{name}` returns the right values, but its compiled program on {mesh} performs {seen}: a device "
        "gathers what should stay split (every expert's weights, or every device's tokens). Each device "
        "keeps its one expert and its own tokens; tokens travel to their expert and back with "
        "`lax.all_to_all`."
    ),
    "moe_no_all_to_all_why": "Tokens should travel to their expert's device and back with `lax.all_to_all`.",
    "moe_no_capacity": (
        "These are the outputs without dropping: every token was kept. An expert takes at most CAPACITY "
        "tokens from each device (the first ones, in order); the others get output 0."
    ),
    "moe_no_gate": (
        "The experts' outputs are right but not scaled: multiply each by its token's gate (its router probability)."
    ),
    "moe_global_capacity": (
        "The capacity was counted over all tokens; here it is per device: each device sends an expert at "
        "most CAPACITY of its own tokens."
    ),
    "moe_holds_w": (
        "Its all_to_all brings every device all of `w` ({whole} bytes): the experts' weights travel and the "
        "tokens stay. Keep each expert's weights on its device; send the tokens to their expert and back with "
        "`lax.all_to_all`."
    ),
    "moe_large": (
        "Every device holds or computes every expert's part. Keep each expert on its device and send it only "
        "the tokens it takes (at most CAPACITY of each device)."
    ),
    "moe_flops": "Each expert should apply its weights only to the tokens it takes (at most CAPACITY of each device).",
    "moe_generic": (
        "Compare with the dense layer: `y[t] = gate[t] * relu(x[t] @ w[expert[t]])` for the tokens kept, 0 for "
        "the dropped ones."
    ),
    # 3. causal_ring_attention
    "ring_gathers": (
        "`{name}` returns the right values, but its compiled program on {mesh} performs {seen}: a device "
        "assembles the whole sequence's keys and values. Keep them split; pass the blocks around the ring "
        "with `lax.ppermute`, one block at a time."
    ),
    "ring_no_ppermute_why": "The key and value blocks should travel the ring with `lax.ppermute`.",
    "ring_no_mask": (
        "That is attention without the causal mask: a query at position p may only see keys at positions <= p."
    ),
    "ring_local_mask": (
        "That is a mask by positions inside each block: every block was masked as if it were the device's "
        "own. Compare *global* positions: block j's keys start at j * block, and at ring step s the device "
        "holds another device's block."
    ),
    "ring_per_block": (
        "Each block's softmax was normalized on its own and the results added: the softmax is over all "
        "keys. Keep a running maximum and sum (online softmax) and divide once, at the end."
    ),
    "ring_short": (
        "The last query block misses a key block: the ring is one step short. After k - 1 sends every device "
        "has seen all k blocks (its own at step 0)."
    ),
    "ring_holds_all": (
        "Every device assembles the whole sequence's keys or values ({whole} bytes each): fold each block into "
        "the online softmax as it passes, and keep none of the blocks already seen."
    ),
    "ring_large": "A device should hold one block of keys and values, and one block of scores, at a time.",
    "ring_flops": "Each device should score its queries against each block of keys once.",
    "ring_direction": (
        "The blocks travel the ring the other way from the one the mask assumes: with the pairs (i, i - 1), at "
        "step s device i holds block (i + s) mod k, not (i - s) mod k. Send to the next device, "
        "`(i, (i + 1) % k)`, or compute the block's positions from the way you send."
    ),
    "ring_strict_mask": (
        "That is a strict mask (key < query): a query also sees its own position (key <= query). With the strict "
        "mask the first query of each block sees no key of the device's own block, its running maximum stays "
        "-inf, and exp(-inf - (-inf)) is NaN."
    ),
    "ring_nan": (
        "Some rows are NaN: a block whose scores were all masked met a running maximum still at -inf, and "
        "exp(-inf - (-inf)) is NaN. Start from the device's own block (step 0: its diagonal is never masked), "
        "or guard the update where the maximum is -inf."
    ),
    "ring_generic": "Compare with causal attention on one device: softmax(q k^T / sqrt(h), masked to keys <= query) v.",
}
TEXT = Messages(TEXT)  # the table above, each lookup in the kernel's language


_say = TEXT.say  # a template of this module's TEXT, in the kernel's language, filled in


_fmt = functools.partial(show_values, dtype=float, threshold=12)  # an array in a message


def _f32(values) -> np.ndarray:
    return np.asarray(values, np.float32)


# ---------------------------------------------------------------- meshes
def stage_mesh(k: int):
    """A 1-D Explicit mesh of the first `k` devices, axis STAGES (one pipeline stage per device)."""
    return line_mesh(k, STAGES, AxisType.Explicit)


def expert_mesh(k: int):
    """A 1-D Explicit mesh of the first `k` devices, axis EXPERTS (one expert per device)."""
    return line_mesh(k, EXPERTS, AxisType.Explicit)


def sequence_mesh(k: int):
    """A 1-D Explicit mesh of the first `k` devices, axis SEQUENCE (one block of the sequence per device)."""
    return line_mesh(k, SEQUENCE, AxisType.Explicit)


# ---------------------------------------------------------------- running answers
def _first_line(err: BaseException) -> str:
    text = str(err)
    return (text.splitlines()[0] if text else type(err).__name__)[:260]


# The mesh each exercise's section of the notebook made, which an answer may use by mistake for its `mesh`.
_MESH_GLOBALS = {"pipeline_loss": "stage_mesh", "moe_layer": "expert_mesh", "causal_ring_attention": "seq_mesh"}
_OTHER_MESH = (
    "Received incompatible devices for jitted computation",
    "not evenly divisible by the corresponding mesh axis",
    "should match the mesh passed to shard_map",
)


def _rules(name: str):
    def rule(err: BaseException) -> str | None:
        text, first = str(err), _first_line(err)
        if isinstance(err, ValueError) and any(s in text for s in _OTHER_MESH):
            return _say("mesh_global", name=name, first=first, mesh_global=_MESH_GLOBALS.get(name, "mesh_8"))
        if isinstance(err, ValueError) and "does not match the specs of the input" in text:
            return _say("in_specs", name=name, first=first)
        if isinstance(err, ValueError) and "out_specs" in text and ("replicat" in text or "varying" in text):
            return _say("varying_output", name=name, first=first)
        if isinstance(err, ValueError) and "ppermute" in text and ("unique" in text or "range" in text):
            return _say("ring_size", name=name, first=first)
        if isinstance(err, TypeError) and "carry" in text and "to='varying'" in text:
            return _say("carry_varying", name=name, first=first)
        if isinstance(err, NameError) and "unbound axis name" in text:
            axis = re.search(r"unbound axis name: ([\w.]+)", text)
            return _say("unbound", name=name, axis=axis.group(1) if axis else "?", first=first)
        return None

    return (rule,)


@dataclass(frozen=True)
class _Ran:
    """One mesh's run of an answer, read the grader's way from the optimized per-device program: its `Work`
    (`namedaxes.judging.work_of`) and how often it runs each kind of collective, of which largest size
    (`namedaxes.judging.collective_sends`)."""

    k: int
    mesh: object
    work: Work
    sends: dict
    text: str = field(default="", repr=False)  # the optimized HLO module

    @property
    def moved(self) -> list[str]:
        """The kinds of collective it performs: "ppermute over 'stage_axis'"."""
        return sorted(d for d, _ in self.work.moved)


def _run(name: str, program: Callable, *args, mesh=None):
    """`jax.jit(program)` compiled for `args` as the grader compiles (`COMPILER_OPTIONS`) and run: (its
    result, what one device does in it, `_Ran`)."""
    with explained(name, rules=_rules(name)):
        compiled = compiled_once(jax.jit(program).lower(*args), COMPILER_OPTIONS)
        out = compiled(*args)
    names = tuple(mesh.axis_names)
    sizes = tuple(mesh.shape[a] for a in names)
    text = compiled.as_text()
    work = work_of(compiled, names, sizes, mesh.size, text=text)
    return out, _Ran(mesh.size, mesh, work, collective_sends(text, names, sizes, mesh.size), text)


_WORK_KEYS = (("largest_bytes", "work_largest"), ("flops", "work_flops"), ("sent_bytes", "work_sent"))


def _expect_work(name: str, ran: list, reference: dict, limits: dict, why: Callable) -> None:
    """Each device's share of the work on every mesh (the grader's `Case(work=...)`): the largest array one
    device materializes and its FLOPs, each at most `limits[fact]` times the reference's (`reference[k]`);
    `why(fact, ran)` says what the excess means."""
    for run in ran:
        for fact, key in _WORK_KEYS:
            if fact not in limits:
                continue
            excess = work_excess(run.work, reference[run.k], {fact: limits[fact]})
            if excess is None:
                continue
            got, want = getattr(run.work, fact), getattr(reference[run.k], fact)
            fail(
                _say(
                    key,
                    name=name,
                    mesh=_mesh_name(run.mesh),
                    got=f"{got:g}",
                    want=f"{want:g}",
                    ratio=f"{excess[1]:.1f}",
                    factor=f"{excess[2]:g}",
                    why=why(fact, run),
                )
            )


def _expect_float32(name: str, out, where: str) -> None:
    if not isinstance(out, jax.Array):
        fail(_say("result_type", name=name, type=type(out).__name__, where=where))
    expect_array(name, out, dtype=jnp.float32)


def _layout(out) -> tuple:
    """The result's PartitionSpec as a tuple padded with Nones: P(a) == P(a, None)."""
    entries = list(out.sharding.spec) if hasattr(out.sharding, "spec") else []
    return tuple(entries + [None] * (out.ndim - len(entries)))


def _spec_text(entries: tuple) -> str:
    if all(e is None for e in entries):
        return _say("layout_replicated")
    return "P(" + ", ".join("None" if e is None else repr(e) for e in entries) + ")"


def _expect_layout(name: str, out, want: tuple, where: str) -> None:
    got, want = _layout(out), tuple(want) + (None,) * (out.ndim - len(want))
    if got != want:
        fail(_say("layout", name=name, where=where, got=_spec_text(got), want=_spec_text(want)))


def _expect_collectives(name: str, ran: _Ran, rules: dict) -> None:
    """The compiled program's collectives: none that `rules["refused"]` names (gathers), one `rules["need"]`,
    nothing outside `rules["allowed"]`."""
    seen, mesh = ran.moved, ran.mesh
    listed = _say("seen_join").join(seen) or _say("seen_nothing")
    refused = [d for d in seen if d.startswith(rules["refused"])]
    if refused:
        fail(_say(rules["refused_key"], name=name, mesh=_mesh_name(mesh), seen=_say("seen_join").join(refused)))
    if rules["need"] not in seen:
        fail(_say("no_collective", name=name, mesh=_mesh_name(mesh), want=rules["need"], seen=listed, why=rules["why"]))
    others = [d for d in seen if d not in rules["allowed"]]
    if others:
        allowed = _say("seen_join").join(rules["allowed"])
        fail(
            _say(
                "other_collectives",
                name=name,
                mesh=_mesh_name(mesh),
                seen=_say("seen_join").join(others),
                allowed=allowed,
            )
        )


def _fail_rows(name: str, where: str, want, got, hint: str) -> None:
    """A wrong matrix, shown by its first row that differs (a corner of a long array may all be right)."""
    bad = ~np.all(np.isclose(got, want, rtol=1e-4, atol=1e-4), axis=1)
    row = int(np.argmax(bad))
    fail(_say("values_row", name=name, where=where, row=row, want=_fmt(want[row]), got=_fmt(got[row]), hint=hint))


def _diagnosed(got, wrongs: list) -> str:
    """The hint of the first known mistake (`(values, key, fields)`) whose values `got` has."""
    return next((_say(key, **fields) for values, key, fields in wrongs if same_values(got, values, 1e-4)), "")


# ---------------------------------------------------------------- 1. pipeline_loss
# (stages, batch, features): the batch divides by MICROBATCHES.
_PIPE_SHAPES = [(8, 8, 6), (4, 8, 5), (2, 4, 4)]


def _pipe_inputs(k, n, d, seed: int = 0):
    r = np.random.default_rng(40 + k + seed)
    params = {"w": _f32(r.normal(size=(k, d, d)) / np.sqrt(d)), "b": _f32(r.normal(size=(k, d)) * 0.3)}
    return params, _f32(r.normal(size=(n, d))), _f32(r.normal(size=(n, d)))


def _pipe_outputs(params, x) -> np.ndarray:
    h = np.asarray(x, np.float64)
    for w, b in zip(params["w"], params["b"]):
        h = np.tanh(h @ np.asarray(w, np.float64) + b)
    return h


def _pipe_wrongs(params, x, y) -> list:
    """The usual mistakes' losses: the last microbatches missing, the sum for the mean, or each microbatch's
    outputs compared with another microbatch's targets (the last stage's delay of k - 1 steps missed)."""
    y64 = np.asarray(y, np.float64)
    out = _pipe_outputs(params, x)
    err = (out - y64) ** 2
    micro = np.array_split(err, MICROBATCHES)
    wrongs = [(sum(m.sum() for m in micro[:-i]) / err.size, "pipe_short", {}) for i in (1, 2, 3)]
    outs, ys = np.array_split(out, MICROBATCHES), np.array_split(y64, MICROBATCHES)
    k, m = params["w"].shape[0], MICROBATCHES
    for shift in range(-(m + k), m + k):
        for index in (lambda j: min(max(j + shift, 0), m - 1), lambda j: (j + shift) % m):  # noqa: B023
            order = [index(j) for j in range(m)]
            if order != list(range(m)):
                shifted = sum(((o - ys[i]) ** 2).sum() for o, i in zip(outs, order)) / err.size
                wrongs.append((shifted, "pipe_targets", {}))
    return [*wrongs, (err.sum(), "pipe_sum", {})]


def _sequential_loss(params, x, y):
    h = x
    for s in range(params["w"].shape[0]):
        h = jnp.tanh(h @ params["w"][s] + params["b"][s])
    return jnp.mean((h - y) ** 2)


def _pipe_placed(mesh, params, x, y):
    on = lambda spec: NamedSharding(mesh, spec)  # noqa: E731
    return (
        {key: jax.device_put(v, on(P(STAGES))) for key, v in params.items()},
        jax.device_put(x, on(P())),
        jax.device_put(y, on(P())),
    )


# The work judged (the grader's `Case(work=...)` on every mesh and the visible check alike): the largest array
# one device materializes, at most `_PIPE_WORK["largest_bytes"]` times the reference's (the outputs of every
# microbatch kept in one buffer, as a `lax.fori_loop` schedule keeps them, are 4x; every stage's `w` on every
# device 24x, 10x and 8x on 8, 4 and 2 stages), and its FLOPs, at most `_PIPE_WORK["flops"]` times the
# reference's (the whole batch through the stages one after another, no microbatches: 2.7x and 2.0x on 8 and
# 4 stages). The reference's, per mesh, measured from the solution notebook's program (a test keeps them true).
_PIPE_WORK = {"flops": 1.5, "largest_bytes": 5.0, "sent_bytes": 1.5}
_PIPE_REFERENCE = {
    8: Work(1928.0, 0, 48, sent_bytes=484),
    4: Work(950.0, 0, 40, sent_bytes=244),
    2: Work(264.0, 0, 16, sent_bytes=68),
}
# The notebook's globals that an answer may read the number of devices from instead of its mesh: (name, value).
_COUNT_GLOBALS = {"pipeline_loss": ("k", 4), "moe_layer": ("n_experts", 8), "causal_ring_attention": ("n_blocks", 8)}


def _global_count(name: str, k: int, axis: str, right_there: Callable[[int], bool]) -> str:
    """The hint for values wrong on `k` devices that are right on as many devices as the notebook's global
    count (`_COUNT_GLOBALS`); "" otherwise. `right_there(count)` runs the answer on that mesh."""
    glob, count = _COUNT_GLOBALS[name]
    if k == count:
        return ""
    try:
        right = right_there(count)
    except Exception:  # noqa: BLE001 - any failure there: no such hint
        right = False
    return _say("global_count", right=count, k=k, glob=glob, axis=axis) if right else ""


def _pipe_case(fn: Callable, k: int, n: int, d: int) -> tuple:
    """The answer run on `k` stages: (its loss, the right one, the inputs on the host, what it placed, the
    bound program, `_Ran`, where)."""
    name, mesh = "pipeline_loss", stage_mesh(k)
    params, x, y = _pipe_inputs(k, n, d)
    args = _pipe_placed(mesh, params, x, y)
    where = _say(
        "where_mesh", mesh=_mesh_name(mesh), shapes=f"w {params['w'].shape}, b {params['b'].shape}, x {x.shape}"
    )
    program = _bound(fn, mesh)
    out, ran = _run(name, program, *args, mesh=mesh)
    _expect_float32(name, out, where)
    if tuple(out.shape) != ():
        fail(_say("shape", name=name, want=(), got=tuple(out.shape), where=where))
    _expect_layout(name, out, (), where)
    want = ((_pipe_outputs(params, x) - y) ** 2).mean()
    return out, want, (params, x, y), args, program, ran, where


def _pipe_right_on(fn: Callable, count: int) -> bool:
    out, want, *_ = _pipe_case(fn, *next(s for s in _PIPE_SHAPES if s[0] == count))
    return same_values(np.asarray(out, np.float64), want, 1e-4)


def _check_pipeline_loss(fn: Callable) -> None:
    name = "pipeline_loss"
    ran = []
    for k, n, d in _PIPE_SHAPES:
        out, want, host, args, program, run, where = _pipe_case(fn, k, n, d)
        if not same_values(np.asarray(out, np.float64), want, 1e-4):
            hint = _diagnosed(np.asarray(out, np.float64), _pipe_wrongs(*host))
            hint = hint or _global_count(name, k, "STAGES", lambda c: _pipe_right_on(fn, c)) or _say("pipe_generic")
            fail(_say("values", name=name, where=where, want=_fmt(want), got=_fmt(out), hint=hint))
        if k == _PIPE_SHAPES[0][0]:  # the gradient on 8 devices, as the grader reads it
            _expect_pipeline_gradient(name, program, args, run.mesh, host, where)
        ran.append(run)
    k, n, d = _PIPE_SHAPES[0]
    # an all-gather whose result holds every stage's `w` (k, d, d) gathers the model; any other, activations
    whole = re.search(rf"f32\[{k},{d},{d}\]\S* all-gather", ran[0].text) is not None
    rules = {
        "refused": "all_gather",
        "refused_key": "pipe_whole_model" if whole else "pipe_gathers_activations",
        "need": f"ppermute over '{STAGES}'",
        "why": _say("pipe_no_ppermute_why"),
        "allowed": (f"ppermute over '{STAGES}'", f"psum over '{STAGES}'"),
    }
    _expect_collectives(name, ran[0], rules)
    _expect_work(name, ran, _PIPE_REFERENCE, _PIPE_WORK, _pipe_why)


def _pipe_why(fact: str, run: _Ran) -> str:
    """What a pipeline's excess work means: the whole model held, or the whole batch sent at once."""
    k, n, d = next(s for s in _PIPE_SHAPES if s[0] == run.k)
    if fact == "largest_bytes":  # FLOPs or bytes sent: the schedule's sends say which
        whole = k * d * d * 4
        return _say("pipe_holds_w", whole=whole) if run.work.largest_bytes >= whole else _say("pipe_large")
    sent = run.sends.get(f"ppermute over '{STAGES}'")
    batch = n * d * 4
    if sent is not None and sent.largest >= batch:
        return _say(
            "pipe_no_microbatches",
            sent=sent.largest,
            runs=sent.runs,
            want_runs=MICROBATCHES + k - 2,
            want_sent=batch // MICROBATCHES,
        )
    return _say("pipe_flops")


def _expect_pipeline_gradient(name, program, args, mesh, host, where) -> None:
    params, x, y = host
    with explained(name, rules=_rules(name)), jax.set_mesh(mesh):  # a zero gradient is made on the mesh
        grads = compiled_once(jax.jit(jax.grad(program)).lower(*args), COMPILER_OPTIONS)(*args)
    want = jax.grad(_sequential_loss)(params, x, y)
    for leaf in ("w", "b"):
        got = grads[leaf] if isinstance(grads, dict) and leaf in grads else None
        if got is None or not same_values(np.asarray(got, np.float64), np.asarray(want[leaf], np.float64), 1e-4):
            shown = _fmt(got) if got is not None else repr(grads)[:80]
            fail(_say("pipe_grad_values", name=name, where=where, want=_fmt(want[leaf]), got=shown))


def _derivative(program: Callable) -> Callable:
    """The loss's derivative along the direction `tangent` (forward mode, `jax.jvp`): what the grader compares
    of the gradient. A reverse-mode program's per-device regions take residuals that differ from one right
    answer to another; a `jvp`'s take the primal inputs and their tangents, the same for every answer."""

    def derivative(params, x, y, tangent):
        zeros = jnp.zeros_like(x)
        return jax.jvp(program, (params, x, y), (tangent, zeros, jnp.zeros_like(y)))[1]

    return derivative


def _pipe_abstract(mesh, k, n, d):
    return (
        {"w": _on(mesh, (k, d, d), P(STAGES)), "b": _on(mesh, (k, d), P(STAGES))},
        _on(mesh, (n, d), P()),
        _on(mesh, (n, d), P()),
    )


def _observe_pipeline_loss(fn: Callable) -> dict:
    """Exported programs of `fn(params, x, y, mesh)` (params P(STAGES), x and y replicated) on 8, 4 and 2
    devices, its derivative along a direction the grader draws on 8 (`_derivative`), and a structure case: the
    reference's ppermute and psum over STAGES and nothing else."""
    cases = {}
    for k, n, d in _PIPE_SHAPES:
        mesh = stage_mesh(k)
        cases[f"k{k}"] = Case(_bound(fn, mesh), *_pipe_abstract(mesh, k, n, d), rtol=1e-4, atol=1e-4, work=_PIPE_WORK)
    k, n, d = _PIPE_SHAPES[0]
    mesh = stage_mesh(k)
    params, x, y = _pipe_abstract(mesh, k, n, d)
    cases["derivative"] = Case(_derivative(_bound(fn, mesh)), params, x, y, params, rtol=1e-4, atol=1e-4)
    cases["structure"] = Case(_bound(fn, mesh), *_pipe_abstract(mesh, k, n, d), values=False, only_collectives=True)
    return programs(cases)


pipeline_loss = exercise(
    "pipeline_loss",
    _check_pipeline_loss,
    hints=[
        "Start from section 1's `gpipe_forward`: what changes when a stage adds its bias, when the schedule "
        "starts from the whole batch `x`, and when the answer is a loss rather than the last stage's outputs?",
        "Inside `jax.shard_map` (in_specs `P(STAGES)` for both parameters, `P()` for x and y) split x and y "
        "into MICROBATCHES with `reshape`. In step t (t = 0 .. m + k - 2) stage 0 takes microbatch t, "
        "every stage applies `tanh(state @ w + b)`, and the last stage holds microbatch t - (k - 1).",
        "Add up only the last stage's squared errors (`jnp.where` on `lax.axis_index(STAGES)`); one collective "
        "over STAGES then makes the loss the same on every device, as `out_specs=P()` asks, and dividing by "
        "`y.size` makes it a mean. `jax.grad` needs nothing more.",
    ],
    observe=_observe_pipeline_loss,
    mistakes={"pipe_short": 2, "pipe_targets": 2, "pipe_sum": 3},
)


# ---------------------------------------------------------------- 2. moe_layer
# (experts = devices, tokens per device, features)
_MOE_SHAPES = [(8, 6, 4), (4, 6, 5), (2, 6, 4)]


def _moe_inputs(k, t, d, seed: int = 0):
    r = np.random.default_rng(50 + k + seed)
    return _f32(r.normal(size=(k * t, d))), _f32(r.normal(size=(d, k))), _f32(r.normal(size=(k, d, d)) / np.sqrt(d))


def _moe_np(x, router, w, k: int, capacity=CAPACITY, gated: bool = True, per_device: bool = True) -> np.ndarray:
    """The dense computation of the same routing: token t goes to expert argmax(softmax(x @ router)), scaled by
    that probability; an expert takes the first `capacity` tokens of each device (of all, `per_device=False`)."""
    x, router, w = (np.asarray(a, np.float64) for a in (x, router, w))
    logits = x @ router
    probs = np.exp(logits - logits.max(1, keepdims=True))
    probs /= probs.sum(1, keepdims=True)
    expert, t = probs.argmax(1), x.shape[0] // k
    y, count = np.zeros_like(x), np.zeros(k, int)
    for token, e in enumerate(expert):
        if per_device and token % t == 0:
            count[:] = 0
        if capacity is None or count[e] < capacity:
            y[token] = (probs[token, e] if gated else 1.0) * np.maximum(x[token] @ w[e], 0.0)
        count[e] += 1
    return y


# The work judged (the grader's `Case(work=...)` on every mesh and the visible check alike): the largest array
# one device materializes, at most `_MOE_WORK["largest_bytes"]` times the reference's (every expert's
# weights brought to every device by an all_to_all, the tokens left where they are: 2x, 2.5x and 2x on 8, 4
# and 2 experts), and its FLOPs, at most `_MOE_WORK["flops"]` times the reference's. The reference's, per
# mesh, measured from the solution notebook's program (a test keeps them true).
_MOE_WORK = {"flops": 2.0, "largest_bytes": 1.5}
_MOE_REFERENCE = {
    8: Work(4582.0, 0, 384, sent_bytes=512),
    4: Work(2636.0, 0, 192, sent_bytes=320),
    2: Work(1126.0, 0, 96, sent_bytes=128),
}


def _moe_wrongs(x, router, w, k: int) -> list:
    """The usual mistakes' outputs: no token dropped, the gate not applied, the capacity counted over all tokens."""
    return [
        (_moe_np(x, router, w, k, capacity=None), "moe_no_capacity", {}),
        (_moe_np(x, router, w, k, gated=False), "moe_no_gate", {}),
        (_moe_np(x, router, w, k, per_device=False), "moe_global_capacity", {}),
    ]


def _moe_case(fn: Callable, k: int, t: int, d: int) -> tuple:
    """The answer run on `k` experts: (its outputs, the right ones, the inputs on the host, `_Ran`, where)."""
    name, mesh = "moe_layer", expert_mesh(k)
    x, router, w = _moe_inputs(k, t, d)
    args = _moe_placed(mesh, x, router, w)
    where = _say("where_mesh", mesh=_mesh_name(mesh), shapes=f"x {x.shape}, router {router.shape}, w {w.shape}")
    out, ran = _run(name, _bound(fn, mesh), *args, mesh=mesh)
    _expect_float32(name, out, where)
    if tuple(out.shape) != x.shape:
        fail(_say("shape", name=name, want=x.shape, got=tuple(out.shape), where=where))
    _expect_layout(name, out, (EXPERTS,), where)
    return np.asarray(out, np.float64), _moe_np(x, router, w, k), (x, router, w), ran, where


def _check_moe_layer(fn: Callable) -> None:
    name = "moe_layer"
    ran = []
    for k, t, d in _MOE_SHAPES:
        got, want, (x, router, w), run, where = _moe_case(fn, k, t, d)
        if not same_values(got, want, 1e-4):
            hint = _diagnosed(got, _moe_wrongs(x, router, w, k)) or _global_count(
                name, k, "EXPERTS", lambda c: _moe_right_on(fn, c)
            )
            _fail_rows(name, where, want, got, hint or _say("moe_generic"))
        ran.append(run)
    rules = {
        "refused": "all_gather",
        "refused_key": "moe_gathers",
        "need": f"all_to_all over '{EXPERTS}'",
        "why": _say("moe_no_all_to_all_why"),
        "allowed": (f"all_to_all over '{EXPERTS}'",),
    }
    _expect_collectives(name, ran[0], rules)
    _expect_work(name, ran, _MOE_REFERENCE, _MOE_WORK, _moe_why)


def _moe_right_on(fn: Callable, count: int) -> bool:
    got, want, *_ = _moe_case(fn, *next(s for s in _MOE_SHAPES if s[0] == count))
    return same_values(got, want, 1e-4)


def _moe_why(fact: str, run: _Ran) -> str:
    """What an expert layer's excess work means: every expert's weights on every device, or more."""
    k, _, d = next(s for s in _MOE_SHAPES if s[0] == run.k)
    if fact == "flops":
        return _say("moe_flops")
    sent, whole = run.sends.get(f"all_to_all over '{EXPERTS}'"), k * d * d * 4
    return _say("moe_holds_w", whole=whole) if sent is not None and sent.largest >= whole else _say("moe_large")


def _moe_placed(mesh, x, router, w):
    on = lambda spec: NamedSharding(mesh, spec)  # noqa: E731
    return jax.device_put(x, on(P(EXPERTS))), jax.device_put(router, on(P())), jax.device_put(w, on(P(EXPERTS)))


def _moe_abstract(mesh, k, t, d):
    return _on(mesh, (k * t, d), P(EXPERTS)), _on(mesh, (d, k), P()), _on(mesh, (k, d, d), P(EXPERTS))


def _observe_moe_layer(fn: Callable) -> dict:
    """Exported programs of `fn(x, router, w, mesh)` (x and w P(EXPERTS), router replicated) on 8, 4 and 2
    devices, and a structure case: the reference's all_to_all over EXPERTS and nothing else."""
    cases = {}
    for k, t, d in _MOE_SHAPES:
        mesh = expert_mesh(k)
        cases[f"k{k}"] = Case(_bound(fn, mesh), *_moe_abstract(mesh, k, t, d), rtol=1e-4, atol=1e-4, work=_MOE_WORK)
    k, t, d = _MOE_SHAPES[0]
    mesh = expert_mesh(k)
    cases["structure"] = Case(_bound(fn, mesh), *_moe_abstract(mesh, k, t, d), values=False, only_collectives=True)
    return programs(cases)


moe_layer = exercise(
    "moe_layer",
    _check_moe_layer,
    hints=[
        "Section 2's `dispatch_to_experts` brought each expert its tokens. What does the expert send back, "
        "to whom, and which collective undoes an `all_to_all`?",
        "Inside `jax.shard_map` (in_specs `P(EXPERTS)`, `P()`, `P(EXPERTS)`): route with `route(x, router, k, "
        "CAPACITY)`, send `einsum('tec,td->ecd', dispatch, x)` with `lax.all_to_all(..., EXPERTS, 0, 0, "
        "tiled=True)` and apply `relu(received @ w[0])`.",
        "Send the expert's outputs back with the same `all_to_all`, then `einsum('tec,ecd->td', dispatch, "
        "back) * gate[:, None]`: a dropped token's row of `dispatch` is all zeros, so its output is 0.",
    ],
    observe=_observe_moe_layer,
    mistakes={"moe_no_capacity": 2, "moe_no_gate": 3, "moe_global_capacity": 2},
)


# ---------------------------------------------------------------- 3. causal_ring_attention
# (devices, positions per block, features)
_RING_SHAPES = [(8, 3, 4), (4, 4, 6), (2, 5, 4)]


def _ring_inputs(k, b, h, seed: int = 0):
    r = np.random.default_rng(60 + k + seed)
    return tuple(_f32(r.normal(size=(k * b, h))) for _ in range(3))


def _attention_np(q, k, v, allowed) -> np.ndarray:
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    scores = np.where(allowed, q @ k.T / np.sqrt(q.shape[1]), -np.inf)
    p = np.exp(scores - scores.max(1, keepdims=True))
    return (p / p.sum(1, keepdims=True)) @ v


def _ring_wrongs(q, k, v, blocks: int) -> list:
    n = q.shape[0]
    b = n // blocks
    pos = np.arange(n)
    causal = pos[None, :] <= pos[:, None]
    local = (pos % b)[None, :] <= (pos % b)[:, None]
    short = causal & ~(pos[None, :] // b == (pos[:, None] // b + 1) % blocks)
    per_block = np.zeros((n, q.shape[1]))
    for j in range(blocks):
        cols = slice(j * b, (j + 1) * b)
        seen = causal[:, cols].any(1)
        part = _attention_np(q[seen], k[cols], v[cols], causal[seen][:, cols])
        per_block[seen] += part
    own = pos // b  # the device that holds each query
    held = np.zeros((n, n), bool)  # the blocks travel i -> i - 1, the mask assumes i -> i + 1
    for s in range(blocks):
        actual, assumed = (own + s) % blocks, (own - s) % blocks
        for c in range(b):
            held[pos, actual * b + c] = assumed * b + c <= pos
    with np.errstate(invalid="ignore", divide="ignore"):  # the strict mask leaves position 0 no key: NaN
        strict = _attention_np(q, k, v, pos[None, :] < pos[:, None])
    strict[pos % b == 0] = np.nan  # a ring whose step 0 masks a block's first query entirely: NaN there
    return [
        (_attention_np(q, k, v, np.ones((n, n), bool)), "ring_no_mask", {}),
        (_attention_np(q, k, v, held), "ring_direction", {}),
        (_attention_np(q, k, v, local), "ring_local_mask", {}),
        (per_block, "ring_per_block", {}),
        (_attention_np(q, k, v, short), "ring_short", {}),
        (strict, "ring_strict_mask", {}),
    ]


# The work judged (the grader's `Case(work=...)` on every mesh and the visible check alike): the largest array
# one device materializes, at most `_RING_WORK["largest_bytes"]` times the reference's (a ring that first
# collects every key and value block, then does one softmax: 8x, 4x and 2x on 8, 4 and 2 devices), and its
# FLOPs, at most `_RING_WORK["flops"]` times the reference's. The reference's, per mesh, measured from the
# solution notebook's program (a test keeps them true).
_RING_WORK = {"flops": 2.0, "largest_bytes": 1.5}
_RING_REFERENCE = {
    8: Work(2492.0, 0, 48, sent_bytes=672),
    4: Work(2495.0, 0, 96, sent_bytes=576),
    2: Work(1362.0, 0, 100, sent_bytes=160),
}


def _ring_case(fn: Callable, k: int, b: int, h: int) -> tuple:
    """The answer run on `k` devices: (its outputs, the right ones, the inputs on the host, `_Ran`, where)."""
    name, mesh = "causal_ring_attention", sequence_mesh(k)
    q, kk, v = _ring_inputs(k, b, h)
    args = [jax.device_put(a, NamedSharding(mesh, P(SEQUENCE))) for a in (q, kk, v)]
    where = _say("where_mesh", mesh=_mesh_name(mesh), shapes=f"q, k, v {q.shape}")
    out, ran = _run(name, _bound(fn, mesh), *args, mesh=mesh)
    _expect_float32(name, out, where)
    if tuple(out.shape) != q.shape:
        fail(_say("shape", name=name, want=q.shape, got=tuple(out.shape), where=where))
    _expect_layout(name, out, (SEQUENCE,), where)
    pos = np.arange(q.shape[0])
    return np.asarray(out, np.float64), _attention_np(q, kk, v, pos[None, :] <= pos[:, None]), (q, kk, v), ran, where


def _check_causal_ring_attention(fn: Callable) -> None:
    name = "causal_ring_attention"
    ran = []
    for k, b, h in _RING_SHAPES:
        got, want, (q, kk, v), run, where = _ring_case(fn, k, b, h)
        if not same_values(got, want, 1e-4):
            hint = _ring_nan(got, q, kk, v, k) or _diagnosed(got, _ring_wrongs(q, kk, v, k))
            hint = hint or _global_count(name, k, "SEQUENCE", lambda c: _ring_right_on(fn, c))
            _fail_rows(name, where, want, got, hint or _say("ring_generic"))
        ran.append(run)
    rules = {
        "refused": "all_gather",
        "refused_key": "ring_gathers",
        "need": f"ppermute over '{SEQUENCE}'",
        "why": _say("ring_no_ppermute_why"),
        "allowed": (f"ppermute over '{SEQUENCE}'",),
    }
    _expect_collectives(name, ran[0], rules)
    _expect_work(name, ran, _RING_REFERENCE, _RING_WORK, _ring_why)


def _ring_right_on(fn: Callable, count: int) -> bool:
    got, want, *_ = _ring_case(fn, *next(s for s in _RING_SHAPES if s[0] == count))
    return same_values(got, want, 1e-4)


def _ring_nan(got, q, k, v, blocks: int) -> str:
    """The hint for NaN rows: the strict mask's (NaN exactly where a block's first query sees no key of its own
    block, the strict mask's values elsewhere), else a fully masked block met while the maximum was -inf."""
    nan = np.isnan(got).any(axis=1)
    if not nan.any():
        return ""
    n = q.shape[0]
    pos = np.arange(n)
    starts = pos % (n // blocks) == 0
    with np.errstate(invalid="ignore", divide="ignore"):
        strict = _attention_np(q, k, v, pos[None, :] < pos[:, None])
    if np.array_equal(nan, starts) and same_values(got[~nan], strict[~nan], 1e-4):
        return _say("ring_strict_mask")
    return _say("ring_nan")


def _ring_why(fact: str, run: _Ran) -> str:
    """What a ring's excess work means: the whole sequence's keys or values on every device, or more."""
    k, b, h = next(s for s in _RING_SHAPES if s[0] == run.k)
    if fact == "flops":
        return _say("ring_flops")
    whole = k * b * h * 4
    return _say("ring_holds_all", whole=whole) if run.work.largest_bytes >= whole else _say("ring_large")


def _observe_causal_ring_attention(fn: Callable) -> dict:
    """Exported programs of `fn(q, k, v, mesh)` (each P(SEQUENCE)) on 8, 4 and 2 devices, and a structure
    case: the reference's ppermute over SEQUENCE and nothing else."""
    cases = {}
    for k, b, h in _RING_SHAPES:
        mesh = sequence_mesh(k)
        blocks = [_on(mesh, (k * b, h), P(SEQUENCE)) for _ in range(3)]
        cases[f"k{k}"] = Case(_bound(fn, mesh), *blocks, rtol=1e-4, atol=1e-4, work=_RING_WORK)
    k, b, h = _RING_SHAPES[0]
    mesh = sequence_mesh(k)
    blocks = [_on(mesh, (k * b, h), P(SEQUENCE)) for _ in range(3)]
    cases["structure"] = Case(_bound(fn, mesh), *blocks, values=False, only_collectives=True)
    return programs(cases)


causal_ring_attention = exercise(
    "causal_ring_attention",
    _check_causal_ring_attention,
    hints=[
        "Section 3 showed the ring without a mask, and the causal mask on one device. At ring step s, which "
        "device's key block does device i hold, and at which global positions do its keys sit?",
        "With the ring i -> i + 1, in step s device i holds block j = (i - s) mod k. Its queries sit at "
        "i * block + arange(block), the keys at j * block + arange(block); mask scores where key > query "
        "with -inf before the online-softmax update.",
        "Step 0 is the device's own block, whose diagonal is never masked, so the running maximum is finite "
        "from then on: later blocks that are all masked add exp(-inf) = 0. Divide by the running sum once, "
        "after the k steps.",
    ],
    observe=_observe_causal_ring_attention,
    mistakes={
        "ring_no_mask": 2,
        "ring_direction": 2,
        "ring_local_mask": 2,
        "ring_per_block": 3,
        "ring_short": 3,
        "ring_strict_mask": 2,
    },
)


# ---------------------------------------------------------------- the grader's side of the diagnoses
def known_mistakes(exercise: str, case: str, inputs: list) -> list[tuple]:
    """The known mistakes' results `(values, key, fields)` on one graded case's inputs (its arguments' leaves in
    order: `b, w, x, y` for `pipeline_loss`, `x, router, w` for `moe_layer`, `q, k, v` for the ring; case `k8`
    is 8 devices): what the grader's judge compares a wrong program's values with, on its hidden inputs, to
    name the mistake as the check names it (`autograder/judge/mistakes.py`). The derivative case has none."""
    if not re.fullmatch(r"k\d+", case):
        return []
    k, leaves = int(case[1:]), [np.asarray(a, np.float64) for a in inputs]
    if exercise == "pipeline_loss":
        b, w, x, y = leaves
        return _pipe_wrongs({"w": w, "b": b}, x, y)
    if exercise == "moe_layer":
        return _moe_wrongs(*leaves, k)
    if exercise == "causal_ring_attention":
        return _ring_wrongs(*leaves, k)
    return []
