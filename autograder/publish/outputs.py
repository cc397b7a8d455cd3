"""What a grading run writes and prints: grades.csv, results.json, timings.json, progress, summary.

Threat model: ids, reasons and origins in the rows come from student folder
and file names and from what their code raised. A spreadsheet opening
`grades.csv` would run a cell that starts with `=`, `+`, `-`, `@`, a tab or a
carriage return as a formula, and some read one whose first visible character is one of those after
leading white space (a no-break or ideographic space too) or in another form (fullwidth `＝`, small `﹢`:
what Unicode's NFKC maps to `=` and `+`); so every such text cell is written with a leading `'`
(`csv_cell`; OWASP's CSV-injection advice), in grades.csv and every LMS export; `csv_value` undoes it
for readers of the file. Numbers are written as numbers. Every file is
written to a temporary name and renamed into place, so a reader (or a second
run) never sees half a file.
"""

from __future__ import annotations

import csv
import io
import json
import os
import sys
import time
import unicodedata
from dataclasses import asdict
from datetime import datetime
from pathlib import Path

from ..intake.placement import Intake
from ..records import CSV_COLUMNS, NOT_HANDED_IN, CellResult, Graded, Options, Row, Status
from ..sandbox.protections import summary_lines
from .misconceptions import finding
from .words import say, say_late

__all__ = [
    "Progress",
    "missing_reason",
    "merge_previous",
    "write_outputs",
    "atomic_write",
    "summary",
    "csv_cell",
    "csv_value",
    "merge_previous_notes",
]

FORMULA_START = ("=", "+", "-", "@")
CONTROL_START = ("\t", "\r", "\n")


def _formula_like(text: str) -> bool:
    """Would some spreadsheet read `text` as a formula? Its NFKC form (fullwidth `＝`, small `﹢` and the like
    become `=` and `+`) with the leading white space removed (spaces, tabs, no-break and ideographic spaces,
    which spreadsheets trim) starts with `= + - @`, or the text starts with a tab or a line break."""
    return text.startswith(CONTROL_START) or unicodedata.normalize("NFKC", text).lstrip().startswith(FORMULA_START)


def _quoted(text: str) -> bool:
    return _formula_like(text) or text.startswith("'")  # a leading ' of the text's own is kept by one more


def csv_cell(text: str) -> str:
    """A text cell that no spreadsheet runs as a formula: one that could be read as one (`_formula_like`) is
    written with a leading `'`, which spreadsheets take as "this is text" (and so is one that starts with `'`
    itself, so that `csv_value` gives back every text as it was)."""
    return "'" + text if _quoted(text) else text


def csv_value(text: str) -> str:
    """The text of a cell written by `csv_cell`."""
    return text[1:] if text.startswith("'") and _quoted(text[1:]) else text


class Progress:
    def __init__(self, total: int, quiet: bool = False):
        self.total, self.done, self.quiet = total, 0, quiet
        self.counts: dict[str, int] = {}
        self.t0 = time.monotonic()
        self.tty = sys.stderr.isatty()
        self._last = 0.0

    def update(self, status: Status) -> None:
        self.done += 1
        self.counts[status] = self.counts.get(status, 0) + 1
        self.show()

    def show(self, final: bool = False) -> None:
        if self.quiet or self.total == 0 or (final and self.done == self.total):
            return
        now = time.monotonic()
        if not (self.tty or final or now - self._last > 5 or self.done == self.total):
            return
        self._last = now
        width = 30
        filled = int(width * self.done / self.total)
        bar = "#" * filled + "." * (width - filled)
        counts = " ".join(f"{k} {v}" for k, v in sorted(self.counts.items()))
        elapsed = now - self.t0
        line = f"grading [{bar}] {self.done}/{self.total}  {counts}  {elapsed:.0f} s"
        if self.tty:
            sys.stderr.write("\r" + line + ("\n" if self.done == self.total or final else ""))
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()


def missing_reason(intake: Intake, student: str, assignment: str, file_name: str) -> str:
    if student in intake.empty:
        return "empty submission: no files in the student's folder"
    near = [u for u in intake.unplaced if u.student == student and u.assignment == assignment]
    if near:
        return f"no {file_name} submitted; found {near[0].origin} ({near[0].reason}), not graded"
    return f"no {file_name} submitted"


def public(row: Row) -> dict:
    """A row as results.json publishes it: its reasons in words, in the row's language (`words.say`);
    timings are not part of it (timings.json). `language` and `observe_log` only where there are some."""
    lang = row.language or "en"
    out = {
        "student": row.student,
        "assignment": row.assignment,
        "score": row.score,
        "max_score": row.max_score,
        "status": row.status,
        "reason": say(row.reason, lang),
        "origin": row.origin,
        "cells": [_public_cell(c, lang) for c in row.cells],
    }
    if row.language:
        out["language"] = row.language
    if row.observe_log:
        out["observe_log"] = list(row.observe_log)
    if row.late is not None:  # the record, and the line the feedback page says, in the row's language
        out["late"] = {**asdict(row.late), "says": say_late(row.late, lang)}
    return out


