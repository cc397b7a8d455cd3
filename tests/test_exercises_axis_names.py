"""Notebook 01 (axis names): every check proven both ways, and observe() stable under equivalent answers."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from autograder.compare import derived, observations_match
from namedaxes import BATCH, DEVICES
from namedaxes.checking import assert_check_fails, assert_check_passes
from namedaxes.exercises import axis_names as q


def _same_observations(reference: dict, got: dict) -> bool:
    """The autograder's own comparison of two `observe(...)` results."""
    return observations_match(reference, got)


def _not_written(x):
    raise NotImplementedError()


# ---------------------------------------------------------------- device_rank
def device_rank_ref(x):
    return lax.axis_index(DEVICES)


DEVICE_RANK_RIGHT = [
    device_rank_ref,
    lambda x: lax.axis_index(DEVICES).astype(jnp.int32),
    lambda x: jnp.asarray(lax.axis_index("devices"), jnp.int32),
]

DEVICE_RANK_WRONG = [
    (lambda x: jnp.int32(0), r"returned the wrong values.*`lax\.axis_index\(DEVICES\)`.*\nOn device 1: expected 1, got 0"),
    (lambda x: lax.axis_index(DEVICES).astype(jnp.float32), r"dtype int32, but it returns float32"),
    (lambda x: lax.axis_index(BATCH), r"unbound axis name: batch.*no enclosing pmap/vmap/shard_map"),
    (lambda x: jnp.full(x.shape, lax.axis_index(DEVICES)), r"shape \(\), but it returns shape \(2,\)"),
    (lambda x: (lax.axis_index(DEVICES) + 1) % 8, r"wrong values"),
    (_not_written, r"`device_rank` is not written yet"),
]


@pytest.mark.parametrize("answer", DEVICE_RANK_RIGHT)
def test_device_rank_accepts_equivalent_answers(answer):
    assert_check_passes(q.device_rank.check, answer)


@pytest.mark.parametrize("answer, message", DEVICE_RANK_WRONG)
def test_device_rank_rejects_wrong_answers(answer, message):
    assert_check_fails(q.device_rank.check, answer, match=message)


def test_device_rank_observe_is_stable_and_discriminating():
    reference = q.device_rank.observe(device_rank_ref)
    got = derived(reference)
    assert got["axes"] == []          # axis_index is not communication
    np.testing.assert_array_equal(got["vmap_5"], np.arange(5))
    np.testing.assert_array_equal(got["pmap_8"], np.arange(8))
    for answer in DEVICE_RANK_RIGHT[1:]:
        assert _same_observations(reference, q.device_rank.observe(answer))
    assert not _same_observations(reference, q.device_rank.observe(lambda x: jnp.int32(0)))


# ---------------------------------------------------------------- count_devices
def count_devices_ref(x):
    return lax.psum(1, DEVICES)


COUNT_DEVICES_RIGHT = [
    count_devices_ref,
    lambda x: lax.axis_size(DEVICES),
    lambda x: lax.psum(jnp.int32(1), DEVICES),
    lambda x: lax.psum(jnp.ones((), jnp.int32), "devices"),
]

COUNT_DEVICES_WRONG = [
    (lambda x: jax.device_count(), r"It returned 8, the number of devices on the machine; the pmap here uses only 3 of them"),
    (lambda x: jnp.int32(8), r"over 3 devices\. .*\nOn device 0: expected 3, got 8\."),
    (lambda x: x.shape[0], r"length of x on one device"),
    (lambda x: lax.psum(1.0, DEVICES), r"dtype int32, but it returns float32"),
    (lambda x: lax.psum(jnp.ones_like(x, jnp.int32), DEVICES), r"shape \(\), but it returns shape \(5,\)"),
    (lambda x: lax.psum(1, BATCH), r"unbound axis name: batch"),
    (_not_written, r"`count_devices` is not written yet"),
]


