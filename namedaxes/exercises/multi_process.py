"""Exercises of notebook 06 (`06_multi_process`): named axes across two JAX processes.

Every check runs the student's function in the worker processes of the
kernel's shared cluster (`namedaxes.multiprocess.get_cluster()`: 2 processes
with 4 simulated CPU devices each, 8 devices in all) and compares what each
process returns with what this kernel computes on its own 8 devices.

- `global_sum(x)` is a per-device function: `lax.psum(x, DEVICES)`. The job
  gives each process its 4 rows of an 8-row input and runs
  `jax.pmap(global_sum, axis_name=DEVICES)`; every device of both processes
  must hold the sum of all 8 rows.
- `local_rows(global_batch)` runs once per process (no pmap): it returns this
  process's rows of a batch whose leading axis has one row per device of the
  whole cluster (an array, or a dict of arrays). Process `i` of a cluster with
  `n` local devices per process owns rows `i * n` to `(i + 1) * n - 1`. In the
  kernel itself (one process with 8 devices) that is every row.
- `parallel_update_step(params, sharded_batch)` is the data-parallel step of
  notebook 04 (line `w * x + b`, mean squared error, `lax.pmean` over
  DATA_PARALLEL, SGD with learning rate 0.01), run under
  `jax.pmap(..., axis_name=DATA_PARALLEL, in_axes=(None, 0))` in both
  processes (default `out_axes=0`, so every device's copy is visible).

Before starting any process, each check traces or calls the answer in the
kernel, so an unanswered exercise or a misnamed axis fails at once, with the
usual message, without waiting for the workers.
"""
from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from namedaxes import DATA_PARALLEL, DEVICES, model, multiprocess
from namedaxes.checking import (CheckFailed, Exercise, collective_axes, expect_collective, explained, fail,
                                not_written_yet, progress_of, same_values, show_values)
from namedaxes.grading import Case, pmapped, programs, spec

__all__ = ["global_sum", "local_rows", "parallel_update_step", "GRADE_IDS", "LEARNING_RATE",
           "NUM_PROCESSES", "LOCAL_DEVICES", "progress"]
progress = progress_of(__name__)   # q.progress(): which exercises of the notebook pass

NUM_PROCESSES = 2
LOCAL_DEVICES = 4
N_GLOBAL = NUM_PROCESSES * LOCAL_DEVICES
LEARNING_RATE = model.LEARNING_RATE   # the course's reference model: namedaxes.model
PARAM_NAMES = ("w", "b")

GRADE_IDS = {
    "global_sum": "global_sum_across_processes",
    "local_rows": "local_rows_per_process",
    "parallel_update_step": "update_step_across_processes",
}


# ---------------------------------------------------------------- helpers
def _cluster() -> multiprocess.Cluster:
    return multiprocess.get_cluster(NUM_PROCESSES, LOCAL_DEVICES)


def _worker_rules(name: str):
    """This notebook's own translations (errors in the worker processes); `checking.translate` does the rest."""
    def rule(err: BaseException) -> str | None:
        if isinstance(err, multiprocess.ShipError):
            return f"`{name}` cannot be sent to the worker processes: {err}."
        if isinstance(err, multiprocess.WorkerError) and err.remote_type == "NotImplementedError":
            return not_written_yet(name)
        return None
    return (rule,)


def _explained(name: str, axis: str, how: str):
    """Run an answer; crashes become readable messages (`checking.explained` plus the worker rules)."""
    return explained(name, run=f"The check, which runs {how},", binds=(axis,), rules=_worker_rules(name))


def _block(rows: int, process: int) -> slice:
    return slice(process * rows, (process + 1) * rows)


# ---------------------------------------------------------------- jobs (run in every worker process)
def _global_sum_job(fn: Callable, inputs: list) -> list:
    """Feed this process's rows of each input to `pmap(fn)` over DEVICES; one result per input."""
    n, i = jax.local_device_count(), jax.process_index()
    run = jax.pmap(fn, axis_name=DEVICES)
    return [np.asarray(run(x[_block(n, i)])) for x in inputs]   # np.asarray: one collective at a time


