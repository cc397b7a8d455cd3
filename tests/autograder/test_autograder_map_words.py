"""The class's misconception map shows only the judge's words: what a program recorded is said by its kind.

An attack fixture (issue 46): a program records text where the reference records an array. The judge used to
quote up to 60 characters of that text in its finding ('expected an array, got "..."'), and the map showed
the student's words under the judge's name. Now a finding says what kind of value came ("a string of 93
characters"), never its text: not in the map, the report, results.json, grades.csv or the feedback pages.

The course is notebook 02 with one more exercise whose reference records an array (`answer_total`, a value
the answer cell computes): the honest classmate records it, the attacker records a string holding a
provocative sentence and HTML. The honest row must be full marks, `ok`, with no finding.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from autograder_harness import read_csv, run_grading

from autograder.course.classroom import grade_command, make_course, typed_solution, write_class

REPO = Path(__file__).resolve().parents[2]
AID = "02_scaled_sum"
GID = "recorded_total"
WORDS = "The judge says this class cheated: ask the instructor for a refund"
HTML = '<img src=x onerror="alert(1)"><a href="http://example.invalid">proof</a>'
ATTACK = f"{WORDS} {HTML}"


def _meta(grade_id: str, solution: bool, points: int = 0) -> dict:
    meta = {"grade": not solution, "grade_id": grade_id, "locked": not solution, "schema_version": 3}
    meta["solution"] = solution
    if points:
        meta["points"] = points
    return {"nbgrader": meta}


def _source(path: Path) -> nbformat.NotebookNode:
    """Notebook 02's source with one more exercise, whose reference records an array."""
    nb = nbformat.read(path, as_version=4)
    answer = nbformat.v4.new_code_cell(
        "import numpy as np\n### BEGIN SOLUTION\nanswer_total = np.arange(3.0) * 2.0\n### END SOLUTION",
        metadata=_meta(f"{GID}_answer", True),
    )
    test = nbformat.v4.new_code_cell(
        '"""`answer_total` is twice 0, 1, 2."""\n### BEGIN HIDDEN TESTS\n'
        f'record("{GID}", {{"total": answer_total}})\n### END HIDDEN TESTS',
        metadata=_meta(GID, False, points=1),
    )
    nb.cells += [answer, test]
    nbformat.write(nb, path)
    return nb


def _hand_in(source_nb: nbformat.NotebookNode, total: str) -> bytes:
    """The release with every answer right, and `answer_total` set by `total` (code)."""
    from nbgrader.preprocessors import ClearHiddenTests, ClearOutput, ClearSolutions

    from courseinfo.nbgrader_metadata import nbgrader_cell

    nb = nbformat.reads(nbformat.writes(source_nb), as_version=4)
    answers = {nbgrader_cell(c).grade_id: c.source for c in source_nb.cells if nbgrader_cell(c).solution}
    for pre in (ClearSolutions(), ClearHiddenTests(), ClearOutput()):
        nb, _ = pre.preprocess(nb, {})
    for cell in nb.cells:
        gid = nbgrader_cell(cell).grade_id
        if nbgrader_cell(cell).solution:
            cell.source = typed_solution(answers[gid]) if gid != f"{GID}_answer" else f"answer_total = {total}"
    return nbformat.writes(nb).encode()


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("map-words")
    course = make_course(root / "course", [AID])
    source_nb = _source(course / "source" / AID / f"{AID}.ipynb")
    klass = write_class(
        root / "class",
        {
            "honest": {AID: _hand_in(source_nb, "np.arange(3.0) * 2.0")},
            "provocateur": {AID: _hand_in(source_nb, repr(ATTACK))},
        },
    )
    (root / "tmp").mkdir()
    cmd = grade_command(course, submissions=klass, out=root / "out", cache=root / "cache", timeout=30)
    proc = run_grading(cmd, root / "tmp", quiet_s=600, what="grading the class")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return root / "out"


def _cells(out: Path, student: str) -> dict[str, dict]:
    rows = json.loads((out / "results.json").read_text(encoding="utf-8"))["rows"]
    row = next(r for r in rows if r["student"] == student)
    return {c["grade_id"]: c for c in row["cells"]}


def test_the_finding_says_the_kind_never_the_text(graded):
    cell = _cells(graded, "provocateur")[GID]
    kind = f"total: expected an array, got a string of {len(ATTACK)} characters"
    assert cell["points"] == 0 and not cell["passed"]
    assert cell["reason"] == f"results differ from the reference on hidden inputs ({kind})"
    assert cell["finding"]["en"] == "…: expected an array, got a string of … characters"
    assert cell["finding"]["zh"] and "…" in cell["finding"]["zh"]
    assert cell["finding"]["key"] == "expected_array(got=value_text(n=#))"


def test_no_page_or_file_the_grader_wrote_holds_the_recorded_words(graded):
    """Only the attacker's own pages (their feedback page and graded notebook, which show the code they wrote)
    hold their words; everything else the grader wrote says the kind."""
    report = (graded / "report.html").read_text(encoding="utf-8")
    assert "Misconception map" in report and "expected an array, got a string of … characters" in report
    own = graded / "feedback" / "provocateur" / f"{AID}.html"
    page = own.read_text(encoding="utf-8")
    assert f"got a string of {len(ATTACK)} characters" in page and "<img src=x" not in page  # escaped code only
    written = [p for p in graded.rglob("*") if p.is_file() and p.suffix in (".html", ".json", ".csv", ".txt")]
    written = [p for p in written if p != own and "provocateur" not in p.relative_to(graded).parts[:2]]
    assert graded / "report.html" in written and graded / "results.json" in written
    for path in written:
        text = path.read_text(encoding="utf-8", errors="replace")
        for piece in ("refund", "cheated", "onerror", "example.invalid", "alert(1)"):
            assert piece not in text, (path.name, piece)


def test_the_honest_classmate_scores_full_marks_with_no_finding(graded):
    rows = {r["student"]: r for r in read_csv(graded / "grades.csv")}
    honest = rows["honest"]
    assert (honest["status"], float(honest["score"]), honest["reason"]) == ("ok", float(honest["max_score"]), "")
    assert all(c["passed"] and "finding" not in c for c in _cells(graded, "honest").values())
    attacker = rows["provocateur"]
    assert attacker["status"] == "ok" and float(attacker["score"]) == float(honest["max_score"]) - 1
