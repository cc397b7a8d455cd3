"""Exercise 4 of notebook 10 (`10_training_at_scale`): `step_time(config, layout, batch, chip)`, a training
step's time in four terms.

The notebook's time model (section 4, "A step's time"), each term derived there and measured on a TPU v5e chip:

- dispatch: the host's cost of one call of the compiled step, `seconds_per_call` plus `seconds_per_array`
  for each array the step takes and returns: the parameters, Adam's two moments of each and its count, and
  the batch (3 · the parameter arrays + 2);
- compute: the step's matmul FLOPs (`step_costs`' "flops", one device's share) over the chip's peak;
- memory: the bytes one device's step moves through HBM outside its matmuls
  (`namedaxes.transformer.hbm_bytes`, with the parameters the device stores) over the HBM bandwidth;
- communication: for each of the three rings (the gathers over fsdp, the gradients' all-reduce over
  data · fsdp, the activations' all-reduces over tensor) its hops times `hop_seconds` plus the bytes one
  device sends in one direction over the axis's bandwidth: (n − 1)/n of an all-gather's result over n − 1
  hops, 2 (n − 1)/n of an all-reduce's over 2 (n − 1); the axis's bandwidth is `link_bytes_per_s`, twice
  that where the axis has wraparound (the ring then runs both ways);

total = max(dispatch, compute + memory + communication): the device's terms add, and the host dispatches
the next step while the device runs this one. The bound is "dispatch" where dispatch is longer than the
device's sum, else the largest of compute, memory and communication. The answer builds on the student's own
`step_costs` (exercise 2).

This formula is the first-order form of the notebook's per-operation model (`namedaxes.traffic`, read from each
step's program as the chip compiled it): the same dispatch and the same way of putting the terms together, but
the FLOPs as counted (no 128 x 128 padding of the matrix unit) and the bytes untiled, all through HBM (no
on-chip memory), without the gathers and scatters by token index, from the model's sizes alone. The notebook
prints both against the 30 steps measured on the v5e chip: the formula is within 1.5x on 18 of them (wide
models, steps bound by dispatch) and up to 9.7x short on narrow models at large batches. A formula a student
writes from a `Config` cannot read tiles or the compiler's placement of arrays on chip; teaching them is the
notebook's part, not the graded answer's.

A formula exercise, judged like `step_costs` (the threat model is `training_at_scale`'s docstring): this
module holds no formula of the answer. The visible check compares with `time_answers.json`, the visible
cases' figures and the usual mistakes' values computed by the solution notebook's answers
(`tools.answer_tables`; `make check-notebooks` fails on drift). The hidden test records the five times (in
nanoseconds, so that the judge's absolute tolerance of 1e-5 is 10 femtoseconds and only its relative one,
1e-5, matters) and the bound on the cases the grader draws for the run (`draw_hidden_cases`: 16 models,
layouts, batches and chips of random sizes, four bound by each term, every comparison that decides the
bound clear by 20 %, so no rounding changes it, and more cases until each usual mistake is 20 % off on one
of them: `_separated`); the grader compares them with the solution's figures on
the same cases, which it computes itself (`observation_on`). The visible check allows the same relative
1e-5.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np

from namedaxes import transformer as tm
from namedaxes.checking import explained, fail
from namedaxes.grading import FORMULA_KEY
from namedaxes.transformer import Config

from .cases import LAYOUTS, config_fields, cost_case, figure_number, formula, hidden_cases_of, usable
from .running import exercise
from .text import say

TIME_KEYS = ("dispatch", "compute", "memory", "communication", "total")  # seconds
BOUNDS = ("dispatch", "compute", "memory", "communication")
CHIP_KEYS = (
    "flops_per_s",
    "hbm_bytes_per_s",
    "link_bytes_per_s",
    "wraparound",
    "hop_seconds",
    "seconds_per_call",
    "seconds_per_array",
)
RTOL = 1e-5  # every time, relative (the judge's own tolerance)
_ATOL_S = 1e-14  # the judge's absolute tolerance, 1e-5 ns, in seconds
_NS = 1e9  # the hidden test records nanoseconds
ANSWERS = Path(__file__).with_name("time_answers.json")  # the visible cases' figures, from the solution's answers


_V5E = {  # measured on the project's v5e chip, links and hops as published (notebook 10, section 4)
    "flops_per_s": 147e12,
    "hbm_bytes_per_s": 649e9,
    "link_bytes_per_s": 50e9,
    "wraparound": False,
    "hop_seconds": 1e-6,
    "seconds_per_call": 230e-6,
    "seconds_per_array": 9.7e-6,
}
_WIDE = Config(vocab=256, d_model=1024, heads=8, layers=4, seq=512, mlp=4)  # 51 M parameters, as measured on a v5e
_TIME_CASES = [  # what the visible check compares: one case bound by each term
    (Config(), (8, 1, 1), 128, dict(_V5E)),
    (_WIDE, (2, 2, 2), 64, {**_V5E, "link_bytes_per_s": 400e9, "wraparound": True}),
    (
        Config(vocab=64, d_model=128, heads=16, layers=4, seq=256, mlp=4),
        (2, 2, 2),
        512,
        {**_V5E, "wraparound": True, "seconds_per_call": 0.01},
    ),
    (_WIDE, (1, 8, 1), 8, {**_V5E, "link_bytes_per_s": 12.5e9}),
]


@functools.cache
def _figures() -> dict:
    """The visible cases' figures (`ANSWERS`, written by `tools.answer_tables` from the solution
    notebook's answers and checked for drift by `make check-notebooks`)."""
    return json.loads(ANSWERS.read_text(encoding="utf-8"))


