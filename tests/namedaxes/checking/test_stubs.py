"""`namedaxes.checking.stubs`: a notebook cell stopped by an answer that is not there yet says so."""

import linecache

import pytest

from namedaxes.checking import TEXT, exercises_for, progress_rows, stubs, verdicts


def _run_cell(source: str, number: int, namespace: dict) -> None:
    filename = f"<ipython-input-{number}-0badcafe>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), namespace)


def test_a_test_cell_run_before_its_answer_cell_is_not_attempted(monkeypatch):
    module = "tests.fake_exercises_undefined"
    monkeypatch.setitem(verdicts._REGISTRY, module, {})
    exercise = exercises_for(module)
    q = {"scaled": exercise("scaled", lambda f: None), "other": exercise("other", lambda f: None)}
    with pytest.raises(NameError) as err:
        _run_cell("q['scaled'].check(scaled)\n", 41, {"q": q})
    message = stubs.undefined_answer(err.value)
    assert message == TEXT["not_defined_yet"].format(name="scaled")
    assert message.startswith("`scaled` is not defined yet: run the cell with `def scaled(...)` first")
    assert progress_rows(module) == [("scaled", "not_attempted", message), ("other", "unchecked", "")]


def test_other_name_errors_keep_their_traceback(monkeypatch):
    module = "tests.fake_exercises_undefined_other"
    monkeypatch.setitem(verdicts._REGISTRY, module, {})
    exercises_for(module)("scaled", lambda f: None)
    with pytest.raises(NameError) as err:
        _run_cell("print(not_an_exercise)\n", 42, {})
    assert stubs.undefined_answer(err.value) is None  # a typo is not an unstarted exercise
    with pytest.raises(NameError) as err:
        exec("scaled", {})  # not raised in a notebook cell: nothing to say about it
    assert stubs.undefined_answer(err.value) is None
    assert progress_rows(module) == [("scaled", "unchecked", "")]
