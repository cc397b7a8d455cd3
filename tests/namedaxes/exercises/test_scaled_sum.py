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
from judge_helpers import (
    agreement_test,
    assert_check_fails,
    assert_check_passes,
    derived,
    judge_observations,
    observations_match,
    observe,
)
from spoken import failure_in, says

from namedaxes import DEVICES
from namedaxes.checking import TEXT, CheckFailed
from namedaxes.exercises import scaled_sum as q


def _not_written(x):
    raise NotImplementedError()


def _matches(student: dict, reference: dict) -> bool:
    """The autograder's own comparison of two `observe(...)` results."""
    return observations_match(reference, student)


# ---------------------------------------------------------------- scaled_sum
def _gathered(x):
    """The right total from an `all_gather` (right values, no psum point)."""
    return jnp.sum(lax.all_gather(x * 2.0, DEVICES), axis=0)


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


SCALED_SUM_WRONG = {
    "no collective": (lambda x: x * 2.0, MISSING + r".*every device should end with 56 \("),
    "jnp.sum": (
        lambda x: jnp.sum(x * 2.0),
        r"(?s)different values on different devices: \[ 0\.  2\.  4\..*over\s+'devices' is missing",
    ),
    "pmean": (lambda x: lax.pmean(x * 2.0, DEVICES), r"(?s)expected \[56\..*got \[7\..*mean over devices.*`lax\.psum`"),
    "pmax": (lambda x: lax.pmax(x * 2.0, DEVICES), r"(?s)got \[14\..*maximum over devices"),
    "no factor 2": (lambda x: lax.psum(x, DEVICES), r"(?s)got \[28\..*plain sum of `x`: multiply by 2\.0"),
    "hard-coded": (lambda x: jnp.full_like(x, 56.0), r"(?s)expected \[2\. 2\.\].*got \[56\. 56\.\].*by hand"),
    "wrong axis name": (lambda x: lax.psum(x * 2.0, "device"), r"unbound axis name: device\b.*`axis_name=DEVICES`"),
    "float32 constant": (
        lambda x: lax.psum(x * jnp.float32(2.0), DEVICES),
        r"keep the dtype of `x` \(float16 in, float16 out\)",
    ),
    "summed the vector": (
        lambda x: lax.psum(jnp.sum(x * 2.0), DEVICES),
        r"per-device shape \(3,\).*per-device shape \(\)",
    ),
    "tuple": (lambda x: (lax.psum(x * 2.0, DEVICES), x), r"should return one array.*got tuple back"),
    "no return": (lambda x: None, r"got NoneType back.*forget a `return`"),
    "unanswered": (_not_written, r"`scaled_sum` is not written yet"),
    "factor 3": (lambda x: lax.psum(x * 3.0, DEVICES), r"That is 1\.5 times the expected total: scale by 2\.0, once"),
    "plus one": (lambda x: lax.psum(x * 2.0, DEVICES) + 1.0, r"That is not 2\.0 times the sum of `x` over the devices"),
    "squared": (lambda x: lax.psum(x * x * 2.0, DEVICES), r"That is not 2\.0 times the sum of `x` over the devices"),
}
SCALED_SUM_RIGHT = [ref_scaled_sum, *SCALED_SUM_EQUIVALENT.values()]


@pytest.mark.parametrize("answer, match", SCALED_SUM_WRONG.values(), ids=SCALED_SUM_WRONG)
def test_scaled_sum_check_rejects(answer, match):
    assert_check_fails(q.scaled_sum.check, answer, match=match)


@pytest.mark.parametrize(
    "answer",
    [
        lambda x: lax.psum(x * 3.0, DEVICES),
        lambda x: lax.psum(x * 2.0, DEVICES) + 1.0,
        lambda x: lax.psum(x * x * 2.0, DEVICES),
    ],
    ids=["factor 3", "plus one", "squared"],
)
def test_scaled_sum_computed_answers_are_not_told_they_wrote_a_number_by_hand(answer):
    """Issue 16: "if you wrote the number by hand" only where the result does not depend on `x`."""
    assert "by hand" not in assert_check_fails(q.scaled_sum.check, answer)


