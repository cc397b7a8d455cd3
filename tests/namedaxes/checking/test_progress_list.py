"""Unit tests of namedaxes/checking/progress_list.py.

`q.progress()` lists passed, failed and unchecked exercises in order and notices a redefined answer.
"""

from __future__ import annotations

import pytest
from checking_helpers import fresh_module

from namedaxes import checking
from namedaxes.checking import (
    TEXT,
    CheckFailed,
    Exercise,
    progress,
    progress_rows,
)


def test_progress_lists_passed_failed_and_unchecked_exercises_in_order(monkeypatch, capsys):
    module = "tests.fake_exercises_progress"
    ex = fresh_module(module, monkeypatch)
    assert progress_rows(module) == [("a", "unchecked", ""), ("b", "unchecked", ""), ("c", "unchecked", "")]
    ex["a"].check(lambda x: 2 * x)
    assert progress_rows(module)[0] == ("a", "unchecked", "")  # its second check has not run
    ex["a_structure"].check(lambda x: 2 * x)
    with pytest.raises(CheckFailed):
        ex["b"].check(lambda x: x)
    rows = progress_rows(module)
    assert (
        rows[0] == ("a", "passed", "") and rows[1][:2] == ("b", "failed") and "`b` has the wrong values" in rows[1][2]
    )
    capsys.readouterr()
    monkeypatch.setenv("NO_COLOR", "1")
    progress(module)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "1 of 3 exercises pass"
    assert (
        out[1] == "  ✓ a"
        and out[2].startswith("  ✗ b: `b` has the wrong values")
        and out[3] == "  • c: not checked yet; run its test cell"
    )
    ex["b"].check(lambda x: 3 * x)
    ex["c"].check(lambda x: x)
    capsys.readouterr()
    progress(module)
    out = capsys.readouterr().out
    assert out.startswith("3 of 3 exercises pass") and TEXT["progress_done"] in out


def test_progress_notices_an_answer_redefined_since_its_check(monkeypatch):
    module = "tests.fake_exercises_changed"
    ex = fresh_module(module, monkeypatch)

    def a(x):
        return 2 * x

    namespace = {"a": a}
    monkeypatch.setattr(checking.notebook, "user_namespace", lambda: namespace)
    ex["a"].check(a)
    ex["a_structure"].check(a)
    assert progress_rows(module)[0] == ("a", "passed", "")
    namespace["a"] = lambda x: 2 * x  # the student edited and re-ran the answer cell, not the test cell
    assert progress_rows(module)[0] == ("a", "changed", "")


def test_every_exercise_module_has_progress():
    import importlib
    import pkgutil

    import namedaxes.exercises as pkg

    for info in pkgutil.iter_modules(pkg.__path__):
        module = importlib.import_module(f"namedaxes.exercises.{info.name}")
        own = {ex.module for ex in (getattr(module, n) for n in dir(module)) if isinstance(ex, Exercise)}
        notebook = importlib.import_module(own.pop()) if own else module  # an exercise module of its own: its face
        assert callable(notebook.progress), module.__name__
        assert {name for name, _, _ in progress_rows(notebook.__name__)} == {
            ex.name for ex in (getattr(notebook, n) for n in dir(notebook)) if isinstance(ex, Exercise)
        }


def test_progress_lists_a_packages_exercises_in_the_order_of_its_face(monkeypatch):
    """A notebook's package imports its exercise modules in any order (ruff sorts them), so they register in
    that order; the progress list follows the face's `__all__`, the notebook's order."""
    import sys
    import types

    module = "tests.fake_exercises_face"
    ex = fresh_module(module, monkeypatch)
    face = types.ModuleType(module)
    face.__all__ = ["c", "a", "b", "progress"]
    monkeypatch.setitem(sys.modules, module, face)
    assert [name for name, _, _ in progress_rows(module)] == ["c", "a", "b"]
    del ex
