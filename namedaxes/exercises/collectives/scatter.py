"""Exercise 2, `sum_scatter_columns`: the devices' blocks added with psum_scatter, each device keeping its
columns, normalized.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from jax.sharding import PartitionSpec as P

from namedaxes import DEVICES, meshes
from namedaxes.checking import (
    expect_float32,
    expect_work_within,
    fail,
    fail_values,
    mistake_sentence,
    same_values,
)
from namedaxes.meshes import abstract_on, line_mesh

from .running import (
    exercise,
    judged,
    observe_programs,
    rule_divisible,
    rule_global_sharding,
    rule_in_specs,
    rule_varying,
    run_answer,
    work_here,
)
from .text import TEXT, say

# ---------------------------------------------------------------- 2. sum_scatter_columns
ROWS, COLUMNS = 3, 8  # each device's block of x is ROWS x COLUMNS


def _scatter_case(k: int) -> np.ndarray:
    return (np.arange(k * ROWS * COLUMNS, dtype=np.float32).reshape(k * ROWS, COLUMNS) % 7) - 3.0


_SCATTER_MESHES = (8, 4, 2)
# How the work is split (the grader's `Case(work=...)` on every case, the visible check on the first): the
# largest array one device materializes, read from the compiled per-device program, at most
# `_SCATTER_LARGEST_FACTOR` times the reference's (its own block, 3 x 8 float32, on every mesh; a test keeps
# it true). Adding k copies of the whole block side by side, so that the scatter hands every device all the
# column sums, costs 8x (8 devices), 4x (4) and 2x (2); the equivalent answers 1x.
_SCATTER_LARGEST_FACTOR = 1.5
_SCATTER_REFERENCE_LARGEST = 4 * ROWS * COLUMNS


def _own_columns(blocks: np.ndarray) -> np.ndarray:
    """What each device returns if it keeps its own columns of its own block, without adding."""
    k, width = blocks.shape[0], COLUMNS // blocks.shape[0]
    return np.concatenate([blocks[i][:, i * width : (i + 1) * width] for i in range(k)], axis=1)


def _scatter_rules():
    def divisible(err, name, mesh):
        k = mesh.devices.size if mesh is not None else "k"
        return rule_divisible(err, name, mesh, extra=say("scatter_rows_hint", rows=ROWS, k=k))

    return (rule_varying, divisible, rule_in_specs, rule_global_sharding)


_SCATTER_RULES = _scatter_rules()


def _unit_columns(m: np.ndarray) -> np.ndarray:
    """`m` with each column divided by its length (the square root of the sum of its squared entries)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return m / np.sqrt((m**2).sum(axis=0))


def scatter_mistakes(blocks: np.ndarray) -> list[tuple]:
    """The usual mistakes' results on the devices' `blocks` (k x rows x columns): the total not normalized, each
    block normalized before the adding, the rows of each device's columns normalized (NaN where such a row is
    zeros), a device's own block normalized (the first device's, or each its own columns) (the check's
    diagnoses, and the grader's)."""
    rows = blocks.shape[1]
    total = blocks.sum(axis=0)
    chunks = np.split(total, blocks.shape[0], axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        row_lengths = np.concatenate([c / np.sqrt((c**2).sum(axis=1, keepdims=True)) for c in chunks], axis=1)
    return [
        (total, "scatter_not_normalized", {"rows": rows}),
        (sum(_unit_columns(b) for b in blocks), "scatter_normalized_first", {}),
        (row_lengths, "scatter_row_lengths", {"rows": rows}),
        (_unit_columns(blocks[0]), "scatter_block", {}),
        (_unit_columns(_own_columns(blocks)), "scatter_block", {}),
    ]


def _scatter_hint(got: np.ndarray, blocks: np.ndarray) -> str:
    """What wrong unit columns are (`scatter_mistakes`), else how to compare them."""
    return mistake_sentence(say, got, scatter_mistakes(blocks), 1e-4, otherwise=say("scatter_generic"))


def _check_sum_scatter_columns(fn: Callable) -> None:
    name = "sum_scatter_columns"
    for k in _SCATTER_MESHES:
        mesh = line_mesh(k)
        x_np = _scatter_case(k)
        x = meshes.placed(x_np, mesh, P(DEVICES))
        where = say("where_mesh", k=k, what=say("what_blocks", shape=x_np.shape, rows=ROWS, cols=COLUMNS))
        out = run_answer(name, fn, mesh, x, rules=_SCATTER_RULES)
        expect_float32(name, out, TEXT, where=where)
        blocks = np.asarray(x_np, np.float64).reshape(k, ROWS, COLUMNS)
        want = _unit_columns(blocks.sum(axis=0))
        got_shape = tuple(out.shape)
        if got_shape != want.shape:
            if got_shape == (ROWS, k * COLUMNS) or got_shape == (k * ROWS, COLUMNS):
                hint = say("scatter_copies")
            elif got_shape == (k * ROWS, COLUMNS // k):
                hint = say("scatter_row_chunks")
            else:
                hint = ""
            fail(say("shape", name=name, want=want.shape, got=got_shape, where=where, hint=hint))
        got = np.asarray(out, np.float64)
        if not same_values(got, want, 1e-4):
            hint = _scatter_hint(got, blocks)
            fail_values(say, "values", want, got, dtype=float, name=name, where=where, hint=hint)
    mesh = line_mesh(_SCATTER_MESHES[-1])  # the grader's reading, on the smallest mesh
    x = meshes.placed(_scatter_case(_SCATTER_MESHES[-1]), mesh, P(DEVICES))
    uses = (("psum_scatter", say("scatter_why")),)
    judged(name, fn, mesh, x, ins=(((DEVICES,),),), axis=DEVICES, uses=uses, rules=_SCATTER_RULES)
    _expect_scatter_work(name, fn, _SCATTER_MESHES[0])


def _expect_scatter_work(name: str, fn: Callable, k: int) -> None:
    """No device holds every column sum: the largest array one device materializes (read from the compiled
    per-device program the grader compiles) is at most `_SCATTER_LARGEST_FACTOR` times the reference's."""
    mesh = line_mesh(k)
    x = meshes.placed(_scatter_case(k), mesh, P(DEVICES))
    work = work_here(name, fn, mesh, x, rules=_SCATTER_RULES)
    want = _SCATTER_REFERENCE_LARGEST
    expect_work_within(work, "largest_bytes", want, _SCATTER_LARGEST_FACTOR, say, "scatter_whole", name=name, k=k)


def _observe_sum_scatter_columns(fn: Callable) -> dict:
    """Programs on 8, 4 and 2 devices, x placed P(DEVICES); the reference's psum_scatter is required."""
    cases = {}
    for k in _SCATTER_MESHES:
        mesh = line_mesh(k)
        cases[f"k{k}"] = (mesh, [abstract_on(mesh, (k * ROWS, COLUMNS), P(DEVICES))])
    work = {"largest_bytes": _SCATTER_LARGEST_FACTOR}
    return observe_programs(fn, cases, structure="k8", only=True, work=work)


sum_scatter_columns = exercise("sum_scatter_columns", _check_sum_scatter_columns, observe=_observe_sum_scatter_columns)