def _local_rows_job(fn: Callable, batches: list) -> list:
    return [fn(batch) for batch in batches]


def _update_step_job(fn: Callable, cases: list) -> list:
    n, i = jax.local_device_count(), jax.process_index()
    run = jax.pmap(fn, axis_name=DATA_PARALLEL, in_axes=(None, 0))
    out = []
    for params, sharded_batch in cases:
        mine = {k: v[_block(n, i)] for k, v in sharded_batch.items()}
        out.append(jax.device_get(run(params, mine)))
    return out


# ---------------------------------------------------------------- exercise 1: global_sum
def _run_global_sum(fn: Callable, inputs: list) -> list[np.ndarray]:
    """Per input: the (8, ...) values of the 8 devices, process 0's devices first."""
    with _explained("global_sum", DEVICES, "`jax.pmap(global_sum, axis_name=DEVICES)`"):
        collective_axes(fn, jnp.zeros(np.shape(inputs[0])[1:], inputs[0].dtype), axis_env=[(DEVICES, N_GLOBAL)])
        per_process = _cluster().run(_global_sum_job, fn, inputs)
    return [np.concatenate([np.asarray(p[j]) for p in per_process]) for j in range(len(inputs))]


def _check_global_sum(fn: Callable) -> None:
    name = "global_sum"
    if not callable(fn):
        fail(f"`{name}` should be a function, but it is a `{type(fn).__name__}`.")
    x = np.arange(1.0, N_GLOBAL + 1, dtype=np.float32)             # device d holds d + 1
    (got,) = _run_global_sum(fn, [x])
    total = float(x.sum())
    where = (f"With device d holding d + 1 (process 0: {show_values(x[:LOCAL_DEVICES], dtype=float)}, "
             f"process 1: {show_values(x[LOCAL_DEVICES:], dtype=float)}), "
             f"the devices of both processes hold {show_values(got, dtype=float)}.")
    if got.shape != x.shape:
        fail(f"{where} `{name}` should return one value per device, the same shape as its input "
             f"(here a scalar), but the devices returned shape {got.shape[1:]}.")
    if same_values(got, x, dtype=float):
        fail(f"{where} Every device still holds its own value: `{name}` needs a collective, "
             f"`lax.psum(x, axis_name=DEVICES)`, to add up the values of all devices.")
    if same_values(got, np.full_like(x, x.mean()), dtype=float):
        fail(f"{where} That is the mean of all devices: use `lax.psum`, not `lax.pmean`.")
    if not same_values(got, np.full_like(x, got[0]), dtype=float):
        fail(f"{where} The devices disagree: after a `lax.psum` over DEVICES every device of both "
             f"processes holds the same total.")
    if not same_values(got, np.full_like(x, total), dtype=float):
        local = [float(x[_block(LOCAL_DEVICES, i)].sum()) for i in range(NUM_PROCESSES)]
        extra = (" That is one process's share only."
                 if any(same_values(got[0], s, dtype=float) for s in local) else "")
        fail(f"{where} Every device should hold the sum of all {N_GLOBAL} values, {total:g}.{extra}")
    expect_collective(name, fn, jnp.float32(1.0), axis_name=DEVICES, axis_env=[(DEVICES, N_GLOBAL)],
                      hint="The total must come from a collective, not from a constant.")


def _observe_global_sum(fn: Callable) -> dict:
    """Graded: the per-device function itself, `pmap(fn, axis_name=DEVICES)` over all 8 devices, exported
    and run by the grader on its own 8 devices (the same program the two processes run together; the
    two-process run is the visible check). The grader reads the psum's axis from the compiled program."""
    shapes = ((N_GLOBAL,), (N_GLOBAL, 3), (N_GLOBAL, 2, 2))
    return programs({f"devices_{i}": Case(pmapped(fn, N_GLOBAL, DEVICES), spec(shape, jnp.float32))
                     for i, shape in enumerate(shapes)})