def test_scaled_sum_no_collective_message_names_expected_and_seen():
    msg = assert_check_fails(q.scaled_sum.check, lambda x: x * 2.0)
    assert msg.startswith("`scaled_sum` returned different values on different devices")
    assert "[ 0.  2.  4.  6.  8. 10. 12. 14.]" in msg  # seen
    assert "should end with 56 (the sum of x * 2.0" in msg  # expected


@pytest.mark.parametrize(
    "answer", [ref_scaled_sum, *SCALED_SUM_EQUIVALENT.values()], ids=["reference", *SCALED_SUM_EQUIVALENT]
)
def test_scaled_sum_check_accepts(answer):
    assert_check_passes(q.scaled_sum.check, answer)
    assert_check_passes(q.scaled_sum_uses_psum.check, answer)


def test_scaled_sum_all_gather_gets_the_values_but_not_the_psum_point(scaled_sum_reference_obs):
    """Summing an `all_gather` is a right total (2 points) that does not use `lax.psum` (no structure point)."""
    gathered = lambda x: jnp.sum(lax.all_gather(x * 2.0, DEVICES), axis=0)  # noqa: E731
    assert_check_passes(q.scaled_sum.check, gathered)
    assert _matches(observe(q.scaled_sum, gathered), scaled_sum_reference_obs["total"])
    assert_check_fails(q.scaled_sum_uses_psum.check, gathered, match=r"performs all_gather over 'devices'")
    assert not _matches(observe(q.scaled_sum_uses_psum, gathered), scaled_sum_reference_obs["structure"])


def _ppermute_ring(x):
    """The total added up around a ring of `ppermute`s (k - 1 sends): the right total, no psum (issue 56)."""
    k = lax.axis_size(DEVICES)
    total = held = 2.0 * x
    for _ in range(k - 1):
        held = lax.ppermute(held, DEVICES, [(i, (i + 1) % k) for i in range(k)])
        total = total + held
    return total


USES_PSUM_WRONG = {
    "a ppermute ring": (
        _ppermute_ring,
        r"should communicate over 'devices' with `psum`, but it performs ppermute over 'devices'",
    ),
    "no collective": (
        lambda x: x * 2.0,
        r"should communicate over 'devices' with `psum`, but it performs no collective",
    ),
    "jnp.sum": (lambda x: jnp.sum(x * 2.0), r"performs no collective at all"),
    "hard-coded": (lambda x: jnp.full_like(x, 56.0), r"performs no collective at all"),
    "pmax": (lambda x: lax.pmax(x * 2.0, DEVICES), r"performs pmax over 'devices'"),
    "pmean": (
        lambda x: lax.pmean(x * 2.0, DEVICES),
        r"returns 2 over 8 devices and 2 over 2 devices .*so it is a mean \(`lax\.pmean` is a psum divided",
    ),
    "psum over psum(1)": (lambda x: lax.psum(x * 2.0, DEVICES) / lax.psum(1, DEVICES), r"so it is a mean"),
    "squared": (
        lambda x: lax.psum(x * 2.0, axis_name=DEVICES) ** 2,
        r"returns 256 over 8 devices and 16 over 2.*not something",
    ),
    "wrong axis name": (lambda x: lax.psum(x * 2.0, "device"), r"unbound axis name: device\b"),
    "unanswered": (_not_written, r"not written yet"),
    "all_gather": (lambda x: jnp.sum(lax.all_gather(x * 2.0, DEVICES), axis=0), r"performs all_gather over 'devices'"),
    # issue 16: a psum multiplied by zero stays in the compiled program, but its result reaches nothing
    "dead psum": (
        lambda x: jnp.sum(lax.all_gather(x * 2.0, DEVICES), axis=0) + 0.0 * lax.psum(x, DEVICES),
        r"performs psum over 'devices', but nothing it carries between devices reaches what `scaled_sum` returns",
    ),
    # issue 34: a psum whose result reaches the output but that carries no data earns nothing
    "psum of zeros added": (
        lambda x: _gathered(x) + lax.psum(x * 0.0, DEVICES),
        r"performs psum over 'devices', but nothing it carries between devices reaches what `scaled_sum` returns",
    ),
    "psum of zeros in a cond branch": (
        lambda x: lax.cond(jnp.sum(x) > -1e30, lambda t: t + lax.psum(x * 0.0, DEVICES), lambda t: t, _gathered(x)),
        r"performs psum over 'devices', but nothing it carries between devices reaches what `scaled_sum` returns",
    ),
    "psum of zeros in a data-dependent while_loop": (
        lambda x: lax.while_loop(
            lambda c: c[1] < 1 + (jnp.sum(x) > 0),
            lambda c: (c[0] + lax.psum(x * 0.0, DEVICES), c[1] + 1),
            (_gathered(x), 0),
        )[0],
        r"performs psum over 'devices', but nothing it carries between devices reaches what `scaled_sum` returns",
    ),
    "psum of x - x": (
        lambda x: _gathered(x) + lax.psum(x - x, DEVICES),
        r"performs psum over 'devices', but nothing it carries between devices reaches what `scaled_sum` returns",
    ),
    "psum of a constant": (
        lambda x: _gathered(x) + lax.psum(jnp.ones_like(x), DEVICES) - lax.psum(1, DEVICES),
        r"performs psum over 'devices', but nothing it carries between devices reaches what `scaled_sum` returns",
    ),
}
# The psum point is about psum only: an unscaled total passes it (the values cell's job is the factor 2.0).
USES_PSUM_RIGHT = [
    ref_scaled_sum,
    *SCALED_SUM_EQUIVALENT.values(),
    lambda x: lax.psum(x, DEVICES),
    lambda x: lax.psum(x * 2.0, DEVICES) / 8,
]


