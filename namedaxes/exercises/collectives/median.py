"""Exercise 1, `median_centered`: x minus the medians of its columns, the blocks gathered with all_gather."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from namedaxes import DEVICES, meshes
from namedaxes.checking import (
    expect_float32,
    expect_output_layouts,
    expect_work_within,
    f32,
    fail,
    fail_values,
    same_values,
    which_mistake,
)
from namedaxes.meshes import abstract_on, line_mesh

from .running import exercise, judged, observe_programs, run_answer, work_here
from .text import TEXT, say

# ---------------------------------------------------------------- 1. median_centered
# How the work is split (the grader's `Case(work=...)` on its work case, the visible check alike): each device
# centres its own rows. Every device sorts every row to find the medians (the statement's way), and that costs
# far more than the centring, so the FLOPs of the whole program cannot tell one device's share of the centring
# from all of it; its arithmetic on numbers can (`Work.arithmetic_flops`: additions, subtractions,
# multiplications, ..., a matmul's multiply-adds, not a sort's comparisons). On the work case (8 devices, 32 rows
# of 4 each) the reference subtracts the medians from its own 32 x 4 block and takes the 4 medians' midpoints (2
# FLOPs each): 136 FLOPs (a test keeps it true); centring all 256 rows and keeping its own, 1,032; centring them
# as one matmul `[x, 1] @ [[I], [-medians]]`, 10,252.
_MEDIAN_WORK_K, _MEDIAN_WORK_SHAPE = 8, (256, 4)
_MEDIAN_ARITHMETIC_FACTOR = 2.0
_MEDIAN_REFERENCE_ARITHMETIC = (_MEDIAN_WORK_SHAPE[0] // _MEDIAN_WORK_K + 2) * _MEDIAN_WORK_SHAPE[1]

# (devices, x): rows split over DEVICES (blocks of 2, 3 and 3 rows). The hidden observations use
# random values of the same shapes.
_MEDIAN_CASES = [
    (
        8,
        f32(
            np.array(
                [
                    3,
                    -1,
                    4,
                    1,
                    -5,
                    9,
                    2,
                    -6,
                    5,
                    3,
                    -5,
                    8,
                    9,
                    -7,
                    9,
                    3,
                    0,
                    2,
                    -4,
                    6,
                    1,
                    1,
                    -2,
                    7,
                    8,
                    -3,
                    5,
                    4,
                    -1,
                    2,
                    6,
                    0,
                ]
            ).reshape(16, 2)
        ),
    ),
    (
        4,
        f32(
            np.array(
                [
                    2.5,
                    0.0,
                    -1.0,
                    7.0,
                    1.5,
                    1.0,
                    -3.0,
                    4.0,
                    0.5,
                    2.0,
                    6.0,
                    -2.0,
                    1.0,
                    3.0,
                    -0.5,
                    5.0,
                    2.0,
                    -1.5,
                    0.0,
                    4.5,
                    3.5,
                    -2.5,
                    1.5,
                    0.5,
                    6.5,
                    -4.0,
                    2.0,
                    1.0,
                    0.0,
                    3.0,
                    -1.0,
                    2.5,
                    5.5,
                    1.5,
                    -0.5,
                    4.0,
                ]
            ).reshape(12, 3)
        ),
    ),
    (
        2,
        f32(
            [[1.0, 10.0, 2.0], [4.0, 3.0, -8.0], [0.5, 2.0, 6.0], [-1.0, 7.0, 3.0], [2.0, -2.0, 1.0], [9.0, 0.0, -3.0]]
        ),
    ),
]


def _median_where(k, x) -> str:
    rows, cols = x.shape
    return say("where_mesh", k=k, what=say("what_blocks", shape=x.shape, rows=rows // k, cols=cols))


def _telling_case() -> tuple[int, int]:
    """(devices, rows each) of the first mesh whose blocks are longer than 2 rows: there the mean of the devices'
    own medians is not the column mean (with 2 rows a device, a median and a mean agree)."""
    return next((k, x.shape[0] // k) for k, x in _MEDIAN_CASES if x.shape[0] // k > 2)


def median_mistakes(x, k: int) -> list[tuple]:
    """The usual mistakes' results on `x` (its rows split over `k` devices): each block centred on its own
    medians, one median of all of x, the column means, the mean of the devices' own column medians, the median
    minus x (the check's diagnoses, and the grader's). With 2 rows a device the column means and the mean of
    the medians are the same values: the check, and the grader's other meshes, tell them apart."""
    values = np.asarray(x, np.float64)
    n, m = values.shape
    blocks = values.reshape(k, -1, m)
    medians = np.median(blocks, axis=1).mean(axis=0)
    telling_k, telling_rows = _telling_case()
    return [
        (np.concatenate([b - np.median(b, axis=0) for b in blocks]), "median_local", {}),
        (values - np.median(values), "median_all_values", {}),
        (values - values.mean(axis=0), "median_mean", {}),
        (values - medians, "median_mean_of_medians", {"k": telling_k, "rows": telling_rows}),
        (np.median(values, axis=0) - values, "median_sign", {}),
    ]


