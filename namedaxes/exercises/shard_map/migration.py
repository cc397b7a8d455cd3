"""Exercise 5, `weighted_total_shard_map`: a pmap program migrated to `jax.shard_map`."""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax.numpy as jnp
import numpy as np

from namedaxes import DEVICES
from namedaxes.checking import (
    expect_case_work,
    f32,
    fail,
    mistake_sentence,
)
from namedaxes.checking.regions import judge_regions
from namedaxes.grading import Case, programs, spec
from namedaxes.meshes import line_mesh, with_mesh

from .running import call_answer, exercise, expect_result_shape, expect_values, explained_here, weighted_total_pmap
from .text import say

# ---------------------------------------------------------------- 5. weighted_total_shard_map
# Visible inputs (w of shape (d,), x of shape (d, k): pmap maps over axis 1); the hidden
# observations use random values of the same shapes.
_WEIGHTED_CASES = [
    (8, f32([1.0, 0.5, -1.0]), f32(np.arange(24).reshape(3, 8))),
    (4, f32([2.0, -1.0]), f32(np.arange(8).reshape(2, 4) / 4.0 - 1.0)),
    (2, f32([0.5, 1.0, -2.0]), f32([[3.0, -1.0], [0.5, 2.0], [1.0, 1.0]])),
]
# How the work is split (the grader's `Case(work=...)` and the visible check alike, on every mesh): the largest
# array one device materializes, read from the compiled per-device program, at most `_WEIGHTED_LARGEST_FACTOR`
# times the reference's (bytes per mesh size, measured from the solution notebook's program on jax 0.10.2; a test
# keeps them true). Every column summed to every device by a psum of one-hot-placed columns costs 8x (8 devices),
# 4x (4) and 2x (2); the equivalent answers 1x.
_WEIGHTED_LARGEST_FACTOR = 1.5
_WEIGHTED_REFERENCE_LARGEST = {8: 12, 4: 8, 2: 12}


def _migration_shape_hint(i: int, got: tuple, d: int, k: int) -> str:
    """What a wrong shape of the total (`i` 0) or of the weighted columns (`i` 1) is."""
    if i == 0 and got in ((d, 1), (d, d)):
        return say("migration_block_axis")
    if i == 0 and got in ((d, k), (k * d,), (k, d)):
        return say("migration_per_device")
    if i == 1 and got == (k * d,):
        return say("migration_columns_dim0")
    return ""


def migration_mistakes(w, x, k: int) -> list[tuple]:
    """The usual mistakes' totals (the first result) on `w` and `x` (its columns split over `k` devices): the
    mean over the devices, device 0's term only (the check's diagnoses, and the grader's)."""
    want = np.asarray(w, np.float64)[:, None] * np.asarray(x, np.float64)  # the weighted columns
    return [(want.sum(axis=1) / k, "migration_mean", {}), (want[:, 0], "migration_first", {})]


def _migration_value_hint(i: int, got, w, x, k: int) -> str:
    """What a wrong total (`i` 0) is: the mean over devices, or device 0's term only; nothing for the columns."""
    return mistake_sentence(say, got, migration_mistakes(w, x, k), 1e-4) if i == 0 else ""


def _check_weighted_total_shard_map(fn: Callable) -> None:
    name = "weighted_total_shard_map"
    for k, w, x in _WEIGHTED_CASES:
        mesh = line_mesh(k)
        where = say("migration_where", k=k, w_shape=tuple(w.shape), x_shape=tuple(x.shape))
        with explained_here(name, mesh):
            out = call_answer(fn, w, x, mesh)
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            kind = (
                say("migration_kind", type=type(out).__name__, n=len(out))
                if isinstance(out, (tuple, list))
                else (say("step_kind_type", type=type(out).__name__))
            )
            fail(say("migration_pair", name=name, where=where, kind=kind))
        for i, (got, want) in enumerate(zip(out, weighted_total_pmap()(w, x))):
            label, want = f"{name}(w, x, mesh)[{i}]", np.asarray(want)
            shape_hint = functools.partial(_migration_shape_hint, i, d=want.shape[0], k=k)
            expect_result_shape(label, got, want.shape, where, "migration_shape", shape_hint)
            value_hint = functools.partial(_migration_value_hint, i, got, w, x, k)
            expect_values(label, got, want, where, "migration_wrong", value_hint)
    k, w, x = _WEIGHTED_CASES[-1]  # the smallest mesh: the same verdict, the cheapest compiles
    mesh = line_mesh(k)
    judge_regions(
        name,
        fn,
        mesh,
        w,
        x,
        ins=((), ((), (DEVICES,))),
        axis=DEVICES,
        why=say("migration_why"),
        context=explained_here(name, mesh),
    )
    for k, w, x in _WEIGHTED_CASES:  # how the work is split (the graded case's rule), once values and psum are right
        want, context = _WEIGHTED_REFERENCE_LARGEST[k], explained_here(name, line_mesh(k))
        expect_case_work(
            _weighted_case(fn, k, w, x), "largest_bytes", want, say, "migration_whole", context, name=name, k=k
        )


def _weighted_case(fn: Callable, k: int, w, x) -> Case:
    """The graded program of `fn(w, x, mesh)` on `k` devices: each device holds its own column, the largest array
    one device materializes at most `_WEIGHTED_LARGEST_FACTOR` times the reference's (the visible check judges
    this very case)."""
    args = (spec(w.shape, jnp.float32), spec(x.shape, jnp.float32))
    return Case(with_mesh(fn, line_mesh(k)), *args, work={"largest_bytes": _WEIGHTED_LARGEST_FACTOR})


def _observe_weighted_total_shard_map(fn: Callable) -> dict:
    """Exported programs of `fn(w, x, mesh)` on 8, 4 and 2 devices (the grader draws w and x and judges the
    largest array one device materializes against the reference's, `_WEIGHTED_LARGEST_FACTOR`)."""
    return programs({f"out_k{k}_d{w.shape[0]}": _weighted_case(fn, k, w, x) for k, w, x in _WEIGHTED_CASES})


weighted_total_shard_map = exercise(
    "weighted_total_shard_map",
    _check_weighted_total_shard_map,
    observe=_observe_weighted_total_shard_map,
)
