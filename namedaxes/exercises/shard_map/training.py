"""Exercises 3 and 4, `dp_train_step` and `jit_train_step`: the weighted data-parallel step, written with
`jax.shard_map` and left to the compiler.
"""

from __future__ import annotations

from collections.abc import Callable

import jax.numpy as jnp
import numpy as np

from namedaxes import DATA_PARALLEL, model
from namedaxes.checking import TEXT as checking_text  # the list separator of the language
from namedaxes.checking import (
    answer_work,
    examined,
    expect_array,
    expect_communication,
    expect_regions,
    expect_work_within,
    f32,
    fail,
    mistake_sentence,
    same_values,
    show_number,
    show_values,
)
from namedaxes.checking.sources import made_whole
from namedaxes.grading import Case, programs, spec
from namedaxes.meshes import line_mesh, with_mesh

from .running import COMPILED_REDUCTIONS, LEARNING_RATE, call_answer, exercise, explained_here
from .text import say


# ---------------------------------------------------------------- 3./4. the weighted training steps
def _padded_weights(k: int, per: int) -> np.ndarray:
    """Device i holds `per - i` real examples (weight 1) and `i` padding examples (weight 0)."""
    return np.concatenate([np.r_[np.ones(per - i), np.zeros(i)] for i in range(k)])


def _visible_training_cases():
    """(devices, params, batch): padding on 8 devices; whole-number weights on 4."""
    x = np.linspace(-1.0, 1.0, 64)
    padded = (
        {"w": f32(1.0), "b": f32(0.0)},
        {"x": f32(x), "y": f32(2.0 * x + 0.5), "weight": f32(_padded_weights(8, 8))},
    )
    r = np.random.RandomState(5)
    x4 = r.uniform(-2.0, 2.0, size=12)
    counts = np.array([3, 1, 2, 1, 1, 3, 2, 2, 1, 3, 3, 1], float)
    other = ({"w": f32(-0.5), "b": f32(0.25)}, {"x": f32(x4), "y": f32(3.0 * x4 - 1.0), "weight": f32(counts)})
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
            say("step_kind_dict", keys=sorted(map(str, out)))
            if isinstance(out, dict)
            else say("step_kind_type", type=type(out).__name__)
        )
        fail(say("step_not_dict", name=name, kind=kind, where=where))
    for key in ("w", "b"):
        value = out[key]
        expect_array(f"{name}(...)['{key}']", value, dtype=jnp.float32)
        if tuple(value.shape) != ():
            hint = say("step_per_device") if value.ndim == 1 else ""
            fail(say("step_not_scalar", name=name, key=key, shape=tuple(value.shape), where=where, hint=hint))


def _weighted_step(old: dict, x, y, weight) -> dict:
    """One SGD step on the weighted loss sum(weight * error²) / sum(weight), in float64 (closed form)."""
    err = old["w"] * x + old["b"] - y
    total = weight.sum()
    grads = {"w": 2.0 * np.sum(weight * err * x) / total, "b": 2.0 * np.sum(weight * err) / total}
    return {key: old[key] - LEARNING_RATE * grads[key] for key in old}


