"""Notebook 05 (`05_shard_map`): every check and observation, proven both ways.

Wrong answers a learner really writes are rejected with the message that
helps them; equivalent right answers are accepted; `observe` of an equivalent
answer matches the reference's under the autograder's comparison rules, and
`observe` of a wrong answer does not.
"""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P
from judge_helpers import (
    agreement_test,
    assert_check_fails,
    assert_check_passes,
    derived,
    judge_observations,
    matrix_rows,
    observations_match,
    observe,
)
from spoken import failure_in, says

from namedaxes import DATA_PARALLEL, DATA_SHARDS, DEVICES, MODEL_REPLICAS
from namedaxes.exercises import shard_map as q
from namedaxes.exercises.shard_map import LEARNING_RATE, loss_fn, sgd_step, weighted_total
from namedaxes.grading import Case, programs, spec
from namedaxes.meshes import grid_mesh


def _matches(student: dict, reference: dict) -> bool:
    """The autograder's own comparison (arrays allclose with the same shape and dtype,
    `axes` must contain every reference axis, anything else equal)."""
    return observations_match(reference, student)


def _not_written(*args):
    raise NotImplementedError()


def _place(tree, mesh, spec):
    return jax.device_put(tree, NamedSharding(mesh, spec))


# ---------------------------------------------------------------- 1. sharded_scaled_sum (column totals)
def _rows_on(x, mesh, spec=P(DEVICES)):
    """x padded with zero rows to a multiple of the devices, placed with `spec`."""
    return _place(jnp.pad(x, ((0, -x.shape[0] % mesh.shape[DEVICES]), (0, 0))), mesh, spec)


def ref_sharded_scaled_sum(x, mesh):
    x = _rows_on(x, mesh)

    def column_totals(block):
        return lax.psum(jnp.sum(block * 2.0, axis=0), axis_name=DEVICES)

    return jax.shard_map(column_totals, mesh=mesh, in_specs=P(DEVICES), out_specs=P())(x)


def _scaled_sum_with(body, *, place=True, out_specs=P(), **kwargs):
    def answer(x, mesh):
        x = _rows_on(x, mesh) if place else x
        return jax.shard_map(body, mesh=mesh, in_specs=P(DEVICES), out_specs=out_specs, **kwargs)(x)

    return answer


def _inferred_in_specs(x, mesh):
    x = _rows_on(x, mesh)
    return jax.shard_map(lambda b: lax.psum(jnp.sum(b * 2.0, axis=0), DEVICES), mesh=mesh, out_specs=P())(x)


def _jit_inside(x, mesh):
    f = jax.jit(
        jax.shard_map(
            lambda b: 2.0 * lax.psum(b.sum(axis=0), DEVICES), mesh=mesh, in_specs=P(DEVICES, None), out_specs=P(None)
        )
    )
    return f(_rows_on(x, mesh, P(DEVICES, None)))


SCALED_SUM_EQUIVALENT = {
    "reference": ref_sharded_scaled_sum,
    "psum the block, then sum its rows": _scaled_sum_with(lambda b: jnp.sum(lax.psum(b * 2.0, DEVICES), axis=0)),
    "pmean times device count": _scaled_sum_with(lambda b: lax.pmean(b.sum(0), DEVICES) * lax.psum(1, DEVICES) * 2.0),
    "check_vma=False": _scaled_sum_with(lambda b: lax.psum(jnp.sum(b + b, axis=0), DEVICES), check_vma=False),
    "in_specs inferred": _inferred_in_specs,
    "jit inside, specs spelled out": _jit_inside,
    "ones @ block": _scaled_sum_with(lambda b: lax.psum(jnp.ones(b.shape[0]) @ (2.0 * b), DEVICES)),
}


@pytest.mark.parametrize("answer", SCALED_SUM_EQUIVALENT.values(), ids=SCALED_SUM_EQUIVALENT.keys())
def test_sharded_scaled_sum_accepts_equivalent_answers(answer):
    assert_check_passes(q.sharded_scaled_sum.check, answer)


def test_sharded_scaled_sum_observations_of_equivalent_answers_match():
    reference = observe(q.sharded_scaled_sum, ref_sharded_scaled_sum)
    got = derived(reference)
    assert got["axes"] == [DEVICES]
    assert set(got) == {"out_k8_16x3", "out_k4_10x5", "out_k2_7x2", "axes", "communication"}
    assert np.asarray(got["out_k4_10x5"]).shape == (5,)
    for answer in list(SCALED_SUM_EQUIVALENT.values())[1:]:
        assert _matches(observe(q.sharded_scaled_sum, answer), reference)


def _global_sum(x, mesh):
    return jnp.sum(_rows_on(x, mesh) * 2.0, axis=0)


def _set_mesh_inside(x, mesh):
    with jax.set_mesh(mesh):
        x = jax.reshard(jnp.pad(x, ((0, -x.shape[0] % mesh.shape[DEVICES]), (0, 0))), P(DEVICES))
        return jax.shard_map(lambda b: lax.psum(jnp.sum(b * 2.0, axis=0), DEVICES), in_specs=P(DEVICES), out_specs=P())(
            x
        )


def _whole_x(x, mesh):
    """Every device takes all of x (replicated in_specs) and divides the psum of its global total by k."""
    x = jax.reshard(_rows_on(x, mesh), NamedSharding(mesh, P()))
    k = mesh.shape[DEVICES]
    return jax.shard_map(
        lambda b: lax.psum(jnp.sum(b * 2.0, axis=0), DEVICES) / k, mesh=mesh, in_specs=P(), out_specs=P()
    )(x)


def _dead_psum(x, mesh):
    """The total computed outside shard_map; a psum inside one, multiplied by zero."""
    x = _rows_on(x, mesh)
    dead = jax.shard_map(
        lambda b: lax.psum(jnp.sum(b, axis=0), DEVICES), mesh=mesh, in_specs=P(DEVICES), out_specs=P()
    )(x)
    return jnp.sum(x * 2.0, axis=0) + 0.0 * dead


def _rows_dropped(x, mesh):
    """The rows that do not divide by the devices cut off."""
    k = mesh.shape[DEVICES]
    return _scaled_sum_with(lambda b: lax.psum(jnp.sum(b * 2.0, axis=0), DEVICES))(
        x[: x.shape[0] - x.shape[0] % k], mesh
    )


def _whole_x_by_psum(block):
    """Everything on every device through the allowed collective (issue 46): each device places its block in
    a zero array at its own index, a psum adds them (every device now holds all of x), and every device adds
    up every row."""
    k, i = lax.axis_size(DEVICES), lax.axis_index(DEVICES)
    whole = lax.psum(jnp.zeros((k, *block.shape), block.dtype).at[i].set(block), DEVICES)
    return jnp.sum(whole.reshape(-1, block.shape[-1]) * 2.0, axis=0)


def _whole_x_summed_in_a_loop(block):
    """Issue 56: every device gathers all of x and adds it up block by block in a `fori_loop` (XLA's cost analysis
    counts a loop's body once: the judge counts it as often as it runs)."""
    every = lax.all_gather(block, DEVICES)
    zeros = jnp.zeros(block.shape[1:], block.dtype)
    return lax.fori_loop(0, every.shape[0], lambda i, acc: acc + 2.0 * jnp.sum(every[i], axis=0), zeros)


