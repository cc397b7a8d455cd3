"""Notebook 10's exercise 4 (`namedaxes.exercises.training_at_scale.timing`): `step_time`, a step's time in four terms,
proven both ways.

The reference answer and equivalent right answers pass the visible check and match the reference's
observation under the grader's judge; the natural wrong answers (the ring factors or the hops' latency left
out, wraparound read the wrong way round, arrays left out of the dispatch, the dispatch added instead of a
floor, communication left out or overlapped, the device's terms not added, the whole batch or the whole
model counted on one device, a bound taken as the largest of the four terms or ignoring communication) are
rejected with the message that names the term and the mistake, and the grader rejects them too, on the
cases it draws for a run: every run's cases separate every usual mistake (issue 56). No compile: these
tests take milliseconds.
"""

import inspect
import json
import math
import os
import re

import numpy as np
import pytest
from exercise_text import NAMED, unused_text
from judge_helpers import (
    agreement_test,
    assert_check_fails,
    assert_check_passes,
    formula_run_of,
    judging_formulas_of,
    matrix_rows,
    observations_match,
    observe,
)

from autograder.judge import score
from autograder.judge.compare import normalize
from namedaxes import FSDP, MODEL_PARALLEL
from namedaxes import transformer as tm
from namedaxes.exercises import training_at_scale as q
from namedaxes.exercises.training_at_scale import timing as t
from namedaxes.exercises.training_at_scale.cases import hidden_cases_of
from namedaxes.grading import FORMULA_KEY, HIDDEN_CASES_ENV, OBSERVE_DIR_ENV, record
from namedaxes.transformer import RULES, Config

from ..test_training_at_scale import ref_step_costs

GID = "step_time_model"
SECRETS = [bytes([100 + i]) * 32 for i in range(8)]  # not test_training_at_scale's: a run is drawn once per secret


