"""`namedaxes.checking.stubs`: a notebook cell stopped by an answer that is not there yet says so."""

import linecache

import pytest
from checking_helpers import run_cell

from namedaxes import checking
from namedaxes.checking import (
    TEXT,
    exercises_for,
    progress_rows,
    registry,
    stubs,
)


def _run_cell(source: str, number: int, namespace: dict) -> None:
    filename = f"<ipython-input-{number}-0badcafe>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), namespace)


def test_a_test_cell_run_before_its_answer_cell_is_not_attempted(monkeypatch):
    module = "tests.fake_exercises_undefined"
    monkeypatch.setitem(registry._REGISTRY, module, {})
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
    monkeypatch.setitem(registry._REGISTRY, module, {})
    exercises_for(module)("scaled", lambda f: None)
    with pytest.raises(NameError) as err:
        _run_cell("print(not_an_exercise)\n", 42, {})
    assert stubs.undefined_answer(err.value) is None  # a typo is not an unstarted exercise
    with pytest.raises(NameError) as err:
        exec("scaled", {})  # not raised in a notebook cell: nothing to say about it
    assert stubs.undefined_answer(err.value) is None
    assert progress_rows(module) == [("scaled", "unchecked", "")]


def test_a_stub_stops_a_plain_cell_with_one_line():
    ns = run_cell("def train(p):\n    raise NotImplementedError()\n", number=7)
    with pytest.raises(NotImplementedError) as err:
        ns["train"](1.0)
    assert checking.stubs._stub_message(err.value) == TEXT["uses_unwritten"].format(name="train")
    with pytest.raises(NotImplementedError) as err:
        run_cell("raise NotImplementedError()\n", number=8)
    assert checking.stubs._stub_message(err.value) == TEXT["cell_not_written_yet"]
    with pytest.raises(NotImplementedError) as err:
        raise NotImplementedError("a library feature")  # a real NotImplementedError keeps its traceback
    assert checking.stubs._stub_message(err.value) is None


def test_a_stub_that_raised_in_a_worker_process_gets_the_same_line():
    class WorkerError(RuntimeError):  # the shape of multiprocess.WorkerError: text + remote_type
        remote_type = "NotImplementedError"

    text = (
        "process 0 of 2 raised NotImplementedError (so did process 1)\n(while running `run_on_devices`)\n\n"
        '  Traceback (most recent call last):\n    File "<shipped run_on_devices>", line 7, in run_on_devices\n'
        "      return jax.pmap(fn, axis_name=axis_name)(local_x)\n"
        '    File "<shipped global_sum>", line 3, in global_sum\n      raise NotImplementedError()\n'
        "  NotImplementedError"
    )
    assert checking.stubs._stub_message(WorkerError(text)) == TEXT["uses_unwritten"].format(name="global_sum")
    WorkerError.remote_type = "ValueError"
    assert checking.stubs._stub_message(WorkerError(text)) is None


def test_a_name_a_cell_cannot_find_says_which_cell_to_run_first():
    """Run out of order or after a restart: `q` names the import cell; any other name the cells above."""
    with pytest.raises(NameError) as err:
        _run_cell('"""`scaled_sum` sums x * 2.0."""\nq.scaled_sum.check(scaled_sum)\n', 43, {})
    assert stubs.run_order_message(err.value) == TEXT["q_not_defined"]
    assert "import ... as q" in TEXT["q_not_defined"] and "Run All Above Selected Cell" in TEXT["q_not_defined"]


def test_the_import_line_the_message_names_is_in_every_notebooks_import_cell():
    """ "the one with the line `from namedaxes.exercises import ... as q`" (issue 48: it said "the one that ends
    with `import ... as q`", which 09's and 10's import cells do not): true of every notebook and edition."""
    import re
    from pathlib import Path

    import nbformat

    from courseinfo.nbgrader_metadata import nbgrader_cell

    assert "`from namedaxes.exercises import ... as q`" in TEXT.english("q_not_defined")
    root = Path(__file__).resolve().parents[3]
    notebooks = sorted((root / "solutions").glob("**/*.ipynb")) + sorted((root / "notebooks").glob("**/*.ipynb"))
    assert len(notebooks) >= 40, notebooks
    for path in notebooks:
        cells = [c for c in nbformat.read(path, as_version=4).cells if nbgrader_cell(c).grade_id == "imports"]
        assert len(cells) == 1 and re.search(r"^from namedaxes\.exercises import \w+ as q$", cells[0].source, re.M), (
            path
        )
    with pytest.raises(NameError) as err:
        _run_cell("x = jnp.arange(3)\n", 44, {})
    assert stubs.run_order_message(err.value) == TEXT["run_cells_above"].format(name="jnp")


def test_a_name_missing_inside_a_function_or_outside_a_cell_keeps_its_traceback():
    ns: dict = {}
    _run_cell("def f():\n    return missing_inside\n", 45, ns)
    with pytest.raises(NameError) as err:
        _run_cell("f()\n", 46, ns)
    assert stubs.run_order_message(err.value) is None, "a name missing in the student's function: Python's words"
    with pytest.raises(NameError) as err:
        exec("q", {})
    assert stubs.run_order_message(err.value) is None
    assert stubs.run_order_message(NameError("Found an unbound axis name: devices")) is None


def test_the_run_order_words_are_in_chinese_for_a_chinese_kernel():
    from namedaxes import i18n

    with pytest.raises(NameError) as err:
        _run_cell("q.scaled_sum.check(scaled_sum)\n", 47, {})
    i18n.set_language("zh")
    try:
        message = stubs.run_order_message(err.value)
    finally:
        i18n.set_language(None)
    assert message.startswith("这个内核里没有定义 `q`") and "`from namedaxes.exercises import ... as q`" in message