def expected_figures(step_costs: Callable, step_time: Callable) -> dict:
    """What the visible check compares with, computed by a reference's `step_costs` and `step_time`
    (`tools.answer_tables` passes the solution notebook's): for each visible case, the five times and the
    bound, and the values of the usual mistakes, each with the message key that explains it. Each mistake is
    the reference's answer on other arguments, or its terms put together wrongly."""
    cases = []
    for config, layout, batch, chip in _TIME_CASES:
        right = step_time(config, layout, batch, dict(chip))
        mistakes = time_mistakes(step_costs, step_time, config, layout, batch, chip)
        cases.append({"want": {k: right[k] for k in (*TIME_KEYS, "bound")}, "mistakes": mistakes})
    return {"step_time": cases}


def arrays_of(config: Config) -> int:
    """The arrays one call of the step takes (and returns as many): the parameters, Adam's two moments of each
    and its count, and the batch."""
    return 3 * len(tm.shapes(config)) + 2


def time_mistakes(step_costs: Callable, step_time: Callable, config: Config, layout: tuple, batch: int, chip) -> dict:
    """The usual mistakes' times (seconds) on one case, computed by a reference's `step_costs` and `step_time`
    (the solution notebook's): for each time, `[value, message key]` pairs (what the visible check's table
    lists, and what the grader names on its hidden cases: `mistakes_on`). Each mistake is the reference's
    answer on other arguments, or its terms put together wrongly."""
    right = step_time(config, layout, batch, dict(chip))
    costs = step_costs(config, layout, batch)
    whole = step_time(config, layout, batch * layout[0] * layout[1], dict(chip))  # the whole batch, each
    flipped = step_time(config, layout, batch, {**chip, "wraparound": not chip["wraparound"]})
    every_parameter = sum(math.prod(s) for s in tm.shapes(config).values())
    d, c, m, w = (right[k] for k in ("dispatch", "compute", "memory", "communication"))
    data, fsdp, tensor = layout
    hops = (fsdp - 1) + 2 * (data * fsdp - 1) + 2 * (tensor - 1)
    latency = hops * chip["hop_seconds"]
    bandwidth = chip["link_bytes_per_s"] * (2 if chip["wraparound"] else 1)
    results = costs["gather_bytes"] + costs["grad_reduce_bytes"] + costs["tensor_reduce_bytes"]
    mistakes = {key: [] for key in TIME_KEYS}
    mistakes["dispatch"] += [
        [chip["seconds_per_call"], "time_dispatch_arrays"],
        [chip["seconds_per_call"] + chip["seconds_per_array"] * len(tm.shapes(config)), "time_dispatch_arrays"],
    ]
    mistakes["compute"].append([whole["compute"], "time_compute_batch"])
    mistakes["memory"] += [
        [whole["memory"], "time_memory_batch"],
        [tm.hbm_bytes(config, batch, costs["state_bytes"] // 12) / chip["hbm_bytes_per_s"], "time_memory_batch"],
        [tm.hbm_bytes(config, batch, every_parameter, layout) / chip["hbm_bytes_per_s"], "time_memory_params"],
    ]
    mistakes["communication"] += [
        [latency + results / bandwidth, "time_no_ring"],
        [w - latency, "time_no_latency"],
        [flipped["communication"], "time_wraparound"],
    ]
    mistakes["total"] += [
        [d + c + m + w, "time_total_added"],
        [max(d, c + m), "time_total_no_communication"],
        [max(d, c + m) + w, "time_total_no_communication"],
        [max(d, c, m, w), "time_total_not_summed"],
    ]
    return mistakes


# ---------------------------------------------------------------- the visible check
def _chip_text(chip: dict) -> str:
    return "{" + ", ".join(f"{k}: {chip[k]}" if k == "wraparound" else f"{k}: {chip[k]:g}" for k in CHIP_KEYS) + "}"


def _case_text(config: Config, layout: tuple, batch: int, chip: dict) -> str:
    return say("time_case", config=repr(config), layout=layout, batch=batch, chip=_chip_text(chip))


def _times(got) -> dict:
    """The answer's five times as floats (a key missing or not a number: None) and its bound (None: not one of
    `BOUNDS`)."""
    if not isinstance(got, dict):
        return dict.fromkeys((*TIME_KEYS, "bound"))
    bound = got.get("bound")
    times = {k: figure_number(got.get(k)) for k in TIME_KEYS}
    return {**times, "bound": bound if isinstance(bound, str) and bound in BOUNDS else None}


def _close(got: float, want: float) -> bool:
    return math.isclose(got, want, rel_tol=RTOL, abs_tol=_ATOL_S)


_GENERIC = {  # what each time is, where the mistake is not a known one
    "dispatch": "time_dispatch",
    "compute": "time_compute",
    "memory": "time_memory",
    "communication": "time_communication",
    "total": "time_total",
}


def _expect_times(name: str, got, case: str, table: dict) -> None:
    keys = ", ".join(TIME_KEYS)
    if not isinstance(got, dict):
        fail(say("time_type", name=name, keys=keys, got=repr(got)[:120], case=case))
    times = _times(got)
    for key in TIME_KEYS:
        if times[key] is None:
            fail(say("time_missing", name=name, keys=keys, key=key, got=repr(got.get(key))[:80], case=case))
    if times["bound"] is None:
        bounds = ", ".join(f'"{b}"' for b in BOUNDS)
        fail(say("time_bound_word", name=name, got=repr(got.get("bound"))[:80], case=case, bounds=bounds))
    want = table["want"]
    for key in TIME_KEYS:
        if not _close(times[key], want[key]):
            known = [k for v, k in table["mistakes"][key] if _close(times[key], v)]
            hint = say(known[0] if known else _GENERIC[key])
            got_text, want_text = f"{times[key]:.4g}", f"{want[key]:.4g}"
            fail(say("time_value", name=name, key=key, got=got_text, want=want_text, case=case, hint=hint))
    if times["bound"] != want["bound"]:
        device = f"{want['compute'] + want['memory'] + want['communication']:.4g}"
        terms = ", ".join(f"{key} {want[key]:.4g} s" for key in BOUNDS)
        got, bound = f'"{times["bound"]}"', f'"{want["bound"]}"'
        fail(say("time_bound", name=name, got=got, want=bound, case=case, device=device, terms=terms))


def _check_step_time(fn: Callable) -> None:
    name = "step_time"
    for (config, layout, batch, chip), table in zip(_TIME_CASES, _figures()["step_time"]):
        with explained(name):
            got = fn(config, layout, batch, dict(chip))
        _expect_times(name, got, _case_text(config, layout, batch, chip), table)


def _time_observation(fn: Callable, cases) -> dict:
    """`fn`'s five times on `cases`, in nanoseconds, one array per time (NaN where it gave no number), and its
    bounds (their index in `BOUNDS`, -1 where it gave none of them)."""
    rows = [_times(fn(config, layout, batch, dict(chip))) for config, layout, batch, chip in cases]
    out = {key: np.array([np.nan if r[key] is None else r[key] * _NS for r in rows], np.float64) for key in TIME_KEYS}
    out["bound"] = np.array([BOUNDS.index(r["bound"]) if r["bound"] else -1 for r in rows], np.int64)
    return out


def _observe_step_time(fn: Callable) -> dict:
    """The answer's times and bounds on the hidden cases the grader drew for this run (`draw_hidden_cases`),
    compared with the solution's on the same cases, which the grader computes. Outside the grader (no drawn
    cases) the visible cases stand in."""
    cases = hidden_cases_of("step_time", _time_case) or _TIME_CASES
    return {**_time_observation(fn, cases), FORMULA_KEY: formula("step_time", ("step_costs", "step_time"))}


step_time = exercise("step_time", _check_step_time, observe=_observe_step_time)


# ---------------------------------------------------------------- the hidden cases, drawn by the grader
# This module lists no hidden case: the grader draws them for each run from its secret
# (`autograder.judge.formulas`, with this distribution and the solution notebook's answers), hands them to
# the kernel (`namedaxes.grading.hidden_cases`) and computes the solution's observation on them itself.
HIDDEN_TIME_CASES = 16  # four bound by each term, then more until every usual mistake is separated
MARGIN = 1.2  # each comparison that decides the bound is clear by at least this factor
_MAX_DRAWS = 5000


def _time_case(case: dict) -> tuple:
    config, layout, batch = cost_case(case)
    chip = case["chip"]
    if not isinstance(chip, dict) or set(chip) != set(CHIP_KEYS) or not isinstance(chip["wraparound"], bool):
        raise ValueError("not a chip")
    return config, layout, batch, {k: (chip[k] if k == "wraparound" else float(chip[k])) for k in CHIP_KEYS}


def _draw_config(r: np.random.Generator) -> Config:
    """A model from the notebook's size to some 100 M parameters."""
    heads = int(r.choice([2, 4, 8, 16]))
    return Config(
        vocab=8 * int(r.integers(4, 65)),
        d_model=heads * int(r.choice([8, 16, 32, 64, 128])),
        heads=heads,
        layers=int(r.integers(1, 13)),
        seq=int(r.choice([16, 32, 64, 128, 256, 512])),
        mlp=int(r.integers(2, 5)),
    )


def _rounded(x: float) -> float:
    return float(f"{x:.3g}")


def _draw_chip(r: np.random.Generator) -> dict:
    """Roofs around today's chips', each drawn on its own: peaks of 3 to 2,000 TFLOP/s, memories of 0.1 to
    5 TB/s, links of 3 to 500 GB/s in one direction, with or without wraparound, hops of 0.3 to 10 µs,
    calls of 10 to 1,000 µs and 0.3 to 30 µs per array."""
    return {
        "flops_per_s": _rounded(10 ** r.uniform(12.5, 15.3)),
        "hbm_bytes_per_s": _rounded(10 ** r.uniform(11, 12.7)),
        "link_bytes_per_s": _rounded(10 ** r.uniform(9.5, 11.7)),
        "wraparound": bool(r.integers(2)),
        "hop_seconds": _rounded(10 ** r.uniform(-6.5, -5)),
        "seconds_per_call": _rounded(10 ** r.uniform(-5, -3)),
        "seconds_per_array": _rounded(10 ** r.uniform(-6.5, -4.5)),
    }


def _clear(terms: dict) -> bool:
    """Is every comparison that decides the bound clear by `MARGIN`? (the device's largest term against the
    next, their sum against dispatch)"""
    device = sorted((terms["compute"], terms["memory"], terms["communication"]), reverse=True)
    pairs = ((device[0], device[1]), (sum(device), terms["dispatch"]))
    return all(max(a, b) >= MARGIN * min(a, b) for a, b in pairs)


def _off(got: float, want: float) -> bool:
    return abs(got - want) > (MARGIN - 1) * abs(want)


def _separated(cases: list, step_costs: Callable, step_time: Callable) -> set:
    """The usual mistakes some case of `cases` separates (its value `MARGIN` off the right one): each
    (time, index) of `time_mistakes`, and ("bound", "four terms") where the largest of the four terms is not
    the bound."""
    done = set()
    for config, layout, batch, chip in cases:
        right = step_time(config, layout, batch, dict(chip))
        for key, listed in time_mistakes(step_costs, step_time, config, layout, batch, chip).items():
            done |= {(key, i) for i, (value, _) in enumerate(listed) if _off(value, right[key])}
        if max(BOUNDS, key=right.get) != right["bound"]:
            done.add(("bound", "four terms"))
    return done


def _one_case(r: np.random.Generator, step_time: Callable, wanted: str | None) -> tuple | None:
    """A usable, clear case bound by `wanted` (any bound: None), or None."""
    config, layout = _draw_config(r), LAYOUTS[int(r.integers(len(LAYOUTS)))]
    batch, chip = layout[0] * layout[1] * int(r.integers(1, 17)), _draw_chip(r)
    if usable(config, layout, batch):
        return None
    terms = step_time(config, layout, batch, dict(chip))
    if (wanted is None or terms["bound"] == wanted) and _clear(terms):
        return config, layout, batch, chip
    return None


def _draw_time_cases(r: np.random.Generator, step_costs: Callable, step_time: Callable) -> list[dict]:
    """Sixteen cases, four bound by each term (in turn), every bound clear (`_clear`); then a case more for
    each usual mistake no case separates yet (`_separated`), so that every listed mistake is wrong somewhere."""
    cases = []
    for i in range(HIDDEN_TIME_CASES):
        case = next((c for _ in range(_MAX_DRAWS) if (c := _one_case(r, step_time, BOUNDS[i % len(BOUNDS)]))), None)
        if case is None:
            raise RuntimeError("no hidden step_time case could be drawn")
        cases.append(case)
    listed = time_mistakes(step_costs, step_time, *cases[0])
    wanted = {(key, i) for key, values in listed.items() for i in range(len(values))} | {("bound", "four terms")}
    for _ in range(_MAX_DRAWS):
        missing = wanted - _separated(cases, step_costs, step_time)
        if not missing:
            break
        case = _one_case(r, step_time, None)
        if case is not None and missing & _separated([case], step_costs, step_time):
            cases.append(case)
    else:
        raise RuntimeError("no hidden step_time case separates every mistake")
    return [{"config": config_fields(c), "layout": list(lo), "batch": b, "chip": ch} for c, lo, b, ch in cases]


def draw_time_cases(exercise: str, r: np.random.Generator, answers: dict) -> list[dict]:
    """The grader's draw of a run's hidden cases (JSON) from `r` (seeded by the run's secret); `answers` are
    the solution notebook's functions (its `step_time` sorts the cases by what bounds them)."""
    if exercise == "step_time":
        return _draw_time_cases(r, answers["step_costs"], answers["step_time"])
    raise KeyError(exercise)


def time_mistakes_on(exercise: str, cases: list[dict], answers: dict) -> dict:
    """The usual mistakes' times on `cases` in the observation's unit (nanoseconds): for each time, one list of
    `(value, message key)` pairs per case (`time_mistakes`, with the solution notebook's `answers`)."""
    if exercise != "step_time":
        raise KeyError(exercise)
    tables = [time_mistakes(answers["step_costs"], answers["step_time"], *_time_case(c)) for c in cases]
    return {key: [[(v * _NS, k) for v, k in table[key]] for table in tables] for key in TIME_KEYS}


def time_observation_on(exercise: str, cases: list[dict], answers: dict) -> dict:
    """What a right answer records on `cases` (the grader passes the solution notebook's `answers`)."""
    if exercise == "step_time":
        return _time_observation(answers["step_time"], [_time_case(c) for c in cases])
    raise KeyError(exercise)