def _median_mean_or_medians(name: str, fn: Callable) -> str:
    """x minus the column means, seen on blocks of 2 rows: there the mean of the devices' own medians is the
    column mean too, so the mesh with longer blocks (`_telling_case`) tells the two mistakes apart."""
    k = _telling_case()[0]
    x_np = next(x for kk, x in _MEDIAN_CASES if kk == k)
    mesh = line_mesh(k)
    got = np.asarray(run_answer(name, fn, mesh, meshes.placed(x_np, mesh, P(DEVICES))), np.float64)
    key, fields = which_mistake(got, median_mistakes(x_np, k), 1e-4) or ("median_mean", {})
    return say(key, **fields) if key == "median_mean_of_medians" else say("median_mean")


def _check_median_centered(fn: Callable) -> None:
    name = "median_centered"
    for k, x_np in _MEDIAN_CASES:
        mesh = line_mesh(k)
        x = meshes.placed(x_np, mesh, P(DEVICES))
        where = _median_where(k, x_np)
        out = run_answer(name, fn, mesh, x)
        expect_float32(name, out, TEXT, where=where)
        values = np.asarray(x_np, np.float64)
        want = values - np.median(values, axis=0)
        n, m = values.shape
        if tuple(out.shape) != (n, m):
            hint = say("median_whole_vector", n=n, k=k) if tuple(out.shape) == (k * n, m) else ""
            fail(say("shape", name=name, want=(n, m), got=tuple(out.shape), where=where, hint=hint))
        got = np.asarray(out, np.float64)
        if not same_values(got, want, 1e-4):
            found = which_mistake(got, median_mistakes(values, k), 1e-4)
            if found is not None and found[0] == "median_mean" and n // k <= 2:
                hint = _median_mean_or_medians(name, fn)
            elif found is not None:
                hint = say(found[0], **found[1])
            else:
                doubled = np.asarray(
                    run_answer(name, fn, mesh, meshes.placed(x_np * 2.0, mesh, P(DEVICES))), np.float64
                )
                # "by hand" only when the result does not follow x at all (x doubled: the answer doubles)
                fixed = same_values(doubled, got, 1e-4) and not same_values(got, np.zeros_like(got), 1e-6)
                hint = say("median_generic") if fixed else say("median_other")
            fail_values(say, "values", want, got, dtype=float, name=name, where=where, hint=hint)
    k, x_np = _MEDIAN_CASES[-1]  # the grader's reading, on the smallest mesh (the cheapest compiles)
    mesh = line_mesh(k)
    x = meshes.placed(x_np, mesh, P(DEVICES))
    facts = judged(name, fn, mesh, x, ins=(((DEVICES,),),), axis=DEVICES, uses=(("all_gather", say("median_why")),))
    # the result split over DEVICES, as the statement asks (the grader's `out_layout`): each device its own rows
    expect_output_layouts(name, facts, (((DEVICES,),),), hint=say("median_layout_hint"))
    _expect_median_work(name, fn)


def _expect_median_work(name: str, fn: Callable) -> None:
    """Each device centres its own rows: the arithmetic one device of the work case does (read from the compiled
    per-device program, as the grader reads it) is at most `_MEDIAN_ARITHMETIC_FACTOR` times the reference's."""
    k, shape = _MEDIAN_WORK_K, _MEDIAN_WORK_SHAPE
    mesh = line_mesh(k)
    x = jax.ShapeDtypeStruct(shape, jnp.float32, sharding=NamedSharding(mesh, P(DEVICES)))
    work = work_here(name, fn, mesh, x)
    want, factor = _MEDIAN_REFERENCE_ARITHMETIC, _MEDIAN_ARITHMETIC_FACTOR
    expect_work_within(work, "arithmetic_flops", want, factor, say, "median_all_rows", name=name, k=k, shape=shape)


def _observe_median_centered(fn: Callable) -> dict:
    """Programs on 8, 4 and 2 devices, x placed P(DEVICES) (rows split); the reference's all_gather is required,
    and the result split over DEVICES like x (each device returns its own rows, centred); and the work case
    (`_MEDIAN_WORK_SHAPE`): each device's arithmetic within `_MEDIAN_ARITHMETIC_FACTOR` of the reference's."""
    cases = {}
    for k, x in _MEDIAN_CASES:
        mesh = line_mesh(k)
        cases[f"k{k}_{x.shape[0]}x{x.shape[1]}"] = (mesh, [abstract_on(mesh, x.shape, P(DEVICES))])
    k, (rows, cols) = _MEDIAN_WORK_K, _MEDIAN_WORK_SHAPE
    mesh = line_mesh(k)
    work = {"arithmetic_flops": _MEDIAN_ARITHMETIC_FACTOR}
    cases[f"k{k}_{rows}x{cols}"] = (mesh, [abstract_on(mesh, (rows, cols), P(DEVICES))], work)
    return observe_programs(fn, cases, structure="k8_16x2")


median_centered = exercise("median_centered", _check_median_centered, observe=_observe_median_centered)
