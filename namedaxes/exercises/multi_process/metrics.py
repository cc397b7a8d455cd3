"""Exercise 2, `global_metrics`: a total, a mean and per-process sums over every process's rows."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from namedaxes import DEVICES
from namedaxes.checking import (
    expect_case_work,
    fail,
    fail_values,
    same_values,
    which_mistake,
)
from namedaxes.grading import Case, programs, spec
from namedaxes.meshes import line_mesh

from .running import (
    METRIC_KEYS,
    N_GLOBAL,
    NUM_PROCESSES,
    as_process,
    check_global,
    exercise,
    explained_here,
    kind_words,
)
from .text import TEXT


# ---------------------------------------------------------------- exercise 2: global_metrics
def _metrics_cases() -> list:
    """The visible check's cases, (devices k, processes p, args, what) as `check_global` takes them: two kernel
    meshes, then the workers; errors split over DEVICES."""
    r = np.random.RandomState(6)
    errors = [
        (4, 2, r.normal(size=(8, 3)).astype(np.float32)),
        (8, 4, r.normal(size=(16,)).astype(np.float32)),
        (N_GLOBAL, NUM_PROCESSES, r.normal(size=(N_GLOBAL, 3)).astype(np.float32)),
    ]
    return [(k, p, [(True, e)], TEXT["case_metrics"].format(shape=e.shape)) for k, p, e in errors]


def _metrics_want(errors: np.ndarray, p: int) -> dict:
    e = np.asarray(errors, float)
    return {"total": e.sum(), "mean": e.mean(), "per_process": e.reshape(p, -1).sum(axis=1)}


def _number(value: float) -> int | float:
    """A ratio of device counts as the sentence shows it: 2, not 2.0."""
    return int(value) if float(value).is_integer() else float(value)


def metric_mistakes(errors: np.ndarray, k: int, p: int) -> dict[str, list[tuple]]:
    """The usual mistakes' results for each metric on `errors` (`k` devices of `p` processes): each process's
    mean for `per_process`, or every entry the total (per-device sums have another shape: the check says so);
    for `total` and `mean`, a device count written as 8 or taken from one process, the mean of the devices'
    sums, the mean for the total, the total divided by the devices, the total over the rows only, one device's
    block (the check's diagnoses, and the grader's)."""
    e = np.asarray(errors, float)
    n = k // p
    want = _metrics_want(e, p)
    first = e.reshape(k, -1)[0]
    per_process = [(e.reshape(p, -1).mean(axis=1), "per_process_means", {})]
    if p > 1:
        per_process.append((np.full(p, e.sum()), "per_process_total", {}))
    found = {"per_process": per_process}
    for key in ("total", "mean"):
        right = want[key]
        # a sum multiplied by a count (total = pmean * c) is off by c / k, a sum divided by one (mean = psum / c)
        # by k / c
        fixed, local = (8 / k, n / k) if key == "total" else (k / 8, k / n)
        listed = [(right * fixed, "metric_fixed_count", {"ratio": _number(fixed), "k": k})] if k != 8 else []
        if n != k:
            listed.append((right * local, "metric_local_count", {"n": n, "k": k}))
        if key == "mean":
            listed.append((e.sum() / k, "metric_mean_of_sums", {"rows": e.size // k, "size": e.size}))
        else:
            listed += [(e.mean(), "metric_mean_for_total", {}), (right / k, "metric_pmean_total", {"k": k})]
        if key == "mean" and e.ndim > 1:
            listed.append(
                (e.sum() / e.shape[0], "metric_rows_count", {"rows": e.shape[0], "shape": e.shape, "size": e.size})
            )
        listed += [(first.sum(), "metric_one_device", {}), (first.mean(), "metric_one_device", {})]
        found[key] = listed
    return found


def _metric_hint(key: str, got, errors: np.ndarray, k: int, p: int) -> str:
    found = which_mistake(got, metric_mistakes(errors, k, p)[key])
    if found is not None:
        return TEXT[found[0]].format(**found[1])
    return TEXT["per_process_generic" if key == "per_process" else "metric_generic"]


def _expect_metrics(name: str, got, errors: np.ndarray, k: int, p: int, where: str) -> None:
    if not isinstance(got, dict) or set(map(str, got)) != set(METRIC_KEYS):
        fail(TEXT["not_dict"].format(name=name, keys=list(METRIC_KEYS), kind=kind_words(got), where=where))
    want = _metrics_want(errors, p)
    for key in METRIC_KEYS:
        value = np.asarray(got[key]) if isinstance(got[key], (np.ndarray, np.generic, jax.Array, float, int)) else None
        if value is None:
            fail(TEXT["not_dict"].format(name=name, keys=list(METRIC_KEYS), kind=kind_words(got[key]), where=where))
        if value.shape != np.shape(want[key]):
            hint = TEXT["per_process_shape"].format(p=p) if key == "per_process" else ""
            fail(
                TEXT["leaf_shape"].format(
                    name=name, key=key, want=np.shape(want[key]), where=where, got=value.shape, hint=hint
                )
            )
    for key in METRIC_KEYS:
        if not same_values(got[key], want[key], 1e-4, dtype=float):
            fail_values(
                TEXT.say,
                "metric_values",
                want[key],
                got[key],
                dtype=float,
                where=where,
                name=name,
                key=key,
                hint=_metric_hint(key, got[key], errors, k, p),
            )


def _check_global_metrics(fn: Callable) -> None:
    name = "global_metrics"
    if not callable(fn):
        fail(TEXT["not_callable"].format(name=name, type=type(fn).__name__))
    *kernel, workers = _metrics_cases()
    check_global(name, fn, DEVICES, kernel, workers, _expect_metrics, ins=(((DEVICES,),),), why=TEXT["metric_why"])
    _expect_metrics_work(name, fn)


# (processes, local devices, errors shape in rows per device x columns) of the graded programs
_METRICS_GRADED = ((2, 2, 2, 3), (2, 4, 1, 3), (4, 2, 3, 0), (2, 4, 5, 0))
# How the work is split (the grader's `Case(work=...)` on every case, the visible check on the last): one
# device's FLOPs, read from the compiled per-device program, at most `_METRICS_FLOPS_FACTOR` times the
# reference's (29 on 2 x 4 devices with 5 rows each, measured from the solution notebook's program on jax 0.10.2;
# a test keeps it within 10 %). Every device's rows summed to every device by a psum of one-hot-placed blocks,
# then every metric on all of errors, costs 3.1x, 3.3x, 2.5x and 4.7x on the four cases; the equivalent answers
# 1.59x at most (per_process summed outside `jax.shard_map`, on the whole array).
_METRICS_FLOPS_FACTOR = 2.0
_METRICS_REFERENCE_FLOPS = 29.0


def _metrics_case(fn: Callable, processes: int, local: int, per: int, cols: int) -> Case:
    """`fn(errors, mesh)` traced as process 0 of `processes` x `local` devices, errors placed P(DEVICES); each
    device's FLOPs judged."""
    k = processes * local
    mesh = line_mesh(k, DEVICES)
    shape = (k * per, cols) if cols else (k * per,)
    errors = spec(shape, jnp.float32, sharding=NamedSharding(mesh, P(DEVICES)))
    return Case(
        lambda e: fn(e, mesh),
        errors,
        context=as_process(0, processes, local),
        work={"flops": _METRICS_FLOPS_FACTOR},
    )


