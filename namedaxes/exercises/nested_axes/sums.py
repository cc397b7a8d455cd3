"""Exercise 1, `grid_sums`: sums over one mesh axis, the other, and both, on a grid of devices."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from namedaxes import DATA_SHARDS, GRID_AXES, GRID_SHAPE, MODEL_REPLICAS
from namedaxes.checking import (
    examined,
    expect_communication,
    fail,
    same_values,
    which_mistake,
)
from namedaxes.grading import rng

from .running import (
    UNIFORM,
    exercise,
    expect_grid_array,
    grid_parts,
    grid_words,
    observe_on_grids,
    on_devices,
    run_answer,
    uniform,
    values_failure,
)
from .text import say

# ---------------------------------------------------------------- 1. grid_sums
# Part k of the answer: (what it is, which devices it combines, the array axes it reduces).
_GRID_SUMS_PARTS = (
    ("part_same_data", "group_row", (1,)),
    ("part_same_model", "group_column", (0,)),
    ("part_neither", "group_neither", None),  # no single collective: the grid, minus the row and the column
)
_GROUP_OF_AXES = {(1,): "group_row", (0,): "group_column", (0, 1): "group_all"}


def _grid_part(x, axes) -> np.ndarray:
    """Part of `grid_sums` on the grid `x`: the sum over `axes` of the grid, broadcast back; `None`: the sum
    over the devices in neither this device's row nor its column."""
    x = np.asarray(x, np.float64)
    if axes is None:
        return _grid_part(x, (0, 1)) - _grid_part(x, (1,)) - _grid_part(x, (0,)) + x
    return np.broadcast_to(x.sum(axis=axes, keepdims=True), x.shape)


def neither_mistakes(x) -> list[tuple]:
    """The usual mistakes' third part ("neither") on the grid `x`: the sum over the whole grid, or the row and
    the column both subtracted from it without adding x back (the check's diagnoses, and the grader's); then the
    one-collective reductions the check names in its own words (`_grid_reductions`, but the whole grid's sum,
    the first mistake), as other answers: on a grid of one row the whole grid is the row."""
    others = [(v, None, {}) for _, group, mean, v in _grid_reductions(x) if mean or group != "group_all"]
    return [
        (_grid_part(x, (0, 1)), "grid_sums_neither_all", {}),
        (_grid_part(x, None) - np.asarray(x, np.float64), "grid_sums_neither_twice", {}),
        *others,
    ]


def _axes_words(axes) -> str:
    if axes == (0, 1):
        return say("axes_both")
    return say("axes_one", axis=GRID_AXES[axes[0]])


def _grid_reductions(x: np.ndarray) -> list[tuple[str, str | None, bool, np.ndarray]]:
    """Every reduction a per-device answer might plausibly have computed: (words, group, is_mean, values)."""
    x = np.asarray(x, dtype=np.float64)
    full = lambda a: np.broadcast_to(a, x.shape)  # noqa: E731
    found = []
    for axes in ((0,), (1,), (0, 1)):
        found.append(
            (
                say("seen_sum", axes=_axes_words(axes)),
                _GROUP_OF_AXES[axes],
                False,
                full(x.sum(axis=axes, keepdims=True)),
            )
        )
        found.append(
            (
                say("seen_mean", axes=_axes_words(axes)),
                _GROUP_OF_AXES[axes],
                True,
                full(x.mean(axis=axes, keepdims=True)),
            )
        )
    found.append((say("seen_nothing"), None, False, x))
    return found


def _group_words(group: str) -> str:
    return say(group, d=DATA_SHARDS, m=MODEL_REPLICAS)


def _check_grid_sums(fn) -> None:
    name = "grid_sums"
    r = rng("grid_sums_check")
    for grid, per_device in ((GRID_SHAPE, (3,)), ((4, 2), ()), ((2, 2), (2,))):
        x = uniform(r, (*grid, *per_device))
        out, where = grid_parts(name, fn, x, 3, say("three_arrays", parts=say("parts_list")))
        options = _grid_reductions(x)
        for k, ((want_key, group, axes), got) in enumerate(zip(_GRID_SUMS_PARTS, out)):
            label = f"{name}(x)[{k}]"
            expect_grid_array(label, got, grid, per_device, jnp.float32)
            want = _grid_part(x, axes)
            if same_values(got, want):
                continue
            neither = which_mistake(got, neither_mistakes(x)) if axes is None else None
            if neither is not None:
                values_failure(label, got, want, where, say(neither[0], **neither[1]))
            seen = next(
                (
                    (words, seen_group, is_mean)
                    for words, seen_group, is_mean, value in options
                    if same_values(got, value)
                ),
                None,
            )
            if seen is not None and seen[1] is None:
                fail(say("grid_sums_unreduced", label=label, want=say(want_key), where=where))
            if seen is not None:
                words, seen_group, is_mean = seen
                advice = say("advice_mean") if is_mean and seen_group == group else say("advice_part")
                fail(
                    say(
                        "grid_sums_seen",
                        label=label,
                        want=say(want_key),
                        where=where,
                        seen=words,
                        group=_group_words(seen_group),
                        advice=advice,
                    )
                )
            values_failure(
                label, got, want, where, say("grid_sums_generic", want=say(want_key), group=_group_words(group))
            )
    # Structure (a guard: under pmap-over-vmap the values above cannot be right without both axes), read the
    # grader's way from the program it runs (`on_devices`: both axes are devices there): a collective over
    # each axis that reaches the results (`namedaxes.judging.examine`).
    probe = uniform(rng("grid_sums_check"), (*GRID_SHAPE, 3))
    facts = run_answer(
        name, lambda: examined(on_devices(fn, GRID_SHAPE), probe), say("on_grid", grid=grid_words(GRID_SHAPE))
    )
    for axis, constant in zip(GRID_AXES, ("DATA_SHARDS", "MODEL_REPLICAS")):
        expect_communication(name, facts, axis, hint=say("grid_sums_structure", constant=constant))


def _observe_grid_sums(fn) -> dict:
    return observe_on_grids(
        fn, ((GRID_SHAPE, (3,)), (GRID_SHAPE, ()), ((4, 2), (2,)), ((2, 2), (2, 3)), ((1, 4), (5,))), UNIFORM
    )


grid_sums = exercise("grid_sums", _check_grid_sums, observe=_observe_grid_sums)