SCALED_SUM_WRONG = {
    "all of x on every device, added up in a fori_loop": (
        _scaled_sum_with(_whole_x_summed_in_a_loop, check_vma=False),
        r"(?s)right totals with a psum over DEVICES, but one device computes 8\.2× the reference's FLOPs "
        r"on 8 devices \(115 against 14.*at most 2\.5×.*every device holds all of `x`",
    ),
    "all of x on every device (psum of one-hot blocks)": (
        _scaled_sum_with(_whole_x_by_psum),
        r"(?s)right totals with a psum over DEVICES, but one device computes 11\.\d× the reference's FLOPs "
        r"on 8 devices \(\d+ against 14.*at most 2\.5×.*every device holds all of `x`",
    ),
    "unanswered": (_not_written, r"`sharded_scaled_sum` is not written yet"),
    "rows not padded (section 2's cell per column)": (
        lambda x, mesh: jax.shard_map(
            lambda b: lax.psum(jnp.sum(b * 2.0, axis=0), DEVICES), mesh=mesh, in_specs=P(DEVICES), out_specs=P()
        )(_place(x, mesh, P(DEVICES))),
        r"(?s)does not evenly divide the dimension size 10.*cannot be cut into that many equal blocks.*padded "
        r"first.*`jnp\.pad`",
    ),
    "rows that do not fit dropped": (
        _rows_dropped,
        r"(?s)\(mesh of 4 devices, x of shape \(10, 5\)\).*totals of the first 8 rows only: the last 2 were cut off.*"
        r"Pad x with zero rows",
    ),
    "plain array on an Explicit mesh": (
        _scaled_sum_with(lambda b: lax.psum(jnp.sum(b * 2.0, axis=0), DEVICES), place=False),
        r"(?s)does not match the specs of the input.*Explicit axes.*jax\.device_put\(x, NamedSharding",
    ),
    "no psum, out_specs=P()": (
        _scaled_sum_with(lambda b: jnp.sum(b * 2.0, axis=0)),
        r"(?s)type of the value says it still varies.*only a reducing collective over that axis",
    ),
    "no psum, check_vma=False": (
        _scaled_sum_with(lambda b: jnp.sum(b * 2.0, axis=0), check_vma=False),
        r"(?s)returned \[ 6\. 10\. 14\.\] \(mesh of 8 devices, x of shape \(16, 3\)\).*"
        r"column totals of 2 \* x are \[720\. 752\. 784\.\].*only the first device's shares",
    ),
    "the notebook's scalar total": (  # section 2's block function, copied
        _scaled_sum_with(lambda b: lax.psum(jnp.sum(b * 2.0), DEVICES)),
        r"(?s)should return shape \(3,\), the total of 2 \* x in each of x's 3 columns.*returned shape \(\)"
        r".*every column keeps its own total",
    ),
    "psum without summing the block": (
        _scaled_sum_with(lambda b: lax.psum(b * 2.0, DEVICES)),
        r"(?s)returned shape \(2, 3\).*one device's block of rows.*still have to be added up",
    ),
    "summed along the columns": (
        _scaled_sum_with(lambda b: lax.psum(jnp.sum(b * 2.0, axis=1), DEVICES)),
        r"(?s)returned shape \(2,\).*one number per row.*Add up the rows instead",
    ),
    "out_specs names DEVICES": (
        _scaled_sum_with(lambda b: lax.psum(jnp.sum(b * 2.0, axis=0), DEVICES), out_specs=P(DEVICES)),
        r"(?s)returned shape \(24,\).*8 results side by side.*`out_specs=P\(\)`",
    ),
    "pmean": (
        _scaled_sum_with(lambda b: lax.pmean(jnp.sum(b * 2.0, axis=0), DEVICES)),
        r"(?s)returned \[90\. 94\. 98\.\] .*mean of the devices' shares",
    ),
    "no factor 2": (
        _scaled_sum_with(lambda b: lax.psum(jnp.sum(b, axis=0), DEVICES)),
        r"(?s)returned \[360\. 376\. 392\.\] .*plain column totals of x: multiply by 2\.0",
    ),
    "misspelled axis name": (
        _scaled_sum_with(lambda b: lax.psum(jnp.sum(b * 2.0, axis=0), "device")),
        r"(?s)empty AssertionError.*axis name is not an axis of the mesh.*axes \('devices',\)",
    ),
    "psum outside shard_map": (
        lambda x, mesh: lax.psum(jnp.sum(x * 2.0, axis=0), DEVICES),
        r"(?s)collective over 'devices' where no mesh axis.*inside the function you give",
    ),
    "no shard_map at all": (
        _global_sum,
        r"(?s)right column totals, but no `jax\.shard_map` over 'devices' in it gives each "
        r"device only its own shard.*it has no `jax\.shard_map` at all",
    ),
    # issue 16: the grader's judging steps, in the visible check
    "whole x on every device": (
        _whole_x,
        r"(?s)right column totals, but no `jax\.shard_map` over 'devices'.*"
        r"input 1 split over 'devices' along dimension 0.*takes input 1 the whole "
        r"value on every device",
    ),
    "a dead psum beside the global total": (
        _dead_psum,
        # its shard_map does no work that counts: the layout step says so first, as the grader's does
        r"(?s)right column totals, but the `jax\.shard_map` over 'devices' in it that gives each device its own "
        r"shard .* does not reach the result",
    ),
    "set_mesh inside the function": (_set_mesh_inside, r"(?s)`jax\.set_mesh`, which only works outside `jax\.jit`"),
    "hard-coded": (
        lambda x, mesh: jnp.asarray([720.0, 752.0, 784.0], jnp.float32),
        r"(?s)should return shape \(5,\).*\(mesh of 4 devices, x of shape \(10, 5\)\)",
    ),
    "factor 3": (
        _scaled_sum_with(lambda b: lax.psum(jnp.sum(b * 3.0, axis=0), DEVICES)),
        r"(?s)returned \[ *1080\.? +1128\.? +1176\.?\].*Those are not 2\.0 times the column totals",
    ),
}


def test_sharded_scaled_sum_computed_answer_is_not_told_it_wrote_a_number_by_hand():
    """Issue 16: "by hand" only where the result does not follow x."""
    assert "by hand" not in assert_check_fails(q.sharded_scaled_sum.check, SCALED_SUM_WRONG["factor 3"][0])


@pytest.mark.parametrize("answer, match", SCALED_SUM_WRONG.values(), ids=SCALED_SUM_WRONG.keys())
def test_sharded_scaled_sum_rejects(answer, match):
    assert_check_fails(q.sharded_scaled_sum.check, answer, match=match)


def test_sharded_scaled_sum_observations_reject_wrong_answers():
    reference = observe(q.sharded_scaled_sum, ref_sharded_scaled_sum)
    for answer in (SCALED_SUM_WRONG["no factor 2"][0], SCALED_SUM_WRONG["pmean"][0]):
        assert not _matches(observe(q.sharded_scaled_sum, answer), reference)
    no_collective = observe(q.sharded_scaled_sum, _global_sum)  # the compiler's all-reduce, no shard_map
    assert "global-view program" in judge_observations(reference, no_collective).reason()


def test_sharded_scaled_sum_work_hidden_in_a_loop_is_refused_with_its_true_figures():
    """Issue 56: the loop's body counted as often as it runs (115, 103 and 33 FLOPs against the reference's 14, 32
    and 18; XLA's cost analysis read 16, 27 and 17, and the answer scored full points): the grader refuses it on
    the meshes where it exceeds 2.5x, with the figures the visible check reads."""
    reference = observe(q.sharded_scaled_sum, ref_sharded_scaled_sum)
    answer = SCALED_SUM_WRONG["all of x on every device, added up in a fori_loop"][0]
    verdict = judge_observations(reference, observe(q.sharded_scaled_sum, answer))
    assert not verdict.passed
    assert "8.2× the reference's FLOPs (115 against 14" in verdict.reason()
    assert "3.2× the reference's FLOPs (103 against 32" in verdict.reason()


def _whole_x_summed_until_its_data_say_stop(block):
    """The same in a `while_loop` whose test also reads the data (the rows it adds stay finite): only the loop's
    own limit (every block) fixes how often it runs, so it is counted at that limit, and the grader says so."""
    every = lax.all_gather(block, DEVICES)

    def go(c):
        return jnp.logical_and(c[0] < every.shape[0], jnp.all(jnp.isfinite(c[1])))

    def step(c):
        return c[0] + 1, c[1] + 2.0 * jnp.sum(every[c[0]], axis=0)

    return lax.while_loop(go, step, (0, jnp.zeros(block.shape[1:], block.dtype)))[1]


def test_sharded_scaled_sum_work_in_a_loop_its_data_may_stop_is_counted_at_its_limit():
    reference = observe(q.sharded_scaled_sum, ref_sharded_scaled_sum)
    answer = _scaled_sum_with(_whole_x_summed_until_its_data_say_stop, check_vma=False)
    verdict = judge_observations(reference, observe(q.sharded_scaled_sum, answer))
    assert not verdict.passed
    assert "the reference's FLOPs" in verdict.reason(limit=20)
    assert "how its loops were counted: 1 as often as a limit of their own" in verdict.reason(limit=20)
    assert_check_fails(q.sharded_scaled_sum.check, answer, match=r"(?s)one device computes \d+\.\d× the reference's")


