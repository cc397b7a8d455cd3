"""The instructor's hand-in steps (tools/handin.py) on a private course and exchange, without a browser.

The whole loop through the Assignment List is tests/browser/test_handin.py; here are the
decisions that must hold without it: what a roster may contain, and that feedback is returned
only for the hand-in it is about (matched the way nbgrader's fetch_feedback matches it).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import machine
import pytest

from tools import handin

ROOT = Path(__file__).resolve().parents[2]

AID = "02_scaled_sum"


@pytest.fixture
def course(tmp_path) -> Path:
    folder = tmp_path / "course"
    folder.mkdir()
    (folder / "nbgrader_config.py").write_text('c = get_config()\nc.CourseDirectory.course_id = "namedaxes"\n')
    return folder


def _roster(tmp_path, text: str) -> Path:
    path = tmp_path / "roster.csv"
    path.write_text(text, encoding="utf-8")
    return path


def test_roster_import_sets_names_and_updates(course, tmp_path):
    n = handin.import_roster(
        course, _roster(tmp_path, "id,first_name,last_name,email\nalice,Alice,Liddell,alice@example.org\nbob,Bob,,\n")
    )
    assert n == 2
    api = handin._api(course, tmp_path / "exchange")
    students = {s["id"]: s for s in api.get_students()}
    assert (students["alice"]["first_name"], students["alice"]["last_name"], students["alice"]["email"]) == (
        "Alice",
        "Liddell",
        "alice@example.org",
    )
    assert students["bob"]["last_name"] is None and students["bob"]["email"] is None
    handin.import_roster(course, _roster(tmp_path, "id,first_name,last_name\nalice,Alicia,Liddell\n"))
    students = {s["id"]: s for s in handin._api(course, tmp_path / "exchange").get_students()}
    assert students["alice"]["first_name"] == "Alicia" and "bob" in students


@pytest.mark.parametrize(
    "text, message",
    [
        ("name,email\nalice,a@x\n", "must name the columns id"),
        ("id,first_name,phone\nalice,A,123\n", "unknown column(s) phone"),
        ("id,first_name\nalice,A\nalice,B\n", "line 3: student id 'alice' appears twice"),
        ("id,first_name\nal+ice,A\n", "line 2: student id 'al+ice'"),
        ("id,first_name\n,A\n", "line 2: student id ''"),
        ("", "must name the columns id"),
    ],
)
def test_bad_rosters_are_refused_with_the_line(course, tmp_path, text, message):
    with pytest.raises(handin.HandinError) as err:
        handin.import_roster(course, _roster(tmp_path, text))
    assert message in str(err.value)
    assert not (course / "gradebook.db").exists(), "nothing is imported from a bad roster"


def test_collect_before_release_says_what_to_do(course, tmp_path):
    with pytest.raises(handin.HandinError, match="make release"):
        handin.collect(course, tmp_path / "exchange", [])


def _handed_in(course: Path, sid: str, secret: str) -> Path:
    sub = course / "submitted" / sid / AID
    sub.mkdir(parents=True)
    (sub / f"{AID}.ipynb").write_text("{}")
    (sub / "timestamp.txt").write_text("2026-12-01 09:00:00.000000 UTC")
    (sub / "submission_secret.txt").write_text(secret)
    return sub


def _graded(course: Path, sid: str) -> Path:
    page = course / "feedback" / sid / AID / f"{AID}.html"
    page.parent.mkdir(parents=True)
    page.write_text(f"<p>Score: 3 / 7 for {sid}</p>")
    return page


def test_return_feedback_only_for_the_graded_hand_in(course, tmp_path):
    from nbgrader.utils import notebook_hash

    exchange = tmp_path / "exchange"
    with pytest.raises(handin.HandinError, match="make release"):
        handin.return_feedback(course, exchange, [])
    (exchange / "namedaxes").mkdir(parents=True)  # what `make release` leaves
    _handed_in(course, "alice", "s" * 128)
    _graded(course, "alice")
    _handed_in(course, "bob", "t" * 128)
    stale = _graded(course, "bob")
    old = time.time() - 3600  # graded an hour before this hand-in was collected
    os.utime(stale, (old, old))
    _graded(course, "carol")  # graded from a folder, never handed in through the exchange
    _handed_in(course, "dan", "u" * 128)  # collected, not graded yet
    line = handin.return_feedback(course, exchange, [])[-1]
    assert "returned to 1 student(s) (alice)" in line
    assert "NOT returned to bob" in line and "carol: not handed in through the exchange" in line
    assert "not graded yet: dan (run `make grade`" in line
    outbound = exchange / "namedaxes" / "feedback"
    assert sorted(p.name for p in outbound.iterdir()) == [f"{notebook_hash(secret='s' * 128, notebook_id=AID)}.html"]
    assert "for alice" in next(outbound.iterdir()).read_text()


def test_graded_hand_ins_count_as_graded_in_formgrader(course, tmp_path):
    """The grader's gradebook rows carry nbgrader's submission time, so formgrader shows the score
    (nbgrader.apps.api get_autograded_students compares it with submitted/.../timestamp.txt)."""
    from autograder.course.notebooks import SourceNotebook
    from autograder.publish.gradebook import write_gradebook
    from autograder.records import CellResult, make_row

    source = SourceNotebook.load(AID, ROOT / "solutions" / f"{AID}.ipynb")
    handin.import_roster(course, _roster(tmp_path, "id,first_name,last_name\nalice,Alice,Liddell\n"))
    for sid in ("alice", "bob"):
        _handed_in(course, sid, sid * 64)
        (course / "autograded" / sid / AID).mkdir(parents=True)
    first = source.test_cells[0]
    rows = [
        make_row(
            sid,
            AID,
            "",
            source,
            "ok",
            "",
            tuple(
                CellResult(t.grade_id, float(t.points) if (sid, t) == ("alice", first) else 0.0, float(t.points), False)
                for t in source.test_cells
            ),
        )
        for sid in ("alice", "bob")
    ]
    db = f"sqlite:///{course / 'gradebook.db'}"
    assert write_gradebook(db, {AID: source}, rows, course / "submitted") == 2
    api = handin._api(course, tmp_path / "exchange")
    subs = {s["student"]: s for s in api.get_submissions(AID)}
    assert {k: (v["autograded"], v["score"]) for k, v in subs.items()} == {
        "alice": (True, float(first.points)),
        "bob": (True, 0.0),
    }
    assert subs["alice"]["first_name"] == "Alice" and subs["bob"]["first_name"] is None
    (course / "submitted" / "bob" / AID / "timestamp.txt").write_text("2026-12-02 10:00:00.000000 UTC")
    subs = {s["student"]: s for s in handin._api(course, tmp_path / "exchange").get_submissions(AID)}
    assert subs["bob"]["autograded"] is False, "a newer hand-in than the graded one needs grading again"


# ------------------------------------------------------------------ the Chinese edition's course
def _zh_copy(src: Path, dest: Path, edit=None) -> None:
    import nbformat

    nb = nbformat.read(str(src), as_version=4)
    nb.metadata["namedaxes"] = {"language": "zh"}
    next(c for c in nb.cells if c.cell_type == "markdown").source = "中文说明"
    if edit:
        edit(nb)
    dest.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(dest))


@pytest.fixture
def editions(tmp_path) -> tuple[Path, Path]:
    """solutions/zh and notebooks/zh for 02: the generated ones when they exist, else marked copies."""
    solutions, notebooks = tmp_path / "solutions", tmp_path / "notebooks"
    for folder, english in ((solutions, ROOT / "solutions"), (notebooks, ROOT / "notebooks")):
        generated = english / "zh" / f"{AID}.ipynb"
        target = folder / "zh" / f"{AID}.ipynb"
        if generated.is_file():
            target.parent.mkdir(parents=True)
            target.write_bytes(generated.read_bytes())
        else:
            _zh_copy(english / f"{AID}.ipynb", target)
    return solutions, notebooks


def test_the_chinese_course_is_laid_out_and_released_as_its_own_course(tmp_path, editions):
    import nbformat

    solutions, notebooks = editions
    course, exchange = tmp_path / "zh" / "course", tmp_path / "exchange"
    lines = handin.layout_edition(course, "zh", [], solutions, notebooks)
    assert lines == [f"{AID}: laid out in {course} (course namedaxes-zh)"]
    released = course / "release" / AID / f"{AID}.ipynb"
    assert released.read_bytes() == (notebooks / "zh" / f"{AID}.ipynb").read_bytes(), "the tested notebook"
    api = handin._api(course, exchange)
    assert api.course_id == "namedaxes-zh"
    english = nbformat.read(str(ROOT / "solutions" / f"{AID}.ipynb"), as_version=4)
    grade_ids = {
        c.metadata["nbgrader"]["grade_id"] for c in english.cells if c.metadata.get("nbgrader", {}).get("grade")
    }
    with api.gradebook as gb:
        cells = {c.name for c in gb.find_assignment(AID).notebooks[0].grade_cells}
    assert cells == grade_ids, "same assignment name and grade ids as the English course"
    assert handin.release(course, exchange, []) == [f"{AID}: released"]
    assert (exchange / "namedaxes-zh" / "outbound" / AID / f"{AID}.ipynb").read_bytes() == released.read_bytes()
    assert not (exchange / "namedaxes").exists(), "the English course's exchange folder is not touched"
    assert handin.layout_edition(course, "zh", [], solutions, notebooks) == lines, "laying out again is harmless"


def test_a_stale_chinese_release_is_refused(tmp_path, editions):
    solutions, notebooks = editions
    stale = notebooks / "zh" / f"{AID}.ipynb"

    def older_code(nb):
        cell = next(
            c
            for c in nb.cells
            if c.cell_type == "code" and not c.metadata.get("nbgrader", {}).get("solution") and "import" in c.source
        )
        cell.source += "\nimport os"

    _zh_copy(ROOT / "notebooks" / f"{AID}.ipynb", stale, older_code)
    with pytest.raises(handin.HandinError, match="is not nbgrader's release of .*other code"):
        handin.layout_edition(tmp_path / "zh" / "course", "zh", [], solutions, notebooks)
    with pytest.raises(handin.HandinError, match="no zh edition to lay out"):
        handin.layout_edition(tmp_path / "zh" / "course", "zh", [], tmp_path / "nowhere", notebooks)


def _as_student(cls, config):
    from nbgrader.auth import Authenticator
    from nbgrader.coursedir import CourseDirectory

    return cls(coursedir=CourseDirectory(config=config), authenticator=Authenticator(config=config), config=config)


def _student_config(exchange: Path, workdir: Path, course_id: str, assignment: str, student: str):
    from traitlets.config import Config

    c = Config()
    c.Exchange.root = str(exchange)
    c.Exchange.cache = str(workdir / ".nbgrader_cache")
    c.Exchange.assignment_dir = str(workdir)
    c.CourseDirectory.course_id = course_id
    c.CourseDirectory.assignment_id = assignment
    c.CourseDirectory.student_id = student
    return c


def test_the_chinese_course_loop_collect_grade_return(tmp_path, editions):
    """Release, a student's fetch and submit (nbgrader's own exchange classes, as the Assignment List
    uses them), collect, `python -m autograder grade --course` on the Chinese course, return feedback:
    full marks for the right answers, the page and the row in Chinese, scored against the English source."""
    import json

    import nbformat
    from nbgrader.exchange.default import ExchangeFetchAssignment, ExchangeFetchFeedback, ExchangeSubmit

    from autograder import messages

    solutions, notebooks = editions
    course, exchange, work = tmp_path / "zh" / "course", tmp_path / "exchange", tmp_path / "work-li" / "zh"
    work.mkdir(parents=True)
    handin.layout_edition(course, "zh", [], solutions, notebooks)
    handin.release(course, exchange, [])
    config = _student_config(exchange, work, "namedaxes-zh", AID, "li")
    _as_student(ExchangeFetchAssignment, config).start()
    fetched = work / AID / f"{AID}.ipynb"
    nb = nbformat.read(str(fetched), as_version=4)
    assert nb.metadata["namedaxes"]["language"] == "zh"
    source = nbformat.read(str(ROOT / "solutions" / f"{AID}.ipynb"), as_version=4)
    answers = {
        c.metadata["nbgrader"]["grade_id"]: "\n".join(
            ln for ln in c.source.splitlines() if "### BEGIN SOLUTION" not in ln and "### END SOLUTION" not in ln
        )
        for c in source.cells
        if c.metadata.get("nbgrader", {}).get("solution")
    }
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in answers:
            cell.source = answers[gid]
    nbformat.write(nb, str(fetched))
    _as_student(ExchangeSubmit, config).start()
    line = handin.collect(course, exchange, [])[0]
    assert "1 new or newer hand-in(s) (li)" in line
    proc = machine.run(
        [sys.executable, "-m", "autograder", "grade", "--course", str(course), "-j", "2", "--timeout", "30", "-q"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        quiet_s=600,
        what="the command of the chinese course loop collect grade return",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    row = json.loads((course / "grades" / "results.json").read_text())["rows"][0]
    english_points = sum(
        float(c.metadata["nbgrader"].get("points", 0))
        for c in source.cells
        if c.metadata.get("nbgrader", {}).get("grade") and not c.metadata["nbgrader"].get("solution")
    )
    assert (row["student"], row["status"], row["score"], row["max_score"], row["language"]) == (
        "li",
        "ok",
        english_points,
        english_points,
        "zh",
    )
    page = (course / "feedback" / "li" / AID / f"{AID}.html").read_text(encoding="utf-8")
    assert messages.text("page_below", "zh") in page
    line = handin.return_feedback(course, exchange, [])[-1]
    assert "returned to 1 student(s) (li)" in line
    _as_student(ExchangeFetchFeedback, config).start()
    got = list((work / AID / "feedback").glob(f"*/{AID}.html"))
    assert len(got) == 1 and got[0].read_text(encoding="utf-8") == page
