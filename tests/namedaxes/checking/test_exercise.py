"""Unit tests of namedaxes/checking/exercise.py.

An Exercise's check, hints and observe; re-importing a module replaces its exercises.
"""

from __future__ import annotations

import numpy as np
import pytest
from checking_helpers import fresh_module

from namedaxes import checking
from namedaxes.checking import (
    CheckFailed,
    Exercise,
    expect_close,
)


def test_exercise_check_hint_and_observe(capsys):
    ex = Exercise(
        "twice",
        lambda f: expect_close("twice", f(1.0), 2.0),
        hints=["multiply", "by two"],
        observe=lambda f: {"out": np.asarray(f(3.0))},
        module=__name__,
    )
    ex.check(lambda x: 2 * x)
    with pytest.raises(CheckFailed):
        ex.check(lambda x: x)
    for _ in range(3):
        ex.hint()
    out = capsys.readouterr().out
    assert "✓ `twice` passes the visible checks." in out and "Hint 1/2" in out and out.count("Hint 2/2") == 2
    assert float(ex.observe(lambda x: 2 * x)["out"]) == 6.0


def test_reimporting_a_module_replaces_its_exercises(monkeypatch):
    module = "tests.fake_exercises_reimport"
    fresh_module(module, monkeypatch)
    registry = checking.verdicts._REGISTRY[module]
    before = list(registry)
    for old in list(registry.values()):  # the same exercises defined again (same name, same check)
        Exercise(old.name, old._check, module=module)
    assert list(checking.verdicts._REGISTRY[module]) == before