global_sum = Exercise(
    "global_sum", _check_global_sum,
    hints=[
        "It is the same per-device function you would write for one process: the collective does "
        "not know, and does not need to know, that the devices live in two processes.",
        "Which collective and which axis? The one that gives every device the total over the DEVICES "
        "axis: `scaled_sum` of notebook 02 without the scaling.",
    ],
    observe=_observe_global_sum,
)


# ---------------------------------------------------------------- exercise 2: local_rows
def _visible_batches() -> list:
    rows = np.arange(N_GLOBAL, dtype=np.float32)
    return [np.stack([rows, 10 * rows], axis=1),                          # (8, 2): row r is [r, 10 r]
            {"x": np.repeat(rows[:, None], 3, axis=1), "y": -rows}]       # a dict batch


def _as_numpy(value):
    if isinstance(value, dict):
        return {k: _as_numpy(v) for k, v in value.items()}
    return np.asarray(value) if isinstance(value, (np.ndarray, np.generic, jax.Array)) else value


def _describe_rows(got: np.ndarray, batch: np.ndarray) -> str | None:
    """Which rows of `batch` `got` is, if it is a contiguous block of them."""
    if got.ndim != batch.ndim or got.shape[1:] != batch.shape[1:]:
        return None
    for start in range(batch.shape[0] - got.shape[0] + 1):
        if got.shape[0] and same_values(got, batch[start:start + got.shape[0]], dtype=float):
            return f"rows {start} to {start + got.shape[0] - 1}"
    return None


def _expect_rows(name: str, got, batch, rows: slice, who: str) -> None:
    """`got` is `batch[rows]` (an array, or a dict of arrays for a dict batch)."""
    want_desc = f"rows {rows.start} to {rows.stop - 1}"
    if isinstance(batch, dict):
        if not isinstance(got, dict) or set(got) != set(batch):
            kind = f"a dict with keys {sorted(got)}" if isinstance(got, dict) else f"a `{type(got).__name__}`"
            fail(f"For a dict batch {{'x': ..., 'y': ...}}, {who} `{name}` returned {kind}; it should return "
                 f"the same dict with the rows of every array: `jax.tree.map(lambda a: a[start:stop], "
                 f"global_batch)` slices every leaf.")
        for key in sorted(batch):
            _expect_rows(name, got[key], batch[key], rows, who + f" (key '{key}')")
        return
    if not isinstance(got, (np.ndarray, np.generic, jax.Array)):
        fail(f"{who} `{name}` returned a `{type(got).__name__}`; it should return an array, "
             f"{want_desc} of the batch.")
    got = np.asarray(got)
    want = batch[rows]
    if got.shape != want.shape:
        seen = _describe_rows(got, batch)
        if got.shape == batch.shape:
            fail(f"{who} `{name}` returned all {batch.shape[0]} rows; each process keeps only its own: "
                 f"jax.local_device_count() rows, {want_desc}.")
        if got.shape == batch.shape[1:]:
            fail(f"{who} `{name}` returned a single row (shape {got.shape}); it should return "
                 f"{want_desc}, a slice `global_batch[start:stop]` of shape {want.shape}.")
        fail(f"{who} `{name}` returned shape {got.shape}{' (' + seen + ')' if seen else ''}; it should "
             f"return {want_desc}, shape {want.shape}.")
    if not same_values(got, want, dtype=float):
        seen = _describe_rows(got, batch)
        extra = (" Each process computes its own first row from `jax.process_index()` times "
                 "`jax.local_device_count()`." if seen else "")
        fail(f"{who} `{name}` returned {seen or show_values(got, dtype=float)}, but it owns {want_desc}.{extra}")


