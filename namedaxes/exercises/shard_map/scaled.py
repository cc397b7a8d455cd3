"""Exercise 1, `sharded_scaled_sum`: column totals of 2 * x, its rows split over the devices."""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax.numpy as jnp
import numpy as np

from namedaxes import DEVICES
from namedaxes.checking import (
    expect_array,
    expect_case_work,
    f32,
    fail,
    same_values,
    which_mistake,
)
from namedaxes.checking.regions import judge_regions
from namedaxes.grading import Case, programs, spec
from namedaxes.meshes import line_mesh, with_mesh

from .running import call_answer, exercise, expect_values, explained_here
from .text import say

# ---------------------------------------------------------------- 1. sharded_scaled_sum
# Visible inputs (rows split over DEVICES: blocks of 2, 2 and 3 rows on 8, 4 and 2 devices; the
# column counts differ from the block heights, so a sum over the wrong axis shows in the shape).
# The hidden observations use random values of the same shapes, so the compiled answers are reused.
_SCALED_SUM_CASES = [  # the rows of the last two do not divide by the devices: padded with zero rows first
    (8, f32(np.arange(48).reshape(16, 3))),
    (4, f32(np.arange(50).reshape(10, 5) * 0.5 - 9.0)),
    (2, f32([[1.0, -2.0], [3.0, 0.5], [4.0, 1.5], [-1.0, 2.0], [0.25, 0.0], [2.0, -3.0], [1.5, 5.0]])),
]
# How the work is split (the grader's `Case(work=...)` and the visible check alike, on every mesh): one device's
# FLOPs, read from the compiled per-device program, at most `_SCALED_FLOPS_FACTOR` times the reference's
# (per mesh size, measured from the solution notebook's program on jax 0.10.2; a test keeps them within 10 %).
# Every device's rows summed to every device by a psum of one-hot-placed blocks, then the whole x added up on
# each, costs 11.8x (8 devices), 6.5x (4) and 4x (2); the equivalent answers 1.64x at most (`ones @ block`).
_SCALED_FLOPS_FACTOR = 2.5
_SCALED_REFERENCE_FLOPS = {8: 14.0, 4: 32.0, 2: 18.0}


def scaled_mistakes(x, k: int) -> list[tuple]:
    """The usual mistakes' column totals on `x` (its rows split over `k` devices): the plain totals (no factor
    2.0), the totals of the rows that divide evenly (where some do not), the first device's share, the mean of
    the devices' shares (the check's diagnoses, and the grader's)."""
    xs = np.asarray(x, np.float64)
    rows = xs.shape[0]
    want, block, kept = 2.0 * xs.sum(axis=0), -(-rows // k), rows - rows % k
    found = [(want / 2, "scaled_plain_sum", {})]
    if kept < rows:
        found.append((2.0 * xs[:kept].sum(axis=0), "scaled_rows_dropped", {"kept": kept, "dropped": rows - kept}))
    return found + [(2.0 * xs[:block].sum(axis=0), "scaled_first_share", {}), (want / k, "scaled_mean", {})]


def _scaled_hint(name: str, fn: Callable, x, mesh, got: np.ndarray) -> str:
    """What wrong column totals (on the `mesh` of k devices) are: a known mistake's, else numbers written by hand
    (the answer run again on x + 1 gives the same: it does not follow x at all), else other totals."""
    found = which_mistake(got, scaled_mistakes(x, mesh.size), 1e-4)
    if found is not None:
        return say(found[0], **found[1])
    with explained_here(name, mesh):
        moved = np.asarray(call_answer(fn, f32(np.asarray(x) + 1.0), mesh), np.float64)
    return say("scaled_by_hand") if same_values(moved, got, 1e-4, dtype=float) else say("scaled_other")


def _check_sharded_scaled_sum(fn: Callable) -> None:
    name = "sharded_scaled_sum"
    for k, x in _SCALED_SUM_CASES:
        mesh = line_mesh(k)
        rows, m = x.shape
        where = say("where_line", k=k, what=say("scaled_x", shape=(rows, m)))
        with explained_here(name, mesh):
            out = call_answer(fn, x, mesh)
        expect_array(name, out, dtype=jnp.float32)
        if 1 < len(out.sharding.device_set) != k:  # padded rows divide by another mesh's devices too
            fail(say("other_mesh", name=name, n=len(out.sharding.device_set), k=k, where=where))
        block = -(-rows // k)  # rows per device, x padded with zero rows to a multiple of k
        xs = np.asarray(x, np.float64)
        want = 2.0 * xs.sum(axis=0)
        got_shape = tuple(out.shape)
        if got_shape != (m,):
            hint = ""
            if got_shape == ():
                hint = say("scaled_shape_scalar")
            elif got_shape == (block, m):
                hint = say("scaled_shape_block", got=got_shape)
            elif got_shape == (block,):
                hint = say("scaled_shape_row_totals", got=got_shape)
            elif got_shape in ((k * m,), (k, m)):
                hint = say("scaled_shape_per_device", k=k)
            fail(say("scaled_shape", name=name, want=(m,), m=m, got=got_shape, where=where, hint=hint))
        got = np.asarray(out, np.float64)
        expect_values(name, got, want, where, "scaled_wrong", functools.partial(_scaled_hint, name, fn, x, mesh, got))
    k, x = _SCALED_SUM_CASES[-1]  # the smallest mesh: the same verdict, the cheapest compiles
    mesh = line_mesh(k)
    judge_regions(
        name,
        fn,
        mesh,
        x,
        ins=(((DEVICES,),),),
        what=say("total"),
        axis=DEVICES,
        why=say("scaled_why"),
        context=explained_here(name, mesh),
    )
    for k, x in _SCALED_SUM_CASES:  # how the work is split (the graded case's rule), once the values and psum are right
        context = explained_here(name, line_mesh(k))
        expect_case_work(
            _scaled_case(fn, k, x), "flops", _SCALED_REFERENCE_FLOPS[k], say, "scaled_whole", context, name=name, k=k
        )


def _scaled_case(fn: Callable, k: int, x) -> Case:
    """The graded program of `fn(x, mesh)` on `k` devices: each device adds up its own rows, one device's FLOPs
    at most `_SCALED_FLOPS_FACTOR` times the reference's (the visible check judges this very case)."""
    return Case(with_mesh(fn, line_mesh(k)), spec(x.shape, jnp.float32), work={"flops": _SCALED_FLOPS_FACTOR})


def _observe_sharded_scaled_sum(fn: Callable) -> dict:
    """Exported programs of `fn(x, mesh)` on 8, 4 and 2 devices (the grader draws x and judges one device's
    FLOPs against the reference's, `_SCALED_FLOPS_FACTOR`)."""
    return programs({f"out_k{k}_{x.shape[0]}x{x.shape[1]}": _scaled_case(fn, k, x) for k, x in _SCALED_SUM_CASES})


sharded_scaled_sum = exercise("sharded_scaled_sum", _check_sharded_scaled_sum, observe=_observe_sharded_scaled_sum)
