"""Exercise 3, `row_normalize`: rows normalized by a norm whose parts live on other devices."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from namedaxes import DATA_SHARDS, GRID_SHAPE, MODEL_REPLICAS
from namedaxes.checking import (
    answer_work,
    examined,
    expect_work_within,
    fail,
    same_values,
    which_mistake,
)
from namedaxes.grading import Case, programs, rng, spec

from .running import (
    UNIFORM,
    auto_grid_mesh,
    exercise,
    expect_global_array,
    expect_grid_program,
    explained_run,
    grid_words,
    run_answer,
    seen_descriptions,
    uniform,
    values_failure,
)
from .text import say

# How the work is split (the grader's `Case(work=...)` on its work case, the visible check alike): the largest array
# one device materializes, read from the compiled per-device program, at most `_RN_LARGEST_FACTOR` times the
# reference's, its own block of x (`_RN_WORK_K` float32 numbers; a test keeps it true). The work case has long
# blocks, so that a block outweighs the small tables a compiled program holds. No device ever holds a whole row:
# gathering a row's blocks over MODEL_REPLICAS to sum it whole costs 4x on the 2 x 4 grid.
_RN_LARGEST_FACTOR = 1.5
_RN_WORK_K = 16
_RN_REFERENCE_LARGEST = 4 * _RN_WORK_K


# ---------------------------------------------------------------- 3. row_normalize
def row_normalize_mistakes(xs: np.ndarray, grid, k: int) -> list[tuple]:
    """The usual mistakes' results on `xs` (on a `grid` mesh, `k` columns a device): divided by each column's
    sum, by each device's own part of the row, by a sum over the model axis element by element, by the whole
    array's sum, by the partial sums added over the wrong axis or averaged (over either axis or both) (the
    check's diagnoses, and the grader's)."""
    xs = np.asarray(xs, np.float64)
    n_rows, n_cols = grid
    blocks = xs.reshape(n_rows, n_cols, k)
    partial = blocks.sum(axis=2, keepdims=True)  # each device's part of its row's sum

    def by(denominator):  # divide each block by a per-device value
        return (blocks / np.broadcast_to(denominator, partial.shape)).reshape(xs.shape)

    words = {"d": DATA_SHARDS, "m": MODEL_REPLICAS}
    return [
        (xs / xs.sum(axis=0, keepdims=True), "rn_elementwise_column", words),
        (by(partial), "rn_local_block", words),
        ((blocks / blocks.sum(axis=1, keepdims=True)).reshape(xs.shape), "rn_elementwise_row", words),
        (xs / xs.sum(), "rn_whole_array", {}),
        (by(partial.sum(axis=0, keepdims=True)), "rn_partials_wrong_axis", words),
        (by(partial.mean(axis=1, keepdims=True)), "rn_partials_mean", {"n": n_cols, **words}),
        (by(partial.mean(axis=0, keepdims=True)), "rn_partials_mean_wrong_axis", words),
        (by(partial.mean(axis=(0, 1), keepdims=True)), "rn_partials_mean_both", words),
    ]


def _check_row_normalize(fn) -> None:
    name = "row_normalize"
    label = f"{name}(x, mesh)"
    r = rng("row_normalize_check")
    for grid, k in ((GRID_SHAPE, 3), ((2, 2), 1), ((4, 2), 2)):
        mesh = auto_grid_mesh(grid)
        n_rows, n_cols = grid
        x = uniform(r, (n_rows, n_cols * k))
        where = say("on_mesh", grid=grid_words(grid), shape=tuple(x.shape))
        out = run_answer(name, lambda: jax.jit(lambda a: fn(a, mesh))(x), where, fix="fix_row_normalize")  # noqa: B023 - run in this iteration
        expect_global_array(label, out, x.shape, where, say("row_normalize_shape_hint"))
        xs = np.asarray(x, dtype=np.float64)
        want = xs / xs.sum(axis=1, keepdims=True)
        if same_values(out, want):
            continue
        key, fields = which_mistake(out, row_normalize_mistakes(xs, grid, k)) or ("", {})
        diagnosis = say(key, **fields) if key else ""
        values_failure(label, out, want, where, say("row_normalize_expected", diagnosis=diagnosis).strip())
    # the grader's steps, on these inputs: communication read from the compiled program (present, then
    # reaching the result), the per-device program's input split as the exercise's, the result's layout
    with explained_run(name, where, "fix_row_normalize"):
        facts = examined(lambda a: fn(a, mesh), x)
    over_model = [d for d in facts.present if d.endswith(f" over '{MODEL_REPLICAS}'")]
    if not over_model:
        fail(say("rn_no_collective", name=name, seen=seen_descriptions(facts.present), m=MODEL_REPLICAS))
    block = ((DATA_SHARDS,), (MODEL_REPLICAS,))
    expect_grid_program(name, facts, (MODEL_REPLICAS,), (block,), (block,), say("rn_layout_hint"))
    _expect_row_normalize_work(name, fn)


def _expect_row_normalize_work(name: str, fn) -> None:
    """No device holds a whole row: the largest array one device of the work case materializes (read from the
    compiled per-device program, as the grader reads it) is at most `_RN_LARGEST_FACTOR` times its own block."""
    grid, k = GRID_SHAPE, _RN_WORK_K
    mesh = auto_grid_mesh(grid)
    x = spec((grid[0], grid[1] * k), jnp.float32)
    where = say("on_mesh", grid=grid_words(grid), shape=tuple(x.shape))
    with explained_run(name, where, "fix_row_normalize"):
        work = answer_work(lambda a: fn(a, mesh), x)
    expect_work_within(
        work,
        "largest_bytes",
        _RN_REFERENCE_LARGEST,
        _RN_LARGEST_FACTOR,
        say,
        "rn_whole_row",
        name=name,
        k=k,
        m=MODEL_REPLICAS,
    )


def _observe_row_normalize(fn) -> dict:
    """Exported programs of `fn(x, mesh)` for four meshes (the grader draws x, reads the psum's axes), and the
    work case on the 2 x 4 grid with long blocks (the largest array one device holds)."""
    cases = {}
    for grid, k in ((GRID_SHAPE, 3), ((4, 2), 2), ((2, 2), 2), ((1, 4), 1)):
        mesh = auto_grid_mesh(grid)
        cases[f"{grid[0]}x{grid[1]}_k{k}"] = Case(
            lambda x, mesh=mesh: fn(x, mesh), spec((grid[0], grid[1] * k), jnp.float32), draw=UNIFORM
        )
    grid, k = GRID_SHAPE, _RN_WORK_K  # the work case: long blocks (see `_RN_LARGEST_FACTOR`)
    mesh = auto_grid_mesh(grid)
    cases[f"{grid[0]}x{grid[1]}_k{k}"] = Case(
        lambda x: fn(x, mesh),
        spec((grid[0], grid[1] * k), jnp.float32),
        draw=UNIFORM,
        work={"largest_bytes": _RN_LARGEST_FACTOR},
    )
    return programs(cases)


row_normalize = exercise("row_normalize", _check_row_normalize, observe=_observe_row_normalize)
