"""The hidden cases of `step_costs` and `choose_layout`, drawn by the grader."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from namedaxes.transformer import Config

from .cases import COST_KEYS, LAYOUTS, config_fields, cost_case, cost_mistakes, layout_case, moved_bytes, usable
from .choice import layout_observation
from .costs import cost_observation
from .timing import draw_time_cases, time_mistakes_on, time_observation_on

# ---------------------------------------------------------------- the hidden cases, drawn by the grader
# The kernel package lists no hidden case: the grader draws them for each run from its secret
# (`autograder.judge.formulas`, with this distribution and the solution notebook's own answers), hands them
# to the kernel (`namedaxes.grading.hidden_cases`) and computes the solution's observation on them itself.
HIDDEN_COST_CASES = 16
HIDDEN_LAYOUT_CASES = 8
_LAYOUT_WANTS = ((True, True), (True, True), (True, False)) + ((False, False),) * 5  # (budget binds, fsdp > 1)
_MAX_DRAWS = 2000


def _draw_config(r: np.random.Generator) -> Config:
    heads = int(r.choice([2, 4, 6, 8, 12, 16]))
    return Config(
        vocab=8 * int(r.integers(2, 13)),
        d_model=heads * int(r.choice([4, 6, 8, 16])),
        heads=heads,
        layers=int(r.integers(1, 7)),
        seq=int(r.choice([8, 12, 16, 20, 24, 32])),
        mlp=int(r.integers(2, 5)),
    )


def _draw_cost_cases(r: np.random.Generator) -> list[dict]:
    """Models of random sizes, each with a layout it can use and a batch that splits over it."""
    cases = []
    while len(cases) < HIDDEN_COST_CASES:
        config = _draw_config(r)
        layout = LAYOUTS[int(r.integers(len(LAYOUTS)))]
        batch = layout[0] * layout[1] * int(r.integers(1, 7))
        if not usable(config, layout, batch):
            cases.append({"config": config_fields(config), "layout": list(layout), "batch": batch})
    return cases


def _round_budget(low: int, high: int) -> int:
    """A round budget in [low, high): `low` rounded up to 3 significant figures where that stays below `high`."""
    step = 10 ** max(0, len(str(int(low))) - 3)
    budget = -(-int(low) // step) * step
    return budget if budget < high else int(low)


def _draw_layout_case(r: np.random.Generator, step_costs: Callable):
    """A model, a batch and a budget whose cheapest fitting layout is unique: (the case, that layout, whether
    the budget binds), or None."""
    config, batch = _draw_config(r), int(r.choice([4, 8, 12, 16, 24, 32, 48, 64]))
    figures = []
    for layout in LAYOUTS:
        if not usable(config, layout, batch):
            costs = step_costs(config, layout, batch)
            figures.append((int(costs["state_bytes"]), int(moved_bytes(costs)), layout))
    states = sorted({state for state, _, _ in figures})
    i = int(r.integers(len(states)))
    budget = _round_budget(states[i], states[i + 1] if i + 1 < len(states) else 2 * states[i])
    fitting = sorted((moved, layout) for state, moved, layout in figures if state <= budget)
    if len(fitting) > 1 and fitting[0][0] == fitting[1][0]:
        return None
    case = {"config": config_fields(config), "batch": batch, "budget": budget}
    return case, fitting[0][1], fitting[0][0] > min(moved for _, moved, _ in figures)


def _draw_layout_cases(r: np.random.Generator, step_costs: Callable) -> list[dict]:
    """Eight budget cases, each with one cheapest layout that fits (so any right answer chooses it): in at
    least three the budget rules out the cheapest layout of all, at least two are won with fsdp > 1, and the
    first four are won by four different layouts."""
    cases, winners = [], set()
    for i, (binds, sharded) in enumerate(_LAYOUT_WANTS):
        for _ in range(_MAX_DRAWS):
            drawn = _draw_layout_case(r, step_costs)
            if drawn is None:
                continue
            case, winner, bound = drawn
            if (binds and not bound) or (sharded and winner[1] == 1) or (i < 4 and winner in winners):
                continue
            cases.append(case)
            winners.add(winner)
            break
        else:
            raise RuntimeError("no hidden layout case could be drawn")
    return cases


def draw_hidden_cases(exercise: str, r: np.random.Generator, answers: dict) -> list[dict]:
    """The grader's draw of a run's hidden cases of `exercise` (JSON), from `r` (seeded by the run's secret);
    `answers` are the solution notebook's functions (the layout cases need its cost model)."""
    if exercise == "step_costs":
        return _draw_cost_cases(r)
    if exercise == "choose_layout":
        return _draw_layout_cases(r, answers["step_costs"])
    return draw_time_cases(exercise, r, answers)


def observation_on(exercise: str, cases: list[dict], answers: dict) -> dict:
    """What a right answer records on `cases` (the grader passes the solution notebook's `answers`)."""
    if exercise == "step_costs":
        return cost_observation(answers["step_costs"], [cost_case(c) for c in cases])
    if exercise == "choose_layout":
        return layout_observation(answers["choose_layout"], [layout_case(c) for c in cases])
    return time_observation_on(exercise, cases, answers)


def mistakes_on(exercise: str, cases: list[dict], answers: dict) -> dict:
    """The usual mistakes' figures on `cases`, in the units the observation records: for each figure, one list
    of `(value, message key)` pairs per case, computed by the solution notebook's `answers` as the visible
    checks' tables are (`cost_mistakes`, `time_mistakes`); the grader names a wrong figure by them
    (`autograder.judge.formulas`). A layout choice has none."""
    if exercise == "step_costs":
        tables = [cost_mistakes(answers["step_costs"], *cost_case(c)) for c in cases]
        return {key: [[(v, k) for v, k in table[key]] for table in tables] for key in COST_KEYS}
    if exercise == "choose_layout":
        return {}
    return time_mistakes_on(exercise, cases, answers)