def _whole_x_summed_until_a_psum_of_its_data(block):
    """Every device gathers all of x and adds it up in a `while_loop` whose bound is a psum of a test of the data
    (k on any finite x): only its data decide how often it runs."""
    every = lax.all_gather(block, DEVICES)
    n = lax.psum(jnp.int32(jnp.all(jnp.isfinite(block))), DEVICES)
    step = lambda c: (c[0] + 1, c[1] + 2.0 * jnp.sum(every[c[0]], axis=0))  # noqa: E731
    return lax.while_loop(lambda c: c[0] < n, step, (0, jnp.zeros(block.shape[1:], block.dtype)))[1]


def _own_rows_then_a_guard_until_finite(block):
    """The reference's sum and psum, then a loop that repairs the total while it is not finite (never, here)."""
    total = lax.psum(jnp.sum(block * 2.0, axis=0), DEVICES)
    return lax.while_loop(lambda t: jnp.any(~jnp.isfinite(t)), jnp.nan_to_num, total)


_BY_RUNNING = "how its loops were counted: by running the program on the hidden inputs"


def test_sharded_scaled_sum_work_in_a_loop_only_its_data_decide_is_counted_by_running_it():
    """Issue 56: the loop whose bound is a psum of the data was counted 1,024 times (15,382 FLOPs against 18 on 2
    devices, 854.6x); now as often as it ran on the hidden inputs (2, 4 and 8 times: 52, 136 and 130 FLOPs against
    18, 32 and 14), refused on every mesh, and the finding says how it was counted. Its figures are the hidden
    inputs', so the grader does not say them (the visible check says its own, on its public inputs)."""
    reference = observe(q.sharded_scaled_sum, ref_sharded_scaled_sum)
    answer = _scaled_sum_with(_whole_x_summed_until_a_psum_of_its_data, check_vma=False)
    verdict = judge_observations(reference, observe(q.sharded_scaled_sum, answer))
    assert not verdict.passed
    said = verdict.reason(limit=20)
    assert said.count("one device computes more than 2.5× the reference's FLOPs") == 3, said
    assert said.count(_BY_RUNNING) == 3, said
    for figure in ("1024 times", "2.9×", "4.2×", "9.3×", " 52 ", " 136 ", " 130 "):
        assert figure not in said, said
    # the visible check counts the loop by running it too (it read 1025.3x, 14,354 against 14, before)
    assert_check_fails(q.sharded_scaled_sum.check, answer, match=r"9\.3× the reference's FLOPs on 8 devices \(130 ")


def test_sharded_scaled_sum_honest_answer_with_a_loop_only_its_data_decide_is_accepted():
    """Issue 56: the guard loop runs 0 times on the hidden inputs; counted 1,024 times it read 968.4x the
    reference's FLOPs (17,431 against 18 on 2 devices) and the answer was refused by both judges."""
    reference = observe(q.sharded_scaled_sum, ref_sharded_scaled_sum)
    answer = _scaled_sum_with(_own_rows_then_a_guard_until_finite, check_vma=False)
    verdict = judge_observations(reference, observe(q.sharded_scaled_sum, answer))
    assert verdict.passed, verdict.reason(limit=20)
    assert_check_passes(q.sharded_scaled_sum.check, answer)  # before: refused at 1903.3x (26,646 against 14)


def _total_then(loop):
    """The reference's total, then `loop(total, block)` (its result kept alive by adding 0 times it)."""

    def body(block):
        total = lax.psum(jnp.sum(block * 2.0, axis=0), DEVICES)
        return total + 0.0 * loop(total, block)

    return _scaled_sum_with(body, check_vma=False)


def _finite(block):
    return jnp.int32(jnp.all(jnp.isfinite(block)))


_DATA_DECIDED = {  # the three forms, each a loop only the data decide: (answer, its runs on 2 / 8 devices)
    "quadratic condition (i * i < 40,000 times a test of the data)": (
        _total_then(
            lambda t, b: lax.while_loop(
                lambda c: c[0] * c[0] < 40000 * _finite(b), lambda c: (c[0] + 1, c[1] + 0.0 * c[1]), (0, t)
            )[1]
        ),
        (200, 200),
    ),
    "bound from a traced psum (of a test of the data)": (
        _total_then(
            lambda t, b: lax.while_loop(
                lambda c: c[0] < lax.psum(_finite(b), DEVICES), lambda c: (c[0] + 1, c[1] + 0.0 * c[1]), (0, t)
            )[1]
        ),
        (2, 8),
    ),
    "until converged (halving the distance from 1 to under 1/16)": (
        _total_then(
            lambda t, b: lax.while_loop(
                lambda c: jnp.max(jnp.abs(t - c)) >= 1 / 16, lambda c: c + 0.5 * (t - c), t - 1.0
            )
        ),
        (5, 5),
    ),
}


@pytest.mark.parametrize("form", list(_DATA_DECIDED))
def test_the_judge_counts_each_loop_only_its_data_decide_as_often_as_it_ran(monkeypatch, form):
    """Issue 56, on the grader's path: the work the judge compares (`work_difference`) counts each loop as often
    as it ran on the hidden inputs, on 2 and on 8 devices (before: 1,024 times each, said as such)."""
    import autograder.judge.programs as judge_programs

    seen = {}
    real = judge_programs.work_difference

    def spy(case, got, want, limits):
        seen[case] = got.work.measured, got.work.uncounted
        return real(case, got, want, limits)

    monkeypatch.setattr(judge_programs, "work_difference", spy)
    answer, (on_2, on_8) = _DATA_DECIDED[form]
    reference = observe(q.sharded_scaled_sum, ref_sharded_scaled_sum)
    judge_observations(reference, observe(q.sharded_scaled_sum, answer), grade_id=form)
    assert (seen["out_k2_7x2"], seen["out_k8_16x3"]) == (((on_2,), 0), ((on_8,), 0))


def test_sharded_scaled_sum_first_hint_is_a_question_without_code():
    first = q.sharded_scaled_sum._hints[0]
    assert first.rstrip().endswith("?") and "`" not in first and "psum" not in first and "axis=" not in first


# ---------------------------------------------------------------- 2. replica_totals
def ref_replica_totals(x, mesh):
    return jax.shard_map(
        lambda b: lax.psum(jnp.sum(b, axis=1), axis_name=MODEL_REPLICAS),
        mesh=mesh,
        in_specs=P(DATA_SHARDS, MODEL_REPLICAS),
        out_specs=P(DATA_SHARDS),
    )(x)


def _replica_with(body, out_specs, **kwargs):
    def answer(x, mesh):
        return jax.shard_map(body, mesh=mesh, in_specs=P(DATA_SHARDS, MODEL_REPLICAS), out_specs=out_specs, **kwargs)(x)

    return answer


def _row_totals(block):
    return lax.psum(jnp.sum(block, axis=1), MODEL_REPLICAS)


REPLICA_EQUIVALENT = {
    "psum of the blocks, then their columns added": _replica_with(
        lambda b: jnp.sum(lax.psum(b, MODEL_REPLICAS), axis=1), P(DATA_SHARDS)
    ),
    "pmean times replica count": _replica_with(
        lambda b: lax.pmean(jnp.sum(b, axis=1), MODEL_REPLICAS) * lax.psum(1, MODEL_REPLICAS), P(DATA_SHARDS)
    ),
    "in_specs inferred, placed again": lambda x, mesh: jax.shard_map(_row_totals, mesh=mesh, out_specs=P(DATA_SHARDS))(
        _place(x, mesh, P(DATA_SHARDS, MODEL_REPLICAS))
    ),
}


@pytest.mark.parametrize(
    "answer", [ref_replica_totals, *REPLICA_EQUIVALENT.values()], ids=["reference", *REPLICA_EQUIVALENT.keys()]
)
def test_replica_totals_accepts_equivalent_answers(answer):
    assert_check_passes(q.replica_totals.check, answer)


def test_replica_totals_observations_of_equivalent_answers_match():
    reference = observe(q.replica_totals, ref_replica_totals)
    got = derived(reference)
    assert got["axes"] == [MODEL_REPLICAS]  # no communication over DATA_SHARDS
    assert got["out_2x4_4x8"].shape == (4,) and got["out_4x2_4x2"].shape == (4,)
    for answer in REPLICA_EQUIVALENT.values():
        assert _matches(observe(q.replica_totals, answer), reference)


def _global_replica_totals(x, mesh):
    return jnp.sum(jax.reshard(x, NamedSharding(mesh, P())), axis=1)


