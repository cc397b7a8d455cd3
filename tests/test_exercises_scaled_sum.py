"""Notebook 02 (`02_scaled_sum`): every check and observation, proven both ways.

Wrong answers a learner really writes are rejected with the message that
helps them; equivalent right answers are accepted; `observe` of an equivalent
answer matches the reference's under the autograder's comparison rules, and
`observe` of a wrong answer does not.
"""
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from autograder.compare import derived, observations_match
from namedaxes import DEVICES
from namedaxes.checking import CheckFailed, assert_check_fails, assert_check_passes
from namedaxes.exercises import scaled_sum as q


def _not_written(x):
    raise NotImplementedError()


def _matches(student: dict, reference: dict) -> bool:
    """The autograder's own comparison of two `observe(...)` results."""
    return observations_match(reference, student)


# ---------------------------------------------------------------- scaled_sum
def ref_scaled_sum(x):
    return lax.psum(x * 2.0, axis_name=DEVICES)


SCALED_SUM_EQUIVALENT = {
    "psum then scale": lambda x: lax.psum(x, DEVICES) * 2.0,
    "scale outside, times 1.0": lambda x: 2.0 * lax.psum(x * 1.0, DEVICES),
    "x + x": lambda x: lax.psum(x + x, axis_name=DEVICES),
    "pmean times device count": lambda x: lax.pmean(x * 2.0, DEVICES) * lax.psum(1, DEVICES),
    "float32 accumulation, cast back": lambda x: lax.psum(x.astype(jnp.float32) * 2.0, DEVICES).astype(x.dtype),
}

MISSING = r"(?s)different values on different devices.*a collective such as `lax\.psum` over\s+'devices' is missing"


@pytest.mark.parametrize("answer, match", [
    (lambda x: x * 2.0, MISSING + r".*every device should end with 56 \("),
    (lambda x: jnp.sum(x * 2.0), r"(?s)different values on different devices: \[ 0\.  2\.  4\..*over\s+'devices' is missing"),
    (lambda x: lax.pmean(x * 2.0, DEVICES), r"(?s)expected \[56\..*got \[7\..*mean over devices.*`lax\.psum`"),
    (lambda x: lax.pmax(x * 2.0, DEVICES), r"(?s)got \[14\..*maximum over devices"),
    (lambda x: lax.psum(x, DEVICES), r"(?s)got \[28\..*plain sum of `x`: multiply by 2\.0"),
    (lambda x: jnp.full_like(x, 56.0), r"(?s)expected \[2\. 2\.\].*got \[56\. 56\.\].*by hand"),
    (lambda x: lax.psum(x * 2.0, "device"), r"unbound axis name: device\b.*`axis_name=DEVICES`"),
    (lambda x: lax.psum(x * jnp.float32(2.0), DEVICES), r"keep the dtype of `x` \(float16 in, float16 out\)"),
    (lambda x: lax.psum(jnp.sum(x * 2.0), DEVICES), r"per-device shape \(3,\).*per-device shape \(\)"),
    (lambda x: (lax.psum(x * 2.0, DEVICES), x), r"should return one array.*got tuple back"),
    (lambda x: None, r"got NoneType back.*forget a `return`"),
    (_not_written, r"`scaled_sum` is not written yet"),
], ids=["no collective", "jnp.sum", "pmean", "pmax", "no factor 2", "hard-coded", "wrong axis name",
        "float32 constant", "summed the vector", "tuple", "no return", "unanswered"])
def test_scaled_sum_check_rejects(answer, match):
    assert_check_fails(q.scaled_sum.check, answer, match=match)


def test_scaled_sum_no_collective_message_names_expected_and_seen():
    msg = assert_check_fails(q.scaled_sum.check, lambda x: x * 2.0)
    assert msg.startswith("`scaled_sum` returned different values on different devices")
    assert "[ 0.  2.  4.  6.  8. 10. 12. 14.]" in msg  # seen
    assert "should end with 56 (the sum of x * 2.0" in msg  # expected


@pytest.mark.parametrize("answer", [ref_scaled_sum, *SCALED_SUM_EQUIVALENT.values()],
                         ids=["reference", *SCALED_SUM_EQUIVALENT])
def test_scaled_sum_check_accepts(answer):
    assert_check_passes(q.scaled_sum.check, answer)
    assert_check_passes(q.scaled_sum_uses_psum.check, answer)


