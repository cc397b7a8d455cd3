"""formgrader shows the score of record (autograder/formgrader/late_scores.py): nbgrader's own API answers
for a course whose gradebook `make grade` wrote with a late penalty, through `LateApi`, and the routes the
guard puts in front of formgrader's."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from autograder.course.deadlines import LatePolicy
from autograder.course.discovery import repo_root
from autograder.course.notebooks import SourceNotebook
from autograder.formgrader.late_scores import LATE_ROUTES, LateApi, late_handlers, penalties
from autograder.publish.gradebook import write_gradebook
from autograder.records import CellResult, Late, make_row

AID = "01_axis_names"


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    from nbgrader.apps.api import NbGraderAPI
    from nbgrader.auth import Authenticator
    from nbgrader.coursedir import CourseDirectory

    course = tmp_path_factory.mktemp("course")
    (course / "nbgrader_config.py").write_text("c = get_config()  # noqa: F821\nc.CourseDirectory.course_id = 't'\n")
    source = SourceNotebook.load(AID, repo_root() / "solutions" / f"{AID}.ipynb")
    full = tuple(CellResult(t.grade_id, t.points, t.points, True) for t in source.test_cells)
    due = datetime(2026, 12, 10, 23, 59, tzinfo=UTC)
    late = Late("2026-12-12T12:00:00+00:00", due.isoformat(), 1.0, 2, 0.2, 0.2 * source.max_score)
    rows = [
        make_row("ontime", AID, "", source, "ok", "", full),
        make_row("late", AID, "", source, "ok", "", full, late=late),
    ]
    for row, stamp in zip(rows, ("2026-12-10 20:00:00.000000 UTC", "2026-12-12 12:00:00.000000 UTC"), strict=True):
        for stage in ("source", "submitted", "autograded"):  # what the course, collect and make grade leave
            folder = course / stage / (AID if stage == "source" else f"{row.student}/{AID}")
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{AID}.ipynb").write_bytes(source.raw)
            (folder / "timestamp.txt").write_text(stamp)
    db = f"sqlite:///{course / 'gradebook.db'}"
    write_gradebook(db, {AID: source}, rows, course / "submitted", LatePolicy({AID: due}))
    coursedir = CourseDirectory(root=str(course), course_id="t")
    return NbGraderAPI(coursedir, Authenticator()), source.max_score


def test_every_score_formgrader_lists_has_the_penalty_off(api):
    plain, top = api
    with plain.gradebook as gb:
        late = LateApi(plain, penalties(gb))
    penalty = 0.2 * top
    subs = {s["student"]: s for s in late.get_submissions(AID)}
    assert subs["ontime"]["score"] == top and "late_penalty" not in subs["ontime"]
    assert subs["late"]["score"] == pytest.approx(top - penalty) and subs["late"]["late_penalty"] == pytest.approx(
        penalty
    )
    assert {s["student"]: s["score"] for s in plain.get_submissions(AID)}["late"] == top  # nbgrader's own: raw
    assert late.get_submission(AID, "late")["score"] == pytest.approx(top - penalty)
    assert {s["id"]: s["score"] for s in late.get_students()}["late"] == pytest.approx(top - penalty)
    assert late.get_student("late")["score"] == pytest.approx(top - penalty)
    assert late.get_student_submissions("late")[0]["score"] == pytest.approx(top - penalty)
    assert late.get_student_notebook_submissions("late", AID)[0]["score"] == pytest.approx(top - penalty)
    assert late.get_student_notebook_submissions("ontime", AID)[0]["score"] == top


def test_the_guard_serves_formgraders_own_handlers_with_the_late_api():
    from nbgrader.server_extensions.formgrader import apihandlers

    handlers = dict(late_handlers())
    assert set(handlers) == {pattern for pattern, _ in LATE_ROUTES}
    for pattern, name in LATE_ROUTES:
        assert issubclass(handlers[pattern], getattr(apihandlers, name))
        assert (pattern, getattr(apihandlers, name)) in apihandlers.default_handlers  # formgrader still has it