def _with_extra_max(block):
    totals = _row_totals(block)
    return totals + 0.0 * lax.pmax(jnp.sum(totals), DATA_SHARDS)


def _whole_rows(x, mesh):
    """Every device of a row takes the row's whole block (the columns gathered) and divides its psum by k."""
    x = jax.reshard(x, NamedSharding(mesh, P(DATA_SHARDS, None)))
    k = mesh.shape[MODEL_REPLICAS]
    return jax.shard_map(
        lambda b: lax.psum(jnp.sum(b, axis=1), MODEL_REPLICAS) / k,
        mesh=mesh,
        in_specs=P(DATA_SHARDS, None),
        out_specs=P(DATA_SHARDS),
    )(x)


def _whole_row_by_psum(block):
    """Everything on every device through the allowed collective (issue 46): each device places its block in a
    zero array at its own index along MODEL_REPLICAS, a psum over MODEL_REPLICAS adds them (every device now
    holds all of its row's blocks), and every device adds up the whole row."""
    k, i = lax.axis_size(MODEL_REPLICAS), lax.axis_index(MODEL_REPLICAS)
    every = lax.psum(jnp.zeros((k, *block.shape), block.dtype).at[i].set(block), MODEL_REPLICAS)
    return jnp.sum(jnp.concatenate(list(every), axis=1), axis=1)


REPLICA_WRONG = {
    "all of a row's blocks on every device (psum of one-hot blocks)": (
        _replica_with(_whole_row_by_psum, P(DATA_SHARDS)),
        r"(?s)right totals with a psum over MODEL_REPLICAS, but one device computes 12\.\d× the reference's "
        r"FLOPs on the 2 x 4 mesh \(\d+ against 4.*at most 3×.*every device holds all of its row's blocks",
    ),
    "unanswered": (_not_written, r"`replica_totals` is not written yet"),
    "section 3's psum_over for the other axis": (
        _replica_with(lambda b: lax.psum(b, MODEL_REPLICAS), P(DATA_SHARDS, None)),
        r"(?s)should return shape \(4,\) \(2 x 4 mesh, x of shape \(4, 8\)\): one total per row.*returned shape "
        r"\(4, 2\)\. That is the 4 column blocks added up.*not yet each row's total.*`jnp\.sum\(block, axis=1\)`",
    ),
    "copies side by side": (
        _replica_with(_row_totals, P((DATA_SHARDS, MODEL_REPLICAS))),
        r"(?s)shape \(4,\).*returned shape \(16,\)\. That is 4 copies of the row totals side by side.*"
        r"`out_specs=P\(DATA_SHARDS\)`",
    ),
    "copies side by side, kept dimensions": (
        _replica_with(
            lambda b: lax.psum(jnp.sum(b, axis=1, keepdims=True), MODEL_REPLICAS), P(DATA_SHARDS, MODEL_REPLICAS)
        ),
        r"(?s)returned shape \(4, 4\)\. That is 4 copies of the row totals side by side",
    ),
    "the old answer's out_specs=P(DATA_SHARDS, None) on a 1-D result": (
        _replica_with(_row_totals, P(DATA_SHARDS, None)),
        r"(?s)out_specs entry which is too long.*an `out_specs` names more dimensions than your per-device result "
        r"has.*`P\(DATA_SHARDS\)`",
    ),
    "pmean for psum": (
        _replica_with(lambda b: lax.pmean(jnp.sum(b, axis=1), MODEL_REPLICAS), P(DATA_SHARDS)),
        r"(?s)wrong values.*row totals divided by the 4 replicas: `lax\.pmean` averages",
    ),
    "over both axes, one block": (
        _replica_with(lambda b: lax.psum(jnp.sum(b, axis=1), (DATA_SHARDS, MODEL_REPLICAS)), P()),
        r"(?s)returned shape \(2,\)\. Those are one data shard's rows only.*must name DATA_SHARDS",
    ),
    "over both axes, rows kept": (
        _replica_with(lambda b: lax.psum(jnp.sum(b, axis=1), (DATA_SHARDS, MODEL_REPLICAS)), P(DATA_SHARDS)),
        r"(?s)wrong values.*totals over the whole mesh",
    ),
    "psum, out_specs=P()": (
        _replica_with(_row_totals, P()),
        r"(?s)type of the value says it still varies.*only a reducing collective over that axis.*Reduce over that "
        r"axis, or name the axis in the output's `out_specs`",
    ),
    "own blocks only (check_vma=False)": (
        _replica_with(lambda b: jnp.sum(b, axis=1), P(DATA_SHARDS), check_vma=False),
        r"(?s)wrong values.*totals of each device's own block only.*psum over MODEL_REPLICAS",
    ),
    "no collective": (
        _global_replica_totals,
        r"(?s)right values, but no `jax\.shard_map` over 'data_shards' x "
        r"'model_replicas'.*no `jax\.shard_map` at all",
    ),
    "whole rows on every device": (
        _whole_rows,
        r"(?s)right values, but no `jax\.shard_map` over 'data_shards' x "
        r"'model_replicas'.*takes input 1 split over 'data_shards' along "
        r"dimension 0\.",
    ),
    "extra collective over DATA_SHARDS": (
        _replica_with(_with_extra_max, P(DATA_SHARDS)),
        r"communicates over 'data_shards' too",
    ),
    "all_gather, then sum": (
        _replica_with(lambda b: lax.all_gather(jnp.sum(b, axis=1), MODEL_REPLICAS).sum(0), P(DATA_SHARDS)),
        r"(?s)still varies along that axis\. In JAX's types only a reducing collective.*from an `all_gather` or a "
        r"`ppermute`, still varies",
    ),
}


def test_replica_totals_all_gather_is_not_told_a_collective_is_missing():
    """Issue 16: an all_gather is a collective; the message says why its result still varies."""
    msg = assert_check_fails(q.replica_totals.check, REPLICA_WRONG["all_gather, then sum"][0])
    assert "is missing" not in msg


@pytest.mark.parametrize("answer, match", REPLICA_WRONG.values(), ids=REPLICA_WRONG.keys())
def test_replica_totals_rejects(answer, match):
    assert_check_fails(q.replica_totals.check, answer, match=match)


def test_replica_totals_observations_reject_wrong_answers():
    reference = observe(q.replica_totals, ref_replica_totals)
    for key in ("over both axes, rows kept", "extra collective over DATA_SHARDS", "no collective"):
        assert not _matches(observe(q.replica_totals, REPLICA_WRONG[key][0]), reference), key


# ---------------------------------------------------------------- 3. dp_train_step (weighted, unequal shards)
def sgd_update(params, grads):
    return jax.tree.map(lambda p, g: p - LEARNING_RATE * g, params, grads)


def _error(p, b):
    return p["w"] * b["x"] + p["b"] - b["y"]


def _dp_with(body, *, check_vma=True, place_batch=True, out_specs=P()):
    def answer(params, batch, mesh):
        params = _place(params, mesh, P())
        if place_batch:
            batch = _place(batch, mesh, P(DATA_PARALLEL))
        return jax.shard_map(
            body, mesh=mesh, in_specs=(P(), P(DATA_PARALLEL)), out_specs=out_specs, check_vma=check_vma
        )(params, batch)

    return answer


def _psum_ratio_loss(params, local_batch):
    """The reference: the whole batch's weighted loss from psums of the local numerator and denominator."""

    def loss(p):
        sse = lax.psum(jnp.sum(local_batch["weight"] * _error(p, local_batch) ** 2), DATA_PARALLEL)
        return sse / lax.psum(jnp.sum(local_batch["weight"]), DATA_PARALLEL)

    return sgd_update(params, jax.grad(loss)(params))


def _pcast_weighted_grads(params, local_batch):
    """04's shape: local gradients (of the local weighted sum), psum, divide by the total weight."""
    own = lax.pcast(params, DATA_PARALLEL, to="varying")
    grads = jax.grad(lambda p: jnp.sum(local_batch["weight"] * _error(p, local_batch) ** 2))(own)
    total = lax.psum(jnp.sum(local_batch["weight"]), DATA_PARALLEL)
    return sgd_update(params, jax.tree.map(lambda g: lax.psum(g, DATA_PARALLEL) / total, grads))


