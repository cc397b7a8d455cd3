"""Unit tests of namedaxes/checking/values.py.

`expect_array`, `expect_close` and `expect_replicated` check type -> shape -> dtype -> value and say what was
expected, seen and where; show_values and same_values.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from namedaxes import DEVICES
from namedaxes.checking import (
    CheckFailed,
    expect_array,
    expect_close,
    expect_replicated,
    same_values,
    show_values,
)


def test_expect_array_checks_type_first():
    with pytest.raises(CheckFailed, match=r"`out` should be a `jax.Array`, but it is a `list`"):
        expect_array("out", [1.0], shape=(1,))
    with pytest.raises(CheckFailed, match=r"`out` is a NumPy array"):
        expect_array("out", np.zeros(3))


def test_expect_array_then_shape_then_dtype():
    with pytest.raises(CheckFailed, match=r"shape \(8,\), but it has shape \(4,\)"):
        expect_array("out", jnp.zeros(4, jnp.int32), shape=(8,), dtype=jnp.float32)
    with pytest.raises(CheckFailed, match=r"dtype float32, but it has dtype int32"):
        expect_array("out", jnp.zeros(8, jnp.int32), shape=(8,), dtype=jnp.float32)
    expect_array("out", jnp.zeros(8), shape=(8,), dtype=jnp.float32)


def test_expect_close_names_expected_seen_and_where():
    with pytest.raises(CheckFailed) as err:
        expect_close("total", jnp.array([1.0, 2.0]), np.array([1.0, 3.0]))
    msg = str(err.value)
    assert "`total` has the wrong values" in msg and "[1. 3.]" in msg and "[1. 2.]" in msg and "(1,)" in msg
    expect_close("total", jnp.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-7]))


def test_expect_replicated_explains_the_missing_collective():
    per_device = jax.pmap(lambda x: x * 2.0, axis_name=DEVICES)(jnp.arange(8.0))
    with pytest.raises(CheckFailed, match=r"different values on different devices.*lax.psum.*'devices'"):
        expect_replicated("scaled_sum", per_device, axis_name=DEVICES)
    total = jax.pmap(lambda x: lax.psum(x, DEVICES), axis_name=DEVICES)(jnp.arange(8.0))
    expect_replicated("scaled_sum", total, axis_name=DEVICES)


def test_show_values_uses_four_decimals_commas_and_summarises_long_arrays():
    assert show_values([1.0, 2.5]) == "[1. , 2.5]"
    assert show_values(np.array([1 / 3])) == "[0.3333]"
    assert show_values(jnp.arange(3)) == "[0, 1, 2]"
    assert show_values(jnp.arange(3), dtype=float) == "[0., 1., 2.]"
    assert show_values(np.arange(20)) == "[ 0,  1,  2, ..., 17, 18, 19]"
    assert show_values(2.0) == "2."


def test_same_values_needs_equal_shapes_and_values_within_tol():
    assert same_values(jnp.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-6]))
    assert not same_values(jnp.array([1.0, 2.0]), np.array([1.0, 2.001]))
    assert not same_values(np.zeros(3), np.zeros((3, 1)))  # broadcastable is not enough
    assert not same_values(np.zeros(2), np.zeros(3))  # and a mismatch does not raise
    assert not same_values(1.0, 1.0 + 5e-5)  # default tol 1e-5 ...
    assert same_values(1.0, 1.0 + 5e-5, 1e-4)  # ... or the one passed
    assert same_values([jnp.float32(1.0), 2], [1.0, 2.0], dtype=float)
    assert isinstance(same_values(1.0, 1.0), bool)
