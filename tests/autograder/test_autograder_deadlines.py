"""End-to-end: a course with due dates, an extension and a late policy, graded in course mode.

Three students hand in the same right answer: on time, two days late, and two days late with a
three-day extension. The late one loses 2 started days x 10 % of the maximum, and the penalty shows
in grades.csv, results.json, the feedback page, the class report and nbgrader's gradebook (its
late_submission_penalty, which `nbgrader export` prints). A typo in deadlines.toml stops the batch
before anything is graded and leaves the previous grades.csv as it was.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import autograder_specs as specs
import nbformat
import pytest
from autograder_harness import CELL_TIMEOUT, read_csv

from autograder.course.classroom import grade_command

AID = specs.A01
DUE = "2026-12-10T23:59:00+01:00"
STUDENTS = {"ontime": "2026-12-10 20:00:00.000000 UTC", "late": "2026-12-12 12:00:00.000000 UTC"}
STUDENTS["extended"] = STUDENTS["late"]


def _course(tmp_path: Path) -> Path:
    course = tmp_path / "course"
    (course / "source" / AID).mkdir(parents=True)
    (course / "source" / AID / f"{AID}.ipynb").write_bytes((specs.REPO / "solutions" / f"{AID}.ipynb").read_bytes())
    (course / "nbgrader_config.py").write_text("c = get_config()  # noqa: F821\nc.CourseDirectory.course_id = 't'\n")
    bindir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bindir + os.pathsep + os.environ["PATH"]}
    run = dict(cwd=course, env=env, check=True, capture_output=True, timeout=300)
    subprocess.run([f"{bindir}/nbgrader", "generate_assignment", AID, "--log-level=ERROR"], **run)
    source_nb = nbformat.read(specs.REPO / "solutions" / f"{AID}.ipynb", as_version=4)
    right = next(s for s in specs.SPECS if s.student == "correct" and s.assignment == AID)
    for student, stamp in STUDENTS.items():
        folder = course / "submitted" / student / AID
        folder.mkdir(parents=True)
        (folder / f"{AID}.ipynb").write_bytes(specs.notebook_for(right, source_nb, {}))
        (folder / "timestamp.txt").write_text(stamp)
    (course / "deadlines.toml").write_text(
        f"[due]\n{AID} = {DUE}\n\n[late]\ngrace_minutes = 10\npenalty_per_day = 0.1\nmax_penalty = 0.5\n"
    )
    (course / "extensions.csv").write_text(f"student,assignment,days\nextended,{AID},3\n")
    return course


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("deadlines")
    course = _course(tmp)
    # the grader's own reference cache (keyed by content, as `make grade` and the fixture class use it): its
    # notebook 01 reference is computed once per run, not again here
    cmd = grade_command(course, timeout=CELL_TIMEOUT)
    proc = subprocess.run(cmd, cwd=specs.REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return course


def test_the_late_hand_in_loses_two_started_days(graded):
    rows = {r["student"]: r for r in read_csv(graded / "grades" / "grades.csv")}
    full = float(rows["ontime"]["max_score"])
    assert float(rows["ontime"]["score"]) == float(rows["extended"]["score"]) == full
    assert rows["ontime"]["late_penalty"] == rows["extended"]["late_penalty"] == ""
    assert float(rows["late"]["late_penalty"]) == pytest.approx(0.2 * full)
    assert float(rows["late"]["score"]) == pytest.approx(0.8 * full)
    assert (rows["late"]["handed_in"], rows["late"]["due"]) == ("2026-12-12T12:00:00+00:00", DUE)
    late = {r["student"]: r.get("late") for r in json.loads((graded / "grades" / "results.json").read_text())["rows"]}
    assert late["ontime"] is None and late["extended"] is None and late["late"]["days"] == 2


def test_the_feedback_page_and_the_report_say_why(graded):
    page = (graded / "grades" / "feedback" / "late" / f"{AID}.html").read_text()
    assert "Late hand-in: handed in 2026-12-12 13:00+01:00, 1 d 13 h 1 min after the due date" in page
    assert "Late hand-in" not in (graded / "grades" / "feedback" / "ontime" / f"{AID}.html").read_text()
    report = (graded / "grades" / "report.html").read_text()
    assert '<h2 id="late">Late hand-ins</h2>' in report and "late &minus;" in report


def test_nbgraders_gradebook_has_the_due_date_and_the_penalty(graded):
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{graded / 'gradebook.db'}") as gb:
        assert gb.find_assignment(AID).duedate.isoformat() == "2026-12-10T22:59:00"
        late = gb.find_submission(AID, "late")
        assert late.notebooks[0].late_submission_penalty == pytest.approx(0.2 * late.max_score)
        extended = gb.find_submission(AID, "extended")
        assert extended.extension.days == 3 and extended.notebooks[0].late_submission_penalty is None
        assert gb.find_submission(AID, "ontime").notebooks[0].late_submission_penalty is None


def test_a_typo_in_the_deadlines_stops_the_batch_and_keeps_the_grades(graded, tmp_path):
    before = (graded / "grades" / "grades.csv").read_bytes()
    policy = graded / "deadlines.toml"
    good = policy.read_text()
    policy.write_text(good.replace(DUE, "2026-12-10T23:59:00"))
    try:
        proc = subprocess.run(
            grade_command(graded, cache=tmp_path / "cache", timeout=CELL_TIMEOUT),
            cwd=specs.REPO,
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        policy.write_text(good)
    assert proc.returncode == 1
    assert f"deadlines.toml:2: the due date of {AID}: 2026-12-10T23:59:00 has no time zone" in proc.stderr
    assert (graded / "grades" / "grades.csv").read_bytes() == before
