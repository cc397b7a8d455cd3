"""Unit tests of namedaxes/checking/proving.py.

`show_error`, `assert_check_fails` and `assert_check_passes`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from jax import lax

from namedaxes.checking import (
    assert_check_fails,
    assert_check_passes,
    expect_close,
    show_error,
)


def test_show_error_prints_the_real_error(capsys):
    with show_error(NameError, match="unbound axis name"):
        jax.vmap(lambda x: lax.psum(x, "batch"))(jnp.ones(3))
    assert "NameError: Found an unbound axis name: batch" in capsys.readouterr().out


def test_show_error_fails_when_nothing_is_raised():
    with (
        pytest.raises(AssertionError, match="should raise ValueError, but it ran without an error"),
        show_error(ValueError),
    ):
        pass


def test_show_error_fails_on_a_different_message():
    with (
        pytest.raises(AssertionError, match="expected an error matching"),
        show_error(ValueError, match="context mesh"),
    ):
        raise ValueError("something else")


def test_assert_check_fails_and_passes():
    def check(v):
        expect_close("v", v, 1.0)

    assert "wrong values" in assert_check_fails(check, 2.0, match="wrong values")
    with pytest.raises(AssertionError, match="accepted an answer"):
        assert_check_fails(check, 1.0)
    assert_check_passes(check, 1.0)