def _local_mean_times_weight(params, local_batch):
    """The weighted mean over unequal shards as 04 wrote it: psum(n_local * g) / psum(n_local)."""
    own = lax.pcast(params, DATA_PARALLEL, to="varying")
    n_local = jnp.sum(local_batch["weight"])
    g = jax.grad(lambda p: jnp.sum(local_batch["weight"] * _error(p, local_batch) ** 2) / n_local)(own)
    return sgd_update(
        params, jax.tree.map(lambda v: lax.psum(n_local * v, DATA_PARALLEL) / lax.psum(n_local, DATA_PARALLEL), g)
    )


def _check_vma_off(params, local_batch):
    grads = jax.grad(lambda p: jnp.sum(local_batch["weight"] * _error(p, local_batch) ** 2))(params)
    total = lax.psum(jnp.sum(local_batch["weight"]), DATA_PARALLEL)
    return sgd_update(params, jax.tree.map(lambda g: lax.psum(g, DATA_PARALLEL) / total, grads))


ref_dp_train_step = _dp_with(_psum_ratio_loss)

DP_EQUIVALENT = {
    "local gradients (pcast), psum, divide": _dp_with(_pcast_weighted_grads),
    "psum(n_local * g) / psum(n_local)": _dp_with(_local_mean_times_weight),
    "check_vma=False": _dp_with(_check_vma_off, check_vma=False),
}


@pytest.mark.parametrize(
    "answer", [ref_dp_train_step, *DP_EQUIVALENT.values()], ids=["reference", *DP_EQUIVALENT.keys()]
)
def test_dp_train_step_accepts_equivalent_answers(answer):
    assert_check_passes(q.dp_train_step.check, answer)


def test_dp_train_step_observations_of_equivalent_answers_match():
    reference = observe(q.dp_train_step, ref_dp_train_step)
    assert derived(reference)["axes"] == [DATA_PARALLEL]
    assert {"k8_n64['w']", "k4_n12['b']", "k2_n10['w']"} <= set(derived(reference))
    for key, answer in DP_EQUIVALENT.items():
        assert _matches(observe(q.dp_train_step, answer), reference), key


def _pmean_of_local_losses(params, local_batch):
    """Section 4's `dp_step_body` with a weighted local loss: every device counted equally."""

    def loss(p):
        local = jnp.sum(local_batch["weight"] * _error(p, local_batch) ** 2) / jnp.sum(local_batch["weight"])
        return lax.pmean(local, DATA_PARALLEL)

    return sgd_update(params, jax.grad(loss)(params))


def _unweighted(params, local_batch):
    return sgd_update(params, jax.grad(lambda p: lax.pmean(loss_fn(p, local_batch), DATA_PARALLEL))(params))


def _pmap_style(params, local_batch):
    grads = jax.grad(lambda p: jnp.sum(local_batch["weight"] * _error(p, local_batch) ** 2))(params)
    total = lax.psum(jnp.sum(local_batch["weight"]), DATA_PARALLEL)
    return sgd_update(params, jax.tree.map(lambda g: lax.psum(g, DATA_PARALLEL) / total, grads))


def _gather_everything(params, local_batch):
    """Right numbers, wrong structure: every device gathers the whole batch and trains alone."""
    full = lax.all_gather(local_batch, DATA_PARALLEL, tiled=True)
    loss = lambda p: jnp.sum(full["weight"] * _error(p, full) ** 2) / jnp.sum(full["weight"])  # noqa: E731
    return sgd_update(params, jax.grad(loss)(params))


def _weighted_global_step(params, batch):
    loss = lambda p: jnp.sum(batch["weight"] * _error(p, batch) ** 2) / jnp.sum(batch["weight"])  # noqa: E731
    return sgd_update(params, jax.grad(loss)(params))


def _compiler_does_it(params, batch, mesh):
    """Exercise 4's answer given to exercise 3: no shard_map, no collective written."""
    return jax.jit(_weighted_global_step)(_place(params, mesh, P()), _place(batch, mesh, P(DATA_PARALLEL)))


def _compiler_beside_dead_psum(params, batch, mesh):
    """Exercise 4's answer, plus the reference's shard_map region whose result is multiplied by zero."""
    dead = _dp_with(_psum_ratio_loss)(params, batch, mesh)
    step = _compiler_does_it(params, batch, mesh)
    return jax.tree.map(lambda s, d: s + 0.0 * d, step, dead)


def _pmean_then_divided(params, local_batch):
    """The local weighted gradients averaged with `lax.pmean`, then divided by the total weight too."""
    own = lax.pcast(params, DATA_PARALLEL, to="varying")
    grads = jax.grad(lambda p: jnp.sum(local_batch["weight"] * _error(p, local_batch) ** 2))(own)
    total = lax.psum(jnp.sum(local_batch["weight"]), DATA_PARALLEL)
    return sgd_update(params, jax.tree.map(lambda g: lax.pmean(g, DATA_PARALLEL) / total, grads))


def _divided_by_examples(params, local_batch):
    """The weighted sum divided by the number of examples (padding included), not by the weights' sum."""
    own = lax.pcast(params, DATA_PARALLEL, to="varying")
    grads = jax.grad(lambda p: jnp.sum(local_batch["weight"] * _error(p, local_batch) ** 2))(own)
    count = lax.psum(local_batch["weight"].shape[0], DATA_PARALLEL)
    return sgd_update(params, jax.tree.map(lambda g: lax.psum(g, DATA_PARALLEL) / count, grads))


def _read_unweighted(params, local_batch):
    """Every example counted once, the weights read but made 1 (the unweighted step, weights still an input)."""
    ones = jnp.where(local_batch["weight"] >= 0, 1.0, local_batch["weight"])
    return _psum_ratio_loss(params, {**local_batch, "weight": ones})


def _tuple_out(params, local_batch):
    new = _psum_ratio_loss(params, local_batch)
    return new["w"], new["b"]


def _stacked(params, local_batch):
    return jax.tree.map(lambda p: p[None], _psum_ratio_loss(params, local_batch))


def _ascend(params, local_batch):
    new = _psum_ratio_loss(params, local_batch)
    return jax.tree.map(lambda p, n: 2 * p - n, params, new)


def _whole_batch_by_psum(params, local_batch):
    """Everything on every device through the allowed collective (issue 46): each device places its block in
    a zero array of the whole batch's shape at its own index, a psum adds them (every device now holds the
    whole batch), and every device computes the whole batch's step."""
    k, i = lax.axis_size(DATA_PARALLEL), lax.axis_index(DATA_PARALLEL)

    def everyone(a):
        return lax.psum(jnp.zeros((k, *a.shape), a.dtype).at[i].set(a), DATA_PARALLEL).reshape(-1)

    whole = jax.tree.map(everyone, local_batch)

    def loss(p):
        return jnp.sum(whole["weight"] * _error(p, whole) ** 2) / jnp.sum(whole["weight"])

    return sgd_update(params, jax.grad(loss)(params))


