"""Notebook 01 (axis names): every check proven both ways, and observe() stable under equivalent answers."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from judge_helpers import agreement_test, assert_check_fails, assert_check_passes, derived, observations_match, observe

from namedaxes import BATCH, DEVICES
from namedaxes.exercises import axis_names as q


def _same_observations(reference: dict, got: dict) -> bool:
    """The autograder's own comparison of two `observe(...)` results."""
    return observations_match(reference, got)


def _not_written(x):
    raise NotImplementedError()


# ---------------------------------------------------------------- rank_weighted_sum
def rank_weighted_sum_ref(x):
    return lax.psum(lax.axis_index(DEVICES) * x, DEVICES)


RANK_WEIGHTED_SUM_RIGHT = [
    rank_weighted_sum_ref,
    lambda x: lax.psum(x * lax.axis_index("devices").astype(jnp.float32), DEVICES),
    lambda x: jnp.tensordot(
        jnp.arange(lax.axis_size(DEVICES), dtype=jnp.float32),  # not taught in 01: still right
        lax.all_gather(x, DEVICES),
        axes=1,
    ),
    lambda x: lax.pmean(lax.axis_index(DEVICES) * x, DEVICES) * lax.psum(1, DEVICES),
]

RANK_WEIGHTED_SUM_WRONG = [
    (
        lambda x: lax.axis_index(DEVICES) * x,
        r"(?s)over 8 devices\. Each device returned its own term, i \* x\..*"
        r"collective over 'devices'.*\nOn device 0: expected",
    ),
    (lambda x: lax.psum(x, DEVICES), r"plain total of x over the devices: weight device i's `x` by its position"),
    (lambda x: lax.psum((lax.axis_index(DEVICES) + 1) * x, DEVICES), r"weights the first device by 1"),
    (lambda x: lax.psum(lax.axis_index(DEVICES), DEVICES) * x, r"sum of all positions times this device's own `x`"),
    (
        lambda x: lax.pmean(lax.axis_index(DEVICES) * x, DEVICES),  # a mean, not the sum
        r"over 8 devices\. Every device should return the sum over devices of i \* x_i",
    ),
    (lambda x: lax.psum(jnp.sum(lax.axis_index(DEVICES) * x), DEVICES), r"shape \(2,\), but it returns shape \(\)"),
    (
        lambda x: lax.psum(lax.axis_index(DEVICES) * x.astype(jnp.int32), DEVICES),
        r"dtype float32, but it returns int32",
    ),
    (
        lambda x: lax.psum(lax.axis_index(BATCH) * x, DEVICES),
        r"unbound axis name: batch.*no enclosing pmap/vmap/shard_map",
    ),
    (_not_written, r"`rank_weighted_sum` is not written yet"),
]


@pytest.mark.parametrize("answer", RANK_WEIGHTED_SUM_RIGHT)
def test_rank_weighted_sum_accepts_equivalent_answers(answer):
    assert_check_passes(q.rank_weighted_sum.check, answer)


@pytest.mark.parametrize("answer, message", RANK_WEIGHTED_SUM_WRONG)
def test_rank_weighted_sum_rejects_wrong_answers(answer, message):
    assert_check_fails(q.rank_weighted_sum.check, answer, match=message)


def test_rank_weighted_sum_observe_is_stable_and_discriminating():
    reference = observe(q.rank_weighted_sum, rank_weighted_sum_ref)
    got = derived(reference)
    assert got["axes"] == [DEVICES] and got["communication"] == ["psum over 'devices'"]
    for key in ("pmap_2", "pmap_4", "pmap_8", "vmap_5"):  # replicated, on the grader's own random inputs
        value = np.asarray(got[key])
        assert value.dtype == np.float32 and np.allclose(value, value[:1]) and not np.allclose(value, 0)
    for answer in RANK_WEIGHTED_SUM_RIGHT[1:]:
        assert _same_observations(reference, observe(q.rank_weighted_sum, answer))
    for answer, _ in RANK_WEIGHTED_SUM_WRONG[:5]:
        assert not _same_observations(reference, observe(q.rank_weighted_sum, answer))


