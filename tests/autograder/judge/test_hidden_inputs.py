"""The hidden inputs: a fresh secret gives fresh inputs, the same secret the same ones, and each input is
drawn with the distribution the reference names, in the program's own shape and dtype."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from autograder.judge.hidden_inputs import hidden_rng, perturb_factor
from namedaxes.judging import draw_input


def _aval(shape, dtype):
    return SimpleNamespace(shape=shape, dtype=np.dtype(dtype))


def test_the_same_secret_draws_the_same_inputs_and_another_secret_or_case_others():
    a = hidden_rng(b"s1", "g", "c").normal(size=8)
    assert np.array_equal(a, hidden_rng(b"s1", "g", "c").normal(size=8))
    for other in (hidden_rng(b"s2", "g", "c"), hidden_rng(b"s1", "h", "c"), hidden_rng(b"s1", "g", "d")):
        assert not np.array_equal(a, other.normal(size=8))
    # "g\0c" is not "g" + "\0c" twice over: the grade id and the case are kept apart
    assert not np.array_equal(hidden_rng(b"s1", "g\0c", "").normal(size=8), a)


def test_the_perturbation_scale_is_secret_and_in_range():
    factors = {perturb_factor(bytes([i]), "g", "c") for i in range(50)}
    assert len(factors) == 50 and all(1.5 <= f < 3.5 for f in factors)
    assert perturb_factor(b"s", "g", "c") == perturb_factor(b"s", "g", "c")


@pytest.mark.parametrize(
    "draw, dtype, check",
    [
        ({}, "float32", lambda v: abs(v.mean()) < 0.2 and 0.8 < v.std() < 1.2),
        ({"mean": 5.0, "scale": 0.1}, "float32", lambda v: abs(v.mean() - 5) < 0.05),
        ({"kind": "uniform", "low": 2.0, "high": 3.0}, "float32", lambda v: v.min() >= 2 and v.max() < 3),
        ({"kind": "quarters", "low": -4, "high": 5}, "float32", lambda v: np.all(v * 4 == np.round(v * 4))),
        ({"kind": "integers", "low": 3, "high": 6}, "float32", lambda v: set(np.unique(v)) <= {3, 4, 5}),
        ({}, "int32", lambda v: v.min() >= 0 and v.max() < 10),
        ({}, "bool", lambda v: set(np.unique(v)) <= {False, True}),
    ],
)
def test_each_input_has_the_programs_shape_and_dtype_and_the_references_distribution(draw, dtype, check):
    v = draw_input(_aval((40, 25), dtype), draw, hidden_rng(b"secret", "g", "c"))
    assert v.shape == (40, 25) and v.dtype == np.dtype(dtype)
    assert check(v)
