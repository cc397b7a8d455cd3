"""Known mistakes (autograder/judge/mistakes.py): which usual mistake a wrong program's values are, named as the
exercise's visible check names it, from the exercise module the reference names; NumPy only, no program run."""

from __future__ import annotations

import numpy as np
import pytest

from autograder.judge.mistakes import diagnose, mistake_source
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


def test_the_values_of_a_known_mistake_are_named_with_their_case_and_fields():
    assert mistake_source({MISTAKES_KEY: {"module": AXIS_NAMES[0], "exercise": AXIS_NAMES[1]}}) == AXIS_NAMES
    plain_total = np.broadcast_to(X.sum(axis=0), X.shape)
    found = diagnose(AXIS_NAMES, "pmap_4", [X], {"": plain_total})
    assert found.kind is Kind.KNOWN_MISTAKE
    assert found.fields == (("key", "pmap_4"), ("module", "axis_names"), ("mistake", "weighted_no_weights"))
    own = diagnose(AXIS_NAMES, "vmap_4", [X], {"": RANKS * X})
    assert own.get("mistake") == "weighted_own_term" and own.get("arg_axis") == "devices"
    last = diagnose(("namedaxes.exercises.axis_names", "last_device_value"), "pmap_4", [X], {"": np.zeros_like(X)})
    assert (last.get("mistake"), last.get("arg_last")) == ("last_nobody", 3)


def test_values_no_known_mistake_gives_are_not_named():
    right = np.broadcast_to((RANKS * X).sum(axis=0), X.shape)
    assert diagnose(AXIS_NAMES, "pmap_4", [X], {"": right}) is None
    assert diagnose(AXIS_NAMES, "pmap_4", [X], {"": np.ones_like(X)}) is None
    assert diagnose(AXIS_NAMES, "pmap_4", [X], {"": np.ones((3, 2))}) is None  # another shape
    two = {"[0]": RANKS * X, "[1]": RANKS * X}
    assert diagnose(AXIS_NAMES, "pmap_4", [X], two) is None  # several results: not one exercise's values
    assert diagnose(None, "pmap_4", [X], {"": RANKS * X}) is None
    no_list = ("namedaxes.exercises.scaled_sum", "scaled_sum")  # a module that lists no mistakes
    assert diagnose(no_list, "pmap_4", [X], {"": RANKS * X}) is None


def test_the_cases_tolerance_decides_what_is_the_mistakes_values():
    near = RANKS * X * (1 + 3e-5)
    assert diagnose(AXIS_NAMES, "pmap_4", [X], {"": near}) is None  # the default: 1e-5
    assert diagnose(AXIS_NAMES, "pmap_4", [X], {"": near}, rtol=1e-4, atol=1e-4).get("mistake") == "weighted_own_term"
