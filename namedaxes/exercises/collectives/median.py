"""Exercise 1, `median_centered`: x minus the medians of its columns, the blocks gathered with all_gather."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from jax.sharding import PartitionSpec as P

from namedaxes import DEVICES
from namedaxes.checking import (
    exercises_for,
    f32,
    fail,
    same_values,
    show_values,
)
from namedaxes.meshes import abstract_on as _on
from namedaxes.meshes import line_mesh
from namedaxes.meshes import placed as _placed

from .running import examined_here, expect_float32, expect_uses, judged, observe_programs, run_answer
from .text import say

exercise = exercises_for(__package__)  # this notebook's exercises: exercise(name, check, hints=..., observe=...)

# ---------------------------------------------------------------- 1. median_centered
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


def _median_mean_or_medians(name: str, fn: Callable, rows: int) -> str:
    """x minus the column means, seen on blocks of `rows` rows: with 2 rows a device, the mean of the devices'
    own medians is the column mean too, so a mesh with longer blocks tells the two mistakes apart."""
    if rows > 2:
        return say("median_mean")
    for k, x_np in _MEDIAN_CASES:
        values = np.asarray(x_np, np.float64)
        n, m = values.shape
        if n // k <= 2:
            continue
        mesh = line_mesh(k)
        got = np.asarray(run_answer(name, fn, mesh, _placed(x_np, mesh, P(DEVICES))), np.float64)
        medians = np.median(values.reshape(k, -1, m), axis=1).mean(axis=0)
        if got.shape == values.shape and same_values(got, values - medians, 1e-4):
            return say("median_mean_of_medians", k=k, rows=n // k)
        break
    return say("median_mean")


def _check_median_centered(fn: Callable) -> None:
    name = "median_centered"
    for k, x_np in _MEDIAN_CASES:
        mesh = line_mesh(k)
        x = _placed(x_np, mesh, P(DEVICES))
        where = _median_where(k, x_np)
        out = run_answer(name, fn, mesh, x)
        expect_float32(name, out, where)
        values = np.asarray(x_np, np.float64)
        want = values - np.median(values, axis=0)
        n, m = values.shape
        if tuple(out.shape) != (n, m):
            hint = say("median_whole_vector", n=n, k=k) if tuple(out.shape) == (k * n, m) else ""
            fail(say("shape", name=name, want=(n, m), got=tuple(out.shape), where=where, hint=hint))
        got = np.asarray(out, np.float64)
        if not same_values(got, want, 1e-4):
            local = np.concatenate([b - np.median(b, axis=0) for b in values.reshape(k, -1, m)])
            if same_values(got, local, 1e-4):
                hint = say("median_local")
            elif same_values(got, values - np.median(values), 1e-4):
                hint = say("median_all_values")
            elif same_values(got, values - values.mean(axis=0), 1e-4):
                hint = _median_mean_or_medians(name, fn, values.shape[0] // k)
            elif same_values(got, -want, 1e-4):
                hint = say("median_sign")
            else:
                doubled = np.asarray(run_answer(name, fn, mesh, _placed(x_np * 2.0, mesh, P(DEVICES))), np.float64)
                # "by hand" only when the result does not follow x at all (x doubled: the answer doubles)
                fixed = same_values(doubled, got, 1e-4) and not same_values(got, np.zeros_like(got), 1e-6)
                hint = say("median_generic") if fixed else say("median_other")
            fail(
                say(
                    "values",
                    name=name,
                    where=where,
                    want=show_values(want, dtype=float),
                    got=show_values(got, dtype=float),
                    hint=hint,
                )
            )
    k, x_np = _MEDIAN_CASES[-1]  # the grader's reading, on the smallest mesh (the cheapest compiles)
    mesh = line_mesh(k)
    facts = examined_here(name, fn, mesh, _placed(x_np, mesh, P(DEVICES)), ins=(((DEVICES,),),), axis=DEVICES)
    expect_uses(name, facts, "all_gather", DEVICES, why=say("median_why"))
    judged(
        name,
        fn,
        mesh,
        _placed(x_np, mesh, P(DEVICES)),
        ins=(((DEVICES,),),),
        axis=DEVICES,
        why=say("median_why"),
        needs=(f"all_gather over '{DEVICES}'",),
        facts=facts,
    )


def _observe_median_centered(fn: Callable) -> dict:
    """Programs on 8, 4 and 2 devices, x placed P(DEVICES) (rows split); the reference's all_gather is required."""
    cases = {}
    for k, x in _MEDIAN_CASES:
        mesh = line_mesh(k)
        cases[f"k{k}_{x.shape[0]}x{x.shape[1]}"] = (mesh, [_on(mesh, x.shape, P(DEVICES))])
    # where the centred matrix lives is left open: split like x, or replicated
    return observe_programs(fn, cases, structure="k8_16x2", out_layout=False)


median_centered = exercise(
    "median_centered",
    _check_median_centered,
    hints=[
        "A median cannot be assembled from per-device partial results the way a sum can. Which values "
        "does the median of one column depend on, and where do they live when the rows are split?",
        "Give every device every row (section 2's collective, tiled, so that the blocks stack back into "
        "the matrix), then take one median per column and subtract it from the device's own rows: "
        "which `axis` of `jnp.median` is 'per column'?",
        "`block - jnp.median(lax.all_gather(block, DEVICES, tiled=True), axis=0)` inside "
        "`jax.shard_map(..., in_specs=P(DEVICES), out_specs=P(DEVICES))`: the result differs from device "
        "to device, and all_gather's output is typed varying anyway.",
    ],
    observe=_observe_median_centered,
)
