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
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from .class_results import MISSING, ClassResults, load
from .outputs import atomic_write, csv_cell

__all__ = ["FORMATS", "Student", "roster", "table", "write_export"]

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


def table(results: ClassResults, students: list[Student], fmt: str) -> list[list[str | float]]:
    """The export's rows (header first) in format `fmt`."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown LMS format {fmt!r} (known: {', '.join(FORMATS)})")
    assignments, maxima, scores = _scores(results)
    known = {s.id for s in students}
    everyone = list(students) + [Student(sid) for sid in results.students if sid not in known]

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


def write_export(out: Path, fmt: str, course: Path, output: Path | None = None) -> Path:
    """OUT/lms-<fmt>.csv (or `output`) from OUT/grades.csv and the roster of COURSE/gradebook.db (else OUT's)."""
    results = load(out)
    db = Path(course) / "gradebook.db"
    students = roster(db if db.is_file() else Path(out) / "gradebook.db")
    target = Path(output) if output else Path(out) / f"lms-{fmt}.csv"
    # UTF-8 with a byte-order mark: Excel and both LMSs then read names such as 张伟 right
    atomic_write(target, "\ufeff" + _csv(table(results, students, fmt)))
    return target
