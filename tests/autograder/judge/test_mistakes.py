"""Known mistakes (autograder/judge/mistakes.py): which usual mistake a wrong program's values are, named as the
exercise's visible check names it, from the exercise module the reference names; NumPy only, no program run."""

from __future__ import annotations

import numpy as np
import pytest

from autograder.judge.mistakes import diagnose, diagnose_program, mistake_source, named
from autograder.reasons import Kind
from namedaxes.grading import MISTAKES_KEY

AXIS_NAMES = ("namedaxes.exercises.axis_names", "rank_weighted_sum")
X = np.random.default_rng(0).normal(size=(4, 2)).astype(np.float32)
RANKS = np.arange(4)[:, None]


@pytest.mark.parametrize(
    "named",
    [
        {"module": "os", "exercise": "system"},  # not a course module
        {"module": "namedaxes.exercises.axis_names.x.y; import os", "exercise": "center"},
        {"module": "namedaxes.exercises.../../etc", "exercise": "center"},
        {"module": "namedaxes.exercises.axis_names", "exercise": "center()"},
        {"module": "namedaxes.exercises.axis_names"},
        "namedaxes.exercises.axis_names",
    ],
)
def test_only_a_module_of_the_course_and_an_exercise_name_are_taken(named):
    assert mistake_source({MISTAKES_KEY: named}) is None
    assert mistake_source({"format": "namedaxes-exported-1"}) is None


def _one(found: dict):
    """The one finding `diagnose` gave (one output, one mistake)."""
    ((key, (finding,)),) = found.items()
    assert finding.get("key") == key
    return finding


def test_the_values_of_a_known_mistake_are_named_with_their_case_and_fields():
    assert mistake_source({MISTAKES_KEY: {"module": AXIS_NAMES[0], "exercise": AXIS_NAMES[1]}}) == AXIS_NAMES
    plain_total = np.broadcast_to(X.sum(axis=0), X.shape)
    found = _one(diagnose(AXIS_NAMES, "pmap_4", [X], {"": plain_total}))
    assert found.kind is Kind.KNOWN_MISTAKE
    assert found.fields == (("key", "pmap_4"), ("module", "axis_names"), ("mistake", "weighted_no_weights"))
    own = _one(diagnose(AXIS_NAMES, "vmap_4", [X], {"": RANKS * X}))
    assert own.get("mistake") == "weighted_own_term" and own.get("arg_axis") == "devices"
    last = diagnose(("namedaxes.exercises.axis_names", "last_device_value"), "pmap_4", [X], {"": np.zeros_like(X)})
    assert (_one(last).get("mistake"), _one(last).get("arg_last")) == ("last_nobody", 3)


def test_values_no_known_mistake_gives_are_not_named():
    right = np.broadcast_to((RANKS * X).sum(axis=0), X.shape)
    assert diagnose(AXIS_NAMES, "pmap_4", [X], {"": right}) == {}
    assert diagnose(AXIS_NAMES, "pmap_4", [X], {"": np.ones_like(X)}) == {}
    assert diagnose(AXIS_NAMES, "pmap_4", [X], {"": np.ones((3, 2))}) == {}  # another shape
    two = {"[0]": RANKS * X, "[1]": RANKS * X}
    assert diagnose(AXIS_NAMES, "pmap_4", [X], two) == {}  # one result listed, two outputs: not these values
    assert diagnose(None, "pmap_4", [X], {"": RANKS * X}) == {}
    no_list = ("namedaxes.exercises.step_anatomy", "zero_state")  # a module that lists no mistakes
    assert diagnose(no_list, "pmap_4", [X], {"": RANKS * X}) == {}


def test_the_cases_tolerance_decides_what_is_the_mistakes_values():
    near = RANKS * X * (1 + 3e-5)
    assert diagnose(AXIS_NAMES, "pmap_4", [X], {"": near}) == {}  # the default: 1e-5
    found = diagnose(AXIS_NAMES, "pmap_4", [X], {"": near}, rtol=1e-4, atol=1e-4)
    assert _one(found).get("mistake") == "weighted_own_term"


# ---------------------------------------------------------------- several outputs, coinciding mistakes
STEP = ("namedaxes.exercises.fake_step", "step")
W, B = np.float32(0.5), np.float32(-1.0)


@pytest.fixture
def fake_step(monkeypatch):
    """A module whose step returns `{'b', 'w'}` and a loss: its mistakes name the parameters only, or the loss."""
    import sys
    import types

    import namedaxes.exercises as exercises

    module = types.ModuleType(STEP[0])

    def known_mistakes(exercise, case, inputs):
        (x,) = inputs
        return [
            ({"[0]['b']": B + x, "[0]['w']": W + x}, "step_summed", {"k": 4}),
            ({"[1]": 4 * x}, "loss_summed", {}),
            ({"[1]": 4 * x}, "loss_summed", {"k": 2}),  # the same mistake listed twice: said once, as first listed
            ({"[1]": 4 * x}, "loss_doubled_twice", {}),  # the same values, another mistake
            ({"[1]": 2 * x, "[2]": x}, "too_many", {}),  # a path the program does not have: never these values
            ({"[1]": 3 * x}, None, {}),  # another answer's values (a factor written by hand): never named
            ({"[1]": 3 * x + (x > 2)}, "loss_tripled", {}),  # the same values where x <= 2
        ]

    module.known_mistakes = known_mistakes
    monkeypatch.setitem(sys.modules, STEP[0], module)
    # a notebook package of the course, as the exercises' door lists them (`namedaxes.exercises.exercise_module`)
    monkeypatch.setattr(exercises, "PACKAGES", (*exercises.PACKAGES, "fake_step"))


