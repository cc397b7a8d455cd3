"""Exercises of notebook 11 (`11_step_anatomy`): what a training step holds and moves.

1. `mixed_train_step(params, state, window)`: notebook 10's transformer step with its matmuls in bfloat16
   and its master weights and Adam state in float32 (mixed precision). Judged on the output dtypes, on
   the dtypes of the matmuls the program asks for (the lowered program: the CPU backend computes a bf16
   matmul in float32 internally, a TPU in bf16) and on values within a stated tolerance (rtol 1e-3,
   atol 1e-5) of the reference mixed step: a float32 step differs from it by bf16's rounding of every
   gradient, far more than the tolerance.
2. `zero_specs(stage)`: ZeRO's stages 1, 2 and 3 as three `PartitionSpec`s (parameters, gradients,
   optimizer state) over ZERO. `namedaxes.zero.zero_step` builds the step the specs describe; the check
   and the grader judge that step: each device's stored bytes (input layouts, peak memory within 1.25x
   of the reference's) and its collectives (only the reference's kinds: a reduce-scatter of the
   gradients from stage 2 on).
3. `accumulate_grads(params, xs, ys)`: the mean gradient of `namedaxes.zero.mlp_loss` over m
   microbatches, the batch split over ZERO, with one reduction whatever m is (gradients left unreduced:
   `P(reduced=...)` / `P(unreduced=...)`, or `lax.pcast(..., to='varying')` and one `psum` under
   `shard_map`). The check and the grader count the reductions alike: the bytes the collectives deliver
   to one device in one call (`Work.sent_bytes`, a loop's body counted as often as it runs, so a reduction
   inside a `lax.scan` counts m times), within 1.5x of one gradient's; the grader also judges values and
   peak memory (within 1.5x of the reference's: m reduced gradients kept alive cost m times the memory).

Grading contract (`namedaxes.grading.programs`): every observation is exported programs, judged outside
the kernel on the grader's own inputs.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from namedaxes import transformer as tm
from namedaxes import zero as zr
from namedaxes.checking import exercises_for, explained, fail, progress_of, show_values
from namedaxes.checking.compiled import compiled_once
from namedaxes.grading import Case, programs
from namedaxes.i18n import Messages
from namedaxes.judging import COMPILER_OPTIONS, work_of
from namedaxes.meshes import abstract_on as _on

__all__ = ["mixed_train_step", "zero_specs", "accumulate_grads", "STAGES", "SPEC_KEYS", "TEXT", "progress"]
exercise = exercises_for(__name__)
progress = progress_of(__name__)

STAGES = (1, 2, 3)
SPEC_KEYS = ("params", "grads", "opt_state")

TEXT = {
    "result_tuple": "`{name}` should return {want}; it returned {got}.",
    "dtype": ("`{name}` returns {what} as {got}: {why}"),
    "dtype_master": "mixed precision keeps the master weights in float32 (bf16 would round Adam's small updates away).",
    "dtype_state": "Adam's moments stay in float32: they are sums of many small gradients.",
    "dtype_loss": "report the loss in float32.",
    "mixed_fp32_dots": (
        "`{name}` returns float32 results, but {count} of its {total} matmuls multiply float32 arrays: cast "
        "the parameters to bfloat16 before the forward pass (`a.astype(jnp.bfloat16)`), so that every matmul "
        "runs in bf16."
    ),
    "mixed_other_dtype": (
        "`{name}` multiplies {dtype} arrays: the exercise asks for bfloat16 (bf16: float32's exponent, 8 bits "
        "of mantissa), which needs no loss scaling."
    ),
    "mixed_values": (
        "`{name}` has the wrong values (mesh {mesh}): {what} differs from the mixed-precision reference by up to "
        "{diff} (allowed: rtol 1e-3, atol 1e-5). {hint}"
    ),
    "mixed_hint": (
        "Compute the loss of the bf16 copy, take its gradient with respect to the float32 parameters "
        "(the cast's gradient casts back), and let Adam update the float32 parameters and state."
    ),
    # 2. zero_specs
    "specs_type": (
        "`zero_specs({stage})` should return a dict with the keys 'params', 'grads' and 'opt_state', each a "
        "`PartitionSpec`; it returned {got}."
    ),
    "specs_value": (
        "`zero_specs({stage})['{key}']` is {got}: each array is either whole on every device, `P()`, or split "
        "by rows over ZERO, `P(ZERO)`."
    ),
    "specs_stored": (
        "`zero_specs({stage})` stores {key} {got} on each device, but ZeRO stage {stage} stores them {want}. {why}"
    ),
    "stored_whole": "whole",
    "stored_split": "split (1/{n} of the rows)",
    "why_opt_state": (
        "Every stage splits the optimizer state: Adam's two moments are 8 of the 12 bytes a parameter "
        "costs, the first thing worth splitting."
    ),
    "why_grads_1": (
        "Stage 1 keeps the gradients whole: they are all-reduced, and each device then takes the rows it updates."
    ),
    "why_grads_2": (
        "From stage 2 on the gradients are split too: each device keeps only the rows it updates, so they are "
        "reduce-scattered (half an all-reduce's bytes) and never held whole after the step."
    ),
    "why_params_12": "Stages 1 and 2 keep the parameters whole: the updated rows are all-gathered after the update.",
    "why_params_3": "Stage 3 stores the parameters split as well, and gathers them before the forward pass.",
    "specs_collectives": (
        "`zero_specs({stage})` gives a step that performs {seen}; ZeRO stage {stage} performs {want}."
    ),
    # 3. accumulate_grads
    "acc_type": (
        "`{name}` should return a dict of gradients with the keys {keys}, each a `jax.Array`; it returned {got}."
    ),
    "acc_values": (
        "`{name}` has the wrong values for m = {m}: `{key}` should be the mean gradient over the microbatches, "
        "{want}, but it is {got}. {hint}"
    ),
    "acc_sum_hint": "That is the sum over the microbatches: divide by m.",
    "acc_generic": "Compare with `zr.accumulate_naive` on the same inputs.",
    "acc_layout": (
        "`{name}` returns `{key}` laid out as {got} for m = {m}: the mean gradient should be whole on every "
        "device (`P()`), reduced once at the end."
    ),
    "acc_count": (
        "`{name}` returns the right mean gradient, but for m = {m} its compiled program reduces {count} "
        "gradients' worth of bytes ({moved:,} bytes of collectives on each device, each counted as often as "
        "it runs; a gradient is {grad:,}). Leave each microbatch's gradient unreduced, add them, and reduce once."
    ),
    "acc_in_loop": (
        "`{name}` returns the right mean gradient, but its compiled program reduces inside a loop's body "
        "(`lax.scan` or `lax.fori_loop`): once per microbatch, {count} gradients' worth of bytes for m = {m}. "
        "Accumulate the unreduced gradients in the loop and reduce once after it."
    ),
    "acc_shard_map": (
        "`{name}` returns the right mean gradient, but it is written per device with `jax.shard_map` (over {axes}). "
        "This exercise is the Explicit-axes half: mark the parameters `P(reduced={{ZERO}})` with `jax.reshard` and "
        "reduce the sum with `jax.reshard(total, P())`; the compiler writes the all-reduce."
    ),
    "acc_no_reduction": (
        "`{name}` returns the right values, but its compiled program reduces nothing over ZERO for m = {m}."
    ),
}
TEXT = Messages(TEXT)
_say = TEXT.say
_fmt = functools.partial(show_values, dtype=float, threshold=8)


# ---------------------------------------------------------------- 1. mixed_train_step
CHECK_CONFIG = tm.Config(vocab=32, d_model=16, heads=2, layers=1, seq=8)  # small: a fast compile
_MIXED_LAYOUT = (2, 4, 1)
_MIXED_BATCH = 8
_DOT_RE = re.compile(r"stablehlo\.dot_general[^\n]*?:\s*\(tensor<([^>]*)>,\s*tensor<([^>]*)>\)")


def _to_bf16(tree):
    return jax.tree.map(lambda a: a.astype(jnp.bfloat16), tree)


def _reference_mixed(params, state, window):
    """The solution's step (the values the check compares with)."""

    def loss(p):
        logits = tm.forward(_to_bf16(p), window[:, :-1])
        return tm.cross_entropy(logits.astype(jnp.float32), window[:, 1:])

    value, grads = jax.value_and_grad(loss)(params)
    updates, state = tm.OPTIMIZER.update(grads, state, params)
    return optax.apply_updates(params, updates), state, value