# ---------------------------------------------------------------- last_device_value
def last_device_value_ref(x):
    is_last = lax.axis_index(DEVICES) == lax.psum(1, DEVICES) - 1
    return lax.psum(jnp.where(is_last, x, 0.0), DEVICES)


def _is_last(n):
    return lax.axis_index(DEVICES) == n - 1


LAST_DEVICE_VALUE_RIGHT = [
    last_device_value_ref,
    lambda x: lax.psum(x * _is_last(lax.axis_size(DEVICES)), DEVICES),  # mask by multiplying
    lambda x: lax.all_gather(x, DEVICES)[-1],  # not taught in 01: still right
    lambda x: lax.pmax(jnp.where(_is_last(lax.psum(1, "devices")), x, -jnp.inf), DEVICES),
]

LAST_DEVICE_VALUE_WRONG = [
    (lambda x: x, r"Each device returned its own `x`\..*collective over 'devices'"),
    (lambda x: lax.psum(x, DEVICES), r"total of all devices' `x`: let only the last device put its `x` into the sum"),
    (
        lambda x: lax.psum(jnp.where(lax.axis_index(DEVICES) == 0, x, 0.0), DEVICES),
        r"`x` of the first device \(position 0\)\. The last device is at position 7 here",
    ),
    (
        lambda x: lax.psum(jnp.where(lax.axis_index(DEVICES) == 7, x, 0.0), DEVICES),  # hard-coded 8 devices
        r"over 3 devices\. Every device returned zeros: .*from 0 to 2 here.*right over 8 devices but not over 3"
        r".*A fixed 7 only fits 8 devices",
    ),
    (
        lambda x: lax.psum(jnp.where(_is_last(lax.psum(1, DEVICES) + 1), x, 0.0), DEVICES),  # off by one
        r"over 8 devices\. Every device returned zeros",
    ),
    (
        lambda x: jnp.where(_is_last(lax.psum(1, DEVICES)), x, 0.0),  # forgot the psum
        r"Only the last device holds its `x`, the others hold zeros",
    ),
    (
        lambda x: lax.psum(jnp.where(_is_last(jax.device_count()), x, 0.0), DEVICES),
        r"over 3 devices\. Every device returned zeros.*right over 8 devices but not over 3: "
        r"`jax\.device_count\(\)` counts the machine's devices \(8 here\), not the devices along the axis",
    ),
    (
        lambda x: lax.psum(jnp.where(_is_last(lax.psum(1, DEVICES)), x, 0), DEVICES).astype(jnp.int32),
        r"dtype float32, but it returns int32",
    ),
    (
        lambda x: lax.psum(jnp.sum(jnp.where(_is_last(lax.psum(1, DEVICES)), x, 0.0)), DEVICES),
        r"shape \(5,\), but it returns shape \(\)",
    ),
    (lambda x: lax.psum(x * _is_last(lax.psum(1, BATCH)), DEVICES), r"unbound axis name: batch"),
    (_not_written, r"`last_device_value` is not written yet"),
    (
        lambda x: lax.psum(jnp.where(lax.axis_index(DEVICES) == lax.psum(1, DEVICES) - 2, x, 0.0), DEVICES),
        r"over 8 devices\. That is the `x` of the device at position 6\. The last device is at position 7 here",
    ),
]


def test_last_device_value_off_by_one_is_not_told_a_fixed_7():
    """Issue 16: comparing with the axis size (one past the last position) picks nobody on 8 devices too;
    that is no fixed 7, and the message must not say so."""
    off_by_one = lambda x: lax.psum(  # noqa: E731
        jnp.where(lax.axis_index(DEVICES) == lax.psum(1, DEVICES), x, 0.0),
        DEVICES,
    )
    msg = assert_check_fails(
        q.last_device_value.check,
        off_by_one,
        match=r"over 8 devices\. Every device returned zeros: no device matched the position "
        r"you picked\. Positions along the axis run from 0 to 7 here",
    )
    assert "fixed" not in msg


