"""One verdict: the visible check and the grader agree on every fixture answer (issue 16, part 3).

For each exercise whose matrices are listed here, every RIGHT/EQUIVALENT and WRONG answer is run
through the visible check (`Exercise.check`, in the student's kernel) and through the grader's path
(the hidden test's `observe`, judged against the reference's programs by `autograder.judge.programs.Judge`);
both must say the same: pass or fail. Notebooks 01 and 05-08 so far (see the integrator notes for the rest).
"""

from __future__ import annotations

import pytest
from judge_helpers import judge_observations

from namedaxes.checking import CheckFailed
from namedaxes.exercises import axis_names as q01
from namedaxes.exercises import collectives as q07
from namedaxes.exercises import compiler_sharding as q08
from namedaxes.exercises import multi_process as q06
from namedaxes.exercises import shard_map as q05
from tests.namedaxes.exercises import test_axis_names as t01
from tests.namedaxes.exercises import test_collectives as t07
from tests.namedaxes.exercises import test_compiler_sharding as t08
from tests.namedaxes.exercises import test_gradient_averaging as t04  # notebooks 02-04
from tests.namedaxes.exercises import test_multi_process as t06
from tests.namedaxes.exercises import test_nested_axes as t03
from tests.namedaxes.exercises import test_scaled_sum as t02
from tests.namedaxes.exercises import test_shard_map as t05

MATRICES = {
    "rank_weighted_sum": (
        q01.rank_weighted_sum,
        t01.rank_weighted_sum_ref,
        t01.RANK_WEIGHTED_SUM_RIGHT,
        t01.RANK_WEIGHTED_SUM_WRONG,
    ),
    "last_device_value": (
        q01.last_device_value,
        t01.last_device_value_ref,
        t01.LAST_DEVICE_VALUE_RIGHT,
        t01.LAST_DEVICE_VALUE_WRONG,
    ),
    "center": (q01.center, t01.center_ref, t01.CENTER_RIGHT, t01.CENTER_WRONG),
    # Notebooks 02-04 (judgeA's block): every RIGHT, EQUIVALENT and WRONG fixture of their matrices.
    "scaled_sum": (
        t02.q.scaled_sum,
        t02.ref_scaled_sum,
        t02.SCALED_SUM_RIGHT + [t02.USES_PSUM_WRONG["all_gather"][0]],  # right values, no psum point
        list(t02.SCALED_SUM_WRONG.values()),
    ),
    "scaled_sum_uses_psum": (
        t02.q.scaled_sum_uses_psum,
        t02.ref_scaled_sum,
        t02.USES_PSUM_RIGHT,
        list(t02.USES_PSUM_WRONG.values()),
    ),
    "scaled_mean": (
        t02.q.scaled_mean,
        t02.ref_scaled_mean,
        t02.SCALED_MEAN_RIGHT,
        list(t02.SCALED_MEAN_WRONG.values()),
    ),
    "global_max_share": (
        t02.q.global_max_share,
        t02.ref_global_max_share,
        t02.GLOBAL_MAX_SHARE_RIGHT,
        list(t02.GLOBAL_MAX_SHARE_WRONG.values()),
    ),
    "grid_sums": (t03.q.grid_sums, t03.grid_sums_ref, t03.GRID_SUMS_RIGHT, t03.GRID_SUMS_WRONG),
    "device_numbers": (
        t03.q.device_numbers,
        t03.device_numbers_ref,
        t03.DEVICE_NUMBERS_RIGHT,
        t03.DEVICE_NUMBERS_WRONG,
    ),
    "row_normalize": (t03.q.row_normalize, t03.row_normalize_ref, t03.ROW_NORMALIZE_RIGHT, t03.ROW_NORMALIZE_WRONG),
    "tp_dp_step": (t03.q.tp_dp_step, t03.tp_dp_step_ref, t03.TP_DP_STEP_RIGHT, t03.TP_DP_STEP_WRONG),
    "loss_fn": (t04.q.loss_fn, t04.loss_ref, t04.LOSS_RIGHT, t04.LOSS_WRONG),
    "compute_gradients": (t04.q.compute_gradients, t04.grads_ref, t04.GRADS_RIGHT, t04.GRADS_WRONG),
    "parallel_update_step": (t04.q.parallel_update_step, t04.step_ref, t04.STEP_RIGHT, t04.STEP_WRONG),
    "train": (t04.q.train, t04.train_ref, t04.TRAIN_RIGHT, t04.TRAIN_WRONG + t04.TRAIN_GRADED_WRONG),
}


