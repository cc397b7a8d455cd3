"""A gradebook an LMS imports as it is: Canvas, Moodle, or a plain CSV, from a graded class.

    python -m autograder export --lms canvas [--course COURSE] [--out OUT]   # OUT/lms-canvas.csv

Reads what grading wrote (OUT/grades.csv: the scores of record, late penalties already taken off)
and the course's roster (the students of the course's gradebook.db, which `make roster` fills from
students.csv: id, first_name, last_name, email, and the optional lms_user_id). One row per student
of the roster (and per graded student the roster lacks), one column per assignment. A hand-in that
is missing scores 0; an assignment a student has no row for at all stays empty (not graded).

The formats, as each LMS documents its grade import:

- `canvas`: Canvas's Gradebook import: the columns `Student` ("Last, First"), `ID` (Canvas's user
  id: the roster's lms_user_id), `SIS User ID`, `SIS Login ID` (the course's student id), `Section`,
  then one column per assignment, and a second row `Points Possible` with each assignment's
  maximum (Canvas's own export writes that row; on import, a new column becomes an assignment).
- `moodle`: Moodle's "Import grades from CSV": `ID number` (the student id), `Email address`,
  `First name`, `Last name`, then one column per assignment; in Moodle's import form, map
  "Identify user by" to ID number (or Email address) and each column to its grade item.
- `csv`: student, first_name, last_name, email, lms_user_id, one column per assignment, total, max.

Threat model: student ids can come from folder names a student chose (`--submissions`); every text
cell goes through `outputs.csv_cell`, so no spreadsheet runs it as a formula. Numbers are numbers.
An entry the grader refused (no usable id: empty, `Points Possible`, ...; or ids that collide, graded for
no one) gets no row: an LMS would read it as a student, or as its own row of maxima. `left_out` says which,
and why; `make export` prints it.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from ..intake.placement import id_problem
from ..records import Status
from .class_results import MISSING, ClassResults, load
from .outputs import atomic_write, csv_cell

__all__ = ["FORMATS", "Student", "roster", "table", "left_out", "write_export", "Export"]

FORMATS = ("canvas", "moodle", "csv")


@dataclass(frozen=True)
class Student:
    id: str
    first_name: str = ""
    last_name: str = ""
    email: str = ""
    lms_user_id: str = ""

    @property
    def sortable_name(self) -> str:
        """Canvas's "Last, First" (the id where the roster has no name)."""
        if self.last_name and self.first_name:
            return f"{self.last_name}, {self.first_name}"
        return self.last_name or self.first_name or self.id


def roster(db: Path) -> list[Student]:
    """The students of an nbgrader gradebook (none when it does not exist)."""
    if not db.is_file():
        return []
    import warnings

    from nbgrader.api import Gradebook

    with warnings.catch_warnings(), Gradebook(f"sqlite:///{db}") as gb:
        warnings.simplefilter("ignore")
        return [
            Student(s.id, s.first_name or "", s.last_name or "", s.email or "", s.lms_user_id or "")
            for s in gb.students
        ]


def _scores(results: ClassResults) -> tuple[list[str], dict[str, float], dict[tuple[str, str], float]]:
    """(assignments, each one's maximum, the score of record per (student, assignment))."""
    assignments = results.assignments
    maxima = {a: max((r.max_score for r in results.rows if r.assignment == a), default=0.0) for a in assignments}
    scores = {
        (r.student, r.assignment): (0.0 if r.status == MISSING else r.score) for r in results.rows if r.assignment
    }
    return assignments, maxima, scores


def left_out(results: ClassResults, students: list[Student]) -> dict[str, str]:
    """The ids no export row is written for, each with why: an id the grader refuses (`id_problem`: the empty id
    of a refused entry, `Points Possible`, ...), and an id the roster lacks whose every entry was refused
    (unplaceable, or a conflict such as `alice` beside `alice `: graded for no one, so it has no score)."""
    roster_ids = {s.id for s in students}
    refused = (Status.UNPLACEABLE, Status.CONFLICT)
    out = {}
    for sid in sorted(roster_ids | set(results.students)):
        rows = [r for r in results.rows if r.student == sid]
        if problem := id_problem(sid):
            out[sid] = problem
        elif sid not in roster_ids and rows and all(r.status in refused for r in rows):
            out[sid] = f"not graded: {rows[0].status}"
    return out


def table(results: ClassResults, students: list[Student], fmt: str) -> list[list[str | float]]:
    """The export's rows (header first) in format `fmt`; none for the ids `left_out` names."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown LMS format {fmt!r} (known: {', '.join(FORMATS)})")
    assignments, maxima, scores = _scores(results)
    known, skipped = {s.id for s in students}, left_out(results, students)
    everyone = [s for s in students if s.id not in skipped]
    everyone += [Student(sid) for sid in results.students if sid not in known and sid not in skipped]

    def cells(s: Student) -> list[str | float]:
        return [scores.get((s.id, a), "") for a in assignments]

    if fmt == "canvas":
        rows = [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", *assignments]]
        rows.append(["    Points Possible", "", "", "", "", *(maxima[a] for a in assignments)])
        rows += [[s.sortable_name, s.lms_user_id, s.id, s.id, "", *cells(s)] for s in everyone]
    elif fmt == "moodle":
        rows = [["ID number", "Email address", "First name", "Last name", *assignments]]
        rows += [[s.id, s.email, s.first_name, s.last_name, *cells(s)] for s in everyone]
    else:
        rows = [["student", "first_name", "last_name", "email", "lms_user_id", *assignments, "total", "max_total"]]
        for s in everyone:
            total = sum((v for v in cells(s) if isinstance(v, float)), 0.0)
            rows.append(
                [s.id, s.first_name, s.last_name, s.email, s.lms_user_id, *cells(s), total, sum(maxima.values())]
            )
    return rows


def _csv(rows: list[list[str | float]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    for row in rows:
        w.writerow([f"{v:g}" if isinstance(v, int | float) else csv_cell(v) for v in row])  # numbers are numbers
    return buf.getvalue()


@dataclass(frozen=True)
class Export:
    """An export written: the file, and the ids given no row (`left_out`: id -> why)."""

    path: Path
    left_out: dict[str, str]

    def note(self) -> list[str]:
        """What `make export` says of the ids left out (nothing when none was)."""
        if not self.left_out:
            return []
        head = f"left out of the export ({len(self.left_out)}; see grades.csv and the grading summary):"
        return [head, *(f"  {sid!r}: {why}" for sid, why in self.left_out.items())]


def write_export(out: Path, fmt: str, course: Path, output: Path | None = None) -> Export:
    """OUT/lms-<fmt>.csv (or `output`) from OUT/grades.csv and the roster of COURSE/gradebook.db (else OUT's)."""
    results = load(out)
    db = Path(course) / "gradebook.db"
    students = roster(db if db.is_file() else Path(out) / "gradebook.db")
    target = Path(output) if output else Path(out) / f"lms-{fmt}.csv"
    # UTF-8 with a byte-order mark: Excel and both LMSs then read names such as 张伟 right
    atomic_write(target, "\ufeff" + _csv(table(results, students, fmt)))
    return Export(target, left_out(results, students))