@pytest.mark.parametrize("answer, match", USES_PSUM_WRONG.values(), ids=USES_PSUM_WRONG)
def test_scaled_sum_uses_psum_rejects(answer, match):
    assert_check_fails(q.scaled_sum_uses_psum.check, answer, match=match)


def test_scaled_sum_uses_psum_is_about_psum_only(scaled_sum_reference_obs):
    """The issue's gap: `pmean` got the psum point. Now the visible check and the hidden structure case agree:
    a pmean is refused by both, while the psum point does not depend on the factor 2.0 (the values cell's job)."""
    pmean = lambda x: lax.pmean(x * 2.0, DEVICES)  # noqa: E731
    assert_check_fails(q.scaled_sum_uses_psum.check, pmean, match=r"it is a mean")
    assert not _matches(observe(q.scaled_sum_uses_psum, pmean), scaled_sum_reference_obs["structure"])
    for unscaled in (lambda x: lax.psum(x, DEVICES), lambda x: lax.psum(x * 2.0, DEVICES) / 8):
        assert_check_passes(q.scaled_sum_uses_psum.check, unscaled)
        assert _matches(observe(q.scaled_sum_uses_psum, unscaled), scaled_sum_reference_obs["structure"])
        assert_check_fails(q.scaled_sum.check, unscaled, match=r"plain sum of `x`|mean over devices")


def test_a_ppermute_ring_is_told_it_has_no_psum_by_both_judges(scaled_sum_reference_obs):
    """Issue 56: the grader's first finding for a ppermute ring is the missing psum (its growth cases' per-device
    regions also differ: the vmapped ring takes a constant whole), as the visible check says, in both languages."""
    from autograder.publish.words import say

    verdict = judge_observations(scaled_sum_reference_obs["structure"], observe(q.scaled_sum_uses_psum, _ppermute_ring))
    first = verdict.verdict.differences[0]
    assert not verdict.passed and first.kind.value == "comm_missing", verdict.differences
    english, chinese = say(first, "en"), say(first, "zh")
    assert "expected psum over 'devices'" in english and "ppermute over 'devices'" in english, english
    assert chinese != english and "psum" in chinese and "ppermute" in chinese, chinese
    for lang in ("en", "zh"):
        said = failure_in(lang, q.scaled_sum_uses_psum.check, _ppermute_ring)
        assert "ppermute over 'devices'" in said and says(said, TEXT, "collective_missing", lang), said


