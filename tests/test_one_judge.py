"""One verdict: the visible check and the grader agree on every fixture answer (issue 16, part 3).

For each exercise whose matrices are listed here, every RIGHT/EQUIVALENT and WRONG answer is run
through the visible check (`Exercise.check`, in the student's kernel) and through the grader's path
(the hidden test's `observe`, judged against the reference's programs by `autograder.judge.programs.Judge`);
both must say the same: pass or fail. Notebook 01 so far (see the integrator notes for the rest).
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import test_exercises_axis_names as t01  # noqa: E402
from judge_helpers import judge_observations  # noqa: E402
from namedaxes.checking import CheckFailed  # noqa: E402
from namedaxes.exercises import axis_names as q01  # noqa: E402

MATRICES = {
    "rank_weighted_sum": (q01.rank_weighted_sum, t01.rank_weighted_sum_ref, t01.RANK_WEIGHTED_SUM_RIGHT,
                          t01.RANK_WEIGHTED_SUM_WRONG),
    "last_device_value": (q01.last_device_value, t01.last_device_value_ref, t01.LAST_DEVICE_VALUE_RIGHT,
                          t01.LAST_DEVICE_VALUE_WRONG),
    "center": (q01.center, t01.center_ref, t01.CENTER_RIGHT, t01.CENTER_WRONG),
}
CASES = [(name, "right", i) for name, (_, _, right, _) in MATRICES.items() for i in range(len(right))] + \
        [(name, "wrong", i) for name, (_, _, _, wrong) in MATRICES.items() for i in range(len(wrong))]
_REFERENCES: dict = {}


def _visible(exercise, answer) -> bool:
    try:
        exercise.check(answer)
    except CheckFailed:
        return False
    return True


def _graded(exercise, reference, answer) -> bool:
    if exercise.name not in _REFERENCES:
        _REFERENCES[exercise.name] = exercise.observe(reference)
    try:
        observed = exercise.observe(answer)
    except Exception:  # noqa: BLE001 - the hidden test raises: 0 points
        return False
    return judge_observations(_REFERENCES[exercise.name], observed).passed


@pytest.mark.parametrize("name, kind, index", CASES, ids=[f"{n}-{k}{i}" for n, k, i in CASES])
def test_the_visible_check_and_the_grader_agree(name, kind, index):
    exercise, reference, right, wrong = MATRICES[name]
    answer = right[index] if kind == "right" else wrong[index][0]
    visible, graded = _visible(exercise, answer), _graded(exercise, reference, answer)
    assert visible == graded == (kind == "right"), (visible, graded)
