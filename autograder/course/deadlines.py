"""The course's deadlines: a due date per assignment, extensions per student, and the late policy.

    policy = load_policy(course, assignment_ids)     # None when the course has no deadlines.toml
    late = policy.late(student, assignment, handed_in, max_score)   # a records.Late (or on time by an extension)

Two files of the course folder, both the instructor's (nbgrader's course folder, next to
`nbgrader_config.py`):

- `deadlines.toml`:

      [due]                                  # every date with its time zone (or Z)
      01_axis_names = 2026-12-10T23:59:00+01:00
      02_scaled_sum = "2026-12-17 23:59 +01:00"

      [late]
      grace_minutes = 15                     # late by less than this: no penalty
      penalty_per_day = 0.10                 # of the assignment's maximum, per started day late
      max_penalty = 0.50                     # of the maximum, at most (1.0: down to zero)

- `extensions.csv` (optional): `student,assignment,days`: `days` more (a decimal number) for
  that student, for one assignment or for every one (`*`).

Design: the policy is a fact about the course, read once at the start of a batch into a frozen
record. A malformed file is a `GraderError` that names the file and the line, raised before any
notebook is run or any file written, so a typo never costs a graded batch. The policy is
applied in `records.make_row` (the one place rows are made): the score is the points earned
minus the penalty, never below zero, and the row keeps the `Late` record that says why (the hand-in
time, the due date with any extension applied, the delay, and the course's rule that gave the penalty;
or that an extension made it on time), which grades.csv, results.json, the feedback page, the report
and the gradebook all show, each time in the due date's time zone.

Threat model: these files are the instructor's, not a student's; they are still read with a
bound (`POLICY_MAX_BYTES`). The time a hand-in was made is not taken from the student: it is
the timestamp `intake/inbound.py` validated when the hand-in was collected (never in the future,
never earlier than the last change of the hand-in's files), which nbgrader's collect keeps in
submitted/<student>/<assignment>/timestamp.txt (`intake.placement.handed_in_times`).
"""

from __future__ import annotations

import csv
import io
import math
import tomllib
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from ..limits import POLICY_MAX_BYTES, POLICY_MAX_DAYS
from ..records import GraderError, Late

__all__ = ["LatePolicy", "load_policy", "parse_due", "POLICY_FILE", "EXTENSIONS_FILE"]

POLICY_FILE = "deadlines.toml"
EXTENSIONS_FILE = "extensions.csv"
_DAY = 86400.0


@dataclass(frozen=True)
class LatePolicy:
    """Due dates (aware datetimes), the grace, the penalty per started day and its cap (fractions of the
    assignment's maximum), and extensions by (student, assignment or "*")."""

    due: dict[str, datetime]
    grace: timedelta = timedelta(0)
    per_day: float = 0.0
    cap: float = 1.0
    extensions: dict[tuple[str, str], timedelta] = field(default_factory=dict)

    def due_for(self, student: str, assignment: str) -> datetime | None:
        """The student's due date for the assignment, extensions included (None: the assignment has none)."""
        due = self.due.get(assignment)
        if due is None:
            return None
        extra = self.extensions.get((student, assignment), self.extensions.get((student, "*"), timedelta(0)))
        return due + extra

    def late(self, student: str, assignment: str, handed_in: datetime | None, max_score: float) -> Late | None:
        """What a hand-in's line says (`Late`): late (after the student's due date: how late, and the penalty by
        the course's rule), or on time only thanks to an extension (after the assignment's own due date, by
        the student's). None when there is no due date or no hand-in time, or it was on time by the
        assignment's own due date. Both times are written in the due date's time zone."""
        course_due, due = self.due.get(assignment), self.due_for(student, assignment)
        if course_due is None or due is None or handed_in is None or handed_in <= course_due:
            return None
        seconds = (handed_in - due).total_seconds()
        days = 0 if seconds <= self.grace.total_seconds() else math.ceil(seconds / _DAY)  # 0: on time, or in grace
        fraction = min(self.cap, days * self.per_day)
        extended = due != course_due
        return Late(
            handed_in=handed_in.astimezone(due.tzinfo).isoformat(timespec="seconds"),
            due=due.isoformat(timespec="seconds"),
            seconds=round(seconds, 3),
            days=days,
            fraction=round(fraction, 6),
            penalty=round(fraction * max_score, 6),
            extended=extended,
            course_due=course_due.isoformat(timespec="seconds") if extended else "",
            per_day=self.per_day,
            cap=self.cap,
            grace_minutes=round(self.grace.total_seconds() / 60, 3),
            max_score=max_score,
        )


def _read(path: Path) -> str:
    """The file's text, bounded; a clear error when it is too large or not UTF-8."""
    with open(path, "rb") as f:
        data = f.read(POLICY_MAX_BYTES + 1)
    if len(data) > POLICY_MAX_BYTES:
        raise GraderError(f"{path}: larger than {POLICY_MAX_BYTES} bytes; is this the right file?")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise GraderError(f"{path}: not UTF-8 text (byte {err.start})") from None


def _line_of(text: str, key: str) -> int:
    """The line `key = ...` is on (for messages about a value TOML read fine)."""
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip().startswith((f"{key} ", f"{key}=", f'"{key}"')):
            return number
    return 0


