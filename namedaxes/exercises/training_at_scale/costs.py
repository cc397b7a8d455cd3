"""Exercise 2: `step_costs`, the figures of a training step's cost model."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from namedaxes.checking import explained, fail
from namedaxes.grading import FORMULA_KEY
from namedaxes.transformer import Config

from .cases import COST_CASES, COST_KEYS, cost_case, figure_number, formula, hidden_cases_of, visible_figures
from .running import exercise
from .text import say


def _case_text(config: Config, layout: tuple, batch: int) -> str:
    return say("costs_case", config=repr(config), layout=layout, batch=batch)


def _numbers(got) -> dict:
    """The answer's five figures as floats (a key missing or not a number: None)."""
    return {k: figure_number(got.get(k)) for k in COST_KEYS} if isinstance(got, dict) else dict.fromkeys(COST_KEYS)


_ZERO = {  # a collective's figure: the message for a 0 where it moves bytes, and the size that makes it move
    "gather_bytes": ("costs_zero_gather", lambda data, fsdp, tensor: fsdp),
    "grad_reduce_bytes": ("costs_zero_grad", lambda data, fsdp, tensor: data * fsdp),
    "tensor_reduce_bytes": ("costs_zero_tensor", lambda data, fsdp, tensor: tensor),
}


def _figure_hint(key: str, got: float, want, layout: tuple, table: dict) -> str:
    """Why `got` is not `want`, said only where the cause is known: an axis of size 1, a 0 where the axis
    moves bytes, or one of the usual mistakes' values; otherwise the generic advice."""
    if want == 0:
        return say("costs_axis_one")
    if got == 0 and key in _ZERO:
        text_key, size = _ZERO[key]
        return say(text_key, size=size(*layout))
    wrong = [k for v, k in table["mistakes"][key] if v and math.isclose(got, v)]
    return say(wrong[0]) if wrong else say("costs_generic")


def _expect_figures(name: str, got, case: str, table: dict, layout: tuple) -> None:
    numbers = _numbers(got)
    if any(v is None for v in numbers.values()):
        fail(say("costs_type", name=name, keys=", ".join(COST_KEYS), got=repr(got)[:120], case=case))
    for key in COST_KEYS:
        want = table["want"][key]
        if not math.isclose(numbers[key], want, rel_tol=1e-6, abs_tol=0.5):
            hint = _figure_hint(key, numbers[key], want, layout, table)
            got_text, want_text = f"{numbers[key]:,.0f}", f"{want:,}"
            fail(say("costs_value", name=name, key=key, got=got_text, want=want_text, case=case, hint=hint))


def _check_step_costs(fn: Callable) -> None:
    name = "step_costs"
    for (config, layout, batch), table in zip(COST_CASES, visible_figures()["step_costs"]):
        with explained(name):
            got = fn(config, layout, batch)
        _expect_figures(name, got, _case_text(config, layout, batch), table, layout)


def cost_observation(fn: Callable, cases) -> dict:
    """`fn`'s five figures on `cases`, one array per figure (NaN where it gave no number)."""
    figures = [_numbers(fn(config, layout, batch)) for config, layout, batch in cases]
    return {key: np.array([np.nan if f[key] is None else f[key] for f in figures], np.float64) for key in COST_KEYS}


def _observe_step_costs(fn: Callable) -> dict:
    """The answer's five figures on the hidden cases the grader drew for this run (`draw_hidden_cases`), one
    array per figure, compared with the solution's figures on the same cases, which the grader computes: a
    formula is judged by its values, and nothing in the kernel knows the right ones. Outside the grader
    (no drawn cases) the visible cases stand in."""
    cases = hidden_cases_of("step_costs", cost_case) or COST_CASES
    return {**cost_observation(fn, cases), FORMULA_KEY: formula("step_costs", ("step_costs",))}


step_costs = exercise("step_costs", _check_step_costs, observe=_observe_step_costs)