@pytest.fixture(scope="module")
def scaled_sum_reference_obs():
    return {
        "total": observe(q.scaled_sum, ref_scaled_sum),
        "structure": observe(q.scaled_sum_uses_psum, ref_scaled_sum),
    }


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
    for value in got.values():  # replicated, and random (so a hard-coded answer cannot match)
        value = np.asarray(value, float)
        assert np.allclose(value, value[:1]) and not np.allclose(value, np.round(value))
    structure = derived(scaled_sum_reference_obs["structure"], "scaled_sum_uses_psum")
    assert structure.pop("communication") == ["psum over 'devices'"] and structure.pop("axes") == [DEVICES]
    assert set(structure) == {
        "k4_scalar_growth",
        "k4_vector_growth",
        "k8_scalar_growth",
        "k8_vector_growth",
        "k8_vector_psum",
    }
    for value in structure.values():  # a total divided by its value over 2 devices of ones: sum(x) / 2
        value = np.asarray(value, float)
        assert np.allclose(value, value[:1]) and not np.allclose(value, np.round(value))


def test_scaled_sum_observe_is_deterministic(scaled_sum_reference_obs):
    assert _matches(observe(q.scaled_sum, ref_scaled_sum), scaled_sum_reference_obs["total"])


@pytest.mark.parametrize("answer", SCALED_SUM_EQUIVALENT.values(), ids=SCALED_SUM_EQUIVALENT)
def test_scaled_sum_observe_accepts_equivalent(answer, scaled_sum_reference_obs):
    assert _matches(observe(q.scaled_sum, answer), scaled_sum_reference_obs["total"])
    assert _matches(observe(q.scaled_sum_uses_psum, answer), scaled_sum_reference_obs["structure"])


@pytest.mark.parametrize(
    "answer",
    [
        lambda x: x * 2.0,
        lambda x: jnp.sum(x * 2.0),
        lambda x: jnp.full_like(x, 56.0),
        lambda x: lax.pmean(x * 2.0, DEVICES),
        lambda x: lax.psum(x, DEVICES),
        lambda x: lax.psum(x * jnp.float32(2.0), DEVICES),
    ],
    ids=["no collective", "jnp.sum", "hard-coded", "pmean", "no factor 2", "float32 constant"],
)
def test_scaled_sum_observe_rejects_wrong(answer, scaled_sum_reference_obs):
    assert not _matches(observe(q.scaled_sum, answer), scaled_sum_reference_obs["total"])


@pytest.mark.parametrize(
    "answer",
    [
        lambda x: x * 2.0,
        lambda x: jnp.sum(x * 2.0),
        lambda x: lax.pmax(x * 2.0, DEVICES),
        lambda x: jnp.sum(lax.all_gather(x * 2.0, DEVICES), axis=0),
        lambda x: lax.pmean(x * 2.0, DEVICES),
        lambda x: lax.psum(x * 2.0, DEVICES) / lax.psum(1, DEVICES),
        lambda x: jnp.full_like(x, 56.0),
    ],
    ids=["no collective", "jnp.sum", "pmax", "all_gather", "pmean", "psum over psum(1)", "hard-coded"],
)
def test_scaled_sum_uses_psum_observe_rejects_wrong(answer, scaled_sum_reference_obs):
    assert not _matches(observe(q.scaled_sum_uses_psum, answer), scaled_sum_reference_obs["structure"])


@pytest.mark.parametrize("exercise", [q.scaled_sum, q.scaled_sum_uses_psum], ids=["total", "uses_psum"])
def test_scaled_sum_observe_does_not_hide_errors(exercise):
    """A crashing answer must crash `observe` (the autograder then records nothing: 0 points)."""
    with pytest.raises(NameError, match="unbound axis name"):
        exercise.observe(lambda x: lax.psum(x * 2.0, "device"))
    with pytest.raises(NotImplementedError):
        exercise.observe(_not_written)


# ---------------------------------------------------------------- scaled_mean (shards of unequal size, NaN = empty)
def ref_scaled_mean(x):
    total = lax.psum(jnp.nansum(x * 2.0), axis_name=DEVICES)
    count = lax.psum(jnp.sum(~jnp.isnan(x)), axis_name=DEVICES)
    return (total / count).astype(x.dtype)


def _count(x):
    return jnp.sum(~jnp.isnan(x)).astype(x.dtype)


