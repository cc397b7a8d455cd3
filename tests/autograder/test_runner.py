"""The runner's first steps (autograder/runner.py), nothing graded: grading one assignment (issue 61) with the
docs' deadlines.toml, which names other assignments too (their due dates are ignored for the run, a name no
assignment has is still an error); a folder of submissions holding one notebook, graded without `missing`
rows for the rest; and a regrade of some students keeping the whole folder's assignments. Nothing runs a
kernel: these are the batch's first steps (runner.find, runner.place_handins, runner.handed_in_sources)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from autograder import runner
from autograder.records import GraderError, Options, Status

ROOT = Path(__file__).resolve().parents[2]
A01, A02, A10 = "01_axis_names", "02_scaled_sum", "10_training_at_scale"


def docs_deadlines() -> str:
    """The example deadlines.toml of docs/instructors.md, as an instructor copies it."""
    text = (ROOT / "docs" / "instructors.md").read_text(encoding="utf-8")
    block = re.search(r"```toml\n# COURSE/deadlines.toml\n(.*?)```", text, re.S)
    assert block, "docs/instructors.md lost its deadlines.toml example"
    return block.group(1)


def _course(tmp_path: Path, deadlines: str) -> Path:
    course = tmp_path / "course"
    (course / "submitted").mkdir(parents=True)
    (course / "deadlines.toml").write_text(deadlines)
    return course


def test_one_assignment_is_graded_with_the_docs_deadlines_naming_others(tmp_path):
    course = _course(tmp_path, docs_deadlines())
    assert A01 in docs_deadlines() and A02 in docs_deadlines()  # the example names two assignments
    sources, policy = runner.find(runner.resolve(Options(course=course, assignments=[A02])))
    assert list(sources) == [A02]
    assert policy.due_for("alice", A02).isoformat() == "2026-12-17T23:59:00+01:00"


def test_a_deadline_for_no_assignment_of_the_course_is_still_an_error(tmp_path):
    course = _course(tmp_path, docs_deadlines().replace(A01, "01_axis_nmaes"))
    with pytest.raises(GraderError, match="no assignment '01_axis_nmaes' in this course"):
        runner.find(runner.resolve(Options(course=course, assignments=[A02])))


def test_a_folder_holding_one_notebook_grades_it_without_missing_rows_for_the_rest(tmp_path, capsys):
    folder = tmp_path / "class"
    (folder / "ann").mkdir(parents=True)
    (folder / "ann" / f"{A10}.ipynb").write_text("{}")
    (folder / "bob").mkdir()
    (folder / "bob" / f"{A10}-Copy1.ipynb").write_text("{}")  # meant for 10: its row says why not graded
    batch = runner.resolve(Options(course=_course(tmp_path, docs_deadlines()), submissions=folder))
    sources, policy = runner.find(batch)
    intake = runner.place_handins(batch, sources, policy)
    try:
        graded = runner.handed_in_sources(batch, sources, intake)
        assert list(graded) == [A10]
        assert "grading the assignment(s) handed in: 10_training_at_scale" in capsys.readouterr().out
        rows = runner.not_submitted_rows(graded, intake)
        assert [(r.student, r.assignment, r.status) for r in rows] == [
            ("bob", A10, Status.MISSING),
            ("bob", "", Status.UNPLACEABLE),
        ]
        named = runner.resolve(Options(course=batch.course, submissions=folder, assignments=[A01, A10]))
        assert runner.handed_in_sources(named, sources, intake) is sources  # ASSIGNMENT= is taken as said
    finally:
        intake.close()


def test_regrading_some_students_keeps_the_assignments_the_whole_folder_has(tmp_path):
    """STUDENT= regrades some students into a class's output: the assignments come from the whole folder, so a
    regraded student who handed in only 02 still gets the class run's `missing` row for 10 (found in CI: a
    regrade had dropped them)."""
    folder = tmp_path / "class"
    for student, assignment in (("ann", A02), ("bob", A10)):
        (folder / student).mkdir(parents=True)
        (folder / student / f"{assignment}.ipynb").write_text("{}")
    course = _course(tmp_path, docs_deadlines())
    whole = runner.resolve(Options(course=course, submissions=folder))
    some = runner.resolve(Options(course=course, submissions=folder, students=["ann"]))
    sources, policy = runner.find(whole)
    for batch in (whole, some):
        intake = runner.place_handins(batch, sources, policy)
        try:
            assert sorted(runner.handed_in_sources(batch, sources, intake)) == [A02, A10]
        finally:
            intake.close()
