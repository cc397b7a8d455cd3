"""One verdict: the visible check and the grader agree on every fixture answer (issue 16, part 3).

For each exercise whose matrices are listed here, every RIGHT/EQUIVALENT and WRONG answer is run
through the visible check (`Exercise.check`, in the student's kernel) and through the grader's path
(the hidden test's `observe`, judged against the reference's programs by `autograder.programs.Judge`);
both must say the same: pass or fail. Notebook 01 so far (see the integrator notes for the rest).
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import test_exercises_gradient_averaging as t04  # noqa: E402  (notebooks 02-04: judgeA's block)
import test_exercises_nested_axes as t03  # noqa: E402
import test_exercises_scaled_sum as t02  # noqa: E402

import test_exercises_axis_names as t01  # noqa: E402
from autograder.compare import judge_observations  # noqa: E402
from namedaxes.checking import CheckFailed  # noqa: E402
from namedaxes.exercises import axis_names as q01  # noqa: E402

MATRICES = {
    "rank_weighted_sum": (q01.rank_weighted_sum, t01.rank_weighted_sum_ref, t01.RANK_WEIGHTED_SUM_RIGHT,
                          t01.RANK_WEIGHTED_SUM_WRONG),
    "last_device_value": (q01.last_device_value, t01.last_device_value_ref, t01.LAST_DEVICE_VALUE_RIGHT,
                          t01.LAST_DEVICE_VALUE_WRONG),
    "center": (q01.center, t01.center_ref, t01.CENTER_RIGHT, t01.CENTER_WRONG),
    # Notebooks 02-04 (judgeA's block): every RIGHT, EQUIVALENT and WRONG fixture of their matrices.
    "scaled_sum": (t02.q.scaled_sum, t02.ref_scaled_sum,
                   t02.SCALED_SUM_RIGHT + [t02.USES_PSUM_WRONG["all_gather"][0]],   # right values, no psum point
                   list(t02.SCALED_SUM_WRONG.values())),
    "scaled_sum_uses_psum": (t02.q.scaled_sum_uses_psum, t02.ref_scaled_sum, t02.USES_PSUM_RIGHT,
                             list(t02.USES_PSUM_WRONG.values())),
    "scaled_mean": (t02.q.scaled_mean, t02.ref_scaled_mean, t02.SCALED_MEAN_RIGHT, list(t02.SCALED_MEAN_WRONG.values())),
    "global_max_share": (t02.q.global_max_share, t02.ref_global_max_share, t02.GLOBAL_MAX_SHARE_RIGHT,
                         list(t02.GLOBAL_MAX_SHARE_WRONG.values())),
    "grid_sums": (t03.q.grid_sums, t03.grid_sums_ref, t03.GRID_SUMS_RIGHT, t03.GRID_SUMS_WRONG),
    "device_numbers": (t03.q.device_numbers, t03.device_numbers_ref, t03.DEVICE_NUMBERS_RIGHT,
                       t03.DEVICE_NUMBERS_WRONG),
    "row_normalize": (t03.q.row_normalize, t03.row_normalize_ref, t03.ROW_NORMALIZE_RIGHT, t03.ROW_NORMALIZE_WRONG),
    "tp_dp_step": (t03.q.tp_dp_step, t03.tp_dp_step_ref, t03.TP_DP_STEP_RIGHT, t03.TP_DP_STEP_WRONG),
    "loss_fn": (t04.q.loss_fn, t04.loss_ref, t04.LOSS_RIGHT, t04.LOSS_WRONG),
    "compute_gradients": (t04.q.compute_gradients, t04.grads_ref, t04.GRADS_RIGHT, t04.GRADS_WRONG),
    "parallel_update_step": (t04.q.parallel_update_step, t04.step_ref, t04.STEP_RIGHT, t04.STEP_WRONG),
    "train": (t04.q.train, t04.train_ref, t04.TRAIN_RIGHT, t04.TRAIN_WRONG + t04.TRAIN_GRADED_WRONG),
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
    key = id(exercise)          # two test cells of one exercise (scaled_sum, its psum point) share a name
    if key not in _REFERENCES:
        _REFERENCES[key] = exercise.observe(reference)
    try:
        observed = exercise.observe(answer)
    except Exception:  # noqa: BLE001 - the hidden test raises: 0 points
        return False
    return judge_observations(_REFERENCES[key], observed).passed


@pytest.mark.parametrize("name, kind, index", CASES, ids=[f"{n}-{k}{i}" for n, k, i in CASES])
def test_the_visible_check_and_the_grader_agree(name, kind, index):
    exercise, reference, right, wrong = MATRICES[name]
    answer = right[index] if kind == "right" else wrong[index][0]
    visible, graded = _visible(exercise, answer), _graded(exercise, reference, answer)
    assert visible == graded == (kind == "right"), (visible, graded)