SCALED_MEAN_EQUIVALENT = {
    "scale after": lambda x: (2.0 * lax.psum(jnp.nansum(x), DEVICES) / lax.psum(_count(x), DEVICES)).astype(x.dtype),
    "ratio of pmeans": lambda x: lax.pmean(jnp.nansum(2.0 * x), DEVICES) / lax.pmean(_count(x), DEVICES),
    "where instead of nansum": lambda x: (
        lax.psum(jnp.sum(jnp.where(jnp.isnan(x), 0.0, x * 2.0)), DEVICES) / lax.psum(_count(x), DEVICES)
    ),
    "one psum of a pair": lambda x: (lambda s: s[0] / s[1])(
        lax.psum(jnp.stack([jnp.nansum(x * 2.0), _count(x)]), DEVICES)
    ),
}


SCALED_MEAN_WRONG = {
    "mean of means": (
        lambda x: lax.pmean(jnp.nanmean(x * 2.0), DEVICES),  # the plausible mistake
        r"(?s)expected \[4\.6667.*got \[5\. .*mean of the per-device means",
    ),
    "NaN in the sum": (
        lambda x: lax.pmean(jnp.mean(x * 2.0), DEVICES),
        r"(?s)got \[nan.*It returned NaN: a missing entry",
    ),
    "counts the empty slots": (
        lambda x: lax.psum(jnp.nansum(x * 2.0), DEVICES) / (lax.psum(1, DEVICES) * x.shape[0]),
        r"divided by every entry, missing ones \(NaN\) included",
    ),
    "total": (lambda x: lax.psum(jnp.nansum(x * 2.0), DEVICES), r"(?s)got \[42\..*total of x \* 2\.0, not the mean"),
    "no factor 2": (lambda x: lax.psum(jnp.nansum(x), DEVICES) / lax.psum(_count(x), DEVICES), r"mean of `x` itself"),
    "local": (
        lambda x: jnp.nanmean(x * 2.0),
        r"(?s)^`scaled_mean` returned different values on different devices.*"
        r"should end with 4\.66667: the mean of x \* 2\.0 over all 9 values",
    ),
    "old pmean answer": (
        lambda x: lax.pmean(x * 2.0, DEVICES),
        r"one number on each device \(per-device shape \(\)\).*per-device shape \(3,\)",
    ),
    "hard-coded": (lambda x: jnp.full((), 4.6667, x.dtype), r"by hand"),
    "float32 out": (
        lambda x: (lax.psum(jnp.nansum(x * 2.0), DEVICES) / lax.psum(_count(x), DEVICES)).astype(jnp.float32),
        r"keep the dtype of `x` \(float16 in, float16 out\)",
    ),
    "wrong axis name": (lambda x: lax.psum(jnp.nansum(x * 2.0), "device"), r"unbound axis name: device\b"),
    "unanswered": (_not_written, r"`scaled_mean` is not written yet"),
}
SCALED_MEAN_RIGHT = [ref_scaled_mean, *SCALED_MEAN_EQUIVALENT.values()]


@pytest.mark.parametrize("answer, match", SCALED_MEAN_WRONG.values(), ids=SCALED_MEAN_WRONG)
def test_scaled_mean_check_rejects(answer, match):
    assert_check_fails(q.scaled_mean.check, answer, match=match)


@pytest.mark.parametrize(
    "answer", [ref_scaled_mean, *SCALED_MEAN_EQUIVALENT.values()], ids=["reference", *SCALED_MEAN_EQUIVALENT]
)
def test_scaled_mean_check_accepts(answer):
    assert_check_passes(q.scaled_mean.check, answer)


@pytest.fixture(scope="module")
def scaled_mean_reference_obs():
    return observe(q.scaled_mean, ref_scaled_mean)


@pytest.mark.parametrize("answer", SCALED_MEAN_EQUIVALENT.values(), ids=SCALED_MEAN_EQUIVALENT)
def test_scaled_mean_observe_accepts_equivalent(answer, scaled_mean_reference_obs):
    assert _matches(observe(q.scaled_mean, answer), scaled_mean_reference_obs)