def test_a_mistake_of_several_outputs_names_each_output_it_covers(fake_step):
    x = np.float32(1.5)
    out = {"[0]['b']": B + x, "[0]['w']": W + x, "[1]": np.float32(0.0)}
    found = diagnose(STEP, "k4", [x], out)
    assert set(found) == {"k4[0]['b']", "k4[0]['w']"}
    assert {f.get("mistake") for (f,) in found.values()} == {"step_summed"}
    assert named(found)["k4[0]['w']"].get("arg_k") == 4
    both = diagnose(STEP, "k4", [x], {**out, "[1]": 4 * x})  # the loss summed too: two mistakes, two outputs
    assert [(f.get("mistake"), f.get("arg_k")) for f in both["k4[1]"]] == [
        ("loss_summed", ""),
        ("loss_doubled_twice", ""),
    ]
    assert "k4[1]" not in named(both)  # two candidates, and no other output names one alone
    too_many = {f"[{i}]": x for i in range(9)}
    assert diagnose(STEP, "k4", [x], too_many) == {}  # more outputs than a mistake is compared with


def test_coinciding_mistakes_are_decided_by_the_cells_other_cases():
    """Over 2 devices a mean is half the total: those values are both mistakes' results; the mean over 4 and 8
    devices names one alone, so the case of 2 is that mistake too. Nothing decides: neither is named."""
    from namedaxes.exercises import scaled_sum

    source = ("namedaxes.exercises.scaled_sum", "scaled_sum")
    assert scaled_sum.known_mistakes("scaled_sum", "k2", [X[:2, 0]])  # the module lists the mistakes
    found = {}
    for k in (2, 4, 8):
        x = np.arange(k, dtype=np.float32)
        found.update(diagnose(source, f"k{k}", [x], {"": np.full(k, 2.0 * x.sum() / k, np.float32)}))
    assert [f.get("mistake") for f in found["k2"]] == ["sum_plain", "sum_is_mean"]
    assert {key: f.get("mistake") for key, f in named(found).items()} == {
        "k2": "sum_is_mean",
        "k4": "sum_is_mean",
        "k8": "sum_is_mean",
    }
    assert named({"k2": found["k2"]}) == {}


def test_another_answers_values_are_never_named_and_keep_a_coinciding_mistake_from_being_named(fake_step):
    """Values listed with the key None are another answer's (a divisor written by hand): where a mistake's
    values are the same, the mistake is named only if another case names it alone."""
    out = {"[0]['b']": B, "[0]['w']": W}
    small, large = np.float32(1.5), np.float32(3.0)
    found = diagnose(STEP, "k2", [small], {**out, "[1]": 3 * small})
    assert [f.get("mistake") for f in found["k2[1]"]] == ["", "loss_tripled"]
    assert named(found) == {}
    alone = diagnose(STEP, "k8", [large], {**out, "[1]": 3 * large + 1})
    assert [f.get("mistake") for f in alone["k8[1]"]] == ["loss_tripled"]
    assert {key: f.get("mistake") for key, f in named({**found, **alone}).items()} == {
        "k2[1]": "loss_tripled",
        "k8[1]": "loss_tripled",
    }
    assert named(diagnose(STEP, "k8", [large], {**out, "[1]": 3 * large})) == {}  # another answer's, alone


def _dot(a: str, b: str) -> str:
    return (
        f"%2 = stablehlo.dot_general %0, %1, contracting_dims = [1] x [0] : (tensor<8x16x{a}>, tensor<16x4x{b}>) -> t\n"
    )


def test_a_mistake_the_program_shows_in_its_text_is_named_for_the_case():
    """Issue 56: `program_mistakes` reads the student's exported module (here, notebook 11's matmuls), the
    finding keyed by the case alone: it stands for all that case's wrong leaves."""
    mixed = ("namedaxes.exercises.step_anatomy", "mixed_train_step")
    found = diagnose_program(mixed, "2x4x1", _dot("f32", "f32") * 3 + _dot("bf16", "bf16"))
    assert found.kind.value == "known_mistake" and found.get("key") == "2x4x1", found
    assert (found.get("mistake"), found.get("arg_count"), found.get("arg_total")) == ("mixed_fp32_dots", 3, 4)
    assert diagnose_program(mixed, "2x4x1", _dot("f16", "f16")).get("mistake") == "mixed_other_dtype"
    assert diagnose_program(mixed, "2x4x1", _dot("bf16", "bf16")) is None
    assert diagnose_program(("namedaxes.exercises.step_anatomy", "zero_specs"), "stage1", _dot("f32", "f32")) is None
    assert diagnose_program(None, "2x4x1", _dot("f32", "f32")) is None
    assert diagnose_program(AXIS_NAMES, "pmap_4", _dot("f32", "f32")) is None  # a module with no such reading