DP_WRONG = {
    "the whole batch on every device (psum of one-hot blocks)": (
        _dp_with(_whole_batch_by_psum),
        r"(?s)right parameters with a psum over DATA_PARALLEL, but one device computes 6\.\d× the reference's "
        r"FLOPs on 8 devices \(\d+ against 139.*at most 1\.5×.*every device holds all of the batch",
    ),
    "unanswered": (_not_written, r"`dp_train_step` is not written yet"),
    "pmean of the local weighted losses (devices counted equally)": (
        _dp_with(_pmean_of_local_losses),
        r"(?s)weights per device \[8\. 7\. 6\..*mean of the devices' own weighted-mean steps.*different totals",
    ),
    "weights ignored": (_dp_with(_unweighted), r"(?s)\*unweighted\* loss.*weight 0 \(padding\) must not count"),
    "weights read, then ignored": (  # issue 48: the weights are an input of its program, so the judge runs it
        _dp_with(_read_unweighted),
        r"(?s)\*unweighted\* loss.*weight 0 \(padding\) must not count",
    ),
    "learning rate 100 times too large": (
        _dp_with(lambda p, b: jax.tree.map(lambda old, new: old + 100 * (new - old), p, _psum_ratio_loss(p, b))),
        r"(?s)100 times too large",
    ),
    "pmap body ported word for word": (_dp_with(_pmap_style), r"(?s)8 times too large.*Pitfall 4"),
    "all_gather the batch (ignores the structure)": (
        _dp_with(_gather_everything, check_vma=False),
        r"(?s)right parameters, but it moves whole blocks.*all_gather.*not data parallelism.*`lax\.psum`",
    ),
    "jit on sharded arrays (ignores the structure)": (
        _compiler_does_it,
        r"(?s)right results here, but it has no per-device program over 'data_parallel_axis' that takes its "
        r"inputs split",
    ),
    # issue 16: a psum that does not reach the result earns nothing
    "jit on sharded arrays beside a zero-multiplied shard_map psum": (
        _compiler_beside_dead_psum,
        r"(?s)right results here, but its per-device program over 'data_parallel_axis' that takes its inputs "
        r"split as the exercise's does .* does not reach the results",
    ),
    "gradient ascent": (_dp_with(_ascend), r"wrong way: subtract the gradient"),
    "pmean of the gradients, then divided by the total weight": (
        _dp_with(_pmean_then_divided),
        r"(?s)weights per device \[8\. 7\. 6\..*8 times too small: the devices' gradients were averaged",
    ),
    "divided by the number of examples": (
        _dp_with(_divided_by_examples),
        r"(?s)divides the weighted sum by the number of examples \(64, padding included\).*sum of the weights: ",
    ),
    "tuple instead of dict": (
        _dp_with(_tuple_out, out_specs=(P(), P())),
        r"dict with keys 'w' and 'b'.*returned a `tuple`",
    ),
    "one copy per device": (
        _dp_with(_stacked, out_specs=P(DATA_PARALLEL)),
        r"(?s)\['w'\]` should be a scalar.*shape \(8,\).*out_specs` is `P\(\)`",
    ),
    "batch not placed": (
        _dp_with(_psum_ratio_loss, place_batch=False),
        r"(?s)does not match the specs of the input.*jax\.device_put",
    ),
    "unchanged params": (lambda params, batch, mesh: dict(params), r"parameters did not change"),
}


@pytest.mark.parametrize("answer, match", DP_WRONG.values(), ids=DP_WRONG.keys())
def test_dp_train_step_rejects(answer, match):
    assert_check_fails(q.dp_train_step.check, answer, match=match)


def test_dp_train_step_observations_reject_wrong_answers():
    reference = observe(q.dp_train_step, ref_dp_train_step)
    for key in (
        "pmean of the local weighted losses (devices counted equally)",
        "weights ignored",
        "pmap body ported word for word",
        "all_gather the batch (ignores the structure)",
        "jit on sharded arrays (ignores the structure)",
    ):
        assert not _matches(observe(q.dp_train_step, DP_WRONG[key][0]), reference), key


def test_dp_train_step_structure_case_alone_rejects_the_gathering_answer():
    """The hidden structure case (values off) refuses right numbers computed by gathering; the value cases'
    work (issue 46: the whole batch's FLOPs on every device) refuses them too, never their values."""
    reference = observe(q.dp_train_step, ref_dp_train_step)
    gathered = observe(q.dp_train_step, DP_WRONG["all_gather the batch (ignores the structure)"][0])
    verdict = judge_observations(reference, gathered)
    assert not verdict.passed
    differences = verdict.differences
    assert any(d.startswith("communication") and "all_gather" in d for d in differences), differences
    assert all(("communication" in d and "all_gather" in d) or ": work: " in d for d in differences), differences


# ---------------------------------------------------------------- 4. jit_train_step (the same weighted step)
def ref_jit_train_step(params, batch, mesh):
    params = _place(params, mesh, P())
    batch = _place(batch, mesh, P(DATA_PARALLEL))
    return jax.jit(_weighted_global_step)(params, batch)


def _in_shardings(params, batch, mesh):
    shardings = (NamedSharding(mesh, P()), NamedSharding(mesh, P(DATA_PARALLEL)))
    return jax.jit(_weighted_global_step, in_shardings=shardings)(params, batch)


def _reshard_named(params, batch, mesh):
    return jax.jit(_weighted_global_step)(
        _place(params, mesh, P()), jax.reshard(batch, NamedSharding(mesh, P(DATA_PARALLEL)))
    )


def _weighted_average_form(params, batch, mesh):
    batch = _place(batch, mesh, P(DATA_PARALLEL))
    share = batch["weight"] / jnp.sum(batch["weight"])
    grads = jax.grad(lambda p: jnp.sum(share * _error(p, batch) ** 2))(params)
    return {k: params[k] - 0.01 * grads[k] for k in params}


JIT_EQUIVALENT = {
    "in_shardings": _in_shardings,
    "reshard to a NamedSharding": _reshard_named,
    "normalised weights, only the batch placed": _weighted_average_form,
}


@pytest.mark.parametrize(
    "answer", [ref_jit_train_step, *JIT_EQUIVALENT.values()], ids=["reference", *JIT_EQUIVALENT.keys()]
)
def test_jit_train_step_accepts_equivalent_answers(answer):
    assert_check_passes(q.jit_train_step.check, answer)


def test_jit_train_step_observations_of_equivalent_answers_match():
    reference = observe(q.jit_train_step, ref_jit_train_step)
    assert derived(reference)["communication"] == [f"psum over '{DATA_PARALLEL}'"]  # inserted by the compiler
    for key, answer in JIT_EQUIVALENT.items():
        assert _matches(observe(q.jit_train_step, answer), reference), key


def _set_mesh_reshard(params, batch, mesh):
    with jax.set_mesh(mesh):
        return jax.jit(_weighted_global_step)(jax.reshard(params, P()), jax.reshard(batch, P(DATA_PARALLEL)))


def _bare_spec_reshard(params, batch, mesh):
    return jax.jit(_weighted_global_step)(jax.reshard(params, P()), jax.reshard(batch, P(DATA_PARALLEL)))


def _split_then_whole(params, batch, mesh):
    """The batch placed split, then made whole again inside the jitted step (issue 56): the compiled program
    has no collective at all, yet the batch was placed."""

    @jax.jit
    def step(params, batch):
        return _weighted_global_step(params, jax.reshard(batch, NamedSharding(mesh, P())))

    return step(_place(params, mesh, P()), _place(batch, mesh, P(DATA_PARALLEL)))


JIT_WRONG = {
    "placed split, resharded whole inside the step": (
        _split_then_whole,
        r"(?s)compiled program has no all-reduce: the batch was placed split, then made whole again inside the "
        rf"step \(float32\[64@{DATA_PARALLEL}\], laid out with `P\(\)` by a `jax\.reshard`.*Leave the batch split",
    ),
    "unanswered": (_not_written, r"`jit_train_step` is not written yet"),
    "nothing placed": (
        lambda params, batch, mesh: jax.jit(_weighted_global_step)(params, batch),
        r"(?s)compiled program has no all-reduce.*P\(DATA_PARALLEL\)",
    ),
    "shard_map with psum": (ref_dp_train_step, r"(?s)writes its own collectives.*psum.*no `shard_map`"),
    "unweighted sgd_step": (
        lambda params, batch, mesh: jax.jit(sgd_step)(
            _place(params, mesh, P()), _place({k: batch[k] for k in ("x", "y")}, mesh, P(DATA_PARALLEL))
        ),
        r"\*unweighted\* loss",
    ),
    # the gap: these messages suggested the forbidden shard_map
    "set_mesh + reshard": (
        _set_mesh_reshard,
        r"(?s)`jax\.set_mesh`, which only works outside `jax\.jit`.*"
        r"no `set_mesh` and no `shard_map` is needed",
    ),
    "reshard with a bare P()": (
        _bare_spec_reshard,
        r"(?s)a bare `P\(\.\.\.\)` only means something under `jax\.set_mesh`.*NamedSharding",
    ),
}


@pytest.mark.parametrize("answer, match", JIT_WRONG.values(), ids=JIT_WRONG.keys())
def test_jit_train_step_rejects(answer, match):
    message = assert_check_fails(q.jit_train_step.check, answer, match=match)
    if answer in (_set_mesh_reshard, _bare_spec_reshard):
        assert "pass `mesh=mesh` to `jax.shard_map`" not in message and "shard_map` instead" not in message


def test_a_batch_made_whole_again_is_named_in_both_languages():
    """Issue 56: the reshard that undid the placement is named, never "place it split" (it was)."""
    for lang in ("en", "zh"):
        said = failure_in(lang, q.jit_train_step.check, _split_then_whole)
        assert says(said, q.TEXT, "jit_gathers_batch", lang) and not says(said, q.TEXT, "jit_no_all_reduce", lang)
    said = failure_in("en", q.jit_train_step.check, JIT_WRONG["nothing placed"][0])
    assert says(said, q.TEXT, "jit_no_all_reduce", "en"), said