def _mixed_inputs(config, layout, batch, seed=0):
    mesh = tm.layout_mesh(*layout)
    params = tm.place(tm.init_params(config, seed), mesh)
    with jax.set_mesh(mesh):
        state = jax.jit(tm.OPTIMIZER.init)(params)
    window = jax.device_put(tm.batches(config, batch, 1, seed)[0], NamedSharding(mesh, P(tm.BATCH)))
    return mesh, params, state, window


def dot_dtypes(lowered_text: str) -> list[str]:
    """The element types of every matmul's operands in a lowered (StableHLO) module: what the program asks
    for, before a backend's own choices (the CPU computes a bf16 matmul in float32)."""
    return [t.split("x")[-1] for pair in _DOT_RE.findall(lowered_text) for t in pair]


def _expect_mixed_outputs(name, out, params) -> None:
    if not (isinstance(out, tuple) and len(out) == 3):
        fail(_say("result_tuple", name=name, want="(params, state, loss)", got=type(out).__name__))
    new_params, state, loss = out
    for key, a in new_params.items():
        if a.dtype != jnp.float32:
            fail(_say("dtype", name=name, what=f"params['{key}']", got=a.dtype, why=_say("dtype_master")))
    for a in jax.tree.leaves(state[0].mu) + jax.tree.leaves(state[0].nu):
        if a.dtype != jnp.float32:
            fail(_say("dtype", name=name, what="Adam's moments", got=a.dtype, why=_say("dtype_state")))
    if jnp.asarray(loss).dtype != jnp.float32:
        fail(_say("dtype", name=name, what="the loss", got=jnp.asarray(loss).dtype, why=_say("dtype_loss")))