def test_scaled_sum_all_gather_gets_the_values_but_not_the_psum_point(scaled_sum_reference_obs):
    """Summing an `all_gather` is a right total (2 points) that does not use `lax.psum` (no structure point)."""
    gathered = lambda x: jnp.sum(lax.all_gather(x * 2.0, DEVICES), axis=0)  # noqa: E731
    assert_check_passes(q.scaled_sum.check, gathered)
    assert _matches(q.scaled_sum.observe(gathered), scaled_sum_reference_obs["total"])
    assert_check_fails(q.scaled_sum_uses_psum.check, gathered, match=r"performs all_gather over \('devices',\)")
    assert not _matches(q.scaled_sum_uses_psum.observe(gathered), scaled_sum_reference_obs["structure"])


@pytest.mark.parametrize("answer, match", [
    (lambda x: x * 2.0, r"should communicate over 'devices' with `psum`, but it performs no collective"),
    (lambda x: jnp.sum(x * 2.0), r"performs no collective at all"),
    (lambda x: jnp.full_like(x, 56.0), r"performs no collective at all"),
    (lambda x: lax.pmax(x * 2.0, DEVICES), r"performs pmax over \('devices',\)"),
    (lambda x: lax.psum(x * 2.0, "device"), r"unbound axis name: device\b"),
    (_not_written, r"not written yet"),
], ids=["no collective", "jnp.sum", "hard-coded", "pmax", "wrong axis name", "unanswered"])
def test_scaled_sum_uses_psum_rejects(answer, match):
    assert_check_fails(q.scaled_sum_uses_psum.check, answer, match=match)


@pytest.fixture(scope="module")
def scaled_sum_reference_obs():
    return {"total": q.scaled_sum.observe(ref_scaled_sum),
            "structure": q.scaled_sum_uses_psum.observe(ref_scaled_sum)}


def test_scaled_sum_observe_shape(scaled_sum_reference_obs):
    """The kernel records only exported programs; what the grader computes from them is
    replicated, random (hidden inputs) and communicates with a psum over DEVICES."""
    obs = scaled_sum_reference_obs["total"]
    assert all(k.startswith("program:") or k == "programs" for k in obs)
    assert all(np.asarray(v).dtype == np.uint8 for k, v in obs.items() if k.startswith("program:"))
    got = derived(obs, "scaled_sum_total")
    assert got.pop("axes") == [DEVICES] and got.pop("communication") == ["psum over 'devices'"]
    assert {np.asarray(v).dtype for v in got.values()} == {np.dtype("float32"), np.dtype("float16")}
    assert {(2,), (4,), (8,), (2, 3), (4, 3), (8, 3)} <= {np.asarray(v).shape for v in got.values()}
    for value in got.values():       # replicated, and random (so a hard-coded answer cannot match)
        value = np.asarray(value, float)
        assert np.allclose(value, value[:1]) and not np.allclose(value, np.round(value))
    structure = derived(scaled_sum_reference_obs["structure"], "scaled_sum_uses_psum")
    assert structure["communication"] == ["psum over 'devices'"]
    assert set(structure) == {"k8_scalar", "k8_vector", "axes", "communication"}


def test_scaled_sum_observe_is_deterministic(scaled_sum_reference_obs):
    assert _matches(q.scaled_sum.observe(ref_scaled_sum), scaled_sum_reference_obs["total"])


@pytest.mark.parametrize("answer", SCALED_SUM_EQUIVALENT.values(), ids=SCALED_SUM_EQUIVALENT)
def test_scaled_sum_observe_accepts_equivalent(answer, scaled_sum_reference_obs):
    assert _matches(q.scaled_sum.observe(answer), scaled_sum_reference_obs["total"])
    assert _matches(q.scaled_sum_uses_psum.observe(answer), scaled_sum_reference_obs["structure"])


@pytest.mark.parametrize("answer", [
    lambda x: x * 2.0,
    lambda x: jnp.sum(x * 2.0),
    lambda x: jnp.full_like(x, 56.0),
    lambda x: lax.pmean(x * 2.0, DEVICES),
    lambda x: lax.psum(x, DEVICES),
    lambda x: lax.psum(x * jnp.float32(2.0), DEVICES),
], ids=["no collective", "jnp.sum", "hard-coded", "pmean", "no factor 2", "float32 constant"])
def test_scaled_sum_observe_rejects_wrong(answer, scaled_sum_reference_obs):
    assert not _matches(q.scaled_sum.observe(answer), scaled_sum_reference_obs["total"])