def test_jit_train_step_hints_before_the_last_write_no_code_of_the_answer():
    first, second = q.jit_train_step._hints[:2]
    assert first.rstrip().endswith("?")
    for hint in (first, second):
        assert "jnp.sum" not in hint and "jax.grad(" not in hint and "weight'" not in hint and "**" not in hint


def test_jit_train_step_observations_reject_wrong_answers():
    reference = observe(q.jit_train_step, ref_jit_train_step)
    unplaced = observe(q.jit_train_step, JIT_WRONG["nothing placed"][0])
    assert derived(unplaced)["communication"] == [] and not _matches(unplaced, reference)
    explicit = observe(q.jit_train_step, ref_dp_train_step)  # a shard_map region: not a jit-only step
    assert derived(explicit)["axes"] == [DATA_PARALLEL] and not _matches(explicit, reference)


# ---------------------------------------------------------------- 5. weighted_total_shard_map (pmap over axis 1)
PAIR = (P(), P(None, DEVICES))  # out_axes=(None, 1): the total once, the weighted columns along dimension 1


def _with_column_axis(body):
    """`body`'s (total, column) with the column given back its dimension 1, as `out_axes=1` stacks it."""

    def per_device(w, xb):
        total, column = body(w, xb)
        return total, column[:, None]

    return per_device


def ref_weighted_total_shard_map(w, x, mesh):
    x = _place(x, mesh, P(None, DEVICES))
    return jax.shard_map(
        _with_column_axis(lambda w, xb: weighted_total(w, xb[:, 0])),
        mesh=mesh,
        in_specs=(P(), P(None, DEVICES)),
        out_specs=PAIR,
    )(w, x)


def _weighted_with(body, *, x_spec=P(None, DEVICES), out_specs=PAIR, place=True, check_vma=True):
    def answer(w, x, mesh):
        if place:
            x = _place(x, mesh, x_spec)
        return jax.shard_map(body, mesh=mesh, in_specs=(P(), x_spec), out_specs=out_specs, check_vma=check_vma)(w, x)

    return answer


def _transposed(w, x, mesh):
    """Transpose first, then the table's axis-0 translation, and transpose the columns back: also right."""
    xt = _place(x.T, mesh, P(DEVICES))

    def per_device(w, rows):
        total, column = weighted_total(w, rows[0])
        return total, column[None]

    total, rows = jax.shard_map(per_device, mesh=mesh, in_specs=(P(), P(DEVICES)), out_specs=(P(), P(DEVICES)))(w, xt)
    return total, rows.T


WEIGHTED_EQUIVALENT = {
    "sum over the block columns": _weighted_with(
        lambda w, xb: (lax.psum(jnp.sum(w[:, None] * xb, axis=1), DEVICES), w[:, None] * xb)
    ),
    "squeeze inside": _weighted_with(_with_column_axis(lambda w, xb: weighted_total(w, jnp.squeeze(xb, 1)))),
    "transpose, then split axis 0": _transposed,
}


@pytest.mark.parametrize(
    "answer",
    [ref_weighted_total_shard_map, *WEIGHTED_EQUIVALENT.values()],
    ids=["reference", *WEIGHTED_EQUIVALENT.keys()],
)
def test_weighted_total_accepts_equivalent_answers(answer):
    assert_check_passes(q.weighted_total_shard_map.check, answer)


def test_weighted_total_observations_of_equivalent_answers_match():
    reference = observe(q.weighted_total_shard_map, ref_weighted_total_shard_map)
    got = derived(reference)
    assert got["axes"] == [DEVICES]
    pmapped = jax.pmap(weighted_total, axis_name=DEVICES, in_axes=(None, 1), out_axes=(None, 1))
    pmap_version = derived(
        programs({"out_k8_d3": Case(pmapped, spec((3,), jnp.float32), spec((3, 8), jnp.float32))})
    )  # the same inputs
    for part in ("[0]", "[1]"):
        np.testing.assert_allclose(got["out_k8_d3" + part], pmap_version["out_k8_d3" + part], rtol=1e-6)
    assert got["out_k8_d3[1]"].shape == (3, 8)
    for answer in WEIGHTED_EQUIVALENT.values():
        assert _matches(observe(q.weighted_total_shard_map, answer), reference)


def _every_column_by_psum(w, xb):
    """Everything on every device through the allowed collective (issue 46): each device places its column in a
    zero array at its own index, a psum adds them (every device now holds every column), and every device
    weights and adds up all of them."""
    k, i = lax.axis_size(DEVICES), lax.axis_index(DEVICES)
    every = lax.psum(jnp.zeros((k, *xb.shape), xb.dtype).at[i].set(xb), DEVICES)
    return jnp.sum(w[None, :, None] * every, axis=(0, 2)), w[:, None] * xb


WEIGHTED_WRONG = {
    "every column on every device (psum of one-hot columns)": (
        _weighted_with(_every_column_by_psum),
        r"(?s)right total and columns, but one device's largest array is 8\.0× the reference's on 8 devices "
        r"\(96 bytes against 12.*at most 1\.5×.*every device holds all of the weighted columns",
    ),
    "unanswered": (_not_written, r"`weighted_total_shard_map` is not written yet"),
    "the total only (out_axes=None, as before)": (
        _weighted_with(lambda w, xb: weighted_total(w, xb[:, 0])[0], out_specs=P()),
        r"(?s)should return what the pmap version returns \(mesh of 8 devices.*a pair, the total.*the weighted "
        r"columns.*returned a `ArrayImpl`",
    ),
    "block axis kept": (
        _weighted_with(weighted_total, out_specs=(P(), P(None, DEVICES))),
        r"(?s)`weighted_total_shard_map\(w, x, mesh\)\[0\]` should return what the pmap version returns, shape "
        r"\(3,\).*returned shape \(3, 3\).*mapped axis is still there.*`x_block\[:, 0\]`",
    ),
    "out_specs names DEVICES for the total": (
        _weighted_with(_with_column_axis(lambda w, xb: weighted_total(w, xb[:, 0])), out_specs=(P(DEVICES), PAIR[1])),
        r"(?s)returned shape \(24,\).*`out_axes=None` translates to `out_specs=P\(\)`",
    ),
    "columns stacked along dimension 0": (
        _weighted_with(lambda w, xb: weighted_total(w, xb[:, 0]), out_specs=(P(), P(DEVICES))),
        r"(?s)`weighted_total_shard_map\(w, x, mesh\)\[1\]` should return what the pmap version returns, shape "
        r"\(3, 8\).*returned shape \(24,\)\. Those columns are stacked along dimension 0.*`col\[:, None\]`",
    ),
    "columns without their dimension": (
        _weighted_with(lambda w, xb: weighted_total(w, xb[:, 0])),
        r"(?s)out_specs entry which is too long.*an `out_specs` names more dimensions than your per-device result has",
    ),
    "out_axes=1 read as P()": (
        _weighted_with(_with_column_axis(lambda w, xb: weighted_total(w, xb[:, 0])), out_specs=(P(), P())),
        r"(?s)require replication.*an output's `out_specs` says it is the same on every device.*still varies",
    ),
    "pmean": (
        _weighted_with(_with_column_axis(lambda w, xb: (lax.pmean(w * xb[:, 0], DEVICES), w * xb[:, 0]))),
        r"(?s)`weighted_total_shard_map\(w, x, mesh\)\[0\]` has the wrong values.*mean over devices",
    ),
    "no psum, check_vma=False (device 0's term)": (  # issue 48: the judge names it as the check does
        _weighted_with(_with_column_axis(lambda w, xb: (w * xb[:, 0], w * xb[:, 0])), check_vma=False),
        r"(?s)`weighted_total_shard_map\(w, x, mesh\)\[0\]` has the wrong values.*only device 0's term",
    ),
    "split dimension 0, as the table's first row": (
        _weighted_with(lambda w, xb: weighted_total(w, xb[0]), x_spec=P(DEVICES), out_specs=(P(), P(DEVICES))),
        r"(?s)cannot be cut into that many equal blocks|evenly divide|split only the dimension",
    ),
    "x not placed": (
        _weighted_with(_with_column_axis(lambda w, xb: weighted_total(w, xb[:, 0])), place=False),
        r"(?s)does not match the specs of the input",
    ),
    "no collective": (
        lambda w, x, mesh: (jnp.sum(w[:, None] * x, axis=1), w[:, None] * x),
        r"(?s)right values, but no `jax\.shard_map` over 'devices'.*no `jax\.shard_map` at all",
    ),
}


