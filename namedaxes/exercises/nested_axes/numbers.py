"""Exercise 2, `device_numbers`: each device's number in row-major and column-major order of the grid."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from namedaxes import DATA_SHARDS, GRID_SHAPE, MODEL_REPLICAS
from namedaxes.checking import (
    exercises_for,
    fail,
    same_values,
)
from namedaxes.grading import rng

from .running import describe, expect_grid_array, grid_map, grid_words, observe_on_grids, run_answer, values_failure
from .text import say

exercise = exercises_for(__package__)  # this notebook's exercises: exercise(name, check, hints=..., observe=...)


# ---------------------------------------------------------------- 2. device_numbers
def _check_device_numbers(fn) -> None:
    name = "device_numbers"
    r = rng("device_numbers_check")
    for grid in (GRID_SHAPE, (4, 2), (2, 2), (1, 4)):
        x = jnp.asarray(r.normal(size=grid), jnp.float32)
        where = say("on_grid", grid=grid_words(grid))
        out = run_answer(name, lambda: grid_map(fn)(x), where)  # noqa: B023 - run in this iteration
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            fail(say("not_a_tuple", name=name, n=2, what=say("two_scalars"), got=describe(out)))
        rows, cols = np.indices(grid)
        n_rows, n_cols = grid
        row_major, column_major = rows * n_cols + cols, cols * n_rows + rows
        parts = (
            ("number_row_major", row_major, column_major, "order_column_major"),
            ("number_column_major", column_major, row_major, "order_row_major"),
        )
        for k, ((what, want, other, other_order), got) in enumerate(zip(parts, out)):
            label = f"{name}(x)[{k}]"
            expect_grid_array(label, got, grid, (), jnp.int32)
            if same_values(got, want):
                continue
            if same_values(got, other):
                diagnosis = say("numbers_swapped", other=say(other_order))
            elif k == 0 and same_values(got, rows * 4 + cols) or k == 1 and same_values(got, cols * 2 + rows):
                diagnosis = say("numbers_hard_coded")
            elif k == 0 and same_values(got, rows * n_rows + cols):
                diagnosis = say(
                    "numbers_wrong_length", order=say("order_row_major"), line=say("line_row"), axis=MODEL_REPLICAS
                )
            elif k == 1 and same_values(got, cols * n_cols + rows):
                diagnosis = say(
                    "numbers_wrong_length", order=say("order_column_major"), line=say("line_column"), axis=DATA_SHARDS
                )
            elif same_values(got, rows) and n_rows > 1:
                diagnosis = say("numbers_one_axis", axis=DATA_SHARDS)
            elif same_values(got, cols):
                diagnosis = say("numbers_one_axis", axis=MODEL_REPLICAS)
            elif same_values(got, want + 1):
                diagnosis = say("numbers_one_based")
            else:
                diagnosis = say("numbers_generic")
            values_failure(label, got, want, where, say("numbers_part", k=k, what=say(what), diagnosis=diagnosis))


def _observe_device_numbers(fn) -> dict:
    return observe_on_grids(
        fn, ((GRID_SHAPE, ()), ((4, 2), ()), ((2, 2), (3,)), ((1, 4), ()), ((2, 1), (2,))), {"kind": "normal"}
    )


device_numbers = exercise(
    "device_numbers",
    _check_device_numbers,
    hints=[
        "A device's number in an order is how many devices come before it. In the row-major order, which "
        "devices come before this one: how many whole rows, and how many devices of its own row?",
        "`lax.axis_index` and `lax.axis_size` give this device's position along one axis and that axis's "
        "length; the checks use grids of other shapes, so no length may be written as a number.",
        "Like the collectives, `lax.axis_index` also accepts a tuple of axis names: it then numbers the "
        "devices of all those axes together, and the order of the names in the tuple decides which axis "
        "counts slowest. Try both orders on the grid and compare with `device_ids`.",
    ],
    observe=_observe_device_numbers,
)