def _expect_metrics_work(name: str, fn: Callable) -> None:
    """Each device sums its own rows: one device's FLOPs (the grader's program on 2 x 4 devices, 5 rows each)
    at most `_METRICS_FLOPS_FACTOR` times the reference's."""
    processes, local, per, cols = _METRICS_GRADED[-1]
    case = _metrics_case(fn, processes, local, per, cols)
    context = explained_here(name, line_mesh(processes * local, DEVICES))
    expect_case_work(
        case, "flops", _METRICS_REFERENCE_FLOPS, TEXT.say, "metrics_whole", context, name=name, k=processes * local
    )


def _observe_global_metrics(fn: Callable) -> dict:
    """Graded: `fn(errors, mesh)` with its mesh (k devices, axis DEVICES) bound, traced as process 0 of
    clusters of 2 x 2, 2 x 4 and 4 x 2 devices and exported; errors placed P(DEVICES); one device's FLOPs
    judged against the reference's (`_METRICS_FLOPS_FACTOR`)."""
    cases = {
        f"{processes}x{local}_rows{per}_cols{cols}": _metrics_case(fn, processes, local, per, cols)
        for processes, local, per, cols in _METRICS_GRADED
    }
    return programs(cases)


global_metrics = exercise("global_metrics", _check_global_metrics, observe=_observe_global_metrics)