def test_last_device_value_with_the_machines_device_count_is_not_told_a_fixed_7():
    """Issue 35: code that used `jax.device_count()` (or `len(jax.devices())`) is told that, not "a fixed 7"."""
    for answer in (
        lambda x: lax.psum(jnp.where(lax.axis_index(DEVICES) == jax.device_count() - 1, x, 0.0), DEVICES),
        lambda x: lax.psum(jnp.where(lax.axis_index(DEVICES) == len(jax.devices()) - 1, x, 0.0), DEVICES),
    ):
        msg = assert_check_fails(q.last_device_value.check, answer, match=r"counts the machine's devices")
        assert "fixed" not in msg, msg


@pytest.mark.parametrize("answer", LAST_DEVICE_VALUE_RIGHT)
def test_last_device_value_accepts_equivalent_answers(answer):
    assert_check_passes(q.last_device_value.check, answer)


@pytest.mark.parametrize("answer, message", LAST_DEVICE_VALUE_WRONG)
def test_last_device_value_rejects_wrong_answers(answer, message):
    assert_check_fails(q.last_device_value.check, answer, match=message)


def test_last_device_value_check_runs_under_vmap_too():
    """Right for the pmap sizes of the check (8 and 3) but not for vmap over 5: caught."""

    def pmap_sizes_only(x):
        n = lax.axis_size(DEVICES)
        return lax.psum(jnp.where(lax.axis_index(DEVICES) == (n - 1 if n in (3, 8) else 0), x, 0.0), DEVICES)

    assert_check_fails(
        q.last_device_value.check,
        pmap_sizes_only,
        match=r"under `jax\.vmap\(\.\.\., axis_name=DEVICES\)` over 5 examples",
    )


def test_last_device_value_observe_is_stable_and_discriminating():
    reference = observe(q.last_device_value, last_device_value_ref)
    got = derived(reference)
    assert got["axes"] == [DEVICES] and got["communication"] == ["psum over 'devices'"]
    for k in (2, 5, 8):  # every device holds the same random row: the grader's own inputs
        value = np.asarray(got[f"pmap_{k}"])
        assert value.shape == (k, 5) and np.allclose(value, value[-1:]) and not np.allclose(value, 0)
    for answer in LAST_DEVICE_VALUE_RIGHT[1:]:
        assert _same_observations(reference, observe(q.last_device_value, answer))
    for answer, _ in LAST_DEVICE_VALUE_WRONG[:7]:
        assert not _same_observations(reference, observe(q.last_device_value, answer))


# ---------------------------------------------------------------- center (one mean of everything)
def center_ref(x):
    return x - lax.pmean(jnp.mean(x), DEVICES)


CENTER_RIGHT = [
    center_ref,
    lambda x: x - lax.psum(jnp.sum(x), DEVICES) / (lax.psum(1, DEVICES) * x.size),
    lambda x: x - jnp.mean(lax.pmean(x, DEVICES)),  # the other order
    lambda x: x - jnp.mean(lax.all_gather(x, DEVICES)),
    lambda x: x - lax.psum(jnp.mean(x), "devices") / lax.axis_size(DEVICES),
]

CENTER_WRONG = [
    (
        lambda x: x - lax.pmean(x, DEVICES),  # batch_mean's cell, edited once
        r"(?s)`center\(x\)` returned the wrong values under `jax\.pmap\(\.\.\., axis_name=DEVICES\)` over 8 devices\. "
        r"It subtracts a mean per position.*one mean, that of all the elements of all devices",
    ),
    (
        lambda x: x - jnp.mean(x),
        r"`center\(x\)` returned the wrong values.*own values only.*`lax\.pmean` over 'devices' is missing",
    ),
    (lambda x: x - lax.psum(jnp.mean(x), DEVICES), r"subtracts the total"),
    (lambda x: x - lax.psum(jnp.sum(x), DEVICES), r"subtracts the total"),
    (
        lambda x: x - lax.psum(jnp.mean(x), DEVICES) / 8,
        r"wrong values under `jax\.pmap\(\.\.\., axis_name=DEVICES\)` over 4 devices\. It is right over 8 devices but "
        r"not here: is the number of devices hard-coded\?",
    ),
    (lambda x: x - lax.psum(jnp.mean(x), DEVICES) / jax.device_count(), r"over 4 devices\. It is right over 8 devices"),
    (lambda x: lax.pmean(jnp.mean(x), DEVICES) + 0 * x, r"over 8 devices\. Subtract, from x, one number"),
    (
        lambda x: x - lax.pmean(jnp.mean(x), BATCH),
        r"unbound axis name: batch.*Write the axis name as the constant `DEVICES`",
    ),
    (lambda x: jnp.sum(x - lax.pmean(jnp.mean(x), DEVICES)), r"should return shape \(3,\), but it returns shape \(\)"),
    (_not_written, r"`center` is not written yet"),
    (  # issue 34: right on 1-D blocks, where the grader's 2-D and scalar blocks tell it apart
        lambda x: x - lax.pmean(jnp.mean(x, axis=0), DEVICES),
        r"over 4 devices\. Each device here holds a block of shape \(2, 3\): it subtracts one mean per column, "
        r"because `jnp\.mean\(x, axis=0\)` averages along the block's first axis only",
    ),
]


