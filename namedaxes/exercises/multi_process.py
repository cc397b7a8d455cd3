"""Exercises of notebook 06 (`06_multi_process`): global arrays across two JAX processes.

The notebook's cluster is `namedaxes.multiprocess.get_cluster()`: 2 worker
processes with 4 simulated CPU devices each, 8 devices in all. Every worker
runs the same program: a 1-D mesh over all 8 devices (`line_mesh`), global
`jax.Array`s built from each process's own rows with
`jax.make_array_from_process_local_data`, `jax.shard_map` over that mesh, and
results read back with `jax.experimental.multihost_utils.process_allgather`.

- `local_rows(global_batch)` runs once per process: this process's share of a
  batch (an array or a dict of arrays) whose leading axis splits evenly over
  the processes. Process `i` of `p` owns the `i`-th of `p` equal blocks of rows
  (`B // p` rows each, not necessarily one row per device).
- `global_metrics(errors, mesh)`: `errors` is a global array whose rows are
  split over DEVICES of `mesh`; return `{"total", "mean", "per_process"}`
  (sum and mean of every entry, and one total per process), every value
  replicated (`out_specs=P()`), computed with `jax.shard_map` and collectives.
- `masked_step(params, batch, mesh)`: one SGD step of the course's model
  (`namedaxes.model`) on the *real* rows of a global batch whose rows are split
  over DATA_PARALLEL, `batch["mask"]` (bool) marking them: each process pads
  its share to the same length, so devices hold different numbers of real rows.

How the checks run an answer (visible): first in this kernel, on meshes of 4
and 8 of its devices while `jax.process_index()` / `process_count()` /
`local_device_count()` answer as process 0 of a smaller cluster (`_AsProcess`,
e.g. 2 processes x 2 devices), so a hard-coded device or process count fails
at once; then in both worker processes on the mesh spanning them. Each check
compares with NumPy (float64) and, on a mismatch, names the plausible mistake
whose numbers it matches (a hard-coded 8, `jax.local_device_count()` where
the mesh's size belongs, padding rows counted, ...).

Grading (hidden tests, `namedaxes.grading.programs`): each answer is exported
traced as process 0 (or i) of clusters of 2 x 2, 2 x 4 and 4 x 2 devices
(`Case(..., context=...)`), on meshes of 4 and 8 devices; the grader draws the
inputs, compares outputs with the reference's, and reads communication from
the compiled program. The exported program is the one every process of such a
cluster compiles (SPMD: the same program, the processes only feed it).

Student-facing strings: every message of this module's checks is in the `TEXT`
table below, and each exercise's hints are full strings in its `Exercise(...)`;
the logic only fills in the templates.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from namedaxes import DATA_PARALLEL, DEVICES, model, multiprocess
from namedaxes.checking import (
    CheckFailed,
    examined,
    exercises_for,
    explained,
    fail,
    not_written_yet,
    progress_of,
    same_values,
    show_values,
    unbound_axis_name,
)
from namedaxes.exercises.shard_map import TEXT as shard_map_text
from namedaxes.exercises.shard_map import judge_region
from namedaxes.grading import Case, programs, spec
from namedaxes.i18n import Messages
from namedaxes.meshes import axis_list as _mesh_axes
from namedaxes.meshes import line_mesh

__all__ = [
    "local_rows",
    "global_metrics",
    "masked_step",
    "GRADE_IDS",
    "LEARNING_RATE",
    "NUM_PROCESSES",
    "LOCAL_DEVICES",
    "TEXT",
    "line_mesh",
    "to_global",
    "read_back",
    "progress",
]
exercise = exercises_for(__name__)  # this notebook's exercises: exercise(name, check, hints=..., observe=...)
progress = progress_of(__name__)  # q.progress(): which exercises of the notebook pass

NUM_PROCESSES = 2
LOCAL_DEVICES = 4
N_GLOBAL = NUM_PROCESSES * LOCAL_DEVICES
LEARNING_RATE = model.LEARNING_RATE  # the course's reference model: namedaxes.model
PARAM_NAMES = model.PARAM_NAMES
METRIC_KEYS = ("total", "mean", "per_process")

GRADE_IDS = {
    "local_rows": "local_rows_per_process",
    "global_metrics": "global_metrics_across_processes",
    "masked_step": "masked_step_across_processes",
}

# ---------------------------------------------------------------- every student-facing string
TEXT = {
    # how a check ran the answer (the `{where}` of the messages)
    "in_worker": "In worker process {i} of {p} ({n} local devices)",
    "in_kernel": "In this kernel (process 0 of 1, {n} local devices: it owns every row)",
    "as_process": "In this kernel, answering as process {i} of {p} ({n} local devices each)",
    "on_mesh_kernel": (
        "On a mesh of {k} devices in this kernel, answering as process 0 of a cluster of {p} "
        "processes x {n} devices ({what})"
    ),
    "on_mesh_workers": ("On the mesh of {k} devices spanning the {p} worker processes, {n} devices each ({what})"),
    # crashes
    "cannot_ship": "`{name}` cannot be sent to the worker processes: {error}.",
    "wrong_axis": (
        "`{name}` stopped with an empty AssertionError from inside JAX. On this JAX that is what a "
        "collective inside `jax.shard_map` raises when its axis name is not an axis of the mesh, e.g. "
        "a typo. The mesh here has the axis {axes}: use the course's constant, not a string."
    ),
    "unbound": (
        "`{name}` calls a collective over '{axis}', but no mesh axis of that name is bound there. "
        "Collectives work inside the function you give `jax.shard_map`, over the axis names of its "
        "`mesh` (here {axes})."
    ),
    "varying_output": (
        '`{name}` failed with JAX\'s error "{first}": `out_specs=P()` promises a value that is the same '
        "on every device, but JAX cannot tell that it is: either it still differs per device (a device's "
        "own sum, say), or it comes from a collective whose result JAX types as per-device, such as "
        "`lax.all_gather` (even though every device then holds the same values). Combine the devices' "
        "values with `lax.psum`, whose result JAX knows to be the same everywhere, before returning them."
    ),
    "global_sharding": (
        '`{name}` failed with JAX\'s error "{first}": outside `jax.shard_map`, JAX refuses this operation '
        "on an array split over the mesh. Do the per-device work inside the function you give "
        "`jax.shard_map`, where each device sees its own block of rows."
    ),
    # results, any exercise
    "not_callable": "`{name}` should be a function, but it is a `{type}`.",
    "not_dict": "{where}, `{name}` should return a dict with keys {keys}, but it returned {kind}.",
    "a_dict": "a dict with keys {keys}",
    "a_type": "a `{type}`",
    "leaf_shape": "{where}, `{name}` should return `{key}` of shape {want}, but it has shape {got}.{hint}",
    "no_shard_map": (
        "`{name}` returns the right values, but without `jax.shard_map`: this exercise asks for the "
        "per-device view, one block of rows per device of the mesh, across both processes. Put the "
        "work in the function you give `jax.shard_map(..., mesh=mesh)`."
    ),
    "no_collective": ("`{name}` performs no collective over '{axis}': each device would only know its own rows. {why}"),
    # 1. local_rows
    "rows_dict_keys": (
        "For a dict batch {{'x': ..., 'y': ...}}, {where} `{name}` returned {kind}; it should return the "
        "same dict with the rows of every array: `jax.tree.map(lambda a: a[start:stop], global_batch)` "
        "slices every leaf."
    ),
    "rows_key": "{where} (key '{key}')",
    "rows_not_array": "{where} `{name}` returned a `{type}`; it should return an array, {want} of the batch.",
    "rows_all": ("{where} `{name}` returned all {total} rows; each process keeps only its own share, {want}."),
    "rows_one": (
        "{where} `{name}` returned a single row (shape {got}); it should return {want}, a slice "
        "`global_batch[start:stop]` of shape {shape}."
    ),
    "rows_shape": "{where} `{name}` returned shape {got}{seen}; it should return {want}, shape {shape}.",
    "rows_per_device": (
        " That is one row per local device. Here the batch has {total} rows for {p} processes, "
        "{per} rows each: count the share from the batch and `jax.process_count()`, not from the devices."
    ),
    "rows_empty": (
        " That is no row at all: the slice starts past the end of the batch. With {p} processes, "
        "each share has {per} rows; take the number of processes from `jax.process_count()`."
    ),
    "rows_values": "{where} `{name}` returned {seen}, but it owns {want}.{extra}",
    "rows_start": (" Each process finds its first row from `jax.process_index()` and the size of its share."),
    "rows_range": "rows {start} to {stop}",
    "rows_dict_sliced": (
        "On a dict batch {{'x': ..., 'y': ...}}, `{name}` slices the dict itself "
        "(`global_batch[start:stop]`), but a dict has keys, not rows. Slice every array of the dict, e.g. "
        "with `jax.tree.map(lambda a: a[start:stop], global_batch)`."
    ),
    "rows_dict_failed": (
        "On a dict batch {{'x': ..., 'y': ...}}, `{name}` fails with {error}. Slice every array of the "
        "dict, e.g. with `jax.tree.map(lambda a: a[start:stop], global_batch)`."
    ),
    # 2. global_metrics
    "metric_values": "{where}, `{name}` returned {key} = {got}, expected {want}. {hint}",
    "metric_fixed_count": (
        "That is {ratio} times the right value: the number of devices is written as 8, but this mesh "
        "has {k} devices. Take counts from the mesh or from a collective: `lax.psum(1, DEVICES)`, "
        "`mesh.size`, or `lax.psum` of each block's size."
    ),
    "metric_local_count": (
        "That divides by `jax.local_device_count()` ({n}, the devices of one process), but the mean "
        "is over the devices of every process on the mesh ({k}): count with `lax.psum(..., DEVICES)` or "
        "`mesh.size`."
    ),
    "metric_mean_of_sums": (
        "That is the mean of the devices' sums: each device holds {rows} entries, and the mean divides "
        "the total by all {size} entries of the array."
    ),
    "metric_one_device": "That is one device's own block only: add up the blocks of all devices.",
    "metric_pmean_total": (
        "That is the total divided by the {k} devices: `lax.pmean` averages the devices' sums, and `total` "
        "is their sum, `lax.psum`."
    ),
    "metric_rows_count": (
        "That divides the total by the {rows} rows, but `errors` of shape {shape} has {size} entries: the "
        "mean divides by all of them (`block.size`, added up over the devices)."
    ),
    "metric_mean_for_total": "That is the mean of all entries; `total` is their sum.",
    "per_process_shape": (
        " `per_process` has one entry per process, `jax.process_count()` of them ({p} here): not one per "
        "device, and not a number written by hand."
    ),
    "per_process_per_device": (
        "Those are per-device sums. Process i owns the devices at mesh positions i * n to (i + 1) * n - 1 "
        "(n = jax.local_device_count()): add up the sums of each process's devices."
    ),
    "per_process_generic": (
        "Entry i is the sum of the rows that process i owns: the devices at mesh positions i * n to "
        "(i + 1) * n - 1, with n = jax.local_device_count()."
    ),
    "metric_generic": "Compare with NumPy on the whole array: `errors.sum()` and `errors.mean()`.",
    "metric_why": "Add up the blocks with `lax.psum(..., DEVICES)` inside `jax.shard_map`.",
    # 3. masked_step
    "step_values": (
        "{where}, `{name}` returned new {key} = {got}, but one SGD step on the real rows gives {want}. {hint}"
    ),
    "step_no_mask": (
        "That step counts the padding rows too. Only rows with `mask` True are examples: leave the "
        "others out of the squared errors and out of the count."
    ),
    "step_mean_of_means": (
        "That averages each device's own mean gradient with equal weight (`lax.pmean`), but the devices "
        "hold different numbers of real rows ({counts}). Add up the squared-error gradients and the real "
        "rows over all devices (`lax.psum`), then divide."
    ),
    "step_fixed_count": (
        "That divides by 8, written by hand, but this mesh has {k} devices. Divide by what the devices "
        "really hold, counted with `lax.psum`."
    ),
    "step_local_count": (
        "That divides by `jax.local_device_count()` ({n}, the devices of one process), but the step "
        "averages over every real row of both processes."
    ),
    "step_all_rows": (
        "That divides by all {rows} rows of the batch, padding included: divide by the number of real "
        "rows, `lax.psum(jnp.sum(mask), DATA_PARALLEL)`."
    ),
    "step_summed": (
        "The step is much too large: the summed gradients were not divided by the number of real rows "
        "of the whole batch ({count})."
    ),
    "step_k_times": (
        "The step is {k} times too large. The gradient of a replicated parameter (in_specs `P()`) is "
        "already added up over the devices by JAX, so a further `lax.psum` multiplies it by {k}. "
        "Differentiate a device's own copy, `lax.pcast(params, DATA_PARALLEL, to='varying')` as in "
        "notebook 05, then `lax.psum` the gradients."
    ),
    "step_unchanged": "The parameters did not change: return the *updated* params.",
    "step_sign": "The parameters moved the wrong way: step *against* the gradient, `p - LEARNING_RATE * g`.",
    "step_generic": (
        "One step is `p - LEARNING_RATE * g`, with `g` the gradient of the mean squared error over the "
        "real rows of the whole batch."
    ),
    "step_why": (
        "The devices' gradients and real-row counts are combined with `lax.psum(..., DATA_PARALLEL)` "
        "inside `jax.shard_map`."
    ),
    "case_metrics": "errors of shape {shape}",
    "case_step": "{rows} rows, {real} real: {counts} real rows per device",
}
TEXT = Messages(TEXT)  # the table above, each lookup in the kernel's language


# ---------------------------------------------------------------- running answers
def _cluster() -> multiprocess.Cluster:
    return multiprocess.get_cluster(NUM_PROCESSES, LOCAL_DEVICES)


class _AsProcess:
    """While active, `jax.process_index()` / `process_count()` / `local_device_count()` /
    `local_devices()` / `device_count()` / `devices()` answer as process `index` of a cluster of
    `processes` x `local` devices (its devices: the first `processes * local` of this kernel's).

    Only these public names are rebound (JAX's own code asks its backend, not them), so tracing,
    exporting or running a function in this kernel under it shows what that process would compute:
    the same SPMD program, built with that process's view of the cluster.
    """

    _NAMES = ("process_index", "local_device_count", "process_count", "local_devices", "device_count", "devices")

    def __init__(self, index: int, processes: int, local: int):
        self.index, self.processes, self.local = index, processes, local

    def __enter__(self):
        self.saved = {n: getattr(jax, n) for n in self._NAMES}
        devices = jax.devices()[: self.processes * self.local]
        mine = devices[self.index * self.local : (self.index + 1) * self.local]
        jax.process_index = lambda *a, **k: self.index
        jax.local_device_count = lambda *a, **k: self.local
        jax.process_count = lambda *a, **k: self.processes
        jax.local_devices = lambda *a, **k: list(mine)
        jax.device_count = lambda *a, **k: len(devices)
        jax.devices = lambda *a, **k: list(devices)
        return self

    def __exit__(self, *exc):
        for n, f in self.saved.items():
            setattr(jax, n, f)


def _rules(name: str, mesh=None):
    """This notebook's own translations; `checking.translate` does the rest (not written yet, ...)."""
    axes = _mesh_axes(mesh) if mesh is not None else f"'{DEVICES}'"

    def rule(err: BaseException) -> str | None:
        if isinstance(err, multiprocess.ShipError):
            return TEXT["cannot_ship"].format(name=name, error=err)
        if isinstance(err, multiprocess.WorkerError) and err.remote_type == "NotImplementedError":
            return not_written_yet(name)
        if type(err) is AssertionError and not str(err):
            return TEXT["wrong_axis"].format(name=name, axes=axes)
        axis = unbound_axis_name(err)
        if axis is not None:
            return TEXT["unbound"].format(name=name, axis=axis, axes=axes)
        first = (str(err).strip().splitlines() or [""])[0]
        if isinstance(err, ValueError) and "out_specs which require replication" in first:
            return TEXT["varying_output"].format(name=name, first=first[:160])
        if type(err).__name__ == "ShardingTypeError":
            return TEXT["global_sharding"].format(name=name, first=first[:200])
        return None

    return (rule,)


def _explained(name: str, mesh=None):
    return explained(name, rules=_rules(name, mesh))


def to_global(tree, mesh, axis: str | None):
    """A global `jax.Array` (per leaf) from this process's data: with `axis`, `tree` holds this
    process's rows and the array's rows are split over `axis`; with None, every process passes the
    same whole value and the array is replicated."""
    sharding = NamedSharding(mesh, P(axis) if axis else P())
    return jax.tree.map(lambda a: jax.make_array_from_process_local_data(sharding, np.asarray(a)), tree)


def read_back(tree):
    """Every process gets the whole value of each global array in `tree`, as NumPy
    (`process_allgather(..., tiled=True)`); anything that is not a `jax.Array` comes back unchanged."""
    from jax.experimental import multihost_utils

    def one(value):
        if isinstance(value, jax.Array):
            return np.asarray(multihost_utils.process_allgather(value, tiled=True))
        return value

    return jax.tree.map(one, tree)


def _share(n_rows: int, processes: int, index: int) -> slice:
    per = n_rows // processes
    return slice(index * per, (index + 1) * per)


def _global_job(fn: Callable, cases: list) -> list:
    """In every worker: per case, the mesh over all devices, global arrays from this process's share
    of each argument (`to_global`), `fn(*args, mesh)`, the result read back (`read_back`)."""
    p, i = jax.process_count(), jax.process_index()
    out = []
    for axis, args in cases:
        mesh = line_mesh(jax.device_count(), axis)
        placed = []
        for split, tree in args:
            mine = jax.tree.map(lambda a: np.asarray(a)[_share(np.shape(a)[0], p, i)], tree) if split else tree
            placed.append(to_global(mine, mesh, axis if split else None))
        out.append(read_back(jax.jit(lambda *a: fn(*a, mesh))(*placed)))  # noqa: B023 - run in this iteration
    return out


def _kernel_run(fn: Callable, k: int, axis: str, args: list, processes: int):
    """`fn(*args, mesh)` on a mesh of `k` of this kernel's devices, as process 0 of `processes`."""
    mesh = line_mesh(k, axis)
    placed = [jax.device_put(tree, NamedSharding(mesh, P(axis) if split else P())) for split, tree in args]
    with _AsProcess(0, processes, k // processes):
        result = jax.jit(lambda *a: fn(*a, mesh))(*placed)
    return jax.tree.map(lambda v: np.asarray(v) if isinstance(v, jax.Array) else v, result), mesh, placed


def _examined_as(fn: Callable, mesh, placed: list, processes: int):
    """`fn(*placed, mesh)` exported as process 0 of `processes` and examined the grader's way
    (`namedaxes.judging.examine`: regions and communication read from the compiled program, each kept only
    where it reaches the results)."""
    with _AsProcess(0, processes, mesh.size // processes):
        return examined(lambda *a: fn(*a, mesh), *placed)


def _judged(name: str, fn: Callable, mesh, placed: list, processes: int, axis: str, ins: tuple, why: str) -> None:
    """The grader's judging steps on the kernel's last case, traced as process 0 of `processes`
    (`_examined_as`, examined once): a `jax.shard_map` at all, a collective over `axis` at all (this notebook's
    own words for those), then (`shard_map.judge_region`) a per-device region over `axis` that takes each input
    split as `ins` says (the reference's `in_specs`) and reaches the results, and a collective over `axis`
    that reaches the results."""
    facts = _examined_as(fn, mesh, placed, processes)
    if not facts.found:
        fail(TEXT["no_shard_map"].format(name=name))
    if not any(d.endswith(f" over '{axis}'") for d in facts.present):
        fail(TEXT["no_collective"].format(name=name, axis=axis, why=why))
    judge_region(
        name,
        fn,
        mesh,
        *placed,
        region=((axis,), ins),
        what=shard_map_text["values_word"],
        axis=axis,
        why=why,
        facts=facts,
    )


def _kind(value) -> str:
    if isinstance(value, dict):
        return TEXT["a_dict"].format(keys=sorted(map(str, value)))
    return TEXT["a_type"].format(type=type(value).__name__)


def _fmt(value) -> str:
    return show_values(np.asarray(value, dtype=float), dtype=float)


# ---------------------------------------------------------------- exercise 1: local_rows
def _visible_batches() -> list:
    rows = np.arange(N_GLOBAL, dtype=np.float32)
    twice = np.arange(2 * N_GLOBAL, dtype=np.float32)
    return [
        np.stack([rows, 10 * rows], axis=1),  # (8, 2): one row per device
        {"x": np.repeat(twice[:, None], 3, axis=1), "y": -twice},
    ]  # 16 rows: two per device


def _as_numpy(value):
    if isinstance(value, dict):
        return {k: _as_numpy(v) for k, v in value.items()}
    return np.asarray(value) if isinstance(value, (np.ndarray, np.generic, jax.Array)) else value


def _describe_rows(got: np.ndarray, batch: np.ndarray) -> str | None:
    """Which rows of `batch` `got` is, if it is a contiguous block of them."""
    if got.ndim != batch.ndim or got.shape[1:] != batch.shape[1:]:
        return None
    for start in range(batch.shape[0] - got.shape[0] + 1):
        if got.shape[0] and same_values(got, batch[start : start + got.shape[0]], dtype=float):
            return TEXT["rows_range"].format(start=start, stop=start + got.shape[0] - 1)
    return None


def _expect_rows(name: str, got, batch, rows: slice, who: str, processes: int, local: int) -> None:
    """`got` is `batch[rows]` (an array, or a dict of arrays for a dict batch)."""
    want = TEXT["rows_range"].format(start=rows.start, stop=rows.stop - 1)
    if isinstance(batch, dict):
        if not isinstance(got, dict) or set(got) != set(batch):
            fail(TEXT["rows_dict_keys"].format(where=who, name=name, kind=_kind(got)))
        for key in sorted(batch):
            _expect_rows(
                name, got[key], batch[key], rows, TEXT["rows_key"].format(where=who, key=key), processes, local
            )
        return
    if not isinstance(got, (np.ndarray, np.generic, jax.Array)):
        fail(TEXT["rows_not_array"].format(where=who, name=name, type=type(got).__name__, want=want))
    got = np.asarray(got)
    expected = batch[rows]
    total = batch.shape[0]
    if got.shape != expected.shape:
        if got.shape == batch.shape:
            fail(TEXT["rows_all"].format(where=who, name=name, total=total, want=want))
        if got.shape == batch.shape[1:]:
            fail(TEXT["rows_one"].format(where=who, name=name, got=got.shape, want=want, shape=expected.shape))
        seen = _describe_rows(got, batch)
        extra = (
            TEXT["rows_per_device"].format(total=total, p=processes, per=total // processes)
            if processes > 1 and got.shape[0] == local and total != local * processes
            else TEXT["rows_empty"].format(p=processes, per=total // processes)
            if got.shape[0] == 0
            else ""
        )
        fail(
            TEXT["rows_shape"].format(
                where=who, name=name, got=got.shape, seen=f" ({seen})" if seen else "", want=want, shape=expected.shape
            )
            + extra
        )
    if not same_values(got, expected, dtype=float):
        seen = _describe_rows(got, batch)
        fail(
            TEXT["rows_values"].format(
                where=who, name=name, seen=seen or _fmt(got), want=want, extra=TEXT["rows_start"] if seen else ""
            )
        )


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
        if _sliced_a_dict(err):
            raise CheckFailed(TEXT["rows_dict_sliced"].format(name="local_rows")) from err
        raise CheckFailed(
            TEXT["rows_dict_failed"].format(name="local_rows", error=f"{type(err).__name__}: {err}")
        ) from err


def _local_rows_job(fn: Callable, batches: list) -> list:
    return [fn(batch) for batch in batches]


# (process index, processes, local devices) the visible check asks as, in this kernel
_LOCAL_ROWS_AS = ((2, 4, 2), (1, 2, 2))


def _check_local_rows(fn: Callable) -> None:
    name = "local_rows"
    if not callable(fn):
        fail(TEXT["not_callable"].format(name=name, type=type(fn).__name__))
    batches = _visible_batches()
    n_here = jax.local_device_count()
    with _explained(name):
        for index, processes, local in _LOCAL_ROWS_AS:
            who = TEXT["as_process"].format(i=index, p=processes, n=local)
            for batch in batches:
                with _AsProcess(index, processes, local):
                    got = _as_numpy(_call_local_rows(fn, batch))
                _expect_rows(name, got, batch, _share(_rows_of(batch), processes, index), who, processes, local)
        here = [_as_numpy(_call_local_rows(fn, b)) for b in batches]
        for batch, got in zip(batches, here):
            _expect_rows(name, got, batch, slice(0, _rows_of(batch)), TEXT["in_kernel"].format(n=n_here), 1, n_here)
        there = _cluster().run(_local_rows_job, fn, batches)
    for i in range(NUM_PROCESSES):
        who = TEXT["in_worker"].format(i=i, p=NUM_PROCESSES, n=LOCAL_DEVICES)
        for batch, got in zip(batches, there[i]):
            _expect_rows(
                name,
                _as_numpy(got),
                batch,
                _share(_rows_of(batch), NUM_PROCESSES, i),
                who,
                NUM_PROCESSES,
                LOCAL_DEVICES,
            )


def _rows_of(batch) -> int:
    return int(np.shape(jax.tree.leaves(batch)[0])[0])


# (process index, processes, local devices) of the clusters a graded `local_rows` is traced for
_LOCAL_ROWS_CLUSTERS = ((0, 2, 4), (1, 2, 4), (1, 2, 2), (3, 4, 2), (0, 1, 8))


def _as_process(index: int, processes: int, local: int) -> Callable[[], _AsProcess]:
    """A `Case(context=...)`: the answer is traced and exported as process `index` of a cluster of
    `processes` x `local` devices."""
    return lambda: _AsProcess(index, processes, local)


def _observe_local_rows(fn: Callable) -> dict:
    """Graded: `fn` traced as process i of clusters of 2 x 4, 2 x 2, 4 x 2 and 1 x 8 devices and
    exported per cluster, on batches of one and of two or three rows per device (an array, a 3-D
    array, a dict with an int32 leaf); the grader draws the batches and compares the rows."""
    cases = {}
    for index, processes, local in _LOCAL_ROWS_CLUSTERS:
        d = processes * local
        batches = [
            spec((d,), jnp.float32),
            spec((2 * d, 3, 2), jnp.float32),
            {"x": spec((3 * d, 5), jnp.float32), "y": spec((3 * d,), jnp.int32)},
        ]
        for j, batch in enumerate(batches):
            cases[f"process{index}_of_{processes}x{local}_batch{j}"] = Case(
                lambda *a: fn(*a),
                batch,
                draw={"kind": "normal", "low": 0, "high": 9},  # fresh: no trace cache
                context=_as_process(index, processes, local),
            )
    return programs(cases)


local_rows = exercise(
    "local_rows",
    _check_local_rows,
    hints=[
        "Every process runs the same code, so the share must come from what each process can ask: "
        "`jax.process_index()` and `jax.process_count()`, and the batch's own number of rows.",
        "With `B` rows and `p` processes, every share has `B // p` rows, and process `i`'s share starts "
        "at row `i * (B // p)`. `jax.tree.map` slices every array of a dict the same way, and also "
        "accepts a plain array.",
        "In this kernel `jax.process_index()` is 0 and `jax.process_count()` is 1, so `local_rows(x)` "
        "returns all of `x`: try it before running the test cell.",
    ],
    observe=_observe_local_rows,
)


# ---------------------------------------------------------------- exercise 2: global_metrics
def _metrics_cases() -> list:
    """(devices k, processes p, errors) of the visible check: two kernel meshes, then the workers."""
    r = np.random.RandomState(6)
    return [
        (4, 2, r.normal(size=(8, 3)).astype(np.float32)),
        (8, 4, r.normal(size=(16,)).astype(np.float32)),
        (N_GLOBAL, NUM_PROCESSES, r.normal(size=(N_GLOBAL, 3)).astype(np.float32)),
    ]


def _metrics_want(errors: np.ndarray, p: int) -> dict:
    e = np.asarray(errors, float)
    return {"total": e.sum(), "mean": e.mean(), "per_process": e.reshape(p, -1).sum(axis=1)}


def _metric_hint(key: str, got, errors: np.ndarray, k: int, p: int) -> str:
    e = np.asarray(errors, float)
    n = k // p
    want = _metrics_want(e, p)
    if key == "per_process":
        if np.shape(got) == (k,) and same_values(got, e.reshape(k, -1).sum(axis=1), dtype=float):
            return TEXT["per_process_per_device"]
        return TEXT["per_process_generic"]
    right = want[key]
    # a sum multiplied by a count (total = pmean * c) is off by c / k, a sum divided by one (mean = psum / c) by k / c
    fixed, local = (8 / k, n / k) if key == "total" else (k / 8, k / n)
    if k != 8 and same_values(got, right * fixed, dtype=float):
        return TEXT["metric_fixed_count"].format(ratio=f"{fixed:g}", k=k)
    if n != k and same_values(got, right * local, dtype=float):
        return TEXT["metric_local_count"].format(n=n, k=k)
    if key == "mean" and same_values(got, e.sum() / k, dtype=float):
        return TEXT["metric_mean_of_sums"].format(rows=e.size // k, size=e.size)
    if key == "total" and same_values(got, e.mean(), dtype=float):
        return TEXT["metric_mean_for_total"]
    if key == "total" and same_values(got, right / k, dtype=float):
        return TEXT["metric_pmean_total"].format(k=k)
    if key == "mean" and e.ndim > 1 and same_values(got, e.sum() / e.shape[0], dtype=float):
        return TEXT["metric_rows_count"].format(rows=e.shape[0], shape=e.shape, size=e.size)
    first = e.reshape(k, -1)[0]
    if same_values(got, first.sum(), dtype=float) or same_values(got, first.mean(), dtype=float):
        return TEXT["metric_one_device"]
    return TEXT["metric_generic"]


def _expect_metrics(name: str, got, errors: np.ndarray, k: int, p: int, where: str) -> None:
    if not isinstance(got, dict) or set(map(str, got)) != set(METRIC_KEYS):
        fail(TEXT["not_dict"].format(name=name, keys=list(METRIC_KEYS), kind=_kind(got), where=where))
    want = _metrics_want(errors, p)
    for key in METRIC_KEYS:
        value = np.asarray(got[key]) if isinstance(got[key], (np.ndarray, np.generic, jax.Array, float, int)) else None
        if value is None:
            fail(TEXT["not_dict"].format(name=name, keys=list(METRIC_KEYS), kind=_kind(got[key]), where=where))
        if value.shape != np.shape(want[key]):
            hint = TEXT["per_process_shape"].format(p=p) if key == "per_process" else ""
            fail(
                TEXT["leaf_shape"].format(
                    name=name, key=key, want=np.shape(want[key]), where=where, got=value.shape, hint=hint
                )
            )
    for key in METRIC_KEYS:
        if not same_values(got[key], want[key], 1e-4, dtype=float):
            fail(
                TEXT["metric_values"].format(
                    where=where,
                    name=name,
                    key=key,
                    got=_fmt(got[key]),
                    want=_fmt(want[key]),
                    hint=_metric_hint(key, got[key], errors, k, p),
                )
            )


def _check_global_metrics(fn: Callable) -> None:
    name = "global_metrics"
    if not callable(fn):
        fail(TEXT["not_callable"].format(name=name, type=type(fn).__name__))
    cases = _metrics_cases()
    for k, p, errors in cases[:-1]:
        where = TEXT["on_mesh_kernel"].format(k=k, p=p, n=k // p, what=TEXT["case_metrics"].format(shape=errors.shape))
        with _explained(name, line_mesh(k, DEVICES)):
            got, mesh, placed = _kernel_run(fn, k, DEVICES, [(True, errors)], p)
        _expect_metrics(name, got, errors, k, p, where)
    with _explained(name, mesh):
        _judged(name, fn, mesh, placed, p, DEVICES, (((DEVICES,),),), TEXT["metric_why"])
        k, p, errors = cases[-1]
        per_process = _cluster().run(_global_job, fn, [(DEVICES, [(True, errors)])])
    where = TEXT["on_mesh_workers"].format(k=k, p=p, n=k // p, what=TEXT["case_metrics"].format(shape=errors.shape))
    for (got,) in per_process:
        _expect_metrics(name, got, errors, k, p, where)


# (processes, local devices, errors shape in rows per device x columns) of the graded programs
_METRICS_GRADED = ((2, 2, 2, 3), (2, 4, 1, 3), (4, 2, 3, 0), (2, 4, 5, 0))


def _observe_global_metrics(fn: Callable) -> dict:
    """Graded: `fn(errors, mesh)` with its mesh (k devices, axis DEVICES) bound, traced as process 0 of
    clusters of 2 x 2, 2 x 4 and 4 x 2 devices and exported; errors placed P(DEVICES)."""
    cases = {}
    for processes, local, per, cols in _METRICS_GRADED:
        k = processes * local
        mesh = line_mesh(k, DEVICES)
        shape = (k * per, cols) if cols else (k * per,)
        errors = spec(shape, jnp.float32, sharding=NamedSharding(mesh, P(DEVICES)))
        cases[f"{processes}x{local}_rows{per}_cols{cols}"] = Case(
            lambda e, mesh=mesh: fn(e, mesh), errors, context=_as_process(0, processes, local)
        )
    return programs(cases)


global_metrics = exercise(
    "global_metrics",
    _check_global_metrics,
    hints=[
        "Inside `jax.shard_map(..., mesh=mesh, in_specs=P(DEVICES), out_specs=P())` each device sees only "
        "its own block of rows, and the result must be the same on every device. Which numbers can a "
        "device compute alone, and which need every device?",
        "A device's block gives its own sum and its own number of entries; `lax.psum` over DEVICES adds "
        "them up over every device of every process, so `total / count` is the mean and no count is "
        "written by hand. For `per_process`: the device at mesh position `d` belongs to process "
        "`d // jax.local_device_count()`.",
        "Put a device's sum at its process's entry of a vector of `jax.process_count()` zeros (e.g. "
        "`jax.nn.one_hot(process, jax.process_count()) * block_sum`), then `lax.psum` those vectors.",
    ],
    observe=_observe_global_metrics,
)


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
    """(devices k, processes p, params, batch): a kernel mesh of 4 devices, then the 2 workers (process 1
    has fewer real rows: its share is padded)."""
    return [
        (4, 2, _params(1.0, 0.0), _step_batch(4, 3, [3, 1, 2, 3], seed=1)),
        (N_GLOBAL, NUM_PROCESSES, _params(0.5, -0.25), _step_batch(N_GLOBAL, 2, [2, 2, 2, 2, 2, 1, 1, 0], seed=2)),
    ]


def _np_step(params, x, y, grads_scale=1.0) -> dict:
    g = model.gradients_np(params, {"x": x, "y": y})
    return {k: float(params[k]) - LEARNING_RATE * grads_scale * g[k] for k in PARAM_NAMES}


def _step_candidates(params, batch, k: int, p: int) -> list[tuple[dict, str]]:
    """What plausible wrong steps return on this case, each with the message that explains it."""
    x, y, mask = np.asarray(batch["x"], float), np.asarray(batch["y"], float), np.asarray(batch["mask"])
    per = x.size // k
    real = int(mask.sum())
    n = k // p
    counts = [int(mask[d * per : (d + 1) * per].sum()) for d in range(k)]
    out = [(_np_step(params, x, y), TEXT["step_no_mask"])]
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
        for divisor, text in (
            (k, TEXT["step_mean_of_means"].format(counts=", ".join(map(str, counts)))),
            (8, TEXT["step_fixed_count"].format(k=k)),
            (n, TEXT["step_local_count"].format(n=n)),
        ):
            out.append(
                ({key: float(params[key]) - LEARNING_RATE * sum_of_means[key] / divisor for key in PARAM_NAMES}, text)
            )
    true = model.gradients_np(params, {"x": x[mask], "y": y[mask]})
    summed = {key: true[key] * real for key in PARAM_NAMES}

    def with_grads(g):
        return {key: float(params[key]) - LEARNING_RATE * g[key] for key in PARAM_NAMES}

    out += [
        (with_grads({key: summed[key] / x.size for key in PARAM_NAMES}), TEXT["step_all_rows"].format(rows=x.size)),
        (with_grads({key: summed[key] / 8 for key in PARAM_NAMES}), TEXT["step_fixed_count"].format(k=k)),
        (with_grads({key: summed[key] / n for key in PARAM_NAMES}), TEXT["step_local_count"].format(n=n)),
        (with_grads(summed), TEXT["step_summed"].format(count=real)),
        (with_grads({key: true[key] * k for key in PARAM_NAMES}), TEXT["step_k_times"].format(k=k)),
        ({key: float(params[key]) for key in PARAM_NAMES}, TEXT["step_unchanged"]),
        (with_grads({key: -true[key] for key in PARAM_NAMES}), TEXT["step_sign"]),
    ]
    return out


def _expect_step(name: str, got, params, batch, k: int, p: int, where: str) -> None:
    if not isinstance(got, dict) or set(map(str, got)) != set(PARAM_NAMES):
        fail(TEXT["not_dict"].format(name=name, keys=list(PARAM_NAMES), kind=_kind(got), where=where))
    for key in PARAM_NAMES:
        if not isinstance(got[key], (np.ndarray, np.generic, jax.Array, float)):
            fail(TEXT["not_dict"].format(name=name, keys=list(PARAM_NAMES), kind=_kind(got[key]), where=where))
        if np.shape(got[key]) != ():
            fail(TEXT["leaf_shape"].format(name=name, key=key, want=(), where=where, got=np.shape(got[key]), hint=""))
    mask = np.asarray(batch["mask"])
    want = _np_step(params, np.asarray(batch["x"], float)[mask], np.asarray(batch["y"], float)[mask])
    if all(same_values(got[key], want[key], 1e-4, dtype=float) for key in PARAM_NAMES):
        return
    hint = next(
        (
            text
            for values, text in _step_candidates(params, batch, k, p)
            if all(same_values(got[key], values[key], 1e-4, dtype=float) for key in PARAM_NAMES)
        ),
        TEXT["step_generic"],
    )
    key = next(key for key in PARAM_NAMES if not same_values(got[key], want[key], 1e-4, dtype=float))
    fail(
        TEXT["step_values"].format(
            where=where, name=name, key=key, got=_fmt(got[key]), want=f"{want[key]:.6g}", hint=hint
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
    (k, p, params, batch), workers = _step_cases()
    where = TEXT["on_mesh_kernel"].format(k=k, p=p, n=k // p, what=_step_what(batch, k))
    with _explained(name, line_mesh(k, DATA_PARALLEL)):
        got, mesh, placed = _kernel_run(fn, k, DATA_PARALLEL, [(False, params), (True, batch)], p)
    _expect_step(name, got, params, batch, k, p, where)
    with _explained(name, mesh):
        # params replicated (P()), x, y and mask split over DATA_PARALLEL
        _judged(
            name,
            fn,
            mesh,
            placed,
            p,
            DATA_PARALLEL,
            ((), (), ((DATA_PARALLEL,),), ((DATA_PARALLEL,),), ((DATA_PARALLEL,),)),
            TEXT["step_why"],
        )
        k, p, params, batch = workers
        per_process = _cluster().run(_global_job, fn, [(DATA_PARALLEL, [(False, params), (True, batch)])])
    where = TEXT["on_mesh_workers"].format(k=k, p=p, n=k // p, what=_step_what(batch, k))
    for (got,) in per_process:
        _expect_step(name, got, params, batch, k, p, where)


def _observe_masked_step(fn: Callable) -> dict:
    """Graded: `fn(params, batch, mesh)` with its mesh (k devices, axis DATA_PARALLEL) bound, traced as
    process 0 of clusters of 2 x 2 and 2 x 4 devices and exported; params placed P(), the batch
    (x, y float32, mask bool: the grader draws which rows are real) placed P(DATA_PARALLEL)."""
    cases = {}
    for processes, local, per in ((2, 2, 3), (2, 4, 3), (2, 4, 5)):
        k = processes * local
        mesh = line_mesh(k, DATA_PARALLEL)
        replicated, split = NamedSharding(mesh, P()), NamedSharding(mesh, P(DATA_PARALLEL))
        params = {key: spec((), jnp.float32, sharding=replicated) for key in PARAM_NAMES}
        batch = {
            "x": spec((k * per,), jnp.float32, sharding=split),
            "y": spec((k * per,), jnp.float32, sharding=split),
            "mask": spec((k * per,), jnp.bool_, sharding=split),
        }
        cases[f"{processes}x{local}_rows{per}"] = Case(
            lambda prm, b, mesh=mesh: fn(prm, b, mesh), params, batch, context=_as_process(0, processes, local)
        )
    return programs(cases)


masked_step = exercise(
    "masked_step",
    _check_masked_step,
    hints=[
        "The mean squared error over the real rows is (sum of the real rows' squared errors) / (number of "
        "real rows), both over the whole global batch. Which of the two can one device compute alone?",
        "Per device: the gradient of its own *sum* of masked squared errors, taken on its own copy of the "
        "parameters (`lax.pcast(..., to='varying')`, as in notebook 05), and its number of real rows. Add "
        "both up over DATA_PARALLEL with `lax.psum`, then divide.",
        "A `lax.pmean` of each device's own mean is not the same: the devices hold different numbers of "
        "real rows. `jnp.where(mask, err ** 2, 0.0)` zeroes the padding rows' errors; the update is the "
        "SGD step of notebook 04, inside `jax.shard_map` with `in_specs=(P(), P(DATA_PARALLEL))` and "
        "`out_specs=P()`.",
    ],
    observe=_observe_masked_step,
)
