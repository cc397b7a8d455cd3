"""The class's results as the report reads them: OUT/grades.csv, with each row's test cells from
OUT/results.json (`load`). Parsed once here, at the edge; the report's sections take these records.

Threat model: both files hold submission-derived text (student ids, reasons); they are only parsed
into records here (numbers validated), never interpreted. Escaping is the page's job (`report`).
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path

from ..records import Status

__all__ = ["ClassRow", "ClassResults", "load", "MISSING"]

MISSING = Status.MISSING  # the status of a row whose student handed nothing in (autograder.runner)


@dataclass
class ClassRow:
    """One row of grades.csv as the class report reads it (the grader's own row is `records.Row`)."""

    student: str
    assignment: str
    score: float
    max_score: float
    status: Status
    reason: str
    cells: list[dict] = field(default_factory=list)
    late_penalty: float | None = None  # points taken off for a late hand-in (None: on time, or no due date)
    handed_in: str = ""  # of a late hand-in: when (ISO 8601)
    due: str = ""  # and its due date
    late: dict | None = None  # results.json's record of a late hand-in, or one on time by an extension


@dataclass
class ClassResults:
    rows: list[ClassRow]
    source: str = ""
    protections: list[dict] = field(default_factory=list)  # results.json "protections" (protections.as_json)
    references: dict[str, dict] = field(default_factory=dict)  # results.json "references" (outputs.reference_notes)

    @property
    def assignments(self) -> list[str]:
        return sorted({r.assignment for r in self.rows if r.assignment})

    @property
    def students(self) -> list[str]:
        return sorted({r.student for r in self.rows})

    def graded(self, assignment: str) -> list[ClassRow]:
        """The rows of `assignment` with a hand-in (missing ones are counted apart, never averaged in)."""
        return [r for r in self.rows if r.assignment == assignment and r.status != MISSING]


def _float(text, what: str) -> float:
    try:
        return float(text)
    except (TypeError, ValueError):
        raise ValueError(f"{what}: {text!r} is not a number") from None


def _status(text, what: str) -> Status:
    try:
        return Status(text)
    except ValueError:
        raise ValueError(f"{what}: {text!r} is no status of the grader's") from None


def load(out: Path) -> ClassResults:
    """Rows of OUT/grades.csv, each with its test cells from OUT/results.json (if present)."""
    out = Path(out)
    grades = out / "grades.csv"
    if not grades.is_file():
        raise FileNotFoundError(f"{grades} not found: run `make grade ... OUT={out}` first")
    from .outputs import csv_value

    with grades.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        missing_cols = {"student", "assignment", "score", "max_score", "status", "reason"} - set(
            reader.fieldnames or []
        )
        if missing_cols:
            raise ValueError(f"{grades}: missing column(s) {sorted(missing_cols)}")
        rows = [
            ClassRow(
                student=r["student"],
                assignment=r["assignment"],
                score=_float(r["score"], f"{grades} score of {r['student']}"),
                max_score=_float(r["max_score"], f"{grades} max_score of {r['student']}"),
                status=_status(r["status"], f"{grades} status of {r['student']}"),
                reason=r["reason"] or "",
                late_penalty=_float(r["late_penalty"], f"{grades} late_penalty of {r['student']}")
                if r.get("late_penalty")
                else None,
                handed_in=r.get("handed_in") or "",
                due=r.get("due") or "",
            )
            for r in ({k: csv_value(v or "") for k, v in raw.items()} for raw in reader)
        ]  # undo the ' guard
    cells: dict[tuple[str, str], list[dict]] = {}
    late: dict[tuple[str, str], dict] = {}
    protections: list[dict] = []
    references: dict[str, dict] = {}
    results = out / "results.json"
    if results.is_file():
        data = json.loads(results.read_text(encoding="utf-8"))
        for r in data.get("rows", []) if isinstance(data, dict) else []:
            cells[(str(r.get("student", "")), str(r.get("assignment", "")))] = list(r.get("cells") or [])
            if isinstance(r.get("late"), dict):
                late[(str(r.get("student", "")), str(r.get("assignment", "")))] = r["late"]
        if isinstance(data, dict) and isinstance(data.get("protections"), list):
            protections = [p for p in data["protections"] if isinstance(p, dict)]
        if isinstance(data, dict) and isinstance(data.get("references"), dict):
            references = {str(k): v for k, v in data["references"].items() if isinstance(v, dict)}
    for row in rows:
        row.cells = cells.get((row.student, row.assignment), [])
        row.late = late.get((row.student, row.assignment))
    return ClassResults(rows=rows, source=str(out), protections=protections, references=references)
