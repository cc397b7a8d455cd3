"""A busy machine never fails a grade: notebook 10 graded while busy loops hold every core.

On a loaded 2-core machine notebook 10's reference run once went past the fixed 30 s per cell in its
`measure` cell; the grader refused the assignment and every row was `error`. Now the limits follow
what the reference's own run took on this machine, and a reference that runs out of time runs once
more with a longer limit (autograder/run/time_limits.py). Here a fresh reference cache makes the
reference run under the load too (the case that failed), with the grader's default limits (no
override: an instructor on a busy machine types nothing special). Two hand-ins: the solution's answers
typed into the release (10 of 10) and the release untouched (0); both rows must be `ok`.

The load: one CPU-burning process per core (at least 2), started before the grading and killed after it.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import sys
import time
from pathlib import Path

import nbformat
import pytest
from autograder_harness import read_csv, run_grading

from autograder.course.classroom import grade_command, make_course, release_notebook, typed_solution, write_class

REPO = Path(__file__).resolve().parents[2]
AID = "10_training_at_scale"
MAX_POINTS = 10.0  # notebook 10's test cells' points, from its source (checked below)


def _burn() -> None:
    while True:
        pass


def _solved(source_nb, release_nb) -> nbformat.NotebookNode:
    """The release with every answer cell holding the solution's code, as a student would type it."""
    from courseinfo.nbgrader_metadata import nbgrader_cell

    answers = {nbgrader_cell(c).grade_id: c.source for c in source_nb.cells if nbgrader_cell(c).solution}
    nb = nbformat.from_dict(json.loads(nbformat.writes(release_nb)))
    for cell in nb.cells:
        if nbgrader_cell(cell).solution:
            cell.source = typed_solution(answers[nbgrader_cell(cell).grade_id])
    return nb


@pytest.fixture(scope="module")
def busy_grade(tmp_path_factory):
    root = tmp_path_factory.mktemp("busy")
    course = make_course(root / "course", [AID])
    source_nb = nbformat.read(REPO / "solutions" / f"{AID}.ipynb", as_version=4)
    release = release_notebook(AID)
    klass = write_class(
        root / "class",
        {
            "solved": {AID: nbformat.writes(_solved(source_nb, release)).encode()},
            "unanswered": {AID: nbformat.writes(release).encode()},
        },
    )
    (root / "tmp").mkdir()
    cmd = grade_command(course, submissions=klass, out=root / "out", cache=root / "cache")  # default limits
    ctx = multiprocessing.get_context("spawn")  # no fork of a process that may hold JAX's threads
    burners = [ctx.Process(target=_burn, daemon=True) for _ in range(max(2, os.cpu_count() or 1))]
    for p in burners:
        p.start()
    t0 = time.monotonic()
    try:
        proc = run_grading(cmd, root / "tmp", quiet_s=1200, what="grading beside the busy loops")
        alive = all(p.is_alive() for p in burners)
    finally:
        for p in burners:
            os.kill(p.pid, signal.SIGKILL)
            p.join(5)
    seconds = time.monotonic() - t0
    found = root / "out" / "results.json"
    results = json.loads(found.read_text()) if found.exists() else {}
    sys.stderr.write(f"\nnotebook 10 under load: graded in {seconds:.1f} s; {results.get('references')}\n")
    return proc, root / "out", results, source_nb, seconds, alive


def test_the_busy_loops_ran_for_the_whole_grading(busy_grade):
    *_, alive = busy_grade
    assert alive


def test_every_row_is_ok_and_the_solution_scores_full_marks(busy_grade):
    proc, out, results, source_nb, *_ = busy_grade
    assert proc.returncode == 0, proc.stderr[-3000:]
    from courseinfo.nbgrader_metadata import nbgrader_cell

    points = sum(float(nbgrader_cell(c).points or 0) for c in source_nb.cells if nbgrader_cell(c).is_test)
    assert points == MAX_POINTS
    rows = {r["student"]: r for r in read_csv(out / "grades.csv")}
    assert {s: r["status"] for s, r in rows.items()} == {"solved": "ok", "unanswered": "ok"}, rows
    assert float(rows["solved"]["score"]) == float(rows["solved"]["max_score"]) == MAX_POINTS
    assert float(rows["unanswered"]["score"]) == 0.0


def test_the_limits_followed_the_reference_and_the_report_says_them(busy_grade):
    proc, out, results, *_ = busy_grade
    note = results["references"][AID]
    assert note["cell_timeout"] >= 30.0 and note["notebook_budget"] >= 300.0
    assert "reference's slowest cell" in note["limits"]
    assert f"time limits of {AID}: {note['limits']}" in proc.stdout
    report = (out / "report.html").read_text(encoding="utf-8")
    assert "Time limits of this run" in report and note["limits"].split(" (")[0] in report
    if "retried" in note:  # a first run past the floor: the report says it ran twice
        assert "its reference solution ran twice" in report and f"reference of {AID} retried" in proc.stdout


# ---------------------------------------------------------------- a reference that ran out of time, retried
SLOW = "01_axis_names"
SLEEP = 3.0  # a cell of the reference that takes this long whatever the load (it sleeps)
FLOOR = 2.0  # the first run's limit per cell: the sleeping cell runs past it; the retry's is 4x: 8 s


@pytest.fixture(scope="module")
def retried_grade(tmp_path_factory):
    """Notebook 01's reference with one more cell that sleeps past the floor `--timeout 2`: its first run
    runs out of time there, its second (8 s per cell) does not; the solution's answers are then graded
    with a cell limit 5x the reference's slowest cell."""
    root = tmp_path_factory.mktemp("retried")
    course = make_course(root / "course", [SLOW])
    path = course / "source" / SLOW / f"{SLOW}.ipynb"
    source_nb = nbformat.read(path, as_version=4)
    first_code = next(i for i, c in enumerate(source_nb.cells) if c.cell_type == "code")
    source_nb.cells.insert(first_code + 1, nbformat.v4.new_code_cell(f"import time\ntime.sleep({SLEEP})"))
    nbformat.write(source_nb, path)
    klass = write_class(
        root / "class", {"solved": {SLOW: nbformat.writes(_solved(source_nb, release_notebook(SLOW))).encode()}}
    )
    (root / "tmp").mkdir()
    cmd = grade_command(course, submissions=klass, out=root / "out", cache=root / "cache", timeout=FLOOR)
    proc = run_grading(cmd, root / "tmp", quiet_s=600, what="grading with a retried reference")
    return proc, root / "out"


def test_a_reference_past_its_limit_runs_again_and_its_class_is_graded(retried_grade):
    proc, out = retried_grade
    assert proc.returncode == 0, proc.stderr[-3000:]
    row = read_csv(out / "grades.csv")[0]
    assert (row["student"], row["status"], row["score"]) == ("solved", "ok", row["max_score"])
    note = json.loads((out / "results.json").read_text())["references"][SLOW]
    assert f"failed with {FLOOR:g} s per cell" in note["retried"] and "timeout" in note["retried"]
    assert f"ran again with {4 * FLOOR:g} s per cell" in note["retried"]
    assert note["cell_timeout"] >= 5 * SLEEP  # the students' limit follows the second run's slowest cell
    report = (out / "report.html").read_text(encoding="utf-8")
    assert "its reference solution ran twice" in report
    assert f"reference of {SLOW} retried: {note['retried']}" in proc.stdout
