"""autograder/judge/formulas.py: which reference observations are formula cells, the prelude that hands a
kernel its run's cases, and the solution's answers it runs (notebook 10's draws and verdicts are proven in
tests/namedaxes/exercises/test_training_at_scale.py)."""

from __future__ import annotations

import os
from types import SimpleNamespace

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from autograder.judge.formulas import FormulaRun, formula_run, is_formula_observation, solution_answers
from namedaxes.grading import FORMULA_KEY, HIDDEN_CASES_ENV, hidden_cases


class _Refs(dict):
    def __init__(self, loaded, secret=b"s" * 32):
        super().__init__(loaded)
        self.secret, self.pairs = secret, {}


def _cell(grade_id: str, source: str):
    cell = new_code_cell(source)
    cell.metadata["nbgrader"] = {"grade_id": grade_id, "solution": False, "grade": False, "locked": True}
    return cell


def test_only_a_module_of_the_exercises_package_makes_a_formula_cell():
    assert is_formula_observation({FORMULA_KEY: {"module": "namedaxes.exercises.training_at_scale"}})
    assert not is_formula_observation({FORMULA_KEY: {"module": "os"}})
    assert not is_formula_observation({FORMULA_KEY: "namedaxes.exercises.training_at_scale"})
    assert not is_formula_observation({"values": [1.0]})


def test_an_assignment_without_formula_cells_hands_the_kernel_nothing():
    source = SimpleNamespace(raw=b"{}", nb=new_notebook())
    run = formula_run(source, _Refs({"a_cell": {"values": 1}}))
    assert run == FormulaRun() and run.prelude() == ""
    assert (
        formula_run(source, {"a_cell": {FORMULA_KEY: {"module": "namedaxes.exercises.x"}}}) == FormulaRun()
    )  # no secret


def test_the_prelude_sets_the_cases_the_kernel_reads(monkeypatch):
    monkeypatch.setenv(HIDDEN_CASES_ENV, "")
    cases = {"namedaxes.exercises.demo:f": [{"n": 3}, {"n": 'it\'s "quoted"'}]}
    exec(FormulaRun(cases, {}).prelude(), {})
    assert hidden_cases("namedaxes.exercises.demo:f") == cases["namedaxes.exercises.demo:f"]
    assert hidden_cases("namedaxes.exercises.demo:g") is None
    monkeypatch.setenv(HIDDEN_CASES_ENV, "not json")
    assert hidden_cases("namedaxes.exercises.demo:f") is None
    monkeypatch.delenv(HIDDEN_CASES_ENV)
    assert hidden_cases("namedaxes.exercises.demo:f") is None and HIDDEN_CASES_ENV not in os.environ


def test_the_solutions_answers_run_after_its_imports_in_the_notebooks_order():
    nb = new_notebook(
        cells=[
            _cell("setup", "raise RuntimeError('the set-up cell never runs here')"),
            _cell("imports", "import math"),
            _cell("double_answer", "def double(x):\n    return half(x) * 4"),
            _cell("half_answer", "def half(x):\n    return math.floor(x / 2)"),
        ]
    )
    answers = solution_answers(nbformat.from_dict(nb), ["half", "double"])
    assert answers["double"](5) == 8 and answers["half"](5) == 2
    with pytest.raises(LookupError, match="triple_answer"):
        solution_answers(nb, ["triple"])


def test_a_wrong_figure_is_named_only_where_every_wrong_case_is_that_mistakes():
    """`named_figures`: a figure is a mistake's when on every case where it differs from the reference's it is
    that mistake's value there (a right case says nothing; a 0 is the check's own rule, never a mistake's)."""
    import numpy as np

    from autograder.judge.compare import compare
    from autograder.judge.formulas import named_figures

    want = {"flops": np.array([10.0, 20.0, 30.0])}
    listed = {"flops": [[(5.0, "half"), (0.0, "none")], [(10.0, "half")], [(15.0, "half"), (60.0, "twice")]]}

    def named(got):
        observed = {"flops": np.asarray(got, np.float64)}
        found = named_figures(compare(want, observed), want, observed, listed, "m")
        return [(d.kind.value, d.get("mistake")) for d in found.differences]

    assert named([5.0, 10.0, 15.0]) == [("known_mistake", "half")]
    assert named([10.0, 10.0, 15.0]) == [("known_mistake", "half")]  # right on the first case: still half
    assert named([5.0, 20.0, 60.0]) == [("values_differ", "")]  # half, then twice: no one mistake
    assert named([0.0, 20.0, 30.0]) == [("values_differ", "")]  # a 0 is no mistake's value
    assert named([10.0, 20.0, 30.0]) == []
    assert [kind for kind, _ in named([5.0, 10.0])] == ["expected_got"]  # another shape: said as such
    text = {"flops": np.array(["a", "b", "c"])}  # recorded, but no numbers: never named, never a crash
    assert [d.kind.value for d in named_figures(compare(want, text), want, text, listed, "m").differences] == [
        d.kind.value for d in compare(want, text).differences
    ]