def _sliced_a_dict(err: Exception) -> bool:
    """`err` is what `a_dict[start:stop]` raises: `TypeError: unhashable type: 'slice'` up to Python 3.11,
    `KeyError: slice(0, 8, None)` from 3.12 on (slices became hashable), so the message must not depend on it."""
    if isinstance(err, KeyError):
        return bool(err.args) and isinstance(err.args[0], slice)
    return isinstance(err, TypeError) and "'slice'" in str(err)


def _call_local_rows(fn: Callable, batch):
    try:
        return fn(batch)
    except (TypeError, KeyError, IndexError, AttributeError) as err:
        if not isinstance(batch, dict):
            raise
        how = ("slices the dict itself (`global_batch[start:stop]`), but a dict has keys, not rows"
               if _sliced_a_dict(err) else f"fails with {type(err).__name__}: {err}")
        raise CheckFailed(f"On a dict batch {{'x': ..., 'y': ...}}, `local_rows` {how}. Slice every array of "
                          f"the dict, e.g. with `jax.tree.map(lambda a: a[start:stop], global_batch)`.") from err


def _run_local_rows(fn: Callable, batches: list) -> tuple[list, list]:
    """(results in this kernel: 1 process x 8 devices, results per worker process)."""
    with _explained("local_rows", DEVICES, "`local_rows(global_batch)` in each process"):
        here = [_as_numpy(_call_local_rows(fn, b)) for b in batches]
        there = _cluster().run(_local_rows_job, fn, batches)
    return here, [[_as_numpy(v) for v in per] for per in there]


def _check_local_rows(fn: Callable) -> None:
    name = "local_rows"
    if not callable(fn):
        fail(f"`{name}` should be a function, but it is a `{type(fn).__name__}`.")
    batches = _visible_batches()
    here, there = _run_local_rows(fn, batches)
    n_here = jax.local_device_count()
    for i in range(NUM_PROCESSES):
        for batch, got in zip(batches, there[i]):
            _expect_rows(name, got, batch, _block(LOCAL_DEVICES, i),
                         f"In worker process {i} of {NUM_PROCESSES} ({LOCAL_DEVICES} local devices),")
    for batch, got in zip(batches, here):
        _expect_rows(name, got, batch, _block(n_here, 0),
                     f"In this kernel (process 0 of 1, {n_here} local devices: it owns every row),")


class _AsProcess:
    """While exporting, `jax.process_index()` / `jax.local_device_count()` / `jax.process_count()` /
    `jax.local_devices()` answer as process `index` of a cluster with `local` devices per process."""

    _NAMES = ("process_index", "local_device_count", "process_count", "local_devices")

    def __init__(self, index: int, local: int):
        self.index, self.local = index, local

    def __enter__(self):
        self.saved = {n: getattr(jax, n) for n in self._NAMES}
        devices = jax.devices()
        jax.process_index = lambda *a, **k: self.index
        jax.local_device_count = lambda *a, **k: self.local
        jax.process_count = lambda *a, **k: N_GLOBAL // self.local
        jax.local_devices = lambda *a, **k: devices[self.index * self.local:(self.index + 1) * self.local]
        return self

    def __exit__(self, *exc):
        for n, f in self.saved.items():
            setattr(jax, n, f)


# (process index, local devices) of the clusters a graded `local_rows` is traced for
_LOCAL_ROWS_CLUSTERS = ((0, 4), (1, 4), (0, 8), (3, 2), (1, 2))


def _observe_local_rows(fn: Callable) -> dict:
    """Graded: `fn` traced as process i of clusters of 8 devices (`jax.process_index()` and
    `jax.local_device_count()` answer for that process) and exported per cluster; the grader
    draws the batches (an array, a 3-D array, a dict with an int32 leaf) and compares the rows."""
    shapes = [spec((N_GLOBAL,), jnp.float32), spec((N_GLOBAL, 3, 2), jnp.float32),
              {"x": spec((N_GLOBAL, 5), jnp.float32), "y": spec((N_GLOBAL, 5), jnp.int32)}]
    return programs({f"process{index}_of_{N_GLOBAL // local}_batch{j}":
                     Case(lambda *a: fn(*a), batch, draw={"kind": "normal", "low": 0, "high": 9},  # fresh: no trace cache
                          context=lambda index=index, local=local: _AsProcess(index, local))
                     for index, local in _LOCAL_ROWS_CLUSTERS for j, batch in enumerate(shapes)})


