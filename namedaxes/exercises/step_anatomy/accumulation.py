"""Exercise 3: `accumulate_grads`, gradients accumulated over microbatches, reduced once."""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from namedaxes import zero as zr
from namedaxes.checking import exercises_for, explained, fail, show_values
from namedaxes.checking.compiled import compiled_once
from namedaxes.checking.traced import shard_map_axes
from namedaxes.grading import Case, programs
from namedaxes.judging import COMPILER_OPTIONS, work_of
from namedaxes.judging.hlo import collectives_where
from namedaxes.judging.runs import runs_of
from namedaxes.meshes import abstract_on as _on

from .text import say

exercise = exercises_for(__package__)  # this notebook's exercises: exercise(name, check, hints=..., observe=...)

# ---------------------------------------------------------------- 3. accumulate_grads
_ACC_SIZES = (32, 64, 16)  # d, hidden, microbatch size (split over 8 devices)


# The bytes one device receives through collectives in one call (`Work.sent_bytes`), at most this many times
# the reference's (one gradient's, reduced once): a reduction per microbatch is m times it.
_ACC_SENT_FACTOR = 1.5


def _acc_inputs(mesh, m, d=32, hidden=64, batch=16, seed=2):
    params = {k: jax.device_put(v, NamedSharding(mesh, P())) for k, v in zr.mlp_params(d, hidden, seed).items()}
    xs, ys = zr.regression_data((m, batch), d, seed)
    return params, *(jax.device_put(a, NamedSharding(mesh, P(None, zr.ZERO))) for a in (xs, ys))


def _reduces_in_loop(text: str, n_devices: int) -> bool:
    """Does an all-reduce of the optimized module run more than once per call (in a loop's body, through
    whatever the body calls), as the judge counts runs (`namedaxes.judging.runs.runs_of`)?"""
    runs = runs_of(text)
    return any(op == "all-reduce" and runs.get(where, 0) > 1 for op, *_, where in collectives_where(text, n_devices))


@functools.cache
def _acc_expected(m: int) -> tuple:
    """The check's inputs for m microbatches and the mean gradient on them (computed once per kernel)."""
    mesh = zr.zero_mesh()
    args = _acc_inputs(mesh, m)
    with jax.set_mesh(mesh):
        return args, jax.jit(zr.accumulate_naive)(*args)


def _check_accumulate_grads(fn: Callable) -> None:
    name = "accumulate_grads"
    mesh = zr.zero_mesh()
    for m in (1, 4, 8):
        args, want = _acc_expected(m)
        with explained(name), jax.set_mesh(mesh):
            lowered = jax.jit(fn).lower(*args)
            compiled = compiled_once(lowered, COMPILER_OPTIONS)
            out = compiled(*args)
        if (
            not isinstance(out, dict)
            or set(out) != set(want)
            or not all(isinstance(v, jax.Array) for v in out.values())
        ):
            fail(say("acc_type", name=name, keys="'w1', 'w2'", got=repr(type(out).__name__)))
        for key in want:
            got, w = np.asarray(out[key], np.float64), np.asarray(want[key], np.float64)
            if got.shape != w.shape or not np.allclose(got, w, rtol=1e-4, atol=1e-6):
                hint = (
                    say("acc_sum_hint")
                    if got.shape == w.shape and np.allclose(got, m * w, 1e-4, 1e-6)
                    else say("acc_generic")
                )
                fail(
                    say(
                        "acc_values",
                        name=name,
                        m=m,
                        key=key,
                        want=show_values(w.ravel(), dtype=float, threshold=8),
                        got=show_values(got.ravel(), dtype=float, threshold=8),
                        hint=hint,
                    )
                )
            spec = tuple(getattr(out[key].sharding, "spec", ()))
            if any(e is not None for e in spec):
                fail(say("acc_layout", name=name, key=key, got=repr(out[key].sharding.spec), m=m))
        with jax.set_mesh(mesh):
            manual = shard_map_axes(fn, *args)  # from the jaxpr: jax 0.12.1 lowers reduced arithmetic by hand
        if manual:
            fail(say("acc_shard_map", name=name, axes=", ".join(repr(a) for a in manual)))
        text = compiled.as_text()
        sent = work_of(compiled, (zr.ZERO,), (mesh.size,), mesh.size, text=text).sent_bytes
        grad = sum(4 * v.size for v in want.values())
        if sent == 0:
            fail(say("acc_no_reduction", name=name, m=m))
        if sent > _ACC_SENT_FACTOR * grad:  # the grader's `Case(work={"sent_bytes": ...})`, one gradient's bytes
            count = round(sent / grad, 1)
            count = int(count) if count == int(count) else count  # "4 gradients' worth", not 4.0
            key = "acc_in_loop" if _reduces_in_loop(text, mesh.size) else "acc_count"
            fail(say(key, name=name, m=m, count=count, moved=sent, grad=grad))


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