@functools.cache
def _mixed_expected():
    """The check's inputs and the reference step's results on them (computed once per kernel)."""
    mesh, params, state, window = _mixed_inputs(CHECK_CONFIG, _MIXED_LAYOUT, _MIXED_BATCH)
    with jax.set_mesh(mesh):
        want = jax.jit(_reference_mixed).lower(params, state, window).compile(COMPILER_OPTIONS)(params, state, window)
    return mesh, params, state, window, want


def _check_mixed_train_step(fn: Callable) -> None:
    name = "mixed_train_step"
    mesh, params, state, window, want = _mixed_expected()
    with explained(name), jax.set_mesh(mesh):
        lowered = jax.jit(fn).lower(params, state, window)
        out = compiled_once(lowered, COMPILER_OPTIONS)(params, state, window)  # as the grader compiles
    _expect_mixed_outputs(name, out, params)
    dots = dot_dtypes(lowered.as_text())
    others = sorted({d for d in dots if d not in ("bf16", "f32")})
    if others:
        fail(_say("mixed_other_dtype", name=name, dtype=others[0]))
    fp32 = sum(1 for i in range(0, len(dots), 2) if "f32" in dots[i : i + 2])
    if fp32:
        fail(_say("mixed_fp32_dots", name=name, count=fp32, total=len(dots) // 2))
    got_leaves = {"loss": out[2], **{f"params['{k}']": v for k, v in out[0].items()}}
    got_leaves.update({f"mu['{k}']": v for k, v in out[1][0].mu.items()})
    want_leaves = {"loss": want[2], **{f"params['{k}']": v for k, v in want[0].items()}}
    want_leaves.update({f"mu['{k}']": v for k, v in want[1][0].mu.items()})
    for key, w in want_leaves.items():
        g, w = np.asarray(got_leaves[key], np.float64), np.asarray(w, np.float64)
        if g.shape != w.shape or not np.allclose(g, w, rtol=1e-3, atol=1e-5):
            diff = float(np.max(np.abs(g - w))) if g.shape == w.shape else float("inf")
            fail(
                _say(
                    "mixed_values", name=name, mesh=_MIXED_LAYOUT, what=key, diff=f"{diff:.2e}", hint=_say("mixed_hint")
                )
            )


def _mixed_case(fn, config, layout, batch, **kwargs) -> Case:
    mesh = tm.layout_mesh(*layout)
    shapes = tm.shapes(config)
    params = {k: _on(mesh, shapes[k], tm.RULES[k]) for k in shapes}
    window = _on(mesh, (batch, config.seq + 1), P(tm.BATCH), jnp.int32)

    def step(params, window):  # Adam's state made inside: its moments start at zero, as in training
        new_params, state, loss = fn(params, tm.OPTIMIZER.init(params), window)
        return new_params, state[0].mu, state[0].nu, loss  # plain dicts: an exported tree names no Optax type

    return Case(
        step,
        params,
        window,
        draw={"kind": "normal", "scale": 0.5, "high": 27},
        rtol=1e-3,
        atol=1e-5,
        context=functools.partial(jax.set_mesh, mesh),
        **kwargs,
    )


def _observe_mixed_train_step(fn: Callable) -> dict:
    """Exported steps on two layouts of a hidden model size (values within rtol 1e-3, atol 1e-5 of the
    reference's; the largest array on a device at most twice the reference's)."""
    config = tm.Config(vocab=32, d_model=16, heads=4, layers=1, seq=8)
    return programs(
        {
            "2x4x1": _mixed_case(fn, config, (2, 4, 1), 8, work={"largest_bytes": 2.0}),
            "1x2x4": _mixed_case(fn, config, (1, 2, 4), 4),
        }
    )


mixed_train_step = exercise(
    "mixed_train_step",
    _check_mixed_train_step,
    hints=[
        "Which arrays must stay float32 (the ones the step returns), and which can be bfloat16 (the ones the "
        "forward and backward passes multiply)?",
        "Inside the loss, cast a bf16 copy of every parameter (`jax.tree.map` with `.astype`), run `tm.forward` on "
        "the copy, and cast the logits to float32 before `tm.cross_entropy`.",
        "Differentiate that loss with respect to the float32 `params` (`jax.value_and_grad`): the cast's gradient "
        "is float32. The rest is `tm.train_step`'s: Adam's update of the float32 parameters and state.",
    ],
    observe=_observe_mixed_train_step,
)


# ---------------------------------------------------------------- 2. zero_specs
_SPLIT = {  # which arrays each stage splits (the stored bytes the check compares)
    1: {"params": False, "grads": False, "opt_state": True},
    2: {"params": False, "grads": True, "opt_state": True},
    3: {"params": True, "grads": True, "opt_state": True},
}
_WANT_COLLECTIVES = {
    1: ("all_gather", "psum"),
    2: ("all_gather", "psum", "psum_scatter"),
    3: ("all_gather", "psum", "psum_scatter"),
}
_WHY = {
    "opt_state": {1: "why_opt_state", 2: "why_opt_state", 3: "why_opt_state"},
    "grads": {1: "why_grads_1", 2: "why_grads_2", 3: "why_grads_2"},
    "params": {1: "why_params_12", 2: "why_params_12", 3: "why_params_3"},
}


def _entries(spec) -> tuple:
    """A spec's entries without its trailing `None`s: `P(ZERO, None)` is `P(ZERO)`, `P(None)` is `P()`."""
    entries = list(spec)
    while entries and entries[-1] is None:
        entries.pop()
    return tuple(entries)


def _specs_of(name_stage: int, got) -> dict:
    if not isinstance(got, dict) or set(got) != set(SPEC_KEYS):
        fail(_say("specs_type", stage=name_stage, got=repr(got)[:120]))
    for key in SPEC_KEYS:
        spec = got[key]
        if not isinstance(spec, P) or _entries(spec) not in ((), (zr.ZERO,)):
            fail(_say("specs_value", stage=name_stage, key=key, got=repr(spec)[:80]))
    return got


def _split(spec) -> bool:
    return _entries(spec) == (zr.ZERO,)


def _zero_inputs(mesh, specs, d=32, hidden=64, batch=64):
    params, state = zr.place(zr.mlp_params(d, hidden), mesh, specs)
    x, y = zr.regression_data((batch,), d)
    data = [jax.device_put(a, NamedSharding(mesh, P(zr.ZERO))) for a in (x, y)]
    return params, state, *data


def _kinds(compiled, mesh) -> tuple:
    work = work_of(compiled, (zr.ZERO,), (mesh.size,), mesh.size)
    return tuple(sorted(d.split(" over ")[0] for d, _ in work.moved))


def _check_zero_specs(fn: Callable) -> None:
    mesh = zr.zero_mesh()
    for stage in STAGES:
        with explained("zero_specs"):
            specs = _specs_of(stage, fn(stage))
        for key in ("opt_state", "grads", "params"):
            if _split(specs[key]) != _SPLIT[stage][key]:
                got, want = (
                    _say("stored_split", n=mesh.size) if s else _say("stored_whole")
                    for s in (_split(specs[key]), _SPLIT[stage][key])
                )
                fail(_say("specs_stored", stage=stage, key=f"'{key}'", got=got, want=want, why=_say(_WHY[key][stage])))
        with jax.set_mesh(mesh):
            args = _zero_inputs(mesh, specs)
            compiled = compiled_once(jax.jit(zr.zero_step(specs, mesh)).lower(*args), COMPILER_OPTIONS)
        kinds = _kinds(compiled, mesh)
        if kinds != _WANT_COLLECTIVES[stage]:
            fail(
                _say("specs_collectives", stage=stage, seen=", ".join(kinds), want=", ".join(_WANT_COLLECTIVES[stage]))
            )


def _zero_case(fn, stage: int, d: int, hidden: int, batch: int) -> Case:
    mesh = zr.zero_mesh()
    specs = fn(stage)
    shapes = {"w1": (d, hidden), "w2": (hidden, d)}
    params = {k: _on(mesh, s, specs["params"]) for k, s in shapes.items()}
    moments = {k: _on(mesh, s, specs["opt_state"]) for k, s in shapes.items()}
    x, y = (_on(mesh, (batch, d), P(zr.ZERO)) for _ in range(2))
    step = zr.zero_step(specs, mesh)

    def exported(params, mu, nu, x, y):  # Adam's state as plain dicts: an exported tree names no Optax type
        state = zr.OPTIMIZER.init(params)
        state = (state[0]._replace(mu=mu, nu=nu), *state[1:])
        params, state, loss = step(params, state, x, y)
        return params, state[0].mu, state[0].nu, loss

    return Case(
        exported,
        params,
        moments,
        moments,
        x,
        y,
        draw={"kind": "uniform", "low": 0.0, "high": 1.0},
        rtol=1e-4,
        atol=1e-5,
        only_collectives=True,
        context=functools.partial(jax.set_mesh, mesh),
        work={"peak_bytes": 1.25},
    )


def _observe_zero_specs(fn: Callable) -> dict:
    """The step each stage's specs give, exported for an MLP of a size the notebook does not show: values,
    input and output layouts, the reference's collectives only, and peak memory within 1.25x."""
    return programs({f"stage{stage}": _zero_case(fn, stage, 48, 96, 32) for stage in STAGES})


zero_specs = exercise(
    "zero_specs",
    _check_zero_specs,
    hints=[
        "Start from plain data parallelism, `zr.STAGE_SPECS_DP`: everything whole. Each stage splits one more "
        "of the three.",
        "In which order? The optimizer state is the largest (two moments per parameter), then the gradients, "
        "then the parameters, which the forward pass needs whole.",
        "Stage 1: `opt_state` `P(ZERO)`; stage 2: `grads` too; stage 3: `params` too. The rest stays `P()`.",
    ],
    observe=_observe_zero_specs,
)


# ---------------------------------------------------------------- 3. accumulate_grads
_ACC_SIZES = (32, 64, 16)  # d, hidden, microbatch size (split over 8 devices)
# The bytes one device receives through collectives in one call (`Work.sent_bytes`), at most this many times
# the reference's (one gradient's, reduced once): a reduction per microbatch is m times it.
_ACC_SENT_FACTOR = 1.5


def _acc_inputs(mesh, m, d=32, hidden=64, batch=16, seed=2):
    params = {k: jax.device_put(v, NamedSharding(mesh, P())) for k, v in zr.mlp_params(d, hidden, seed).items()}
    xs, ys = zr.regression_data((m, batch), d, seed)
    return params, *(jax.device_put(a, NamedSharding(mesh, P(None, zr.ZERO))) for a in (xs, ys))


_MANUAL = re.compile(r"manual_axes\s*=\s*\{([^}]*)\}")  # a shard_map region's axes in the lowered module


def _loop_bodies(text: str) -> set[str]:
    return set(re.findall(r"\bbody=%?([\w.\-]+)", text))


def _reduces_in_loop(text: str) -> bool:
    bodies, current = _loop_bodies(text), None
    for line in text.splitlines():
        head = re.match(r"^\s*%?([\w.\-]+)\s*\(.*\)\s*->.*\{\s*$", line)
        if head:
            current = head.group(1)
        elif current in bodies and ("all-reduce(" in line or "all-reduce-start(" in line):
            return True
    return False


def _check_accumulate_grads(fn: Callable) -> None:
    name = "accumulate_grads"
    mesh = zr.zero_mesh()
    for m in (1, 4, 8):
        args = _acc_inputs(mesh, m)
        with explained(name), jax.set_mesh(mesh):
            lowered = jax.jit(fn).lower(*args)
            compiled = compiled_once(lowered, COMPILER_OPTIONS)
            out = compiled(*args)
            want = jax.jit(zr.accumulate_naive)(*args)
        if (
            not isinstance(out, dict)
            or set(out) != set(want)
            or not all(isinstance(v, jax.Array) for v in out.values())
        ):
            fail(_say("acc_type", name=name, keys="'w1', 'w2'", got=repr(type(out).__name__)))
        for key in want:
            got, w = np.asarray(out[key], np.float64), np.asarray(want[key], np.float64)
            if got.shape != w.shape or not np.allclose(got, w, rtol=1e-4, atol=1e-6):
                hint = (
                    _say("acc_sum_hint")
                    if got.shape == w.shape and np.allclose(got, m * w, 1e-4, 1e-6)
                    else _say("acc_generic")
                )
                fail(
                    _say("acc_values", name=name, m=m, key=key, want=_fmt(w.ravel()), got=_fmt(got.ravel()), hint=hint)
                )
            spec = tuple(getattr(out[key].sharding, "spec", ()))
            if any(e is not None for e in spec):
                fail(_say("acc_layout", name=name, key=key, got=repr(out[key].sharding.spec), m=m))
        manual = sorted({a for body in _MANUAL.findall(lowered.as_text()) for a in re.findall(r'"([^"]+)"', body)})
        if manual:
            fail(_say("acc_shard_map", name=name, axes=", ".join(repr(a) for a in manual)))
        text = compiled.as_text()
        sent = work_of(compiled, (zr.ZERO,), (mesh.size,), mesh.size, text=text).sent_bytes
        grad = sum(4 * v.size for v in want.values())
        if sent == 0:
            fail(_say("acc_no_reduction", name=name, m=m))
        if sent > _ACC_SENT_FACTOR * grad:  # the grader's `Case(work={"sent_bytes": ...})`, one gradient's bytes
            count = round(sent / grad, 1)
            key = "acc_in_loop" if _reduces_in_loop(text) else "acc_count"
            fail(_say(key, name=name, m=m, count=count, moved=sent, grad=grad))


def _acc_case(fn, m: int, **kwargs) -> Case:
    mesh = zr.zero_mesh()
    d, hidden, batch = _ACC_SIZES
    params = {"w1": _on(mesh, (d, hidden), P()), "w2": _on(mesh, (hidden, d), P())}
    xs, ys = (_on(mesh, (m, batch, d), P(None, zr.ZERO)) for _ in range(2))
    return Case(fn, params, xs, ys, rtol=1e-4, atol=1e-6, context=functools.partial(jax.set_mesh, mesh), **kwargs)


def _observe_accumulate_grads(fn: Callable) -> dict:
    """Exported for m = 2 and m = 8 microbatches: values, the result whole on every device, the bytes its
    collectives deliver (each as often as it runs) within `_ACC_SENT_FACTOR` of the reference's, and (m = 8)
    peak memory within 1.5x of the reference's."""
    sent = {"sent_bytes": _ACC_SENT_FACTOR}
    return programs({"m2": _acc_case(fn, 2, work=sent), "m8": _acc_case(fn, 8, work={"peak_bytes": 1.5, **sent})})


accumulate_grads = exercise(
    "accumulate_grads",
    _check_accumulate_grads,
    hints=[
        "`zr.accumulate_naive` reduces each microbatch's gradient as soon as it is made: m reductions. Where "
        "does JAX put that reduction, and how do you tell it to wait?",
        "The gradient of a replicated parameter is reduced because the parameter is replicated. Mark the "
        "parameters `reduced` over ZERO (`jax.reshard(w, P(reduced={ZERO}))`): their gradients come back "
        "`unreduced`, one partial sum per device, with no communication.",
        "Add the m unreduced gradients (the first one starts the sum), then `jax.reshard(total, P())`: one "
        "all-reduce. Divide by m.",
    ],
    observe=_observe_accumulate_grads,
)
