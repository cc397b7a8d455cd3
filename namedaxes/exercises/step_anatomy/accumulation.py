"""Exercise 3: `accumulate_grads`, gradients accumulated over microbatches, reduced once."""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from namedaxes import zero as zr
from namedaxes.checking import answer_work, expect_work_within, explained, fail, fail_values, mistake_sentence
from namedaxes.checking.compiled import compiled_once
from namedaxes.checking.traced import shard_map_axes
from namedaxes.grading import Case, programs
from namedaxes.judging import COMPILER_OPTIONS, reductions_on
from namedaxes.meshes import abstract_on

from .running import exercise
from .text import say

# ---------------------------------------------------------------- 3. accumulate_grads
_ACC_SIZES = (32, 64, 16)  # d, hidden, microbatch size (split over 8 devices)


# The reductions: the bytes the program's types reduce over ZERO in one call (`Work.reduced_bytes`, read from the
# exported program's types by `judging.exported_reductions`: the grader's figure and the visible check's), at most
# this many times the reference's (one gradient's, reduced once): a reduction per microbatch is m times it. The
# types are the same wherever the program is compiled: XLA on a TPU v5e merges the m all-reduces of the naive loop
# into one, so the bytes its compiled program sends (`Work.sent_bytes`) would pass it, where its types do not.
_ACC_REDUCED_FACTOR = 1.5

# Microbatches really accumulated (the grader's `Case(work=...)` on its work case, the visible check alike): the
# largest array one device materializes, read from the compiled per-device program, at most `_ACC_LARGEST_FACTOR`
# times the reference's, one microbatch's hidden activations (`_ACC_REFERENCE_LARGEST`; a test keeps it true).
# The work case's model is narrow and its microbatches long, so that the activations outweigh the parameters: all
# microbatches concatenated into one batch and one gradient taken hold m = 8 microbatches' activations at once, 8x.
_ACC_WORK_SIZES, _ACC_WORK_M = (8, 512, 256), 8  # d, hidden, microbatch size (split over 8 devices); microbatches
_ACC_LARGEST_FACTOR = 2.0
_ACC_REFERENCE_LARGEST = 4 * _ACC_WORK_SIZES[1] * _ACC_WORK_SIZES[2] // 8


def _acc_inputs(mesh, m, d=32, hidden=64, batch=16, seed=2):
    params = {k: jax.device_put(v, NamedSharding(mesh, P())) for k, v in zr.mlp_params(d, hidden, seed).items()}
    xs, ys = zr.regression_data((m, batch), d, seed)
    return params, *(jax.device_put(a, NamedSharding(mesh, P(None, zr.ZERO))) for a in (xs, ys))


@functools.cache
def _acc_expected(m: int) -> tuple:
    """The check's inputs for m microbatches and the mean gradient on them (computed once per kernel)."""
    mesh = zr.zero_mesh()
    args = _acc_inputs(mesh, m)
    with jax.set_mesh(mesh):
        return args, jax.jit(zr.accumulate_naive)(*args)


def _mean_gradient(w1, w2, xs, ys) -> dict:
    """The mean over the microbatches of `zr.mlp_loss`'s gradient, in NumPy (float64), by output path."""
    w1, w2 = np.asarray(w1, np.float64), np.asarray(w2, np.float64)
    total = {"w1": np.zeros_like(w1), "w2": np.zeros_like(w2)}
    for x, y in zip(np.asarray(xs, np.float64), np.asarray(ys, np.float64)):
        h = np.tanh(x @ w1)
        d_out = 2.0 * (h @ w2 - y) / y.size  # the derivative of the mean of the squares
        total["w2"] += h.T @ d_out
        total["w1"] += x.T @ ((d_out @ w2.T) * (1.0 - h * h))
    return {f"['{k}']": v / len(xs) for k, v in total.items()}


def accumulate_mistakes(w1, w2, xs, ys) -> list[tuple]:
    """The usual mistakes' results on one case's inputs (the parameters' leaves `w1`, `w2`, then `xs`, `ys`), by
    output path: the microbatches' gradients summed, not averaged (m times the mean). The check's diagnosis,
    and the grader's (`mistakes.known_mistakes`)."""
    m = len(xs)
    return [({path: m * g for path, g in _mean_gradient(w1, w2, xs, ys).items()}, "acc_sum_hint", {})]


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
                mine = {f"['{k}']": np.asarray(v, np.float64) for k, v in out.items()}
                found = accumulate_mistakes(args[0]["w1"], args[0]["w2"], *args[1:])
                hint = mistake_sentence(say, mine, found, 1e-4, otherwise=say("acc_generic"))
                fail_values(
                    say,
                    "acc_values",
                    w.ravel(),
                    got.ravel(),
                    dtype=float,
                    threshold=8,
                    name=name,
                    m=m,
                    key=key,
                    hint=hint,
                )
            spec = tuple(getattr(out[key].sharding, "spec", ()))
            if any(e is not None for e in spec):
                fail(say("acc_layout", name=name, key=key, got=repr(out[key].sharding.spec), m=m))
        with jax.set_mesh(mesh):
            manual = shard_map_axes(fn, *args)  # from the jaxpr: jax 0.12.1 lowers reduced arithmetic by hand
        if manual:
            fail(say("acc_shard_map", name=name, axes=", ".join(repr(a) for a in manual)))
        _expect_one_reduction(name, fn, args, m, sum(4 * v.size for v in want.values()))
    _expect_accumulated(name, fn)