def ref_step_time(config, layout, batch, chip):
    """The solution notebook's time model."""
    data, fsdp, tensor = layout
    n = data * fsdp
    costs = ref_step_costs(config, layout, batch)
    sent = (
        (fsdp - 1) / fsdp * costs["gather_bytes"]
        + 2 * (n - 1) / n * costs["grad_reduce_bytes"]
        + 2 * (tensor - 1) / tensor * costs["tensor_reduce_bytes"]
    )
    hops = (fsdp - 1) + 2 * (n - 1) + 2 * (tensor - 1)
    bandwidth = chip["link_bytes_per_s"] * (2 if chip["wraparound"] else 1)
    hbm = tm.hbm_bytes(config, batch, costs["state_bytes"] // 12, layout)
    arrays = 3 * len(tm.shapes(config)) + 2
    terms = {
        "dispatch": chip["seconds_per_call"] + chip["seconds_per_array"] * arrays,
        "compute": costs["flops"] / chip["flops_per_s"],
        "memory": hbm / chip["hbm_bytes_per_s"],
        "communication": hops * chip["hop_seconds"] + sent / bandwidth,
    }
    device = terms["compute"] + terms["memory"] + terms["communication"]
    bound = "dispatch" if terms["dispatch"] > device else max(("compute", "memory", "communication"), key=terms.get)
    return {**terms, "total": max(terms["dispatch"], device), "bound": bound}


# ---------------------------------------------------------------- one grading run, as the grader makes it
def _run(secret: bytes):
    """One grading run's step_time cases and reference observation, drawn as the grader draws them."""
    return formula_run_of("10_training_at_scale", {GID: normalize(q.step_time.observe(ref_step_time))}, secret)


def _drawn(secret: bytes) -> list:
    return [t._time_case(case) for case in _run(secret)[1].cases[f"{t.__package__}:step_time"]]


@pytest.fixture(autouse=True, scope="module")
def _a_grading_run():
    """Every observation in this file is made as the grader's kernel makes it: with one run's drawn cases
    handed in, so the matrices and the one-judge test judge on the grader's kind of cases."""
    before = os.environ.get(HIDDEN_CASES_ENV)
    refs, run = _run(b"step_time's matrices".ljust(32, b"."))
    os.environ[HIDDEN_CASES_ENV] = json.dumps(run.cases)
    with judging_formulas_of(refs, run):  # a wrong time is named as the grader names it in that run
        yield
    if before is None:
        os.environ.pop(HIDDEN_CASES_ENV, None)
    else:
        os.environ[HIDDEN_CASES_ENV] = before


@pytest.fixture
def kernel_env(monkeypatch):
    monkeypatch.setenv(HIDDEN_CASES_ENV, "")  # restored after the test: the prelude sets it in this process
    return monkeypatch


def _graded(secret: bytes, answer, monkeypatch, tmp_path):
    """The grader's verdict on `answer`'s hidden test in the run of `secret`: the kernel is handed the cases
    by the prelude, records with `record`, and the judge compares with its own reference figures."""
    refs, run = _run(secret)
    exec(run.prelude(), {})  # the trusted prelude, as the kernel runs it (monkeypatch restores the variable)
    monkeypatch.setenv(OBSERVE_DIR_ENV, str(tmp_path))
    record(GID, q.step_time.observe(answer))
    got = tuple((tmp_path / (GID + suffix)).read_bytes() for suffix in (".npz", ".json"))
    return score._verdict(GID, refs, got, run)


# ---------------------------------------------------------------- RIGHT and EQUIVALENT
def _time_by_hand(config, layout, batch, chip):
    """The parameters a device stores counted from the rules, each ring's sent bytes and hops from a table,
    NumPy numbers, and the bound from the parts of the total."""
    data, fsdp, tensor = layout
    sizes = {FSDP: fsdp, MODEL_PARALLEL: tensor}
    stored = 0
    for name, shape in tm.shapes(config).items():
        axes = [a for e in RULES[name] if e is not None for a in ((e,) if isinstance(e, str) else e)]
        stored += math.prod(shape) // math.prod(sizes.get(a, 1) for a in axes)
    costs = ref_step_costs(config, layout, batch)
    ring = {"gather_bytes": (fsdp, 1), "grad_reduce_bytes": (data * fsdp, 2), "tensor_reduce_bytes": (tensor, 2)}
    sent = sum(np.float64(costs[k]) * twice * (n - 1) / n for k, (n, twice) in ring.items())
    hops = sum(twice * (n - 1) for n, twice in ring.values())
    link = chip["link_bytes_per_s"] * (2.0 if chip["wraparound"] else 1.0)
    compute = np.float64(costs["flops"]) / chip["flops_per_s"]
    memory = np.float64(tm.hbm_bytes(config, batch, stored, layout)) / chip["hbm_bytes_per_s"]
    dispatch = chip["seconds_per_call"] + np.float64(chip["seconds_per_array"]) * (2 + 3 * len(RULES))
    communication = hops * chip["hop_seconds"] + sent / link
    device = {"compute": compute, "memory": memory, "communication": communication}
    bound = "dispatch" if dispatch > sum(device.values()) else max(device, key=device.get)
    total = max(dispatch, sum(device.values()))
    return {"bound": bound, "total": total, "dispatch": dispatch, **device}


def _time_in_microseconds(config, layout, batch, chip):
    """Every term in microseconds first, then in seconds; the bound from a sorted list of the parts."""
    us = {k: v * 1e6 for k, v in ref_step_time(config, layout, batch, chip).items() if k != "bound"}
    terms = {k: us[k] / 1e6 for k in ("dispatch", "compute", "memory", "communication")}
    device = us["compute"] + us["memory"] + us["communication"]
    parts = sorted([(us["dispatch"], "dispatch"), (device, None)])
    bound = parts[-1][1] or sorted((us[k], k) for k in ("compute", "memory", "communication"))[-1][1]
    return {**terms, "total": max(us["dispatch"], device) / 1e6, "bound": bound}


TIME_EQUIVALENT = {
    "counted by hand, in NumPy numbers": _time_by_hand,
    "in microseconds first": _time_in_microseconds,
}


@pytest.mark.parametrize(
    "answer", [ref_step_time, *TIME_EQUIVALENT.values()], ids=["reference", *TIME_EQUIVALENT.keys()]
)
def test_step_time_accepts_equivalent_answers(answer):
    assert_check_passes(q.step_time.check, answer)


def test_step_time_observations_of_equivalent_answers_match():
    reference = observe(q.step_time, ref_step_time)
    assert set(reference) == {*t.TIME_KEYS, "bound", FORMULA_KEY}
    assert all(reference[k].shape == reference["bound"].shape and np.isfinite(reference[k]).all() for k in t.TIME_KEYS)
    assert len(reference["bound"]) >= t.HIDDEN_TIME_CASES
    assert sorted(reference["bound"][: t.HIDDEN_TIME_CASES]) == sorted(list(range(len(t.BOUNDS))) * 4)
    for answer in TIME_EQUIVALENT.values():
        assert observations_match(reference, observe(q.step_time, answer))


# ---------------------------------------------------------------- WRONG, each with its message
def _not_written(*args):
    raise NotImplementedError()


def _changed(**changes):
    def answer(config, layout, batch, chip):
        times = ref_step_time(config, layout, batch, chip)
        return {**times, **{key: change(times, config, layout, batch, chip) for key, change in changes.items()}}

    return answer


def _hops(layout):
    data, fsdp, tensor = layout
    return (fsdp - 1) + 2 * (data * fsdp - 1) + 2 * (tensor - 1)


def _bandwidth(chip):
    return chip["link_bytes_per_s"] * (2 if chip["wraparound"] else 1)


def _no_ring(times, config, layout, batch, chip):
    costs = ref_step_costs(config, layout, batch)
    results = costs["gather_bytes"] + costs["grad_reduce_bytes"] + costs["tensor_reduce_bytes"]
    return _hops(layout) * chip["hop_seconds"] + results / _bandwidth(chip)


def _no_latency(times, config, layout, batch, chip):
    return times["communication"] - _hops(layout) * chip["hop_seconds"]


def _wraparound_reversed(times, config, layout, batch, chip):
    return ref_step_time(config, layout, batch, {**chip, "wraparound": not chip["wraparound"]})["communication"]


def _gradient_ring_over_data(times, config, layout, batch, chip):
    """The gradients' ring over DATA_PARALLEL alone, as if FSDP's devices did not take part."""
    data, fsdp, tensor = layout
    costs = ref_step_costs(config, layout, batch)
    sent = (fsdp - 1) / fsdp * costs["gather_bytes"] + 2 * (data - 1) / data * costs["grad_reduce_bytes"]
    sent += 2 * (tensor - 1) / tensor * costs["tensor_reduce_bytes"]
    return _hops(layout) * chip["hop_seconds"] + sent / _bandwidth(chip)


def _memory_of(batch_of, params_of):
    def memory(times, config, layout, batch, chip):
        params = params_of(config, layout, batch)
        return tm.hbm_bytes(config, batch_of(layout, batch), params, layout) / chip["hbm_bytes_per_s"]

    return memory


def _stored(config, layout, batch):
    return ref_step_costs(config, layout, batch)["state_bytes"] // 12


def _every_parameter(config, layout, batch):
    return sum(math.prod(s) for s in tm.shapes(config).values())


def _whole_batch(layout, batch):
    return batch * layout[0] * layout[1]


def _global_flops(times, config, layout, batch, chip):
    return ref_step_costs(config, layout, _whole_batch(layout, batch))["flops"] / chip["flops_per_s"]


def _bound_without_communication(times, *args):
    device = times["compute"] + times["memory"]
    return "dispatch" if times["dispatch"] > device else max(("compute", "memory"), key=times.get)


def _bound_of_four_terms(times, *args):
    return max(t.BOUNDS, key=times.get)


def _dispatch_added(times, *args):
    return times["dispatch"] + times["compute"] + times["memory"] + times["communication"]


def _device(x):
    return x["compute"] + x["memory"] + x["communication"]


TIME_WRONG = {
    "unanswered": (_not_written, r"`step_time` is not written yet"),
    "a tuple, not a dict": (
        lambda *a: tuple(ref_step_time(*a).values()),
        r"(?s)should return a dict of the keys dispatch, compute, memory, communication, total",
    ),
    "the total left out": (
        lambda *a: {k: v for k, v in ref_step_time(*a).items() if k != "total"},
        r"(?s)should give a number of seconds under each of the keys .*under \"total\" it gives None",
    ),
    "the bound in other words": (
        _changed(bound=lambda times, *a: times["bound"] + "-bound"),
        r"(?s)gives the bound 'dispatch-bound' .*one of \"dispatch\", \"compute\", \"memory\", \"communication\"",
    ),
    "the dispatch without its arrays": (
        _changed(dispatch=lambda times, config, layout, batch, chip: chip["seconds_per_call"]),
        r"(?s)gives dispatch = 0\.00023 s .*That leaves arrays out of the dispatch",
    ),
    "the dispatch of the parameters alone": (
        _changed(dispatch=lambda x, config, lo, b, chip: chip["seconds_per_call"] + 10 * chip["seconds_per_array"]),
        r"(?s)gives dispatch = 0\.000327 s .*That leaves arrays out of the dispatch",
    ),
    "the ring factors left out": (
        _changed(communication=_no_ring),
        r"(?s)gives communication = .*That is the collectives' results over",
    ),
    "the hops' latency left out": (
        _changed(communication=_no_latency),
        r"(?s)gives communication = .*That leaves the hops' latency out",
    ),
    "wraparound the wrong way round": (
        _changed(communication=_wraparound_reversed),
        r"(?s)gives communication = .*That reads `wraparound` the wrong way round",
    ),
    "the gradients' ring over data alone": (
        _changed(communication=_gradient_ring_over_data),
        r"(?s)gives communication = .*\(2, 2, 2\), batch 64.*In a ring over n devices an all-gather takes",
    ),
    "the whole batch's memory traffic": (
        _changed(memory=_memory_of(_whole_batch, _stored)),
        r"(?s)gives memory = .*counts the whole batch's tokens on one device: pass the layout",
    ),
    "Adam on every parameter": (
        _changed(memory=_memory_of(lambda layout, batch: batch, _every_parameter)),
        r"(?s)gives memory = .*\(2, 2, 2\).*Adam's traffic for every parameter of the model",
    ),
    "the whole batch's FLOPs": (
        _changed(compute=_global_flops),
        r"(?s)gives compute = .*the whole batch's FLOPs on one device",
    ),
    "the dispatch added": (
        _changed(total=_dispatch_added),
        r"(?s)gives total = .*That adds the dispatch to the device's time",
    ),
    "communication left out of the total": (
        _changed(total=lambda x, *a: max(x["dispatch"], x["compute"] + x["memory"])),
        r"(?s)gives total = .*That leaves communication out of the device's time",
    ),
    "communication outside the max": (
        _changed(total=lambda x, *a: max(x["dispatch"], x["compute"] + x["memory"]) + x["communication"]),
        r"(?s)gives total = .*That leaves communication out of the device's time",
    ),
    "the device's terms not added": (
        _changed(total=lambda x, *a: max(x["dispatch"], x["compute"], x["memory"], x["communication"])),
        r"(?s)gives total = .*batch 64.*That keeps the device's terms apart",
    ),
    "the bound the largest of the four terms": (
        _changed(bound=_bound_of_four_terms),
        r"(?s)says the step is bound by \"dispatch\" .*\(2, 2, 2\), batch 512.*the time model says \"memory\"",
    ),
    "a bound that ignores communication": (
        _changed(bound=_bound_without_communication),
        r"(?s)says the step is bound by \"dispatch\" .*\(2, 2, 2\), batch 512.*wraparound: True.*the time model says "
        r"\"memory\": the terms are dispatch 0\.01031 s, compute 0\.0007122 s, memory 0\.009316 s, communication "
        r"0\.002729 s, and the device's time, compute \+ memory \+ communication, is 0\.01276 s",
    ),
}  # fmt: skip


@pytest.mark.parametrize("answer, match", TIME_WRONG.values(), ids=TIME_WRONG.keys())
def test_step_time_rejects(answer, match):
    assert_check_fails(q.step_time.check, answer, match=match)


def test_the_visible_cases_are_bound_by_each_term_clearly():
    """One visible case per term, each bound clearly: a wrong bound rule fails the visible check as it fails
    the grader's, whatever term it misplaces."""
    bounds = [ref_step_time(config, layout, batch, chip)["bound"] for config, layout, batch, chip in t._TIME_CASES]
    assert sorted(bounds) == sorted(t.BOUNDS)
    assert all(t._clear(ref_step_time(*case)) for case in t._TIME_CASES)


def test_the_messages_speak_chinese():
    from namedaxes import i18n

    try:
        i18n.set_language("zh")
        with pytest.raises(AssertionError) as err:
            q.step_time.check(_changed(communication=_wraparound_reversed))
    finally:
        i18n.set_language(None)
    said = str(err.value)
    assert "communication" in said and "`wraparound`" in said and re.search(r"[\u4e00-\u9fff]{6}", said), said
    assert "the wrong way round" not in said


# ---------------------------------------------------------------- the hidden cases: drawn by the grader per run
def test_each_run_draws_four_clear_cases_of_each_bound_fresh():
    """Sixteen usable cases, four bound by each term, every comparison that decides the bound clear by 20 %
    (no rounding of a right answer changes it), then cases more until every usual mistake is 20 % off on one;
    the same cases for every student of a run, other cases in another run."""
    runs = [_drawn(secret) for secret in SECRETS[:4]]
    assert runs[0] == _drawn(SECRETS[0])
    for cases in runs:
        assert t.HIDDEN_TIME_CASES <= len(cases) <= t.HIDDEN_TIME_CASES + 8
        assert all(q.cases.usable(config, layout, batch) is None for config, layout, batch, _ in cases)
        times = [ref_step_time(*case) for case in cases]
        assert sorted(x["bound"] for x in times[: t.HIDDEN_TIME_CASES]) == sorted(t.BOUNDS * 4)
        assert all(t._clear(x) for x in times)
        assert len({layout for _, layout, _, _ in cases}) >= 5 and len({repr(c) for c, _, _, _ in cases}) == len(cases)
    assert not set(map(repr, runs[0])) & set(map(repr, runs[1]))


def test_every_run_separates_every_usual_mistake():
    """Issue 56: in every run some case puts each listed mistake 20 % off the right figure, and some case's
    bound is not the largest of the four terms, so no usual mistake scores in any run."""
    listed = t.time_mistakes(ref_step_costs, ref_step_time, *t._TIME_CASES[0])
    wanted = {(key, i) for key, values in listed.items() for i in range(len(values))} | {("bound", "four terms")}
    for secret in SECRETS:
        assert t._separated(_drawn(secret), ref_step_costs, ref_step_time) == wanted


MISTAKES_NEVER_SCORE = {  # each usual mistake of the matrix, graded in four runs
    name: TIME_WRONG[name][0]
    for name in TIME_WRONG
    if name not in {"unanswered", "a tuple, not a dict", "the total left out", "the bound in other words"}
}


@pytest.mark.parametrize("answer", MISTAKES_NEVER_SCORE.values(), ids=MISTAKES_NEVER_SCORE.keys())
def test_no_usual_mistake_scores_in_any_run(answer, kernel_env, tmp_path):
    for secret in SECRETS[4:]:
        assert not _graded(secret, answer, kernel_env, tmp_path).passed, secret


def test_the_kernel_holds_no_time_model():
    """The module ships the visible cases' figures as data, computed by the solution notebook's answers
    (`make check-notebooks` fails on drift): none of its functions gives a drawn case's times, and it lists
    no hidden case."""
    from tools.answer_tables import TABLES, render

    (table,) = [x for x in TABLES if x.module == t.__name__]
    assert table.path.read_text(encoding="utf-8") == render(table)
    figures = t._figures()["step_time"]
    assert len(figures) == len(t._TIME_CASES)
    case = _drawn(SECRETS[0])[0]
    want = ref_step_time(*case)
    assert want["total"] not in {f["want"]["total"] for f in figures}
    for module in (t, q):
        for name, obj in vars(module).items():
            if inspect.isfunction(obj) and obj.__module__ == module.__name__:
                try:
                    got = obj(*case)
                except Exception:  # noqa: BLE001 - most of them take other arguments: that is the point
                    continue
                assert not (isinstance(got, dict) and want["total"] in got.values()), name
    cases = [v for v in vars(t).values() if isinstance(v, list) and v and isinstance(v[0], tuple)]
    assert cases == [t._TIME_CASES]


def test_a_circulated_table_of_right_figures_scores_nothing(kernel_env, tmp_path):
    """A table of the right figures on the visible cases passes the visible check and scores 0 on the cases
    the grader draws; a table of a past run's cases scores 0 in a fresh run. Honest right answers score."""

    def circulated(cases):
        table = {repr(case[:3]) + repr(sorted(case[3].items())): ref_step_time(*case) for case in cases}
        one_device = {"dispatch": 0.0, "compute": 0.0, "memory": 0.0, "communication": 0.0, "total": 0.0}
        return lambda *case: table.get(
            repr(case[:3]) + repr(sorted(case[3].items())), {**one_device, "bound": "compute"}
        )

    visible = circulated(t._TIME_CASES)
    assert_check_passes(q.step_time.check, visible)
    assert not _graded(SECRETS[0], visible, kernel_env, tmp_path).passed
    last_run = circulated(_drawn(SECRETS[0]))
    assert _graded(SECRETS[0], last_run, kernel_env, tmp_path).passed
    assert not _graded(SECRETS[1], last_run, kernel_env, tmp_path).passed
    for answer in (ref_step_time, *TIME_EQUIVALENT.values()):
        assert _graded(SECRETS[1], answer, kernel_env, tmp_path).passed, answer


def test_cases_a_kernel_swaps_in_score_nothing(kernel_env, tmp_path):
    """The judge computes the reference's figures on the cases it drew: a kernel that empties the prelude's
    cases (its observe then falls back to the visible ones) scores 0."""
    refs, run = _run(SECRETS[2])
    exec(run.prelude(), {})
    kernel_env.setenv(HIDDEN_CASES_ENV, json.dumps({key: [] for key in run.cases}))
    kernel_env.setenv(OBSERVE_DIR_ENV, str(tmp_path))
    record(GID, q.step_time.observe(ref_step_time))
    got = tuple((tmp_path / f"{GID}{suffix}").read_bytes() for suffix in (".npz", ".json"))
    assert not score._verdict(GID, refs, got, run).passed


def test_the_prelude_hands_the_kernel_the_drawn_cases_and_no_figure(kernel_env):
    refs, run = _run(SECRETS[3])
    exec(run.prelude(), {})
    handed = json.loads(os.environ[HIDDEN_CASES_ENV])[f"{t.__package__}:step_time"]
    assert all(
        set(case) == {"config", "layout", "batch", "chip"} and set(case["chip"]) == set(t.CHIP_KEYS) for case in handed
    )
    assert hidden_cases_of("step_time", t._time_case) == _drawn(SECRETS[3])


def test_the_solution_notebook_answers_as_the_reference_here():
    """The grader's reference is the solution notebook's own answer cell; the matrices use `ref_step_time`:
    they agree on a run's cases."""
    from tools.answer_tables import read_solution_answers

    solution = read_solution_answers("10_training_at_scale", ("step_costs", "step_time"))["step_time"]
    for case in _drawn(SECRETS[4]) + t._TIME_CASES:
        assert solution(*case) == ref_step_time(*case)


def test_the_notebook_shows_the_exercise_on_its_face():
    """`q.step_time` is the exercise, one of notebook 10's (its progress list, its hints' `q.step_time`), and
    the memory-traffic model it builds on is the package's (the notebook prints its source)."""
    from namedaxes.checking.registry import exercises

    assert q.step_time is t.step_time and q.step_time._attr() == "step_time"
    assert "step_time" in [e.name for e in exercises(q.__name__)]
    assert tm.hbm_bytes(Config(), 16, 27_808) == 4 * 16 * 32 * 2 * (10 * 32 + 5 * 4 * 32) + 4 * 7 * 27_808


def test_every_student_facing_string_is_used_and_hints_are_ladders():
    unused = [key for key in unused_text(q, NAMED) if key.startswith("time_")]  # exercise 4's sentences
    assert not unused, unused
    assert len(q.step_time._hints) == 3


# ---------------------------------------------------------------- one judge (issue 16)
test_the_visible_check_and_the_grader_agree = agreement_test(
    {"step_time": (q.step_time, *matrix_rows(ref_step_time, TIME_EQUIVALENT, TIME_WRONG))}
)