@pytest.mark.parametrize("answer", [
    lambda x: x * 2.0,
    lambda x: jnp.sum(x * 2.0),
    lambda x: lax.pmax(x * 2.0, DEVICES),
    lambda x: jnp.sum(lax.all_gather(x * 2.0, DEVICES), axis=0),
], ids=["no collective", "jnp.sum", "pmax", "all_gather"])
def test_scaled_sum_uses_psum_observe_rejects_wrong(answer, scaled_sum_reference_obs):
    assert not _matches(q.scaled_sum_uses_psum.observe(answer), scaled_sum_reference_obs["structure"])


@pytest.mark.parametrize("exercise", [q.scaled_sum, q.scaled_sum_uses_psum], ids=["total", "uses_psum"])
def test_scaled_sum_observe_does_not_hide_errors(exercise):
    """A crashing answer must crash `observe` (the autograder then records nothing: 0 points)."""
    with pytest.raises(NameError, match="unbound axis name"):
        exercise.observe(lambda x: lax.psum(x * 2.0, "device"))
    with pytest.raises(NotImplementedError):
        exercise.observe(_not_written)


# ---------------------------------------------------------------- scaled_mean
def ref_scaled_mean(x):
    return lax.pmean(x * 2.0, axis_name=DEVICES)


SCALED_MEAN_EQUIVALENT = {
    "pmean then scale": lambda x: lax.pmean(x, DEVICES) * 2.0,
    "psum over psum(1)": lambda x: lax.psum(x * 2.0, DEVICES) / lax.psum(1, DEVICES),
    "psum of 2x/n": lambda x: lax.psum(2.0 * x / lax.psum(1.0, DEVICES), DEVICES),
}


@pytest.mark.parametrize("answer, match", [
    (lambda x: jnp.mean(x * 2.0), r"(?s)^`scaled_mean` returned different values on different devices.*"
                                  r"collective such as `lax\.psum` over\s+'devices' is missing.*should end with 7 \("),
    (lambda x: lax.psum(x * 2.0, DEVICES), r"(?s)expected \[7\..*got \[56\..*total, not the mean"),
    (lambda x: lax.psum(x * 2.0, DEVICES) / 8, r"(?s)expected \[1\. 1\.\].*got \[0\.25 0\.25\].*divided by 8"),
    (lambda x: lax.pmean(x, DEVICES), r"(?s)got \[3\.5.*multiply by 2\.0"),
    (lambda x: lax.pmean(x * 2.0, "device"), r"unbound axis name: device\b"),
    (_not_written, r"`scaled_mean` is not written yet"),
], ids=["jnp.mean", "psum", "divide by 8", "no factor 2", "wrong axis name", "unanswered"])
def test_scaled_mean_check_rejects(answer, match):
    assert_check_fails(q.scaled_mean.check, answer, match=match)


@pytest.mark.parametrize("answer", [ref_scaled_mean, *SCALED_MEAN_EQUIVALENT.values()],
                         ids=["reference", *SCALED_MEAN_EQUIVALENT])
def test_scaled_mean_check_accepts(answer):
    assert_check_passes(q.scaled_mean.check, answer)


@pytest.fixture(scope="module")
def scaled_mean_reference_obs():
    return q.scaled_mean.observe(ref_scaled_mean)


@pytest.mark.parametrize("answer", SCALED_MEAN_EQUIVALENT.values(), ids=SCALED_MEAN_EQUIVALENT)
def test_scaled_mean_observe_accepts_equivalent(answer, scaled_mean_reference_obs):
    assert _matches(q.scaled_mean.observe(answer), scaled_mean_reference_obs)


@pytest.mark.parametrize("answer", [
    lambda x: jnp.mean(x * 2.0),
    lambda x: lax.psum(x * 2.0, DEVICES),
    lambda x: lax.psum(x * 2.0, DEVICES) / 8,
    lambda x: ref_scaled_sum(x) * 0 + 1.0,
], ids=["jnp.mean", "psum", "divide by 8", "constant"])
def test_scaled_mean_observe_rejects_wrong(answer, scaled_mean_reference_obs):
    assert not _matches(q.scaled_mean.observe(answer), scaled_mean_reference_obs)


def test_scaled_mean_observe_has_axes_and_rejects_a_local_mean(scaled_mean_reference_obs):
    assert derived(scaled_mean_reference_obs)["axes"] == [DEVICES]
    assert not _matches(q.scaled_mean.observe(lambda x: jnp.zeros_like(x) + 2.0 * x.mean()),
                        scaled_mean_reference_obs)


# ---------------------------------------------------------------- global_max_share
def ref_global_max_share(x):
    return x / lax.pmax(x, axis_name=DEVICES)


