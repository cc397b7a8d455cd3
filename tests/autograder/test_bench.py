"""The grading benchmark's class (autograder/bench.py, `make bench-grade`): each student's answers right, wrong or
left out in a fixed mix, a wrong answer really different, and the stage table. Nothing is graded here: the
benchmark's timings are `make bench-grade`'s."""

from __future__ import annotations

import autograder_specs as specs
import nbformat

from autograder import bench
from autograder.course.classroom import release_notebook, typed_solution
from courseinfo.nbgrader_metadata import nbgrader_cell


def _answers(nb) -> dict[str, str]:
    return {nbgrader_cell(c).grade_id: c.source for c in nb.cells if nbgrader_cell(c).solution}


def test_a_wrong_answer_swaps_one_collective_or_raises():
    assert bench._wrong("y = lax.psum(x, 'i')\nz = lax.psum(y, 'i')") == "y = lax.pmean(x, 'i')\nz = lax.psum(y, 'i')"
    assert bench._wrong("return x * 2.0") == "return x * 3.0"
    assert bench._wrong("return x").endswith("raise ValueError('wrong on purpose')")


def test_each_student_answers_three_in_five_right_one_wrong_one_not_at_all():
    source = nbformat.read(specs.REPO / "solutions" / f"{specs.A02}.ipynb", as_version=4)
    release, right = release_notebook(specs.A02), _answers(source)
    kinds = {"right": 0, "wrong": 0, "unanswered": 0}
    for student in range(5):
        for gid, text in _answers(bench.make_submission(source, release, student)).items():
            if text == typed_solution(right[gid]):
                kinds["right"] += 1
            elif "raise NotImplementedError()" in text:
                kinds["unanswered"] += 1
            else:
                kinds["wrong"] += 1
    answers = len(right)
    assert kinds == {"right": 3 * answers, "wrong": answers, "unanswered": answers}


def test_the_stage_table_gives_the_mean_seconds_of_each_stage_per_assignment():
    timings = [
        {"assignment": "02", "stages": {"cells": 1.0, "start": 0.5}},
        {"assignment": "02", "stages": {"cells": 3.0}},
        {"assignment": "01", "stages": None},
    ]
    header, first, second = bench.stage_table(timings).splitlines()
    assert header.split()[-2:] == ["cells", "start"]
    assert first.split() == ["01", "0.000", "0.000"] and second.split() == ["02", "2.000", "0.250"]