def _public_cell(c: CellResult, lang: str) -> dict:
    """A test cell's result; a failed one also with its `finding` (misconceptions.py), for the class's map."""
    out = {"grade_id": c.grade_id, "points": c.points, "max_points": c.max_points, "passed": c.passed}
    out["reason"] = say(c.reason, lang)
    found = None if c.passed else (dict(c.finding) if c.finding else finding(c.judged or c.reason))
    if found is not None:
        out["finding"] = found
    return out


def _sort_key(row: dict):
    return (row["student"], row["assignment"], row["status"], row["reason"])


def merge_previous(out: Path, rows: list[Row], opts: Options, intake: Intake) -> list[dict]:
    """The rows to publish (`public`), sorted; for --student/--assignment runs with the other rows of the
    previous results.json kept (parsed as rows here, the edge, so that they are published the same way)."""
    new = [public(r) for r in rows]
    if not (opts.students or opts.assignments):
        return sorted(new, key=_sort_key)
    try:
        old = [public(Row.from_json(r)) for r in json.loads((out / "results.json").read_text())["rows"]]
    except (OSError, ValueError, KeyError, TypeError):
        old = []
    students = set(opts.students) if opts.students else None
    assignments = set(opts.assignments) if opts.assignments else None

    def replaced(r: dict) -> bool:
        in_students = students is None or r["student"] in students
        in_assign = (
            assignments is None
            or r["assignment"] in assignments
            or (r["status"] in (Status.UNPLACEABLE, Status.CONFLICT) and students is not None)
        )
        return in_students and in_assign

    kept = [r for r in old if not replaced(r)]
    return sorted(kept + new, key=_sort_key)


def _fmt(x: float) -> str:
    return f"{x:g}"


def _in_zone(iso: str, of: str) -> str:
    """`iso` in the time zone of `of` (both ISO 8601 with an offset): one row, one zone."""
    try:
        return datetime.fromisoformat(iso).astimezone(datetime.fromisoformat(of).tzinfo).isoformat(timespec="seconds")
    except (TypeError, ValueError):
        return iso


def _late_cells(late: dict | None) -> list[str]:
    """grades.csv's late_penalty, handed_in and due (both in the due date's time zone) and late (the line the
    feedback page says): empty for a hand-in on time without an extension's help (or without a due date)."""
    if not late:
        return ["", "", "", ""]
    return [
        _fmt(late["penalty"]),
        _in_zone(late["handed_in"], late["due"]),
        late["due"],
        csv_cell(late.get("says", "")),
    ]


def write_outputs(
    out: Path,
    all_rows: list[dict],
    rows: list[Row],
    protections: list[dict] | None = None,
    references: dict[str, dict] | None = None,
) -> None:
    """grades.csv, results.json (`all_rows`: the published rows of `merge_previous`, the protections
    in force: protections.as_json, and this run's `references`: `reference_notes`) and timings.json (this run's
    `rows`)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for r in all_rows:
        w.writerow(
            [
                csv_cell(r["student"]),
                csv_cell(r["assignment"]),
                _fmt(r["score"]),
                _fmt(r["max_score"]),
                csv_cell(r["status"]),
                csv_cell(r["reason"]),
                *_late_cells(r.get("late")),
            ]
        )
    atomic_write(out / "grades.csv", buf.getvalue())
    results = {"columns": CSV_COLUMNS, "rows": all_rows}
    if protections is not None:
        results["protections"] = protections
    if references:
        results["references"] = references
    atomic_write(out / "results.json", json.dumps(results, indent=1, ensure_ascii=False, sort_keys=True) + "\n")
    timings = [
        {
            "student": r.student,
            "assignment": r.assignment,
            "seconds": round(r.seconds, 3),
            "exec_seconds": round(r.exec_seconds, 3),
            "grader_peak_kb": r.grader_peak_kb,
            "stages": dict(r.stages),
        }
        for r in rows
        if r.seconds is not None
    ]
    atomic_write(out / "timings.json", json.dumps(timings, indent=1, ensure_ascii=False) + "\n")


def atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def merge_previous_notes(out: Path, notes: dict[str, dict], opts: Options) -> dict[str, dict]:
    """`notes` (`reference_notes`), and for --student/--assignment runs the previous results.json's notes of the
    assignments this run did not grade, as `merge_previous` keeps their rows: a partial regrade publishes the
    class's limits whole."""
    if not (opts.students or opts.assignments):
        return notes
    try:
        old = json.loads((out / "results.json").read_text(encoding="utf-8")).get("references", {})
    except (OSError, ValueError, AttributeError):
        old = {}
    old = old if isinstance(old, dict) else {}
    kept = {str(a): n for a, n in old.items() if isinstance(n, dict) and a not in notes}
    return dict(sorted((kept | notes).items()))