GLOBAL_MAX_SHARE_EQUIVALENT = {
    "times reciprocal": lambda x: x * (1.0 / lax.pmax(x, DEVICES)),
    "minus pmin of minus": lambda x: x / -lax.pmin(-x, DEVICES),
    "jnp.divide": lambda x: jnp.divide(x, lax.pmax(x, axis_name=DEVICES)),
}


@pytest.mark.parametrize("answer, match", [
    (lambda x: x / jnp.max(x), r"(?s)expected \[0\.125.*got \[1\. 1\. 1\. 1\.\].*Every entry is 1"),
    (lambda x: x / x, r"Every entry is 1"),
    (lambda x: lax.pmax(x, DEVICES), r"maximum itself"),
    (lambda x: x / lax.pmax(jnp.max(x), DEVICES), r"largest entry of all vectors"),
    (lambda x: lax.pmean(x / lax.pmax(x, DEVICES), DEVICES), r"each device should keep its own share"),
    (lambda x: x / 4.0, r"(?s)expected \[0\.125 0\.25 .*got \[0\.25 0\.5 "),
    (lambda x: x / lax.pmax(x, "device"), r"unbound axis name: device\b"),
    (_not_written, r"`global_max_share` is not written yet"),
], ids=["local max", "x / x", "pmax only", "max of everything", "replicated", "hard-coded",
        "wrong axis name", "unanswered"])
def test_global_max_share_check_rejects(answer, match):
    assert_check_fails(q.global_max_share.check, answer, match=match)


@pytest.mark.parametrize("answer", [ref_global_max_share, *GLOBAL_MAX_SHARE_EQUIVALENT.values()],
                         ids=["reference", *GLOBAL_MAX_SHARE_EQUIVALENT])
def test_global_max_share_check_accepts(answer):
    assert_check_passes(q.global_max_share.check, answer)


@pytest.fixture(scope="module")
def global_max_share_reference_obs():
    return q.global_max_share.observe(ref_global_max_share)


@pytest.mark.parametrize("answer", GLOBAL_MAX_SHARE_EQUIVALENT.values(), ids=GLOBAL_MAX_SHARE_EQUIVALENT)
def test_global_max_share_observe_accepts_equivalent(answer, global_max_share_reference_obs):
    assert _matches(q.global_max_share.observe(answer), global_max_share_reference_obs)


@pytest.mark.parametrize("answer", [
    lambda x: x / jnp.max(x),
    lambda x: x / lax.pmax(jnp.max(x), DEVICES),
    lambda x: x / lax.psum(x, DEVICES),
    lambda x: x / 4.0,
], ids=["local max", "max of everything", "psum", "hard-coded"])
def test_global_max_share_observe_rejects_wrong(answer, global_max_share_reference_obs):
    assert not _matches(q.global_max_share.observe(answer), global_max_share_reference_obs)


def test_global_max_share_observe_has_axes_and_is_not_replicated(global_max_share_reference_obs):
    obs = derived(global_max_share_reference_obs)
    assert obs["axes"] == [DEVICES] and obs["communication"] == ["pmax over 'devices'"]
    for key, value in obs.items():
        if key not in ("axes", "communication"):
            value = np.asarray(value)
            assert value.dtype == np.float32 and np.all(value > 0) and np.all(value <= 1)
            assert np.isclose(value.max(axis=0), 1.0).all() and not np.allclose(value, value[:1])


# ---------------------------------------------------------------- the comparison helper itself
def test_autograder_comparison_is_as_strict_as_these_tests_assume():
    ref = {"out": np.ones(3, np.float32), "axes": [DEVICES], "flag": True}
    assert _matches({"out": np.ones(3, np.float32), "axes": [DEVICES, "other"], "flag": True}, ref)
    assert not _matches({"out": np.ones(3, np.float16), "axes": [DEVICES], "flag": True}, ref)
    assert not _matches({"out": np.ones(4, np.float32), "axes": [DEVICES], "flag": True}, ref)
    assert not _matches({"out": np.ones(3, np.float32) * 1.001, "axes": [DEVICES], "flag": True}, ref)
    assert not _matches({"out": np.ones(3, np.float32), "axes": [], "flag": True}, ref)
    assert not _matches({"out": np.ones(3, np.float32), "axes": [DEVICES], "flag": False}, ref)


def test_exercises_have_hints(capsys):
    for exercise in (q.scaled_sum, q.scaled_sum_uses_psum, q.scaled_mean, q.global_max_share):
        exercise.hint()
        assert f"for `{exercise.name}`" in capsys.readouterr().out
    with pytest.raises(CheckFailed):
        q.scaled_mean.check(lambda x: x)