def parse_due(value: object) -> datetime:
    """A due date: a TOML datetime or an ISO 8601 text, with its time zone; ValueError otherwise."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip())
        except ValueError:
            raise ValueError(f"{value!r} is not a date and time (write 2026-12-10T23:59:00+01:00)") from None
    if not isinstance(value, datetime):
        raise ValueError(f"{value!r} is not a date and time (write 2026-12-10T23:59:00+01:00)")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{value.isoformat()} has no time zone (add one, such as +01:00 or Z)")
    return value


def _fraction(late: dict, key: str, default: float, where: str) -> float:
    value = late.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise GraderError(f"{where}: [late] {key} = {value!r}: write a fraction between 0 and 1 (0.1 is 10 %)")
    return float(value)


def _policy_file(path: Path, assignments: set[str]) -> LatePolicy:
    text = _read(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise GraderError(f"{path}: {err}") from None
    unknown = sorted(set(data) - {"due", "late"})
    if unknown:
        raise GraderError(f"{path}: unknown table(s) {', '.join(unknown)} (known: [due] and [late])")
    due = {}
    for aid, value in (data.get("due") or {}).items():
        where = f"{path}:{_line_of(text, aid)}"
        if aid not in assignments:
            known = ", ".join(sorted(assignments))
            raise GraderError(f"{where}: no assignment {aid!r} in this course (known: {known})")
        try:
            due[aid] = parse_due(value)
        except ValueError as err:
            raise GraderError(f"{where}: the due date of {aid}: {err}") from None
    late = data.get("late") or {}
    unknown = sorted(set(late) - {"grace_minutes", "penalty_per_day", "max_penalty"})
    if unknown:
        raise GraderError(
            f"{path}: [late] has unknown key(s) {', '.join(unknown)} "
            f"(known: grace_minutes, penalty_per_day, max_penalty)"
        )
    grace = late.get("grace_minutes", 0)
    if isinstance(grace, bool) or not isinstance(grace, int | float) or not 0 <= grace <= POLICY_MAX_DAYS * 1440:
        where = f"{path}:{_line_of(text, 'grace_minutes')}"
        most = f"{POLICY_MAX_DAYS * 1440} ({POLICY_MAX_DAYS} days)"
        raise GraderError(f"{where}: grace_minutes = {grace!r}: write minutes, from 0 to {most}")
    return LatePolicy(
        due=due,
        grace=timedelta(minutes=grace),
        per_day=_fraction(late, "penalty_per_day", 0.0, f"{path}:{_line_of(text, 'penalty_per_day')}"),
        cap=_fraction(late, "max_penalty", 1.0, f"{path}:{_line_of(text, 'max_penalty')}"),
    )


def _extensions(path: Path, assignments: set[str], due: dict[str, datetime]) -> dict[tuple[str, str], timedelta]:
    """`student,assignment,days` lines (a header line first); every problem names its line, an extension that
    would move a due date (`due`) past the calendar's end too."""
    rows = csv.reader(io.StringIO(_read(path)))
    header = [h.strip().lower() for h in next(rows, [])]
    if header != ["student", "assignment", "days"]:
        raise GraderError(f"{path}:1: the first line must be student,assignment,days (it is {','.join(header)!r})")
    out: dict[tuple[str, str], timedelta] = {}
    for number, row in enumerate(rows, 2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != 3:
            raise GraderError(f"{path}:{number}: {len(row)} fields; write student,assignment,days")
        student, aid, days = (cell.strip() for cell in row)
        if not student:
            raise GraderError(f"{path}:{number}: no student id")
        if aid != "*" and aid not in assignments:
            raise GraderError(f"{path}:{number}: no assignment {aid!r} in this course (or * for every one)")
        try:
            value = float(days)
        except ValueError:
            raise GraderError(f"{path}:{number}: days {days!r} is not a number") from None
        if not 0 <= value <= POLICY_MAX_DAYS or math.isnan(value):
            raise GraderError(f"{path}:{number}: days {days!r} must be between 0 and {POLICY_MAX_DAYS}")
        _fits(f"{path}:{number}: days {days}", due, aid, timedelta(days=value))
        if (student, aid) in out:
            raise GraderError(f"{path}:{number}: a second extension for {student} and {aid}")
        out[(student, aid)] = timedelta(days=value)
    return out


def _fits(where: str, due: dict[str, datetime], aid: str, extra: timedelta) -> None:
    """A GraderError saying `where` when `extra` moves a due date (`aid`'s, or every one for *) past the last
    date a datetime holds: the lateness of a hand-in could not be computed (OverflowError at grading)."""
    for one in sorted(due) if aid == "*" else [a for a in [aid] if a in due]:
        try:
            due[one] + extra
        except OverflowError:
            raise GraderError(
                f"{where}: this extension moves {one}'s due date {due[one].isoformat()} past the calendar's last "
                f"day (9999-12-31): write an earlier due date or a shorter extension"
            ) from None


def load_policy(course: Path, assignments) -> LatePolicy | None:
    """The course's late policy, or None when it has no deadlines.toml (then nothing is ever late)."""
    known = set(assignments)
    path = Path(course) / POLICY_FILE
    extensions = Path(course) / EXTENSIONS_FILE
    if not path.is_file():
        if extensions.is_file():
            raise GraderError(f"{extensions}: extensions without due dates: add {path} ([due] and [late])")
        return None
    policy = _policy_file(path, known)
    if extensions.is_file():
        extended = _extensions(extensions, known, policy.due)
        policy = LatePolicy(policy.due, policy.grace, policy.per_day, policy.cap, extended)
    return policy
