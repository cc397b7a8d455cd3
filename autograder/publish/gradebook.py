"""Write the scores into nbgrader's gradebook, from the main process only, at the end.

SQLite is not safe for concurrent writers, so workers never touch it: they
return their results, and this module records all of them in one session so
`nbgrader export` and formgrader show the same scores as grades.csv.

Formgrader counts a submission as graded only when the gradebook's submission
timestamp equals the one nbgrader's `collect` left in
submitted/<student>/<assignment>/timestamp.txt (nbgrader.apps.api
get_autograded_students); in course mode (`submitted` given) that timestamp is
copied, so collected hand-ins show their scores, not "needs autograding".
Students already in the gradebook (a roster import) keep their names.

A new gradebook is stamped with nbgrader's newest schema revision, as nbgrader's own `Gradebook`
stamps it, but read in this process (`alembic_head`: alembic's `ScriptDirectory` over nbgrader's
migrations, 0.1 s) instead of by nbgrader's `alembic heads` subprocess (3.3 s of CPU on 2 cores,
at the very end of a batch, and only where an `alembic` executable is on PATH).
"""

from __future__ import annotations

import contextlib
import functools
import os
from datetime import UTC, datetime
from pathlib import Path

from ..course.deadlines import LatePolicy
from ..course.notebooks import SourceNotebook
from ..intake.placement import handed_in_times
from ..records import Row, Status

__all__ = ["write_gradebook", "alembic_head"]


@functools.cache
def alembic_head() -> str:
    """The newest revision of nbgrader's gradebook schema: what `alembic heads` prints for nbgrader's
    migrations (`nbgrader.api.get_alembic_version`), read in-process."""
    import nbgrader
    from alembic.script import ScriptDirectory

    return ScriptDirectory(os.path.join(os.path.dirname(nbgrader.__file__), "alembic")).get_current_head()


@contextlib.contextmanager
def _in_process_alembic_head():
    """nbgrader's `Gradebook` looks `get_alembic_version` up in its module when it creates a new
    database: give it `alembic_head` for the duration (the main process writes the gradebook alone)."""
    import nbgrader.api

    before = nbgrader.api.get_alembic_version
    nbgrader.api.get_alembic_version = alembic_head
    try:
        yield
    finally:
        nbgrader.api.get_alembic_version = before


def _sync_assignment(gb, source: SourceNotebook) -> None:
    """Make sure the assignment, its notebook and grade cells exist, with the source's points."""
    from nbgrader.api import MissingEntry

    aid, nb_name = source.assignment, source.notebook_name
    try:
        gb.find_assignment(aid)
    except MissingEntry:
        gb.add_assignment(aid)
    try:
        gb.find_notebook(nb_name, aid)
    except MissingEntry:
        gb.add_notebook(nb_name, aid)
    for test in source.test_cells:
        try:
            cell = gb.find_grade_cell(test.grade_id, nb_name, aid)
            if float(cell.max_score) != float(test.points):
                cell.max_score = float(test.points)
                gb.db.commit()
        except MissingEntry:
            gb.add_grade_cell(test.grade_id, nb_name, aid, max_score=float(test.points), cell_type="code")
    for gid in source.answer_ids:
        try:
            gb.find_solution_cell(gid, nb_name, aid)
        except MissingEntry:
            gb.add_solution_cell(gid, nb_name, aid)


def _utc(moment: datetime) -> datetime:
    """nbgrader's gradebook keeps naive UTC times (`nbgrader.utils.parse_utc`)."""
    return moment.astimezone(UTC).replace(tzinfo=None)


def _record_late(gb, sub, row: Row, source: SourceNotebook, policy: LatePolicy | None) -> None:
    """nbgrader's own late fields: the submission's extension and the notebook's late_submission_penalty
    (`nbgrader export` and nbgrader's feedback template show them); the score itself is the row's."""
    if policy is None or source.assignment not in policy.due:
        return
    extension = policy.due_for(row.student, source.assignment) - policy.due[source.assignment]
    sub.extension = extension if extension else None
    notebook = gb.find_submission_notebook(source.notebook_name, source.assignment, row.student)
    late = row.late if row.late is not None and not row.late.on_time else None  # on time by an extension: none
    notebook.late_submission_penalty = late.penalty if late is not None else None


def write_gradebook(
    db_url: str,
    sources: dict[str, SourceNotebook],
    rows: list[Row],
    submitted: Path | None = None,
    policy: LatePolicy | None = None,
) -> int:
    """Record auto scores of every graded row (status not missing/unplaceable). Returns the count.

    `submitted`: the course's submitted/ folder (course mode), for nbgrader's submission timestamps.
    `policy`: the course's deadlines (course/deadlines.py): nbgrader's `duedate`, extensions and penalties.
    """
    import warnings

    from nbgrader.api import Gradebook, MissingEntry

    written = 0
    with warnings.catch_warnings(), _in_process_alembic_head(), Gradebook(db_url) as gb:
        warnings.simplefilter("ignore")  # nbgrader 0.9 + SQLAlchemy 2.1: harmless autoflush warnings
        for source in sources.values():
            _sync_assignment(gb, source)
            if policy is not None and source.assignment in policy.due:  # else nbgrader's own stays
                gb.find_assignment(source.assignment).duedate = _utc(policy.due[source.assignment])
        times = handed_in_times(submitted.parent, {(r.student, r.assignment) for r in rows}) if submitted else {}
        known = {s.id for s in gb.students}
        for row in rows:
            if row.status in (Status.MISSING, Status.UNPLACEABLE) or row.assignment not in sources:
                continue
            source = sources[row.assignment]
            sid = row.student
            if sid not in known:
                gb.add_student(sid)
                known.add(sid)
            stamp = times.get((sid, source.assignment))
            sub = gb.update_or_create_submission(
                source.assignment, sid, **({"timestamp": _utc(stamp)} if stamp else {})
            )
            points = {c.grade_id: c.points for c in row.cells}
            for test in source.test_cells:
                try:
                    grade = gb.find_grade(test.grade_id, source.notebook_name, source.assignment, sid)
                except MissingEntry:
                    continue
                grade.auto_score = float(points.get(test.grade_id, 0.0))
                grade.needs_manual_grade = grade.manual_score is not None
            _record_late(gb, sub, row, source, policy)
            written += 1
        gb.db.commit()
    return written
