"""Exercise 2, `device_numbers`: each device's number in row-major and column-major order of the grid."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from namedaxes import DATA_SHARDS, GRID_SHAPE, MODEL_REPLICAS
from namedaxes.checking import (
    mistake_sentence,
    same_values,
)
from namedaxes.grading import rng

from .running import (
    exercise,
    expect_grid_array,
    grid_parts,
    observe_on_grids,
    values_failure,
)
from .text import say


# ---------------------------------------------------------------- 2. device_numbers
def numbers_mistakes(grid) -> list[list[tuple]]:
    """The usual mistakes' numbers on a `grid`, for each part (row-major, column-major): the other order, a 2 x 4
    grid's lengths written as numbers, the length of the wrong axis, the position along one axis only, numbers
    counted from 1 (the check's diagnoses, and the grader's)."""
    rows, cols = np.indices(grid)
    n_rows, n_cols = grid
    row_major, column_major = rows * n_cols + cols, cols * n_rows + rows
    one_axis = [(rows, "numbers_one_axis", {"axis": DATA_SHARDS})] if n_rows > 1 else []
    one_axis.append((cols, "numbers_one_axis", {"axis": MODEL_REPLICAS}))
    return [
        [
            (column_major, "numbers_swapped_column", {}),
            (rows * 4 + cols, "numbers_hard_coded", {}),
            (rows * n_rows + cols, "numbers_wrong_length_row", {"axis": MODEL_REPLICAS}),
            *one_axis,
            (row_major + 1, "numbers_one_based", {}),
        ],
        [
            (row_major, "numbers_swapped_row", {}),
            (cols * 2 + rows, "numbers_hard_coded", {}),
            (cols * n_cols + rows, "numbers_wrong_length_column", {"axis": DATA_SHARDS}),
            *one_axis,
            (column_major + 1, "numbers_one_based", {}),
        ],
    ]


def _check_device_numbers(fn) -> None:
    name = "device_numbers"
    r = rng("device_numbers_check")
    for grid in (GRID_SHAPE, (4, 2), (2, 2), (1, 4)):
        x = jnp.asarray(r.normal(size=grid), jnp.float32)
        out, where = grid_parts(name, fn, x, 2, say("two_scalars"))
        rows, cols = np.indices(grid)
        n_rows, n_cols = grid
        wanted = (("number_row_major", rows * n_cols + cols), ("number_column_major", cols * n_rows + rows))
        for k, ((what, want), got, mistakes) in enumerate(zip(wanted, out, numbers_mistakes(grid))):
            label = f"{name}(x)[{k}]"
            expect_grid_array(label, got, grid, (), jnp.int32)
            if same_values(got, want):
                continue
            diagnosis = mistake_sentence(say, got, mistakes, otherwise=say("numbers_generic"))
            values_failure(label, got, want, where, say("numbers_part", k=k, what=say(what), diagnosis=diagnosis))


def _observe_device_numbers(fn) -> dict:
    return observe_on_grids(
        fn, ((GRID_SHAPE, ()), ((4, 2), ()), ((2, 2), (3,)), ((1, 4), ()), ((2, 1), (2,))), {"kind": "normal"}
    )


device_numbers = exercise("device_numbers", _check_device_numbers, observe=_observe_device_numbers)
