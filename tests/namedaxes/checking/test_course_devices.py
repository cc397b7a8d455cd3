"""Unit tests of namedaxes/checking/course_devices.py.

A check explains a skipped device set-up.
"""

from __future__ import annotations

import jax
import pytest

from namedaxes.checking import (
    CheckFailed,
    Exercise,
)


def test_exercise_check_explains_a_skipped_device_setup(monkeypatch):
    ex = Exercise("twice", lambda f: None, module=__name__)
    monkeypatch.setattr(jax, "device_count", lambda: 1)
    with pytest.raises(CheckFailed, match=r"need 8 devices, but JAX has 1\. Run the set-up cell"):
        ex.check(lambda x: 2 * x)