@pytest.mark.parametrize("answer", CENTER_RIGHT)
def test_center_accepts_equivalent_answers(answer):
    assert_check_passes(q.center.check, answer)


@pytest.mark.parametrize("answer, message", CENTER_WRONG)
def test_center_rejects_wrong_answers(answer, message):
    assert_check_fails(q.center.check, answer, match=message)


def test_center_check_runs_under_vmap_too():
    """An answer that is right for the pmap sizes of the check (8 and 4) but not for vmap over 5 is caught."""

    def pmap_only(x):
        n = lax.axis_size(DEVICES)
        return x - lax.psum(jnp.mean(x), DEVICES) / (n if n in (4, 8) else 1)

    assert_check_fails(
        q.center.check, pmap_only, match=r"under `jax\.vmap\(\.\.\., axis_name=DEVICES\)` over 5 examples"
    )


def test_center_all_gather_answer_passes_visible_and_hidden_alike():
    """An `all_gather`-based mean passes the hidden test and the visible check alike."""
    gathered = lambda x: x - jnp.mean(lax.all_gather(x, DEVICES))  # noqa: E731
    assert_check_passes(q.center.check, gathered)
    assert _same_observations(observe(q.center, center_ref), observe(q.center, gathered))


def test_center_observe_is_stable_and_discriminating():
    reference = observe(q.center, center_ref)
    got = derived(reference)
    assert got["axes"] == [DEVICES]
    assert set(got) == {"pmap_2", "vmap_2", "pmap_4", "vmap_4", "pmap_8", "vmap_8", "axes", "communication"}
    for k in (2, 4, 8):
        np.testing.assert_allclose(got[f"pmap_{k}"], got[f"vmap_{k}"], rtol=1e-5, atol=1e-5)
        assert abs(float(np.mean(got[f"pmap_{k}"]))) < 1e-4  # centred as a whole
    for answer in CENTER_RIGHT[1:]:
        assert _same_observations(reference, observe(q.center, answer))
    for answer, _ in CENTER_WRONG[:5]:
        assert not _same_observations(reference, observe(q.center, answer))


def test_hints_exist():
    for exercise in (q.rank_weighted_sum, q.last_device_value, q.center):
        assert 2 <= len(exercise._hints) <= 3


@pytest.mark.parametrize("exercise", [q.rank_weighted_sum, q.last_device_value, q.center], ids=lambda e: e.name)
def test_first_hint_does_not_give_the_answer(exercise):
    first = exercise._hints[0]
    assert "psum" not in first and "where" not in first and "axis_index" not in first


# ---------------------------------------------------------------- one judge (issue 16)
test_the_visible_check_and_the_grader_agree = agreement_test(
    {
        "rank_weighted_sum": (
            q.rank_weighted_sum,
            rank_weighted_sum_ref,
            RANK_WEIGHTED_SUM_RIGHT,
            RANK_WEIGHTED_SUM_WRONG,
        ),
        "last_device_value": (
            q.last_device_value,
            last_device_value_ref,
            LAST_DEVICE_VALUE_RIGHT,
            LAST_DEVICE_VALUE_WRONG,
        ),
        "center": (q.center, center_ref, CENTER_RIGHT, CENTER_WRONG),
    }
)
