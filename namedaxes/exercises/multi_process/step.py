"""Exercise 3, `masked_step`: one training step on padded rows, the padding left out, across processes."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from namedaxes import DATA_PARALLEL, model
from namedaxes.checking import (
    expect_case_work,
    fail,
    mistake_sentence,
    same_values,
    show_values,
)
from namedaxes.grading import Case, programs, spec
from namedaxes.meshes import line_mesh

from .running import (
    LEARNING_RATE,
    N_GLOBAL,
    NUM_PROCESSES,
    PARAM_NAMES,
    as_process,
    check_global,
    exercise,
    explained_here,
    kind_words,
)
from .text import TEXT


# ---------------------------------------------------------------- exercise 3: masked_step
def _params(w, b) -> dict:
    return {"w": np.float32(w), "b": np.float32(b)}


def _step_batch(k: int, per: int, real_per_device: list[int], seed: int) -> dict:
    """A batch of k * per rows; device d's first `real_per_device[d]` rows are real, the rest padding."""
    r = np.random.RandomState(seed)
    x = r.normal(size=k * per).astype(np.float32)
    y = (model.TRUE_W * x + model.TRUE_B + 0.3 * r.normal(size=k * per)).astype(np.float32)
    mask = np.zeros(k * per, bool)
    for d, real in enumerate(real_per_device):
        mask[d * per : d * per + real] = True
    return {"x": x, "y": y, "mask": mask}


def _step_cases() -> list:
    """The visible check's cases, (devices k, processes p, args, what) as `check_global` takes them: a kernel
    mesh of 4 devices, then the 2 workers (process 1 has fewer real rows: its share is padded); params
    replicated, the batch split over DATA_PARALLEL."""
    cases = [
        (4, 2, _params(1.0, 0.0), _step_batch(4, 3, [3, 1, 2, 3], seed=1)),
        (N_GLOBAL, NUM_PROCESSES, _params(0.5, -0.25), _step_batch(N_GLOBAL, 2, [2, 2, 2, 2, 2, 1, 1, 0], seed=2)),
    ]
    return [(k, p, [(False, params), (True, batch)], _step_what(batch, k)) for k, p, params, batch in cases]


def _np_step(params, x, y, grads_scale=1.0) -> dict:
    g = model.gradients_np(params, {"x": x, "y": y})
    return {k: float(params[k]) - LEARNING_RATE * grads_scale * g[k] for k in PARAM_NAMES}


def step_mistakes(params, batch, k: int, p: int) -> list[tuple]:
    """The usual mistakes' new parameters (`{'w', 'b'}`) on `batch` (`k` devices of `p` processes): the padding
    rows counted; the devices' own mean gradients averaged, or their sum divided by 8 or by one process's
    devices (where every device holds a real row); the summed gradient divided by all rows, by 8, by one
    process's devices, or not at all; `k` times the step, no step, a step up the gradient (the check's
    diagnoses, and the grader's)."""
    x, y, mask = np.asarray(batch["x"], float), np.asarray(batch["y"], float), np.asarray(batch["mask"], bool)
    per = x.size // k
    real = int(mask.sum())
    n = k // p
    counts = [int(mask[d * per : (d + 1) * per].sum()) for d in range(k)]
    out = [(_np_step(params, x, y), "step_no_mask", {})]
    means = [
        model.gradients_np(
            params,
            {
                "x": x[d * per : (d + 1) * per][mask[d * per : (d + 1) * per]],
                "y": y[d * per : (d + 1) * per][mask[d * per : (d + 1) * per]],
            },
        )
        for d in range(k)
        if counts[d]
    ]
    if len(means) == k:
        sum_of_means = {key: sum(m[key] for m in means) for key in PARAM_NAMES}
        for divisor, key, fields in (
            (k, "step_mean_of_means", {}),
            (8, "step_fixed_count", {"k": k}),
            (n, "step_local_count", {"n": n}),
        ):
            new = {name: float(params[name]) - LEARNING_RATE * sum_of_means[name] / divisor for name in PARAM_NAMES}
            out.append((new, key, fields))
    true = model.gradients_np(params, {"x": x[mask], "y": y[mask]})
    summed = {key: true[key] * real for key in PARAM_NAMES}

    def with_grads(g):
        return {key: float(params[key]) - LEARNING_RATE * g[key] for key in PARAM_NAMES}

    return out + [
        (with_grads({key: summed[key] / x.size for key in PARAM_NAMES}), "step_all_rows", {"rows": x.size}),
        (with_grads({key: summed[key] / 8 for key in PARAM_NAMES}), "step_fixed_count", {"k": k}),
        (with_grads({key: summed[key] / n for key in PARAM_NAMES}), "step_local_count", {"n": n}),
        (with_grads(summed), "step_summed", {}),
        (with_grads({key: true[key] * k for key in PARAM_NAMES}), "step_k_times", {"k": k}),
        ({key: float(params[key]) for key in PARAM_NAMES}, "step_unchanged", {}),
        (with_grads({key: -true[key] for key in PARAM_NAMES}), "step_sign", {}),
    ]