local_rows = Exercise(
    "local_rows", _check_local_rows,
    hints=[
        "Process `i` owns rows `i * n` to `(i + 1) * n - 1`, with `i = jax.process_index()` and "
        "`n = jax.local_device_count()` (4 in each worker, 8 in this kernel).",
        "Slice the leading axis from `i * n` up to, not including, `(i + 1) * n`. To slice every array of "
        "a dict the same way, use `jax.tree.map`: it also accepts a plain array (a tree with one leaf), "
        "so one version handles both.",
        "In this kernel `i` is 0 and `n` is 8, so `local_rows(x)`, with the 8-row `x` of section 3, "
        "returns all of `x`: try it before running the test cell.",
    ],
    observe=_observe_local_rows,
)


# ---------------------------------------------------------------- exercise 3: parallel_update_step
def _reference_step(params, sharded_batch):
    def loss(p, b):
        return jnp.mean((p["w"] * b["x"] + p["b"] - b["y"]) ** 2)

    grads = lax.pmean(jax.grad(loss)(params, sharded_batch), axis_name=DATA_PARALLEL)
    return jax.tree.map(lambda p, g: p - LEARNING_RATE * g, params, grads)


def _single_process(step: Callable, params, sharded_batch) -> dict:
    """The same step on this kernel's own 8 devices: one process."""
    run = jax.pmap(step, axis_name=DATA_PARALLEL, in_axes=(None, 0))
    return {k: np.asarray(v) for k, v in run(params, sharded_batch).items()}


def _params(w, b) -> dict:
    return {"w": np.float32(w), "b": np.float32(b)}


def _visible_case():
    x = np.linspace(-1.5, 1.5, N_GLOBAL * 4, dtype=np.float32).reshape(N_GLOBAL, 4)
    return _params(1.0, 0.0), {"x": x, "y": 2.0 * x + 0.5}


def _run_update_step(fn: Callable, cases: list) -> list[dict]:
    """Per case: {'w': (8,), 'b': (8,)}, each device's new parameters, process 0's devices first."""
    how = "`jax.pmap(parallel_update_step, axis_name=DATA_PARALLEL, in_axes=(None, 0))`"
    with _explained("parallel_update_step", DATA_PARALLEL, how):
        params, sharded = cases[0]
        collective_axes(fn, params, {k: v[0] for k, v in sharded.items()}, axis_env=[(DATA_PARALLEL, N_GLOBAL)])
        per_process = _cluster().run(_update_step_job, fn, cases)
    out = []
    for j in range(len(cases)):
        got = [per_process[i][j] for i in range(NUM_PROCESSES)]
        if not all(isinstance(g, dict) and set(g) == set(PARAM_NAMES) for g in got):
            bad = next(g for g in got if not (isinstance(g, dict) and set(g) == set(PARAM_NAMES)))
            kind = f"a dict with keys {sorted(map(str, bad))}" if isinstance(bad, dict) else f"a `{type(bad).__name__}`"
            fail(f"`parallel_update_step` should return the new parameters, a dict with keys 'w' and 'b' "
                 f"like `params`, but it returned {kind}.")
        for g in got:
            for k in PARAM_NAMES:
                if np.shape(g[k]) != (LOCAL_DEVICES,):
                    fail(f"`parallel_update_step` should return scalar parameters, like `params['{k}']`, "
                         f"but the new '{k}' has shape {np.shape(g[k])[1:]} on each device.")
        out.append({k: np.concatenate([np.asarray(g[k]) for g in got]) for k in PARAM_NAMES})
    return out