def step_mistakes(params: dict, batch, k: int) -> list[tuple]:
    """The usual mistakes' new parameters (`{'w', 'b'}`) on `batch` split over `k` devices (any positive weights):
    the unweighted step, the mean of the devices' own weighted steps (every device counted equally), the step
    `k` times too large or too small, the weighted sum divided by the number of examples, no step, 100 times
    the step, a step up the gradient (the check's diagnoses, and the grader's)."""
    old = _floats(params)
    x, y, weight = (np.asarray(batch[key], np.float64) for key in ("x", "y", "weight"))
    n = len(weight)
    ref = _weighted_step(old, x, y, weight)

    def scaled(factor: float) -> dict:
        return {key: old[key] + factor * (ref[key] - old[key]) for key in old}

    blocks = [slice(i * n // k, (i + 1) * n // k) for i in range(k)]
    local = [_weighted_step(old, x[s], y[s], weight[s]) for s in blocks]
    return [
        (_weighted_step(old, x, y, np.ones_like(weight)), "step_unweighted", {}),
        ({key: float(np.mean([step[key] for step in local])) for key in old}, "step_devices_equal", {}),
        (scaled(k), "step_k_times", {"k": k}),
        (scaled(1.0 / k), "step_k_small", {"k": k}),
        (scaled(weight.sum() / n), "step_divided_by_examples", {"n": n}),
        (dict(old), "step_unchanged", {}),
        (scaled(100.0), "step_100x", {}),
        (scaled(-1.0), "step_ascent", {}),
    ]


def _diagnose_step(params: dict, batch, k: int, got: dict) -> str:
    return mistake_sentence(say, got, step_mistakes(params, batch, k), 1e-4, otherwise=say("step_other"))


def _check_weighted_step(name: str, fn: Callable, k: int, params, batch, *, shard_map_allowed: bool) -> None:
    mesh = line_mesh(k, DATA_PARALLEL)
    weight = np.asarray(batch["weight"])
    totals = [float(t) for t in weight.reshape(k, -1).sum(axis=1)]
    where = say("step_where", k=k, n=batch["x"].shape[0], weights=show_values(totals, separator=" "))
    with explained_here(name, mesh, shard_map_allowed=shard_map_allowed):
        out = call_answer(fn, params, batch, mesh)
    _expect_params(name, out, where)
    got = _floats(out)
    ref = model.sgd_step_np(_floats(params), _repeated(batch, weight))
    if all(same_values(got[key], ref[key], 1e-4, dtype=float) for key in ref):
        return
    fail(
        say(
            "step_wrong",
            name=name,
            got_w=show_number(got["w"]),
            got_b=show_number(got["b"]),
            where=where,
            want_w=show_number(ref["w"]),
            want_b=show_number(ref["b"]),
            hint=_diagnose_step(params, batch, k, got),
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
    with explained_here(name, mesh):
        facts = examined(lambda p, b: fn(p, b, mesh), params, batch)
    # the grader's steps: the reference's region (params whole, every batch leaf split), no collective the
    # reference does not perform (present is enough: a surplus counts against), a psum that reaches the result
    split = ((DATA_PARALLEL,),)
    expect_regions(name, facts, (((DATA_PARALLEL,), ((), (), split, split, split)),), hint=say("dp_why"))
    moves = [d for d in facts.present if d.split(" over ")[0] not in COMPILED_REDUCTIONS]
    if moves:
        fail(say("dp_gathers", name=name, seen=checking_text["list_sep"].join(moves)))
    expect_communication(name, facts, DATA_PARALLEL, "psum", hint=say("dp_why"))
    _expect_dp_work(name, fn)


# How the work is split (the grader's `Case(work=...)` on every value case, the visible check on 8 devices):
# one device's FLOPs, read from the compiled per-device program, at most `_DP_FLOPS_FACTOR` times the
# reference's (139 on 8 devices and 64 examples, measured from the solution notebook's program on jax 0.10.2; a
# test keeps it within 10 %). Every device's examples summed to every device by a psum of one-hot-placed blocks,
# then the whole batch's step on each, costs 6.3x (8 devices), 4.4x (4) and 2.5x (2); equivalent answers 1.07x
# at most.
_DP_FLOPS_FACTOR = 1.5
_DP_REFERENCE_FLOPS = 139.0


def _expect_dp_work(name: str, fn: Callable) -> None:
    """Each device computes on its own examples: one device's FLOPs (the program the grader compiles, on the
    8-device case) at most `_DP_FLOPS_FACTOR` times the reference's."""
    k, n = _OBSERVED_TRAINING[0]
    mesh = line_mesh(k, DATA_PARALLEL)
    with explained_here(name, mesh):
        work = answer_work(with_mesh(fn, mesh), *_training_args(n))
    expect_work_within(work, "flops", _DP_REFERENCE_FLOPS, _DP_FLOPS_FACTOR, say, "dp_whole_batch", name=name, k=k)


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
    work = {"flops": _DP_FLOPS_FACTOR} if structure else None  # dp_train_step: each device's share judged
    cases = {
        f"k{k}_n{n}": Case(
            with_mesh(fn, line_mesh(k, DATA_PARALLEL)), *_training_args(n), draw=_TRAINING_DRAW, work=work
        )
        for k, n in _OBSERVED_TRAINING
    }
    if structure:
        k, n = _OBSERVED_TRAINING[0]
        cases["structure"] = Case(
            with_mesh(fn, line_mesh(k, DATA_PARALLEL)),
            *_training_args(n),
            draw=_TRAINING_DRAW,
            values=False,
            only_collectives=True,
        )
    return programs(cases)


def _observe_dp_train_step(fn: Callable) -> dict:
    return _observe_training(fn, structure=True)


dp_train_step = exercise("dp_train_step", _check_dp_train_step, observe=_observe_dp_train_step)


def _check_jit_train_step(fn: Callable) -> None:
    name = "jit_train_step"
    for k, params, batch in _visible_training_cases():
        _check_weighted_step(name, fn, k, params, batch, shard_map_allowed=False)
    mesh, params, batch = _training_probe()
    with explained_here(name, shard_map_allowed=False):
        facts = examined(lambda p, b: fn(p, b, mesh), params, batch)
    if facts.found:  # a shard_map of its own: the grader's signature step fails it
        seen = checking_text["list_sep"].join(facts.present) or say("seen_nothing")
        fail(say("jit_writes_collectives", name=name, seen=seen))
    # the compiler's all-reduce: a global-view program has no collective of its own to perturb, so the
    # judge (and the grader) count what the optimized program performs (`namedaxes.judging.examine`)
    if f"psum over '{DATA_PARALLEL}'" not in facts.matters:
        with explained_here(name, shard_map_allowed=False):  # the split batch made whole again inside the step
            whole = sorted(set(made_whole(lambda p, b: fn(p, b, mesh), params, batch)))
        seen = checking_text["list_sep"].join(whole)
        fail(say("jit_gathers_batch", name=name, seen=seen) if whole else say("jit_no_all_reduce", name=name))


def _observe_jit_train_step(fn: Callable) -> dict:
    """Like `dp_train_step`'s value cases; the reference program has no per-device (shard_map) region,
    so an answer that writes one fails the signature, and its compiled all-reduce must be there."""
    return _observe_training(fn, structure=False)


jit_train_step = exercise("jit_train_step", _check_jit_train_step, observe=_observe_jit_train_step)
