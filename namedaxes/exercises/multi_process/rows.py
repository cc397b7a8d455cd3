"""Exercise 1, `local_rows`: the rows this process holds of a global array, and the global array made of them."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from namedaxes.checking import (
    CheckFailed,
    fail,
    same_values,
    show_values,
)
from namedaxes.grading import Case, programs, spec

from .running import (
    LOCAL_DEVICES,
    N_GLOBAL,
    NUM_PROCESSES,
    AsProcess,
    as_process,
    cluster,
    exercise,
    explained_here,
    kind_words,
    share,
)
from .text import TEXT


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
            fail(TEXT["rows_dict_keys"].format(where=who, name=name, kind=kind_words(got)))
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
                where=who,
                name=name,
                seen=seen or show_values(got, dtype=float),
                want=want,
                extra=TEXT["rows_start"] if seen else "",
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
    with explained_here(name):
        for index, processes, local in _LOCAL_ROWS_AS:
            who = TEXT["as_process"].format(i=index, p=processes, n=local)
            for batch in batches:
                with AsProcess(index, processes, local):
                    got = _as_numpy(_call_local_rows(fn, batch))
                _expect_rows(name, got, batch, share(_rows_of(batch), processes, index), who, processes, local)
        here = [_as_numpy(_call_local_rows(fn, b)) for b in batches]
        for batch, got in zip(batches, here):
            _expect_rows(name, got, batch, slice(0, _rows_of(batch)), TEXT["in_kernel"].format(n=n_here), 1, n_here)
        there = cluster().run(_local_rows_job, fn, batches)
    for i in range(NUM_PROCESSES):
        who = TEXT["in_worker"].format(i=i, p=NUM_PROCESSES, n=LOCAL_DEVICES)
        for batch, got in zip(batches, there[i]):
            _expect_rows(
                name,
                _as_numpy(got),
                batch,
                share(_rows_of(batch), NUM_PROCESSES, i),
                who,
                NUM_PROCESSES,
                LOCAL_DEVICES,
            )


def _rows_of(batch) -> int:
    return int(np.shape(jax.tree.leaves(batch)[0])[0])


# (process index, processes, local devices) of the clusters a graded `local_rows` is traced for
_LOCAL_ROWS_CLUSTERS = ((0, 2, 4), (1, 2, 4), (1, 2, 2), (3, 4, 2), (0, 1, 8))


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
                context=as_process(index, processes, local),
            )
    return programs(cases)


local_rows = exercise("local_rows", _check_local_rows, observe=_observe_local_rows)