def _expect_one_reduction(name: str, fn: Callable, args: tuple, m: int, grad: int) -> None:
    """One gradient's worth reduced over ZERO, counted from the exported program's types (the grader's
    `Work.reduced_bytes`: the same on every backend), each reduction as often as it runs (a loop whose trip count only
    its data decide as often as it runs on the check's inputs, `judging.reductions_on`); none inside a loop."""
    mesh = zr.zero_mesh()
    with explained(name), jax.set_mesh(mesh):
        exp = jax.export.export(jax.jit(fn))(*args)
        found = reductions_on(exp, jax.tree_util.tree_leaves(args))
    if found.uncounted:  # the grader's `work_reduced_unknown`: a figure it cannot establish is refused
        fail(say("acc_loop_unknown", name=name, m=m))
    if found.nbytes == 0:
        fail(say("acc_no_reduction", name=name, m=m))
    if found.nbytes > _ACC_REDUCED_FACTOR * grad:  # the grader's `Case(work={"reduced_bytes": ...})`
        key = ("acc_in_loop_run" if found.measured else "acc_in_loop") if found.in_loop else "acc_count"
        count = round(found.nbytes / grad, 1)
        count = int(count) if count == int(count) else count  # "4 gradients' worth", not 4.0
        fail(say(key, name=name, m=m, count=count, moved=found.nbytes, grad=grad))


def _acc_work_args(mesh) -> tuple:
    d, hidden, batch = _ACC_WORK_SIZES
    params = {"w1": abstract_on(mesh, (d, hidden), P()), "w2": abstract_on(mesh, (hidden, d), P())}
    return params, *(abstract_on(mesh, (_ACC_WORK_M, batch, d), P(None, zr.ZERO)) for _ in range(2))


def _expect_accumulated(name: str, fn: Callable) -> None:
    """The microbatches one after another: the largest array one device of the work case materializes (read from
    the compiled per-device program, as the grader reads it) is at most `_ACC_LARGEST_FACTOR` times one
    microbatch's activations."""
    mesh = zr.zero_mesh()
    with explained(name), jax.set_mesh(mesh):
        work = answer_work(fn, *_acc_work_args(mesh))
    d, hidden, batch = _ACC_WORK_SIZES
    fields = {"name": name, "m": _ACC_WORK_M, "d": d, "hidden": hidden, "batch": batch}
    expect_work_within(
        work, "largest_bytes", _ACC_REFERENCE_LARGEST, _ACC_LARGEST_FACTOR, say, "acc_one_batch", **fields
    )


def _acc_case(fn, m: int, **kwargs) -> Case:
    mesh = zr.zero_mesh()
    d, hidden, batch = _ACC_SIZES
    params = {"w1": abstract_on(mesh, (d, hidden), P()), "w2": abstract_on(mesh, (hidden, d), P())}
    xs, ys = (abstract_on(mesh, (m, batch, d), P(None, zr.ZERO)) for _ in range(2))
    return Case(fn, params, xs, ys, rtol=1e-4, atol=1e-6, context=functools.partial(jax.set_mesh, mesh), **kwargs)


def _observe_accumulate_grads(fn: Callable) -> dict:
    """Exported for m = 2 and m = 8 microbatches: values, the result whole on every device, the bytes its types
    reduce (each reduction as often as it runs) within `_ACC_REDUCED_FACTOR` of the reference's, and (m = 8)
    peak memory within 1.5x of the reference's; and the work case (`_ACC_WORK_SIZES`): the largest array one
    device holds within `_ACC_LARGEST_FACTOR` of the reference's, one microbatch's activations."""
    sent = {"reduced_bytes": _ACC_REDUCED_FACTOR}
    mesh = zr.zero_mesh()
    cases = {"m2": _acc_case(fn, 2, work=sent), "m8": _acc_case(fn, 8, work={"peak_bytes": 1.5, **sent})}
    cases["m8_work"] = Case(
        fn,
        *_acc_work_args(mesh),
        rtol=1e-4,
        atol=1e-6,
        context=functools.partial(jax.set_mesh, mesh),
        work={"largest_bytes": _ACC_LARGEST_FACTOR},
    )
    return programs(cases)


accumulate_grads = exercise("accumulate_grads", _check_accumulate_grads, observe=_observe_accumulate_grads)
