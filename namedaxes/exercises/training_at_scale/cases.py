"""The cases of `step_costs` and `choose_layout`: the visible ones and their expected figures, the layouts a model
can use, and the grader's hidden cases read back."""

from __future__ import annotations

import functools
import itertools
import json
import math
from collections.abc import Callable
from pathlib import Path

from namedaxes.grading import hidden_cases
from namedaxes.transformer import Config, shapes

from .text import say

ANSWERS = Path(__file__).with_name("answers.json")  # the visible cases' figures, from the solution's answers
COST_KEYS = ("state_bytes", "gather_bytes", "grad_reduce_bytes", "tensor_reduce_bytes", "flops")
LAYOUTS = tuple(s for s in itertools.product((1, 2, 4, 8), repeat=3) if math.prod(s) == 8)  # (data, fsdp, tensor)


# ---------------------------------------------------------------- 2. step_costs
COST_CASES = [  # what the visible check compares, on the notebook's model
    (Config(), (2, 2, 2), 16),
    (Config(), (8, 1, 1), 16),
    (Config(), (1, 2, 4), 16),
    (Config(d_model=64, heads=8, layers=3, seq=16), (4, 2, 1), 32),
]


@functools.cache
def visible_figures() -> dict:
    """The visible cases' expected figures (`ANSWERS`, written by `tools.answer_tables` from the
    solution notebook's own answers and checked for drift by `make check-notebooks`): the kernel holds no
    cost model, so no answer can call one."""
    return json.loads(ANSWERS.read_text(encoding="utf-8"))


def layout_key(layout: tuple) -> str:
    return ",".join(map(str, layout))


def cost_mistakes(step_costs: Callable, config: Config, layout: tuple, batch: int) -> dict:
    """The usual mistakes' figures on one case, computed by a reference's `step_costs` (the solution notebook's):
    for each figure, `[value, message key]` pairs: the state without Adam's moments, or on one device; the
    FLOPs of one device holding everything; the tensor axis ignored in the gathers and gradients; the global
    batch on every device (what the visible check's table lists, and what the grader names on its hidden
    cases: `hidden.mistakes_on`)."""
    right = step_costs(config, layout, batch)
    whole = step_costs(config, (1, 1, 1), batch)
    no_tensor = step_costs(config, (layout[0], layout[1], 1), batch)
    wide = step_costs(config, layout, batch * layout[0] * layout[1])
    every_parameter = 4 * sum(math.prod(s) for s in shapes(config).values())
    mistakes = {key: [] for key in COST_KEYS}  # a 0 of a collective is the zero rule's (`_ZERO`), not these
    mistakes["state_bytes"] += [[right["state_bytes"] / 3, "costs_no_adam"], [whole["state_bytes"], "costs_whole"]]
    mistakes["flops"].append([whole["flops"], "costs_whole_flops"])
    for key in ("gather_bytes", "grad_reduce_bytes"):
        mistakes[key].append([no_tensor[key] or every_parameter, "costs_tensor_ignored"])
    for key in ("tensor_reduce_bytes", "flops"):
        mistakes[key].append([wide[key], "costs_global_batch"])
    return mistakes


def expected_figures(step_costs: Callable, choose_layout: Callable) -> dict:
    """What the visible checks compare with, computed by a reference's `step_costs` and `choose_layout`
    (`tools.answer_tables` passes the solution notebook's): for each visible cost case, the five figures and
    the values of the usual mistakes, each with the message key that explains it; for each visible layout
    case, the state and moved bytes of every usable layout and the reference's choice."""
    costs = []
    for config, layout, batch in COST_CASES:
        right = step_costs(config, layout, batch)
        costs.append(
            {"want": {k: right[k] for k in COST_KEYS}, "mistakes": cost_mistakes(step_costs, config, layout, batch)}
        )
    layouts = []
    for config, batch, budget in LAYOUT_CASES:
        fitting = {}
        for layout in LAYOUTS:
            if not usable(config, layout, batch):
                figures = step_costs(config, layout, batch)
                fitting[layout_key(layout)] = [figures["state_bytes"], moved_bytes(figures)]
        layouts.append({"usable": fitting, "best": list(choose_layout(config, batch, budget))})
    return {"step_costs": costs, "choose_layout": layouts}


# ---------------------------------------------------------------- 3. choose_layout
def usable(config: Config, layout: tuple, batch: int) -> str | None:
    """Why this model cannot use `layout` (the message), or None."""
    data, fsdp, tensor = layout
    if config.heads % tensor:
        return say("layout_heads", heads=config.heads, tensor=tensor)
    if batch % (data * fsdp):
        return say("layout_batch", batch=batch, shards=data * fsdp)
    if config.d_model % fsdp or config.vocab % fsdp:
        return say("layout_width", d=config.d_model, v=config.vocab, fsdp=fsdp)
    return None


def moved_bytes(costs: dict) -> int:
    return costs["gather_bytes"] + costs["grad_reduce_bytes"] + costs["tensor_reduce_bytes"]


LAYOUT_CASES = [  # (config, batch, budget): the visible check's (some have ties: any of them passes)
    (Config(), 16, 10**6),
    (Config(), 16, 60_000),
    (Config(d_model=64, heads=8, layers=4), 64, 700_000),
    (Config(d_model=64, heads=8, layers=4), 8, 700_000),
]


def figure_number(value) -> float | None:
    """An answer's figure as a float, None where it is no number (a bool, a string, a missing key's None)."""
    try:
        return float(value) if not isinstance(value, bool) else None
    except (TypeError, ValueError):
        return None


def formula(exercise: str, answers: tuple) -> dict:
    """What the grader reads from the reference's observation: where the cases and the answers come from."""
    return {"module": __package__, "exercise": exercise, "answers": list(answers)}


def _config_of(fields) -> Config:
    names = ("vocab", "d_model", "heads", "layers", "seq", "mlp")
    if not isinstance(fields, dict) or set(fields) != set(names) or not all(type(fields[n]) is int for n in names):
        raise ValueError("not a config")
    return Config(**{n: fields[n] for n in names})


def cost_case(case: dict) -> tuple:
    layout = tuple(int(v) for v in case["layout"])
    return _config_of(case["config"]), layout, int(case["batch"])


def layout_case(case: dict) -> tuple:
    return _config_of(case["config"]), int(case["batch"]), int(case["budget"])


def hidden_cases_of(exercise: str, parse: Callable) -> list | None:
    """This run's hidden cases of `exercise`, parsed; None outside the grader (or if they were tampered with:
    the grader judges on the cases it drew, so other cases score nothing)."""
    raw = hidden_cases(f"{__package__}:{exercise}")  # the notebook's package, as the grader keys them
    try:
        return [parse(case) for case in raw] if raw else None
    except (KeyError, TypeError, ValueError):
        return None


def config_fields(config: Config) -> dict:
    return {n: getattr(config, n) for n in ("vocab", "d_model", "heads", "layers", "seq", "mlp")}
