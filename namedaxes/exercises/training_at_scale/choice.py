"""Exercise 3: `choose_layout`, the fastest layout that fits."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from namedaxes.checking import explained, fail
from namedaxes.grading import FORMULA_KEY
from namedaxes.transformer import Config

from .cases import LAYOUT_CASES, formula, hidden_cases_of, layout_case, layout_key, usable, visible_figures
from .running import exercise
from .text import say


def _as_layout(got) -> tuple | None:
    try:
        layout = tuple(int(v) for v in got)
    except (TypeError, ValueError):
        return None
    if len(layout) != 3 or math.prod(layout) != 8 or any(v < 1 for v in layout):
        return None
    return layout


def _expect_layout(name: str, got, case: str, config: Config, batch: int, budget: int, table: dict) -> None:
    layout = _as_layout(got)
    if layout is None:
        fail(say("layout_type", name=name, got=repr(got)[:80], case=case))
    why = usable(config, layout, batch)
    if why:
        fail(say("layout_invalid", name=name, got=layout, case=case, why=why))
    need, moved = table["usable"][layout_key(layout)]
    if need > budget:
        fail(say("layout_over_budget", name=name, got=layout, case=case, need=f"{need:,}", budget=f"{budget:,}"))
    best = tuple(table["best"])
    least = table["usable"][layout_key(best)][1]
    if moved > least:
        fail(
            say(
                "layout_not_cheapest",
                name=name,
                got=layout,
                case=case,
                moved=f"{moved:,}",
                better=best,
                least=f"{least:,}",
            )
        )


def _check_choose_layout(fn: Callable) -> None:
    name = "choose_layout"
    for (config, batch, budget), table in zip(LAYOUT_CASES, visible_figures()["choose_layout"]):
        case = say("layout_case", config=repr(config), batch=batch, budget=f"{budget:,}")
        with explained(name):
            got = fn(config, batch, budget)
        _expect_layout(name, got, case, config, batch, budget, table)


def layout_observation(fn: Callable, cases) -> dict:
    """The layout `fn` chose for each (config, batch, budget) of `cases` (0, 0, 0 where it is not one)."""
    return {"layouts": np.array([_as_layout(fn(*case)) or (0, 0, 0) for case in cases], np.int64).reshape(-1, 3)}


def _observe_choose_layout(fn: Callable) -> dict:
    """The layout chosen for each hidden (config, batch, budget) the grader drew for this run, compared with
    the solution's choice, which the grader computes: each drawn case has one cheapest layout that fits, so a
    right answer chooses it. Outside the grader the visible cases stand in."""
    cases = hidden_cases_of("choose_layout", layout_case) or LAYOUT_CASES
    return {**layout_observation(fn, cases), FORMULA_KEY: formula("choose_layout", ("step_costs", "choose_layout"))}


choose_layout = exercise("choose_layout", _check_choose_layout, observe=_observe_choose_layout)