def _check_parallel_update_step(fn: Callable) -> None:
    name = "parallel_update_step"
    if not callable(fn):
        fail(f"`{name}` should be a function, but it is a `{type(fn).__name__}`.")
    params, sharded = _visible_case()
    (got,) = _run_update_step(fn, [(params, sharded)])
    want = _single_process(_reference_step, params, sharded)
    where = "Starting from w = 1, b = 0, on data that lie on y = 2x + 0.5,"
    for k in PARAM_NAMES:
        if not same_values(got[k], np.full_like(got[k], got[k][0]), dtype=float):
            fail(f"{where} the 8 devices of the two processes disagree on the new '{k}': "
                 f"{show_values(got[k], dtype=float)}. "
                 f"Average the gradients over all devices with `lax.pmean(grads, axis_name=DATA_PARALLEL)` "
                 f"before the step, so that every device takes the same step.")
    summed = {k: params[k] + N_GLOBAL * (want[k] - params[k]) for k in PARAM_NAMES}
    for k in PARAM_NAMES:
        if same_values(got[k], want[k], dtype=float):
            continue
        if all(same_values(got[j], summed[j], 1e-4, dtype=float) for j in PARAM_NAMES):
            hint = ("The step is 8 times too large: the gradients were summed (`lax.psum`) instead of "
                    "averaged (`lax.pmean`).")
        elif all(same_values(got[j], np.full(N_GLOBAL, params[j]), dtype=float) for j in PARAM_NAMES):
            hint = "The parameters did not change: return the *updated* params."
        elif all(same_values(got[j], 2 * params[j] - want[j], 1e-4, dtype=float) for j in PARAM_NAMES):
            hint = "The parameters moved the wrong way: step *against* the gradient, `p - 0.01 * g`."
        else:
            hint = (f"One step is `p - {LEARNING_RATE} * g` with `g` the pmean of the gradients of the mean "
                    f"squared error.")
        fail(f"{where} the new '{k}' on the 8 devices of the two processes is "
             f"{show_values(got[k], dtype=float)}, but the "
             f"same step on one process with 8 devices gives {float(want[k][0]):.6g}. {hint}")
    expect_collective(name, fn, params, {k: v[0] for k, v in sharded.items()}, axis_name=DATA_PARALLEL,
                      axis_env=[(DATA_PARALLEL, N_GLOBAL)],
                      hint="The gradients are averaged with `lax.pmean(grads, axis_name=DATA_PARALLEL)`.")


def _observe_parallel_update_step(fn: Callable) -> dict:
    """Graded: the step under `pmap(..., axis_name=DATA_PARALLEL, in_axes=(None, 0))` over all 8 devices,
    exported and run by the grader (every device's new params compared; the pmean's axis read from the
    compiled program). The two-process run is the visible check."""
    cases = {}
    for j, (per, trailing) in enumerate(((3, ()), (5, (1,)))):
        shape = (N_GLOBAL, per) + trailing
        params = {k: spec((), jnp.float32) for k in PARAM_NAMES}
        batch = {"x": spec(shape, jnp.float32), "y": spec(shape, jnp.float32)}
        cases[f"step_{j}"] = Case(pmapped(fn, N_GLOBAL, DATA_PARALLEL, in_axes=(None, 0)), params, batch)
    return programs(cases)


parallel_update_step = Exercise(
    "parallel_update_step", _check_parallel_update_step,
    hints=[
        "It is the step of notebook 04, unchanged: local gradients with `compute_gradients`, their "
        "average over DATA_PARALLEL, then one SGD step.",
        "Nothing in it needs `jax.process_index()`: a `pmean` over DATA_PARALLEL already spans the devices "
        "of both processes. Update every parameter with `jax.tree.map` and learning rate 0.01.",
    ],
    observe=_observe_parallel_update_step,
)