@pytest.mark.parametrize("answer, match", WEIGHTED_WRONG.values(), ids=WEIGHTED_WRONG.keys())
def test_weighted_total_rejects(answer, match):
    assert_check_fails(q.weighted_total_shard_map.check, answer, match=match)


def test_weighted_total_observations_reject_wrong_answers():
    reference = observe(q.weighted_total_shard_map, ref_weighted_total_shard_map)
    assert not _matches(observe(q.weighted_total_shard_map, WEIGHTED_WRONG["pmean"][0]), reference)
    assert not _matches(observe(q.weighted_total_shard_map, WEIGHTED_WRONG["no collective"][0]), reference)


# ---------------------------------------------------------------- meshes of several sizes
@pytest.mark.parametrize("k", [2, 4, 8])
def test_line_mesh_uses_the_first_k_devices(k):
    mesh = q.line_mesh(k)
    assert mesh.axis_names == (DEVICES,) and [d.id for d in mesh.devices.flat] == list(range(k))
    x = jnp.arange(2 * k, dtype=jnp.float32).reshape(k, 2)
    np.testing.assert_array_equal(ref_sharded_scaled_sum(x, mesh), [k * (k - 1) * 2, k * k * 2])


def test_hints_exist_for_every_exercise():
    for exercise in (
        q.sharded_scaled_sum,
        q.replica_totals,
        q.dp_train_step,
        q.jit_train_step,
        q.weighted_total_shard_map,
    ):
        assert len(exercise._hints) >= 2


def test_an_answer_that_ignores_its_mesh_argument_is_told_so():
    global_mesh = q.line_mesh(8)

    def uses_global_mesh(x, mesh):
        return ref_sharded_scaled_sum(x, global_mesh)

    assert_check_fails(
        q.sharded_scaled_sum.check,
        uses_global_mesh,
        match=r"(?s)ran on 8 devices \(mesh of 4 devices, x of shape \(10, 5\)\), but the `mesh` argument has 4.*not "
        r"on a mesh from another cell",
    )


# ---------------------------------------------------------------- one judge (issue 16)
test_the_visible_check_and_the_grader_agree = agreement_test(
    {
        "sharded_scaled_sum": (
            q.sharded_scaled_sum,
            *matrix_rows(ref_sharded_scaled_sum, SCALED_SUM_EQUIVALENT, SCALED_SUM_WRONG),
        ),
        "replica_totals": (q.replica_totals, *matrix_rows(ref_replica_totals, REPLICA_EQUIVALENT, REPLICA_WRONG)),
        "dp_train_step": (q.dp_train_step, *matrix_rows(ref_dp_train_step, DP_EQUIVALENT, DP_WRONG)),
        "jit_train_step": (q.jit_train_step, *matrix_rows(ref_jit_train_step, JIT_EQUIVALENT, JIT_WRONG)),
        "weighted_total_shard_map": (
            q.weighted_total_shard_map,
            *matrix_rows(ref_weighted_total_shard_map, WEIGHTED_EQUIVALENT, WEIGHTED_WRONG),
        ),
    }
)


def test_dp_train_step_work_is_judged_against_the_references_flops():
    """The visible check's reference FLOPs are the reference program's, measured as the grader measures them;
    the grader refuses the whole batch on every device for its FLOPs on every mesh."""
    from namedaxes import judging
    from namedaxes.exercises.shard_map import training

    k, n = training._OBSERVED_TRAINING[0]
    program = jax.jit(lambda p, b: ref_dp_train_step(p, b, q.line_mesh(k, DATA_PARALLEL)))
    measured = judging.exported_work(jax.export.export(program)(*training._training_args(n))).flops
    assert training._DP_REFERENCE_FLOPS * 0.9 <= measured <= training._DP_REFERENCE_FLOPS * 1.1, measured
    cheat = DP_WRONG["the whole batch on every device (psum of one-hot blocks)"][0]
    reason = judge_observations(observe(q.dp_train_step, ref_dp_train_step), observe(q.dp_train_step, cheat)).reason(
        limit=8
    )
    for case in ("k8_n64", "k4_n12", "k2_n10"):  # 6.3x, 4.4x, 2.5x on jax 0.10.2
        assert re.search(rf"{case}: work: one device computes \d(\.\d)?× the reference's FLOPs", reason), reason


def test_sharded_scaled_sum_work_is_judged_against_the_references_flops():
    """The visible check's reference FLOPs are the reference program's on every mesh, measured as the grader
    measures them; the grader refuses all of x on every device for its FLOPs on every mesh."""
    from namedaxes import judging
    from namedaxes.exercises.shard_map import scaled

    for k, x in scaled._SCALED_SUM_CASES:
        program = jax.jit(lambda v, k=k: ref_sharded_scaled_sum(v, q.line_mesh(k)))
        measured = judging.exported_work(jax.export.export(program)(x)).flops
        want = scaled._SCALED_REFERENCE_FLOPS[k]
        assert want * 0.9 <= measured <= want * 1.1, (k, measured)
    cheat = SCALED_SUM_WRONG["all of x on every device (psum of one-hot blocks)"][0]
    reference = observe(q.sharded_scaled_sum, ref_sharded_scaled_sum)
    reason = judge_observations(reference, observe(q.sharded_scaled_sum, cheat)).reason(limit=8)
    for case in ("out_k8_16x3", "out_k4_10x5", "out_k2_7x2"):  # 11.8x, 6.5x, 4x on jax 0.10.2
        assert re.search(rf"{case}: work: one device computes \d+(\.\d)?× the reference's FLOPs", reason), reason


def test_replica_totals_work_is_judged_against_the_references_flops():
    """The visible check's reference FLOPs are the reference program's on the 2 x 4 mesh, measured as the grader
    measures them; the grader refuses a row's blocks on every device for its FLOPs on every mesh."""
    from namedaxes import judging
    from namedaxes.exercises.shard_map import replicas

    shape, x_np = replicas._REPLICA_CASES[0]
    mesh = grid_mesh(shape)
    x = jax.device_put(x_np, NamedSharding(mesh, P(DATA_SHARDS, MODEL_REPLICAS)))
    program = jax.jit(lambda v: ref_replica_totals(v, mesh))
    measured = judging.exported_work(jax.export.export(program)(x)).flops
    assert replicas._REPLICA_REFERENCE_FLOPS * 0.9 <= measured <= replicas._REPLICA_REFERENCE_FLOPS * 1.1, measured
    cheat = REPLICA_WRONG["all of a row's blocks on every device (psum of one-hot blocks)"][0]
    reference = observe(q.replica_totals, ref_replica_totals)
    reason = judge_observations(reference, observe(q.replica_totals, cheat)).reason(limit=8)
    for case in ("out_2x4_4x8", "out_4x2_4x2", "out_2x2_2x4"):  # 12.5x, 25x, 12.5x on jax 0.10.2
        assert re.search(rf"{case}: work: one device computes \d+(\.\d)?× the reference's FLOPs", reason), reason


def test_weighted_total_shard_map_work_is_judged_against_the_references_largest_array():
    """The visible check's reference largest arrays are the reference program's on every mesh, measured as the
    grader measures them; the grader refuses every column on every device on every mesh."""
    from namedaxes import judging
    from namedaxes.exercises.shard_map import migration

    for k, w, x in migration._WEIGHTED_CASES:
        program = jax.jit(lambda a, b, k=k: ref_weighted_total_shard_map(a, b, q.line_mesh(k)))
        measured = judging.exported_work(jax.export.export(program)(w, x)).largest_bytes
        assert measured == migration._WEIGHTED_REFERENCE_LARGEST[k], (k, measured)
    cheat = WEIGHTED_WRONG["every column on every device (psum of one-hot columns)"][0]
    reference = observe(q.weighted_total_shard_map, ref_weighted_total_shard_map)
    reason = judge_observations(reference, observe(q.weighted_total_shard_map, cheat)).reason(limit=8)
    for case, ratio in (("out_k8_d3", 8), ("out_k4_d2", 4), ("out_k2_d3", 2)):
        said = rf"{case}: memory: one device materializes an array of {ratio}× the size of the reference's largest"
        assert re.search(said, reason), reason