def _expect_step(name: str, got, params, batch, k: int, p: int, where: str) -> None:
    if not isinstance(got, dict) or set(map(str, got)) != set(PARAM_NAMES):
        fail(TEXT["not_dict"].format(name=name, keys=list(PARAM_NAMES), kind=kind_words(got), where=where))
    for key in PARAM_NAMES:
        if not isinstance(got[key], (np.ndarray, np.generic, jax.Array, float)):
            fail(TEXT["not_dict"].format(name=name, keys=list(PARAM_NAMES), kind=kind_words(got[key]), where=where))
        if np.shape(got[key]) != ():
            fail(TEXT["leaf_shape"].format(name=name, key=key, want=(), where=where, got=np.shape(got[key]), hint=""))
    mask = np.asarray(batch["mask"])
    want = _np_step(params, np.asarray(batch["x"], float)[mask], np.asarray(batch["y"], float)[mask])
    if all(same_values(got[key], want[key], 1e-4, dtype=float) for key in PARAM_NAMES):
        return
    hint = mistake_sentence(
        TEXT.say,
        {key: got[key] for key in PARAM_NAMES},
        step_mistakes(params, batch, k, p),
        1e-4,
        otherwise=TEXT["step_generic"],
    )
    key = next(key for key in PARAM_NAMES if not same_values(got[key], want[key], 1e-4, dtype=float))
    fail(
        TEXT["step_values"].format(
            where=where, name=name, key=key, got=show_values(got[key], dtype=float), want=f"{want[key]:.6g}", hint=hint
        )
    )


def _step_what(batch, k: int) -> str:
    mask = np.asarray(batch["mask"])
    per = mask.size // k
    counts = [int(mask[d * per : (d + 1) * per].sum()) for d in range(k)]
    return TEXT["case_step"].format(rows=mask.size, real=int(mask.sum()), counts=", ".join(map(str, counts)))


def _check_masked_step(fn: Callable) -> None:
    name = "masked_step"
    if not callable(fn):
        fail(TEXT["not_callable"].format(name=name, type=type(fn).__name__))
    kernel, workers = _step_cases()
    # params replicated (P()), x, y and mask split over DATA_PARALLEL
    ins = ((), (), ((DATA_PARALLEL,),), ((DATA_PARALLEL,),), ((DATA_PARALLEL,),))
    check_global(name, fn, DATA_PARALLEL, [kernel], workers, _expect_step, ins=ins, why=TEXT["step_why"])
    _expect_step_work(name, fn)


# How the work is split (the grader's `Case(work=...)` on every case, the visible check on 2 x 4 devices): one
# device's FLOPs, read from the compiled per-device program, at most `_STEP_FLOPS_FACTOR` times the reference's
# (59 on 2 processes x 4 devices with 3 rows each, measured from the solution notebook's program on jax 0.10.2; a
# test keeps it within 10 %). Every device's rows summed to every device by a psum of one-hot-placed blocks, then
# the whole batch's gradient, costs 4.9x (2 x 2), 9.4x (2 x 4, 3 rows) and 7.3x (2 x 4, 5 rows); equivalent
# answers 1.0x.
_STEP_FLOPS_FACTOR = 1.5
_STEP_REFERENCE_FLOPS = 59.0
_STEP_CASES = ((2, 2, 3), (2, 4, 3), (2, 4, 5))  # (processes, devices per process, rows per device)


def _step_case(fn: Callable, processes: int, local: int, per: int) -> Case:
    """`fn(params, batch, mesh)` traced as process 0 of `processes` x `local` devices: params placed P(),
    the batch (x, y float32, mask bool) placed P(DATA_PARALLEL); each device's FLOPs judged."""
    k = processes * local
    mesh = line_mesh(k, DATA_PARALLEL)
    replicated, split = NamedSharding(mesh, P()), NamedSharding(mesh, P(DATA_PARALLEL))
    params = {key: spec((), jnp.float32, sharding=replicated) for key in PARAM_NAMES}
    batch = {
        "x": spec((k * per,), jnp.float32, sharding=split),
        "y": spec((k * per,), jnp.float32, sharding=split),
        "mask": spec((k * per,), jnp.bool_, sharding=split),
    }
    return Case(
        lambda prm, b: fn(prm, b, mesh),
        params,
        batch,
        context=as_process(0, processes, local),
        work={"flops": _STEP_FLOPS_FACTOR},
    )


def _expect_step_work(name: str, fn: Callable) -> None:
    """Each device differentiates its own rows: one device's FLOPs (the grader's program on 2 x 4 devices)
    at most `_STEP_FLOPS_FACTOR` times the reference's."""
    processes, local, per = _STEP_CASES[1]
    case = _step_case(fn, processes, local, per)
    context = explained_here(name, line_mesh(processes * local, DATA_PARALLEL))
    expect_case_work(
        case, "flops", _STEP_REFERENCE_FLOPS, TEXT.say, "step_whole_batch", context, name=name, k=processes * local
    )


def _observe_masked_step(fn: Callable) -> dict:
    """Graded: `fn(params, batch, mesh)` with its mesh (k devices, axis DATA_PARALLEL) bound, traced as
    process 0 of clusters of 2 x 2 and 2 x 4 devices and exported; params placed P(), the batch
    (x, y float32, mask bool: the grader draws which rows are real) placed P(DATA_PARALLEL); one device's FLOPs
    judged against the reference's (`_STEP_FLOPS_FACTOR`)."""
    cases = {
        f"{processes}x{local}_rows{per}": _step_case(fn, processes, local, per) for processes, local, per in _STEP_CASES
    }
    return programs(cases)


masked_step = exercise("masked_step", _check_masked_step, observe=_observe_masked_step)