@pytest.mark.parametrize(
    "answer",
    [
        lambda x: lax.pmean(jnp.nanmean(x * 2.0), DEVICES),
        lambda x: lax.psum(jnp.nansum(x * 2.0), DEVICES) / (lax.psum(1, DEVICES) * x.shape[0]),
        lambda x: lax.psum(jnp.nansum(x), DEVICES) / lax.psum(_count(x), DEVICES),
        lambda x: jnp.nanmean(x * 2.0),
        lambda x: lax.psum(jnp.nansum(x * 2.0), DEVICES) / (8 * _count(x)),
        SCALED_MEAN_WRONG["float32 out"][0],  # issue 16: the visible check's dtype rule, graded too
    ],
    ids=["mean of means", "counts the empty slots", "no factor 2", "local", "count times 8", "float32 out"],
)
def test_scaled_mean_observe_rejects_wrong(answer, scaled_mean_reference_obs):
    assert not _matches(observe(q.scaled_mean, answer), scaled_mean_reference_obs)


def test_scaled_mean_observe_pads_on_the_graders_inputs(scaled_mean_reference_obs):
    """The grader draws the values and how many each device keeps; the reference is replicated and finite,
    and differs from the mean of the per-device means (unequal shards really occur in the graded inputs)."""
    got = derived(scaled_mean_reference_obs)
    assert got.pop("axes") == [DEVICES] and got.pop("communication") == ["psum over 'devices'"]
    assert set(got) == {f"k{k}_slots{m}" for k in (2, 4, 8) for m in (3, 5)} | {"k4_slots3_float16"}
    for key, value in got.items():
        value = np.asarray(value)
        assert value.dtype == (np.float16 if key.endswith("float16") else np.float32)
        assert np.isfinite(value).all() and np.allclose(value, value[:1])
    means_of_means = derived(observe(q.scaled_mean, lambda x: lax.pmean(jnp.nanmean(x * 2.0), DEVICES)))
    assert any(not np.allclose(got[k], means_of_means[k], equal_nan=True) for k in got)


# ---------------------------------------------------------------- global_max_share (largest magnitude)
def ref_global_max_share(x):
    return x / lax.pmax(jnp.abs(x), axis_name=DEVICES)


GLOBAL_MAX_SHARE_EQUIVALENT = {
    "times reciprocal": lambda x: x * (1.0 / lax.pmax(jnp.abs(x), DEVICES)),
    "max of x and -x": lambda x: x / jnp.maximum(lax.pmax(x, DEVICES), -lax.pmin(x, DEVICES)),
    "jnp.divide, sqrt of square": lambda x: jnp.divide(x, lax.pmax(jnp.sqrt(x * x), axis_name=DEVICES)),
}


GLOBAL_MAX_SHARE_WRONG = {
    "largest value": (
        lambda x: x / lax.pmax(x, DEVICES),  # the notebook's pmax cell, edited
        r"(?s)expected \[ 0\.125 -0\.25 +0\.5 +-1\.   \].*got \[ 0\.25 -0\.5 +1\. +-2\. *\].*largest \*value\*",
    ),
    "signs lost": (lambda x: jnp.abs(x) / lax.pmax(jnp.abs(x), DEVICES), r"signs are gone"),
    "local max": (lambda x: x / jnp.max(jnp.abs(x)), r"Every entry is 1|expected"),
    "x / x": (lambda x: x / x, r"Every entry is 1"),
    "pmax only": (lambda x: lax.pmax(jnp.abs(x), DEVICES), r"largest magnitude itself"),
    "max of everything": (lambda x: x / lax.pmax(jnp.max(jnp.abs(x)), DEVICES), r"largest magnitude of all vectors"),
    "replicated": (
        lambda x: lax.pmean(x / lax.pmax(jnp.abs(x), DEVICES), DEVICES),
        r"each device should keep its own share",
    ),
    "hard-coded": (lambda x: x / 8.0, r"(?s)expected \[1\.  0\.5\], got \[0\.375  0\.1875\].*\(2 devices, input"),
    "wrong axis name": (lambda x: x / lax.pmax(jnp.abs(x), "device"), r"unbound axis name: device\b"),
    "unanswered": (_not_written, r"`global_max_share` is not written yet"),
}
GLOBAL_MAX_SHARE_RIGHT = [ref_global_max_share, *GLOBAL_MAX_SHARE_EQUIVALENT.values()]


@pytest.mark.parametrize("answer, match", GLOBAL_MAX_SHARE_WRONG.values(), ids=GLOBAL_MAX_SHARE_WRONG)
def test_global_max_share_check_rejects(answer, match):
    assert_check_fails(q.global_max_share.check, answer, match=match)