def reference_notes(results) -> dict[str, dict]:
    """Per assignment graded in this run (`BatchResults`): its time limits and, where its reference ran twice,
    why (the instructor's English; results.json's "references", the class report's time limits)."""
    notes: dict[str, dict] = {}
    for aid, limits in sorted(results.time_limits.items()):
        notes[aid] = {"cell_timeout": round(limits.cell, 1), "notebook_budget": round(limits.notebook, 1)}
        notes[aid]["limits"] = limits.describe()
    for aid, why in sorted(results.ref_retried.items()):
        notes.setdefault(aid, {})["retried"] = why
    return notes


SUMMARY_NAMES = 10  # hand-ins named per line of the summary; the others counted


def late_summary(rows: list[Row]) -> list[str]:
    """The summary's lines about late hand-ins (each with its points off) and hand-ins on time by an extension."""
    late = sorted(
        (r for r in rows if r.late is not None and not r.late.on_time), key=lambda r: (r.student, r.assignment)
    )
    extended = sorted(
        (r for r in rows if r.late is not None and r.late.on_time), key=lambda r: (r.student, r.assignment)
    )
    lines = []
    for what, some, said in (
        ("late hand-ins", late, lambda r: f"{r.student} {r.assignment} -{r.late.penalty:g}"),
        ("on time with an extension", extended, lambda r: f"{r.student} {r.assignment}"),
    ):
        if some:
            names = ", ".join(said(r) for r in some[:SUMMARY_NAMES])
            more = f" and {len(some) - SUMMARY_NAMES} more" if len(some) > SUMMARY_NAMES else ""
            lines.append(f"{what}: {len(some)} ({names}{more})")
    if lines:
        lines.append(
            "  each one's line (hand-in time, due date, delay, rule): grades.csv's late column, the feedback page"
        )
    return lines


def summary(graded: Graded, notes: dict[str, dict] | None = None) -> None:
    """What a batch did, on stdout: students and hand-ins graded and how fast, the protections in force, the
    reference runs, each assignment's mean, the statuses, what could not be placed, and what was written."""
    batch, intake, sources, rows = graded.batch, graded.intake, graded.sources, graded.results.rows
    if batch.opts.quiet:
        return
    out, jobs, ref_seconds, wall = batch.out, batch.jobs, graded.results.ref_seconds, time.monotonic() - graded.started
    handed_in = [r for r in rows if r.status not in NOT_HANDED_IN]
    per = f" ({wall / len(handed_in):.2f} s per submission)" if handed_in else ""
    lines = [
        "",
        f"autograder: {len(intake.students)} student(s), {len(handed_in)} submission(s) graded "
        f"in {wall:.1f} s with {jobs} worker(s)" + per,
    ]
    lines += summary_lines(graded.sandbox.protections())
    if ref_seconds:
        lines.append("reference runs: " + ", ".join(f"{a} {s:.1f} s" for a, s in sorted(ref_seconds.items())))
    for aid, note in sorted((notes or {}).items()):
        if note.get("retried"):
            lines.append(f"reference of {aid} retried: {note['retried']}")
        if note.get("limits"):
            lines.append(f"time limits of {aid}: {note['limits']}")
    absent = []
    for aid, src in sources.items():  # only what was handed in: "missing" rows are no hand-in
        rs = [r for r in rows if r.assignment == aid and r.status != Status.MISSING]
        if not rs:
            absent += [aid] if any(r.assignment == aid for r in rows) else []
            continue
        mean = sum(r.score for r in rs) / len(rs)
        missing = sum(1 for r in rows if r.assignment == aid and r.status == Status.MISSING)
        lines.append(
            f"  {aid:<28} mean {mean:5.2f} / {src.max_score:g}  over {len(rs)} hand-in(s)"
            + (f", {missing} student(s) without one" if missing else "")
        )
    if absent:
        lines.append(f"  not handed in by anyone: {', '.join(absent)}")
    lines += late_summary(rows)
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.status] = counts.get(r.status, 0) + 1
    lines.append("status: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    if intake.unplaced:
        lines.append(f"unplaceable files ({len(intake.unplaced)}):")
        for u in intake.unplaced[:25]:
            lines.append(f"  {u.origin}: {u.reason}")
        if len(intake.unplaced) > 25:
            lines.append(f"  ... and {len(intake.unplaced) - 25} more (see grades.csv)")
    if intake.conflicts:
        lines.append(f"conflicting student ids ({len(intake.conflicts)} entries, none graded):")
        for u in intake.conflicts[:25]:
            lines.append(f"  {u.origin}: {u.reason}")
    if intake.clutter:
        lines.append(f"ignored {intake.clutter} editor/OS clutter file(s) (.ipynb_checkpoints, .DS_Store, ...)")
    if intake.caches:
        shown = ", ".join(intake.caches[:3]) + (" ..." if len(intake.caches) > 3 else "")
        lines.append(f"ignored {len(intake.caches)} compile cache folder(s) in hand-ins, never graded: {shown}")
    lines.append(f"wrote {out / 'grades.csv'}, {out / 'results.json'}, {out / 'feedback'}/")
    if (out / "report.html").is_file():
        lines.append(f"class report: {out / 'report.html'}")
    print("\n".join(lines))