@pytest.mark.parametrize("answer", COUNT_DEVICES_RIGHT)
def test_count_devices_accepts_equivalent_answers(answer):
    assert_check_passes(q.count_devices.check, answer)


@pytest.mark.parametrize("answer, message", COUNT_DEVICES_WRONG)
def test_count_devices_rejects_wrong_answers(answer, message):
    assert_check_fails(q.count_devices.check, answer, match=message)


def test_count_devices_observe_is_stable_and_discriminating():
    reference = q.count_devices.observe(count_devices_ref)
    got = derived(reference)
    assert got["axes"] == []  # psum(1, ...) is folded to a constant: no communication in the compiled program
    np.testing.assert_array_equal(got["pmap_5"], np.full(5, 5))
    for answer in COUNT_DEVICES_RIGHT[1:]:
        assert _same_observations(reference, q.count_devices.observe(answer))
    assert not _same_observations(reference, q.count_devices.observe(lambda x: jax.device_count()))


# ---------------------------------------------------------------- center
def center_ref(x):
    return x - lax.pmean(x, DEVICES)


CENTER_RIGHT = [
    center_ref,
    lambda x: x - lax.psum(x, DEVICES) / lax.psum(1, DEVICES),
    lambda x: x - lax.psum(x, DEVICES) / lax.axis_size(DEVICES),
    lambda x: (x * lax.psum(1, DEVICES) - lax.psum(x, "devices")) / lax.psum(1, DEVICES),
]

CENTER_WRONG = [
    (lambda x: x - jnp.mean(x), r"`center\(x\)` returned the wrong values.*own values only.*`lax\.pmean` over 'devices' is missing"),
    (lambda x: x - lax.psum(x, DEVICES), r"subtracts the total"),
    (lambda x: x - lax.psum(x, DEVICES) / 8, r"wrong values under `jax\.pmap\(\.\.\., axis_name=DEVICES\)` over 4 devices\. It is right over 8 devices but not here: is the number of devices hard-coded\?"),
    (lambda x: x - lax.psum(x, DEVICES) / jax.device_count(), r"over 4 devices\. It is right over 8 devices"),
    (lambda x: x - lax.pmean(jnp.mean(x), DEVICES), r"one mean of all elements"),
    (lambda x: lax.pmean(x, DEVICES), r"`center\(x\)` returned the wrong values under `jax\.pmap\(\.\.\., axis_name=DEVICES\)` over 8 devices\. Subtract"),
    (lambda x: x - lax.pmean(x, BATCH), r"unbound axis name: batch.*Write the axis name as the constant `DEVICES`"),
    (lambda x: jnp.sum(x - lax.pmean(x, DEVICES)), r"should return shape \(3,\), but it returns shape \(\)"),
    (_not_written, r"`center` is not written yet"),
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
        return x - lax.psum(x, DEVICES) / (n if n in (4, 8) else 1)
    assert_check_fails(q.center.check, pmap_only, match=r"under `jax\.vmap\(\.\.\., axis_name=DEVICES\)` over 5 examples")


def test_center_observe_is_stable_and_discriminating():
    reference = q.center.observe(center_ref)
    got = derived(reference)
    assert got["axes"] == [DEVICES]
    assert set(got) == {"pmap_2", "vmap_2", "pmap_4", "vmap_4", "pmap_8", "vmap_8", "axes", "communication"}
    for k in (2, 4, 8):
        np.testing.assert_allclose(got[f"pmap_{k}"], got[f"vmap_{k}"], rtol=1e-5, atol=1e-5)
    for answer in CENTER_RIGHT[1:]:
        assert _same_observations(reference, q.center.observe(answer))
    assert not _same_observations(reference, q.center.observe(lambda x: x - lax.psum(x, DEVICES) / 8))
    assert not _same_observations(reference, q.center.observe(lambda x: x - jnp.mean(x)))


def test_hints_exist():
    for exercise in (q.device_rank, q.count_devices, q.center):
        assert 2 <= len(exercise._hints) <= 3
