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

What each check looks at, in order: the answer runs (JAX's errors become messages that name the fix),
type and dtype, shape, layout (the result's sharding), values against NumPy (with a diagnosis of the
usual mistakes), then how the work was done: the collectives of the program the grader compiles
(`namedaxes.judging.work_of`, read from its optimized HLO): which kinds, over which axis. Gathering the stages'
parameters (the whole model on every device), the experts' weights or the sequence's keys and values is
refused by name.

Grading contract (`namedaxes.grading.programs`): `observe` exports each answer with its mesh fixed on
abstract inputs for three meshes (values compared with the reference's on the grader's own inputs, and the
results' layouts), exercise 1 adds its derivative along a drawn direction on 8 devices (`jax.jvp`), and
each exercise a structure case (`only_collectives`): the reference's collectives over the exercise's axis
and nothing else.

Student-facing strings: every message is a template in `TEXT` (whole sentences, named fields), every hint
a full string in its `exercise(...)`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from namedaxes import EXPERTS, SEQUENCE, STAGES
from namedaxes.checking import exercises_for, expect_array, explained, fail, progress_of, same_values, show_values
from namedaxes.grading import Case, programs
from namedaxes.i18n import Messages
from namedaxes.judging import work_of
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
    # 1. pipeline_loss
    "pipe_whole_model": (
        "`{name}` returns the right values, but its compiled program on {mesh} performs {seen}: the stages' "
        "parameters are gathered, so every device holds the whole model. Each device should hold only its "
        "stage's `w` and `b` (as placed, `P(STAGES)`) and pass activations on with `lax.ppermute`."
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


def _rules(name: str):
    def rule(err: BaseException) -> str | None:
        text, first = str(err), _first_line(err)
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


def _run(name: str, program: Callable, *args):
    """`jax.jit(program)` compiled for `args` and run: (its result, the compiled program)."""
    with explained(name, rules=_rules(name)):
        compiled = jax.jit(program).lower(*args).compile()
        return compiled(*args), compiled


def _moved(compiled, mesh) -> list[str]:
    """The kinds of collective a compiled program performs, read the grader's way from its optimized HLO
    (`namedaxes.judging.work_of`): "ppermute over 'stage_axis'"."""
    names = tuple(mesh.axis_names)
    work = work_of(compiled, names, tuple(mesh.shape[a] for a in names), mesh.size)
    return sorted(d for d, _ in work.moved)


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


def _expect_collectives(name: str, compiled, mesh, rules: dict) -> None:
    """The compiled program's collectives: none that `rules["refused"]` names (gathers), one `rules["need"]`,
    nothing outside `rules["allowed"]`."""
    seen = _moved(compiled, mesh)
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
    """The hint of the first known mistake (`(values, key)`) whose values `got` has."""
    return next((_say(key) for values, key in wrongs if same_values(got, values, 1e-4)), "")


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
    """The usual mistakes' losses: the last microbatches missing, or the sum for the mean."""
    y64 = np.asarray(y, np.float64)
    err = (_pipe_outputs(params, x) - y64) ** 2
    micro = np.array_split(err, MICROBATCHES)
    wrongs = [(sum(m.sum() for m in micro[:-i]) / err.size, "pipe_short") for i in (1, 2, 3)]
    return [*wrongs, (err.sum(), "pipe_sum")]


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


def _check_pipeline_loss(fn: Callable) -> None:
    name = "pipeline_loss"
    for k, n, d in _PIPE_SHAPES:
        mesh = stage_mesh(k)
        params, x, y = _pipe_inputs(k, n, d)
        args = _pipe_placed(mesh, params, x, y)
        where = _say(
            "where_mesh", mesh=_mesh_name(mesh), shapes=f"w {params['w'].shape}, b {params['b'].shape}, x {x.shape}"
        )
        program = _bound(fn, mesh)
        out, compiled = _run(name, program, *args)
        _expect_float32(name, out, where)
        if tuple(out.shape) != ():
            fail(_say("shape", name=name, want=(), got=tuple(out.shape), where=where))
        _expect_layout(name, out, (), where)
        want = ((_pipe_outputs(params, x) - y) ** 2).mean()
        if not same_values(np.asarray(out, np.float64), want, 1e-4):
            hint = _diagnosed(np.asarray(out, np.float64), _pipe_wrongs(params, x, y)) or _say("pipe_generic")
            fail(_say("values", name=name, where=where, want=_fmt(want), got=_fmt(out), hint=hint))
        if k == _PIPE_SHAPES[0][0]:  # the gradient and the communication on 8 devices, as the grader reads them
            _expect_pipeline_gradient(name, program, args, mesh, (params, x, y), where)
            first = compiled, mesh
    rules = {
        "refused": "all_gather",
        "refused_key": "pipe_whole_model",
        "need": f"ppermute over '{STAGES}'",
        "why": _say("pipe_no_ppermute_why"),
        "allowed": (f"ppermute over '{STAGES}'", f"psum over '{STAGES}'"),
    }
    _expect_collectives(name, *first, rules)


def _expect_pipeline_gradient(name, program, args, mesh, host, where) -> None:
    params, x, y = host
    with explained(name, rules=_rules(name)), jax.set_mesh(mesh):  # a zero gradient is made on the mesh
        grads = jax.jit(jax.grad(program))(*args)
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
        cases[f"k{k}"] = Case(_bound(fn, mesh), *_pipe_abstract(mesh, k, n, d), rtol=1e-4, atol=1e-4)
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


def _check_moe_layer(fn: Callable) -> None:
    name = "moe_layer"
    for k, t, d in _MOE_SHAPES:
        mesh = expert_mesh(k)
        x, router, w = _moe_inputs(k, t, d)
        args = _moe_placed(mesh, x, router, w)
        where = _say("where_mesh", mesh=_mesh_name(mesh), shapes=f"x {x.shape}, router {router.shape}, w {w.shape}")
        out, compiled = _run(name, _bound(fn, mesh), *args)
        _expect_float32(name, out, where)
        if tuple(out.shape) != x.shape:
            fail(_say("shape", name=name, want=x.shape, got=tuple(out.shape), where=where))
        _expect_layout(name, out, (EXPERTS,), where)
        want, got = _moe_np(x, router, w, k), np.asarray(out, np.float64)
        if not same_values(got, want, 1e-4):
            wrongs = [
                (_moe_np(x, router, w, k, capacity=None), "moe_no_capacity"),
                (_moe_np(x, router, w, k, gated=False), "moe_no_gate"),
                (_moe_np(x, router, w, k, per_device=False), "moe_global_capacity"),
            ]
            hint = _diagnosed(got, wrongs) or _say("moe_generic")
            _fail_rows(name, where, want, got, hint)
        if k == _MOE_SHAPES[0][0]:  # the communication on 8 devices, as the grader reads it
            first = compiled, mesh
    rules = {
        "refused": "all_gather",
        "refused_key": "moe_gathers",
        "need": f"all_to_all over '{EXPERTS}'",
        "why": _say("moe_no_all_to_all_why"),
        "allowed": (f"all_to_all over '{EXPERTS}'",),
    }
    _expect_collectives(name, *first, rules)


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
        cases[f"k{k}"] = Case(_bound(fn, mesh), *_moe_abstract(mesh, k, t, d), rtol=1e-4, atol=1e-4)
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
    return [
        (_attention_np(q, k, v, np.ones((n, n), bool)), "ring_no_mask"),
        (_attention_np(q, k, v, local), "ring_local_mask"),
        (per_block, "ring_per_block"),
        (_attention_np(q, k, v, short), "ring_short"),
    ]


def _check_causal_ring_attention(fn: Callable) -> None:
    name = "causal_ring_attention"
    for k, b, h in _RING_SHAPES:
        mesh = sequence_mesh(k)
        q, kk, v = _ring_inputs(k, b, h)
        args = [jax.device_put(a, NamedSharding(mesh, P(SEQUENCE))) for a in (q, kk, v)]
        where = _say("where_mesh", mesh=_mesh_name(mesh), shapes=f"q, k, v {q.shape}")
        out, compiled = _run(name, _bound(fn, mesh), *args)
        _expect_float32(name, out, where)
        if tuple(out.shape) != q.shape:
            fail(_say("shape", name=name, want=q.shape, got=tuple(out.shape), where=where))
        _expect_layout(name, out, (SEQUENCE,), where)
        pos = np.arange(q.shape[0])
        want, got = _attention_np(q, kk, v, pos[None, :] <= pos[:, None]), np.asarray(out, np.float64)
        if not same_values(got, want, 1e-4):
            hint = _diagnosed(got, _ring_wrongs(q, kk, v, k)) or _say("ring_generic")
            _fail_rows(name, where, want, got, hint)
        if k == _RING_SHAPES[0][0]:  # the communication on 8 devices, as the grader reads it
            first = compiled, mesh
    rules = {
        "refused": "all_gather",
        "refused_key": "ring_gathers",
        "need": f"ppermute over '{SEQUENCE}'",
        "why": _say("ring_no_ppermute_why"),
        "allowed": (f"ppermute over '{SEQUENCE}'",),
    }
    _expect_collectives(name, *first, rules)


def _observe_causal_ring_attention(fn: Callable) -> dict:
    """Exported programs of `fn(q, k, v, mesh)` (each P(SEQUENCE)) on 8, 4 and 2 devices, and a structure
    case: the reference's ppermute over SEQUENCE and nothing else."""
    cases = {}
    for k, b, h in _RING_SHAPES:
        mesh = sequence_mesh(k)
        blocks = [_on(mesh, (k * b, h), P(SEQUENCE)) for _ in range(3)]
        cases[f"k{k}"] = Case(_bound(fn, mesh), *blocks, rtol=1e-4, atol=1e-4)
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
)
