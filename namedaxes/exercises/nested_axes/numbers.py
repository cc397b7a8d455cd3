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

from .running import _describe, _expect_grid_array, _grid_words, _observe_on_grids, _run, _values_failure, grid_map
from .text import _say

exercise = exercises_for(__package__)  # this notebook's exercises: exercise(name, check, hints=..., observe=...)


# ---------------------------------------------------------------- 2. device_numbers
def _check_device_numbers(fn) -> None:
    name = "device_numbers"
    r = rng("device_numbers_check")
    for grid in (GRID_SHAPE, (4, 2), (2, 2), (1, 4)):
        x = jnp.asarray(r.normal(size=grid), jnp.float32)
        where = _say("on_grid", grid=_grid_words(grid))
        out = _run(name, lambda: grid_map(fn)(x), where)  # noqa: B023 - run in this iteration
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            fail(_say("not_a_tuple", name=name, n=2, what=_say("two_scalars"), got=_describe(out)))
        rows, cols = np.indices(grid)
        n_rows, n_cols = grid
        row_major, column_major = rows * n_cols + cols, cols * n_rows + rows
        parts = (
            ("number_row_major", row_major, column_major, "order_column_major"),
            ("number_column_major", column_major, row_major, "order_row_major"),
        )
        for k, ((what, want, other, other_order), got) in enumerate(zip(parts, out)):
            label = f"{name}(x)[{k}]"
            _expect_grid_array(label, got, grid, (), jnp.int32)
            if same_values(got, want):
                continue
            if same_values(got, other):
                diagnosis = _say("numbers_swapped", other=_say(other_order))
            elif k == 0 and same_values(got, rows * 4 + cols) or k == 1 and same_values(got, cols * 2 + rows):
                diagnosis = _say("numbers_hard_coded")
            elif k == 0 and same_values(got, rows * n_rows + cols):
                diagnosis = _say(
                    "numbers_wrong_length", order=_say("order_row_major"), line=_say("line_row"), axis=MODEL_REPLICAS
                )
            elif k == 1 and same_values(got, cols * n_cols + rows):
                diagnosis = _say(
                    "numbers_wrong_length", order=_say("order_column_major"), line=_say("line_column"), axis=DATA_SHARDS
                )
            elif same_values(got, rows) and n_rows > 1:
                diagnosis = _say("numbers_one_axis", axis=DATA_SHARDS)
            elif same_values(got, cols):
                diagnosis = _say("numbers_one_axis", axis=MODEL_REPLICAS)
            elif same_values(got, want + 1):
                diagnosis = _say("numbers_one_based")
            else:
                diagnosis = _say("numbers_generic")
            _values_failure(label, got, want, where, _say("numbers_part", k=k, what=_say(what), diagnosis=diagnosis))


def _observe_device_numbers(fn) -> dict:
    return _observe_on_grids(
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