def _rows(reference, equivalent: dict, wrong: dict) -> tuple:
    """(reference, RIGHT answers: the reference and every EQUIVALENT one, WRONG (answer, match) pairs)."""
    return reference, [reference, *(a for a in equivalent.values() if a is not reference)], list(wrong.values())


# Notebooks 05-08 (judgeB's block): every RIGHT, EQUIVALENT and WRONG fixture of their matrices.
MATRICES.update(
    {
        "sharded_scaled_sum": (
            q05.sharded_scaled_sum,
            *_rows(t05.ref_sharded_scaled_sum, t05.SCALED_SUM_EQUIVALENT, t05.SCALED_SUM_WRONG),
        ),
        "replica_totals": (
            q05.replica_totals,
            *_rows(t05.ref_replica_totals, t05.REPLICA_EQUIVALENT, t05.REPLICA_WRONG),
        ),
        "dp_train_step": (q05.dp_train_step, *_rows(t05.ref_dp_train_step, t05.DP_EQUIVALENT, t05.DP_WRONG)),
        "jit_train_step": (q05.jit_train_step, *_rows(t05.ref_jit_train_step, t05.JIT_EQUIVALENT, t05.JIT_WRONG)),
        "weighted_total_shard_map": (
            q05.weighted_total_shard_map,
            *_rows(t05.ref_weighted_total_shard_map, t05.WEIGHTED_EQUIVALENT, t05.WEIGHTED_WRONG),
        ),
        "local_rows": (q06.local_rows, *_rows(t06.local_rows_ref, t06.LOCAL_ROWS_RIGHT, t06.LOCAL_ROWS_WRONG)),
        "global_metrics": (q06.global_metrics, *_rows(t06.metrics_ref, t06.METRICS_RIGHT, t06.METRICS_WRONG)),
        "masked_step": (q06.masked_step, *_rows(t06.masked_step_ref, t06.STEP_RIGHT, t06.STEP_WRONG)),
        "median_centered": (
            q07.median_centered,
            *_rows(t07.ref_median_centered, t07.MEDIAN_EQUIVALENT, t07.MEDIAN_WRONG),
        ),
        "sum_scatter_columns": (
            q07.sum_scatter_columns,
            *_rows(t07.ref_sum_scatter_columns, t07.SCATTER_EQUIVALENT, t07.SCATTER_WRONG),
        ),
        "ring_all_reduce": (q07.ring_all_reduce, *_rows(t07.ref_ring_all_reduce, t07.RING_EQUIVALENT, t07.RING_WRONG)),
        "fsdp_step": (q07.fsdp_step, *_rows(t07.ref_fsdp_step, t07.FSDP_EQUIVALENT, t07.FSDP_WRONG)),
        "one_all_reduce_mlp": (
            q08.one_all_reduce_mlp,
            *_rows(t08.ref_one_all_reduce_mlp, t08.MLP_EQUIVALENT, t08.MLP_WRONG),
        ),
        "feature_correlation": (
            q08.feature_correlation,
            *_rows(t08.ref_feature_correlation, t08.CORR_EQUIVALENT, t08.CORR_WRONG),
        ),
        "collective_matmul_rows": (
            q08.collective_matmul_rows,
            *_rows(t08.ref_collective_matmul_rows, t08.CM_EQUIVALENT, t08.CM_WRONG),
        ),
    }
)
CASES = [(name, "right", i) for name, (_, _, right, _) in MATRICES.items() for i in range(len(right))] + [
    (name, "wrong", i) for name, (_, _, _, wrong) in MATRICES.items() for i in range(len(wrong))
]
_REFERENCES: dict = {}


def _visible(exercise, answer) -> bool:
    try:
        exercise.check(answer)
    except CheckFailed:
        return False
    return True


def _graded(exercise, reference, answer) -> bool:
    key = id(exercise)  # two test cells of one exercise (scaled_sum, its psum point) share a name
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
