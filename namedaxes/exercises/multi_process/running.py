"""The shared parts of notebook 06's checks: the course's cluster, answers run as a process of it, global
arrays to and from the workers, and JAX's errors in this notebook's words.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from namedaxes import DEVICES, model, multiprocess
from namedaxes.checking import (
    examined,
    exercises_for,
    explained,
    fail,
    not_written_yet,
    unbound_axis_name,
)
from namedaxes.checking.regions import judge_regions
from namedaxes.meshes import axis_list, line_mesh

from . import text
from .text import TEXT

exercise = exercises_for(__package__, text)  # the notebook's Exercise maker: exercise(name, check, observe=...)

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


# ---------------------------------------------------------------- running answers
def cluster() -> multiprocess.Cluster:
    return multiprocess.get_cluster(NUM_PROCESSES, LOCAL_DEVICES)


class AsProcess:
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
    """This notebook's own translations; `checking.explain_error` does the rest (not written yet, ...)."""
    axes = axis_list(mesh) if mesh is not None else f"'{DEVICES}'"

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


def explained_here(name: str, mesh=None):
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


def share(n_rows: int, processes: int, index: int) -> slice:
    per = n_rows // processes
    return slice(index * per, (index + 1) * per)


def global_job(fn: Callable, cases: list) -> list:
    """In every worker: per case, the mesh over all devices, global arrays from this process's share
    of each argument (`to_global`), `fn(*args, mesh)`, the result read back (`read_back`)."""
    p, i = jax.process_count(), jax.process_index()
    out = []
    for axis, args in cases:
        mesh = line_mesh(jax.device_count(), axis)
        placed = []
        for split, tree in args:
            mine = jax.tree.map(lambda a: np.asarray(a)[share(np.shape(a)[0], p, i)], tree) if split else tree
            placed.append(to_global(mine, mesh, axis if split else None))
        out.append(read_back(jax.jit(lambda *a: fn(*a, mesh))(*placed)))  # noqa: B023 - run in this iteration
    return out


def kernel_run(fn: Callable, k: int, axis: str, args: list, processes: int):
    """`fn(*args, mesh)` on a mesh of `k` of this kernel's devices, as process 0 of `processes`."""
    mesh = line_mesh(k, axis)
    placed = [jax.device_put(tree, NamedSharding(mesh, P(axis) if split else P())) for split, tree in args]
    with AsProcess(0, processes, k // processes):
        result = jax.jit(lambda *a: fn(*a, mesh))(*placed)
    return jax.tree.map(lambda v: np.asarray(v) if isinstance(v, jax.Array) else v, result), mesh, placed


def _examined_as(fn: Callable, mesh, placed: list, processes: int):
    """`fn(*placed, mesh)` exported as process 0 of `processes` and examined the grader's way
    (`namedaxes.judging.examine`: regions and communication read from the compiled program, each kept only
    where it reaches the results)."""
    with AsProcess(0, processes, mesh.size // processes):
        return examined(lambda *a: fn(*a, mesh), *placed)


def _judged_as_process(
    name: str, fn: Callable, mesh, placed: list, processes: int, axis: str, ins: tuple, why: str
) -> None:
    """The grader's judging steps on the kernel's last case, traced as process 0 of `processes`
    (`_examined_as`, examined once): a `jax.shard_map` at all, a collective over `axis` at all (this notebook's
    own words for those), then (`checking.regions.judge_regions`) a per-device region over `axis` that takes each input
    split as `ins` says (the reference's `in_specs`) and reaches the results, and a collective over `axis`
    that reaches the results."""
    facts = _examined_as(fn, mesh, placed, processes)
    if not facts.found:
        fail(TEXT["no_shard_map"].format(name=name))
    if not any(d.endswith(f" over '{axis}'") for d in facts.present):
        fail(TEXT["no_collective"].format(name=name, axis=axis, why=why))
    judge_regions(name, fn, mesh, *placed, ins=ins, axis=axis, why=why, facts=facts)


def kind_words(value) -> str:
    """What `value` is, in words: a dict and its keys, or its type."""
    if isinstance(value, dict):
        return TEXT["a_dict"].format(keys=sorted(map(str, value)))
    return TEXT["a_type"].format(type=type(value).__name__)


def as_process(index: int, processes: int, local: int) -> Callable[[], AsProcess]:
    """A `Case(context=...)`: the answer is traced and exported as process `index` of a cluster of
    `processes` x `local` devices."""
    return lambda: AsProcess(index, processes, local)


def check_global(
    name: str, fn: Callable, axis: str, kernel: list[tuple], workers: tuple, expect: Callable, *, ins: tuple, why: str
) -> None:
    """The visible check of an answer that works on global arrays, in its order: each case of `kernel` run in this
    kernel as process 0 of its cluster (`kernel_run`) and its result checked; the grader's judging on the last of
    them (`_judged_as_process`: `ins`, the reference's `in_specs`; `why`, why a collective over `axis` is
    needed); then the `workers` case run by every process of the course's cluster (`global_job`) and each
    process's result checked.

    A case is (devices k, processes p, args, what): `args` as `kernel_run` and `global_job` take them (each
    `(split over axis, tree)`), `what` the inputs in words. `expect(name, got, *inputs, k, p, where)` checks one
    result (`inputs`: the trees of `args`)."""
    for k, p, args, what in kernel:
        where = TEXT["on_mesh_kernel"].format(k=k, p=p, n=k // p, what=what)
        with explained_here(name, line_mesh(k, axis)):
            got, mesh, placed = kernel_run(fn, k, axis, args, p)
        expect(name, got, *(tree for _, tree in args), k, p, where)
    with explained_here(name, mesh):
        _judged_as_process(name, fn, mesh, placed, p, axis, ins, why)
        k, p, args, what = workers
        per_process = cluster().run(global_job, fn, [(axis, args)])
    where = TEXT["on_mesh_workers"].format(k=k, p=p, n=k // p, what=what)
    for (got,) in per_process:
        expect(name, got, *(tree for _, tree in args), k, p, where)