def test_global_max_share_max_of_shares_is_not_called_a_local_division():
    """`pmax(x / pmax(|x|))` communicates; its all-ones result must not be explained as "divided by its own value"."""
    msg = assert_check_fails(q.global_max_share.check, lambda x: lax.pmax(x / lax.pmax(jnp.abs(x), DEVICES), DEVICES))
    assert "divided by its own value" not in msg and "keep its own share" in msg
    msg = assert_check_fails(q.global_max_share.check, lambda x: x / x)
    assert "divided by its own value" in msg and "outer" not in msg


def test_global_max_share_first_hint_is_a_question_without_code():
    first = q.global_max_share._hints[0]
    assert first.rstrip().endswith("?") and "pmax" not in first and "abs" not in first


@pytest.mark.parametrize(
    "answer",
    [ref_global_max_share, *GLOBAL_MAX_SHARE_EQUIVALENT.values()],
    ids=["reference", *GLOBAL_MAX_SHARE_EQUIVALENT],
)
def test_global_max_share_check_accepts(answer):
    assert_check_passes(q.global_max_share.check, answer)


@pytest.fixture(scope="module")
def global_max_share_reference_obs():
    return observe(q.global_max_share, ref_global_max_share)


@pytest.mark.parametrize("answer", GLOBAL_MAX_SHARE_EQUIVALENT.values(), ids=GLOBAL_MAX_SHARE_EQUIVALENT)
def test_global_max_share_observe_accepts_equivalent(answer, global_max_share_reference_obs):
    assert _matches(observe(q.global_max_share, answer), global_max_share_reference_obs)


@pytest.mark.parametrize(
    "answer",
    [
        lambda x: x / lax.pmax(x, DEVICES),
        lambda x: jnp.abs(x) / lax.pmax(jnp.abs(x), DEVICES),
        lambda x: x / jnp.max(jnp.abs(x)),
        lambda x: x / lax.pmax(jnp.max(jnp.abs(x)), DEVICES),
        lambda x: x / lax.psum(jnp.abs(x), DEVICES),
        lambda x: x / 4.0,
        lambda x: lax.pmax(x / lax.pmax(jnp.abs(x), DEVICES), DEVICES),
    ],
    ids=["largest value", "signs lost", "local max", "max of everything", "psum", "hard-coded", "max of the shares"],
)
def test_global_max_share_observe_rejects_wrong(answer, global_max_share_reference_obs):
    assert not _matches(observe(q.global_max_share, answer), global_max_share_reference_obs)


def test_global_max_share_observe_has_axes_and_is_not_replicated(global_max_share_reference_obs):
    obs = derived(global_max_share_reference_obs)
    assert obs["axes"] == [DEVICES] and obs["communication"] == ["pmax over 'devices'"]
    for key, value in obs.items():
        if key not in ("axes", "communication"):
            value = np.asarray(value)
            assert value.dtype == np.float32 and np.all(np.abs(value) <= 1) and (value < 0).any()  # signed draws
            assert np.isclose(np.abs(value).max(axis=0), 1.0).all() and not np.allclose(value, value[:1])


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


# ---------------------------------------------------------------- one judge (issue 16)
test_the_visible_check_and_the_grader_agree = agreement_test(
    {
        "scaled_sum": (
            q.scaled_sum,
            ref_scaled_sum,
            SCALED_SUM_RIGHT + [USES_PSUM_WRONG["all_gather"][0]],  # right values, no psum point
            list(SCALED_SUM_WRONG.values()),
        ),
        "scaled_sum_uses_psum": (
            q.scaled_sum_uses_psum,
            ref_scaled_sum,
            USES_PSUM_RIGHT,
            list(USES_PSUM_WRONG.values()),
        ),
        "scaled_mean": (q.scaled_mean, ref_scaled_mean, SCALED_MEAN_RIGHT, list(SCALED_MEAN_WRONG.values())),
        "global_max_share": (
            q.global_max_share,
            ref_global_max_share,
            GLOBAL_MAX_SHARE_RIGHT,
            list(GLOBAL_MAX_SHARE_WRONG.values()),
        ),
    }
)
