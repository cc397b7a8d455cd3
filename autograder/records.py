"""The records passed between the grader's parts, typed once.

- `Options`: what the command line asked for; `Batch`: the same resolved once at the edge
  (`runner.resolve`) into one frozen record of the batch's paths and settings, passed whole to
  every step (never loose paths, never computed twice); `BatchResults`: what the run step gave back;
  `Graded`: the batch, what was found for it and what its run gave, whole, for publishing.
- `Task`: one unit of work for a worker (run a reference solution, or grade one student's notebook).
- `CellOutcome` (its `CellEnd`), `RunResult`: what running one notebook produced (run/executor.py makes them,
  judge/score.py reads them): each cell's ending, the observation bytes each test cell recorded,
  the kernel's events (time-outs, deaths, limits, output caps: phrases, not words).
- `ReferenceRun` and `InternalError`: what a reference task, or a task that failed inside the
  grader, gives back (a graded notebook gives back its `Row`). The messages a worker sends the pool over
  its pipe are the pool's own (run/pipe.py).
- Reasons (what the judge found, what happened while a notebook ran) are `reasons.py`'s phrases and
  verdicts: data, no words.
- `Late`: how late a hand-in was and what it cost, by which rule, or that an extension made it on time
  (course/deadlines.py makes it, `make_row` applies it).
- `CellResult`: the result for one graded test cell (its reason a `Reason`: data or literal text).
- `Row`: one student x assignment result; what `grades.csv`, `results.json`, the gradebook, the feedback
  page and the class report are made from. Made in one place (`make_row`).

All are frozen dataclasses but three, each marked `mutable` where it is declared, since a stage fills it as it
goes: `Task` (its budget set when it goes to a worker), `RunResult` (filled cell by cell), `BatchResults`
(filled as tasks end). They are parsed once at an edge (`from_json`: the scorer's pipe, a previous
results.json) and passed as types; they cross the pool's pipe pickled (trusted: the grader's own
processes). Threat model: a phrase's literal fields may hold student-controlled text (names, error
texts); they are bounded where they are made and again when parsed, and are only ever inserted
into a sentence, never formatted as templates (`messages.text`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol

from .limits import (
    CELL_TIME_MULTIPLE,
    CELL_TIMEOUT,
    KERNEL_MEMORY_MB,
    MAX_ADDED_CELLS,
    NOTEBOOK_BUDGET,
    NOTEBOOK_OUTPUT_CHARS,
    SUBMISSION_BUDGET,
)
from .reasons import Phrase, Reason

__all__ = [
    "GraderError",
    "Options",
    "Batch",
    "BatchResults",
    "Graded",
    "Task",
    "CellOutcome",
    "RunResult",
    "ReferenceRun",
    "ReferenceTimes",
    "TimeLimits",
    "InternalError",
    "CellResult",
    "Late",
    "Row",
    "CellEnd",
    "make_row",
    "zero_cells",
    "CSV_COLUMNS",
    "Status",
    "STATUSES",
    "NOT_HANDED_IN",
]

CSV_COLUMNS = [
    "student",
    "assignment",
    "score",
    "max_score",
    "status",
    "reason",
    "late_penalty",
    "handed_in",
    "due",
    "late",
]


class GraderError(Exception):
    """A problem with the grader's inputs or set-up (not with a submission): exit non-zero."""


@dataclass(frozen=True)
class Options:
    """What `python -m autograder grade` was asked to do."""

    course: Path
    submissions: Path | None = None
    out: Path | None = None
    students: list[str] = field(default_factory=list)
    assignments: list[str] = field(default_factory=list)
    jobs: int = 0
    timeout: float = CELL_TIMEOUT  # a cell's limit at least (run/time_limits.py: more where the reference needs more)
    timeout_multiple: float = CELL_TIME_MULTIPLE  # limits follow the reference's times x this (0: fixed limits)
    cache: Path | None = None
    isolate: bool = True
    memory_mb: int = KERNEL_MEMORY_MB
    cpu_seconds: int = 0
    gradebook: bool = True
    course_gradebook: bool = False  # with submissions: also write the course's gradebook.db
    feedback: bool = True
    quiet: bool = False
    notebook_budget: float = NOTEBOOK_BUDGET  # wall-clock seconds per notebook (all its cells, restarts included)
    submission_budget: float = SUBMISSION_BUDGET  # wall-clock seconds per student, over all their notebooks
    max_added_cells: int = MAX_ADDED_CELLS  # cells a student may add to a notebook; further ones are dropped
    max_output_chars: int = NOTEBOOK_OUTPUT_CHARS  # output kept per notebook; further output is dropped


@dataclass(frozen=True)
class Batch:
    """One grading run's paths and settings, resolved once (`runner.resolve`) and passed whole."""

    opts: Options
    course: Path  # the nbgrader course folder
    out: Path  # grades.csv, results.json, report.html, feedback/ (COURSE/grades by default)
    cache: Path  # the reference observations (build/autograder/references by default)
    xla_root: Path  # the assignments' XLA compilation caches (beside the reference cache)
    submissions: Path | None  # a folder (or .zip) of submissions; None: the course's submitted/
    autograded_root: Path  # the executed notebooks, autograded/<student>/<assignment>/
    nbgrader_feedback_root: Path | None  # course mode: nbgrader's feedback/ folder gets the page too
    gradebooks: tuple[tuple[str, Path | None], ...]  # (database URL, submitted/ for timestamps) to write
    jobs: int  # worker processes
    work_root: Path | None = None  # this run's private folder (working copies, logs); set once it is made

    @property
    def every_student(self) -> bool:
        """Every student of the assignments graded (a --student run keeps the other rows)."""
        return not self.opts.students

    def feedback_page(self, student: str, assignment: str) -> Path:
        """Where the grader's feedback page of one hand-in goes."""
        return self.out / "feedback" / student / f"{assignment}.html"


@dataclass  # mutable: the run step fills it as tasks end (run/batch.py)
class BatchResults:
    """What the run step gave back: the graded rows, internal errors (the grader's own English), how long
    each reference run took, and the problems of reference solutions that do not run cleanly."""

    rows: list[Row] = field(default_factory=list)
    internal: list[str] = field(default_factory=list)
    ref_seconds: dict[str, float] = field(default_factory=dict)
    ref_problems: dict[str, list[str]] = field(default_factory=dict)
    ref_retried: dict[str, str] = field(default_factory=dict)  # why a reference ran twice (the instructor's English)
    time_limits: dict[str, TimeLimits] = field(default_factory=dict)  # each graded assignment's (run/time_limits.py)


@dataclass(frozen=True)
class Graded:
    """One batch, graded, whole: what publishing takes (publish/publishing.py) and the exit status is made from. The
    batch, what was found for it (its assignments, whose hand-ins, the course's deadlines), the sandbox its
    kernels ran in (None where it was never set up), what the run gave back, and when grading started (its
    `time.monotonic()`, for the summary's wall time). Types of later stages are named, not imported: the
    shared records import nothing of the grader."""

    batch: Batch
    sources: dict  # assignment id -> course.notebooks.SourceNotebook
    intake: Any  # intake.placement.Intake: whose hand-ins there are
    policy: Any  # course.deadlines.LatePolicy, or None: no due dates
    sandbox: Any  # sandbox.launch.Sandbox, or None: grading stopped before it was set up
    results: BatchResults
    started: float


@dataclass  # mutable: the batch sets its budget, cell limit and cache when it goes to a worker
class Task:
    seq: int
    kind: str  # grade | reference
    assignment: str
    student: str = ""
    path: str = ""
    origin: str = ""
    ref_dir: str = ""
    autograded_path: str = ""
    feedback_paths: tuple = ()
    xla_dir: str = ""  # the assignment's XLA compilation cache (reference: the folder to fill)
    budget: float = 0.0  # wall-clock seconds this notebook may run (set by the pool)
    budget_label: Phrase | None = None  # what the budget is, as data (None: the notebook's own, or the submission's)
    budget_of_submission: float = 0.0  # > 0: the budget is what was left of this submission budget (seconds)
    prestart: bool = True  # another task may follow on this worker: boot its next kernel meanwhile (pool)
    late: Late | None = None  # the hand-in's lateness under the course's deadlines (course/deadlines.py)
    cell_timeout: float = 0.0  # seconds per cell (run/time_limits.py; 0: the run's --timeout)


class CellEnd(StrEnum):
    """How a cell ended (`CellOutcome.status`; a `str`): not a row's `Status`, nor what the kernel said."""

    OK, ERROR, TIMEOUT, DIED, NOT_RUN = "ok", "error", "timeout", "died", "not_run"


@dataclass(frozen=True)
class CellOutcome:
    """How one cell ended. `evalue`: what the kernel's error said (literal text), or, where the grader
    ended the cell (timeout, kernel death, a limit, not run, a hidden part's error), a `Phrase`."""

    status: CellEnd
    ename: str = ""
    evalue: str | Phrase = ""
    seconds: float = 0.0


@dataclass  # mutable: the executor fills it cell by cell (run/executor.py)
class RunResult:
    outcomes: dict[int, CellOutcome] = field(default_factory=dict)
    observations: dict[str, tuple[bytes | None, bytes | None]] = field(default_factory=dict)
    events: list[tuple[str, Phrase]] = field(default_factory=list)  # (status, what happened, as data)
    start_error: str = ""
    restarts: int = 0
    seconds: float = 0.0
    observe_log: list[str] = field(default_factory=list)  # what was in the observation folder, and when
    # where the wall time went (seconds; timings.json, `make bench-grade`'s breakdown): "start" (waiting
    # for the first kernel and its prelude), "cells" (visible parts), "hidden" (hidden parts), "restarts"
    stages: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class ReferenceRun:
    """What running a reference solution gave: its observations, or the problems that make it unusable."""

    assignment: str
    problems: list[str]
    observations: dict[str, tuple[bytes | None, bytes | None]]
    seconds: float
    times: ReferenceTimes | None = None  # its slowest cell and whole run (run/time_limits.py)
    retry: bool = False  # its problems are the machine's (a cell out of time, a kernel lost): worth a second run


@dataclass(frozen=True)
class ReferenceTimes:
    """What the reference's run took on this machine (seconds): its slowest cell (a test cell's visible and
    hidden parts together) and the whole run, kernel start included."""

    slowest_cell: float
    whole: float

    def as_json(self) -> dict:
        return {"slowest_cell": round(self.slowest_cell, 3), "whole": round(self.whole, 3)}

    @classmethod
    def from_json(cls, data) -> ReferenceTimes | None:
        """The times of an authenticated meta.json (None: none recorded, or not numbers)."""
        if not isinstance(data, dict):
            return None
        try:
            slowest, whole = float(data["slowest_cell"]), float(data["whole"])
        except (KeyError, TypeError, ValueError):
            return None
        if not (0 <= slowest < float("inf") and 0 <= whole < float("inf")):
            return None
        return cls(slowest, whole)


@dataclass(frozen=True)
class TimeLimits:
    """One assignment's limits for its students' notebooks (seconds), and what they came from."""

    cell: float
    notebook: float
    times: ReferenceTimes | None = None  # the reference's times they follow (None: the floors alone)
    multiple: float = 0.0

    def describe(self) -> str:
        """The instructor's English (the run's summary, results.json, the class report)."""
        said = f"{self.cell:.0f} s per cell, {self.notebook:.0f} s per notebook"
        if self.times is None or self.multiple <= 0:
            return said + " (the fixed limits)"
        return (
            f"{said} (at least the floors; {self.multiple:g}x the reference's slowest cell, "
            f"{self.times.slowest_cell:.1f} s, and its whole run, {self.times.whole:.1f} s, on this machine)"
        )


@dataclass(frozen=True)
class InternalError:
    """A task that failed inside the grader (a grader bug, or a worker lost twice): `detail` says how."""

    detail: str


class _Graded(Protocol):
    """What a row needs of an assignment (`course.notebooks.SourceNotebook`)."""

    max_score: float

    @property
    def test_cells(self) -> Any: ...


@dataclass(frozen=True)
class CellResult:
    """The result of one graded test cell."""

    grade_id: str
    points: float
    max_points: float
    passed: bool
    reason: Reason = ""
    finding: tuple[tuple[str, str], ...] = ()  # of a previous results.json: its `finding` (publish/misconceptions.py)
    judged: Reason = ""  # the judge's verdict on the hidden inputs when the visible check had failed (for the map)

    @classmethod
    def from_json(cls, data: Any) -> CellResult:
        """A cell of a previous results.json (its reason is words by now, its finding kept as it was)."""
        if not isinstance(data, dict):
            raise ValueError("a cell result is a JSON object")
        found = data.get("finding")
        return cls(
            str(data.get("grade_id", "")),
            float(data.get("points", 0.0)),
            float(data.get("max_points", 0.0)),
            data.get("passed") is True,
            str(data.get("reason", "")),
            tuple((str(k)[:20], str(v)[:2000]) for k, v in list(found.items())[:8]) if isinstance(found, dict) else (),
        )


@dataclass(frozen=True)
class Late:
    """A hand-in made after its due date (extensions included), or on time only thanks to an extension: when,
    the due date that applied, how late, and the penalty with the course's rule that gave it. Times are in the
    due date's time zone. `penalty` is in points; `make_row` lowers it to what the row earned, so a score never
    goes below 0 (`rule_penalty` stays what the rule gave)."""

    handed_in: str  # ISO 8601, the validated hand-in time, in the due date's time zone
    due: str  # ISO 8601, the student's due date (with any extension)
    seconds: float  # how late (0 or less: on time, with an extension)
    days: int  # started days late past the grace (0: on time, or within the grace: no penalty)
    fraction: float  # of the assignment's maximum
    penalty: float  # points taken off
    extended: bool = False  # the due date includes an extension
    course_due: str = ""  # ISO 8601, the assignment's own due date ("" when no extension applies)
    per_day: float = 0.0  # the course's rule: a fraction of the maximum per started day late ...
    cap: float = 1.0  # ... at most this fraction ...
    grace_minutes: float = 0.0  # ... after this grace
    max_score: float = 0.0  # the assignment's maximum, which the fractions are of

    @property
    def on_time(self) -> bool:
        """Handed in by the due date: only the extension made it so (there is no line for other hand-ins)."""
        return self.seconds <= 0

    @property
    def rule_penalty(self) -> float:
        return round(self.fraction * self.max_score, 6)

    @classmethod
    def from_json(cls, data: Any) -> Late | None:
        """The `late` of a previous results.json row (None when absent or unreadable)."""
        if not isinstance(data, dict):
            return None
        try:
            return cls(
                str(data["handed_in"])[:40],
                str(data["due"])[:40],
                float(data["seconds"]),
                int(data["days"]),
                float(data["fraction"]),
                float(data["penalty"]),
                data.get("extended") is True,
                str(data.get("course_due", ""))[:40],
                float(data.get("per_day", 0.0)),
                float(data.get("cap", 1.0)),
                float(data.get("grace_minutes", 0.0)),
                float(data.get("max_score", 0.0)),
            )
        except (KeyError, TypeError, ValueError):
            return None


@dataclass(frozen=True)
class Row:
    """One student x assignment result: what `grades.csv`, `results.json`, the gradebook, the
    feedback page and the class report are made from. Made by `make_row` only (or parsed from a
    previous results.json by `from_json`); timings are added with `timed`."""

    student: str
    assignment: str
    origin: str
    score: float
    max_score: float
    status: Status
    reason: Reason
    cells: tuple[CellResult, ...] = ()
    language: str = ""  # the submission's language (validated; reasons and feedback are in it); "": none read (English)
    seconds: float | None = None  # wall time in the worker (timings.json only; None: no worker ran it)
    exec_seconds: float = 0.0  # of which running the notebook
    stages: tuple[tuple[str, float], ...] = ()  # where its wall time went, seconds by stage (timings.json only)
    grader_peak_kb: int = 0  # the worker's peak resident memory while grading it (timings.json only)
    observe_log: tuple[str, ...] = ()  # files found in the observation folder that no hidden part wrote
    late: Late | None = None  # handed in after the due date: the penalty is already out of `score`

    def timed(self, **timings: Any) -> Row:
        return replace(self, **timings)

    @classmethod
    def from_json(cls, data: Any) -> Row:
        """A row of a previous results.json (kept by a --student/--assignment run); raises ValueError."""
        if not isinstance(data, dict):
            raise ValueError("a row is a JSON object")
        cells = data.get("cells") or []
        log = data.get("observe_log") or []
        return cls(
            student=str(data.get("student", "")),
            assignment=str(data.get("assignment", "")),
            origin=str(data.get("origin", "")),
            score=float(data.get("score", 0.0)),
            max_score=float(data.get("max_score", 0.0)),
            status=Status(str(data.get("status", ""))),
            reason=str(data.get("reason", "")),
            cells=tuple(CellResult.from_json(c) for c in (cells if isinstance(cells, list) else [])),
            language=str(data.get("language", "")),
            observe_log=tuple(str(x) for x in (log if isinstance(log, list) else [])),
            late=Late.from_json(data.get("late")),
        )


def zero_cells(source: _Graded, reason: Reason) -> tuple[CellResult, ...]:
    """Every test cell of the assignment at 0 points, for the same reason."""
    return tuple(CellResult(t.grade_id, 0.0, float(t.points), False, reason) for t in source.test_cells)


def make_row(
    student: str,
    assignment: str,
    origin: str,
    source: _Graded | None,
    status: Status,
    reason: Reason,
    cells: tuple[CellResult, ...] = (),
    language: str = "",
    observe_log: tuple[str, ...] = (),
    late: Late | None = None,
) -> Row:
    """The one place rows are made: the score is the sum of the cells' points (rounded) less the late
    penalty (at most what was earned), the maximum the assignment's (0 for a file that belongs to no
    assignment: `source` None)."""
    earned = round(sum((c.points for c in cells), 0.0), 6)
    if late is not None:
        late = replace(late, penalty=round(min(late.penalty, earned), 6))
    return Row(
        student=student,
        assignment=assignment,
        origin=origin,
        score=round(earned - late.penalty, 6) if late is not None else earned,
        max_score=source.max_score if source is not None else 0.0,
        status=Status(status),
        reason=reason,
        cells=tuple(cells),
        language=language,
        observe_log=tuple(observe_log),
        late=late,
    )


class Status(StrEnum):
    """A row's status (grades.csv, results.json, the report; `STATUSES` says what each means). A `str`, so a
    file writes its value and a value read back compares equal; made from text only at an edge
    (`Row.from_json`, the report's `class_results`), where anything else is a ValueError."""

    OK = "ok"
    TIMEOUT = "timeout"
    KERNEL_DIED = "kernel_died"
    TOO_MUCH_OUTPUT = "too_much_output"
    TOO_MANY_CELLS = "too_many_cells"
    MEMORY = "memory"
    PROCESSES = "processes"
    DISK = "disk"
    ERROR = "error"
    UNREADABLE = "unreadable"
    MISSING = "missing"
    UNPLACEABLE = "unplaceable"
    CONFLICT = "conflict"


# What a row's status means (grades.csv, report). The first problem of a run decides it.
STATUSES = {
    Status.OK: "graded (whatever the score)",
    Status.TIMEOUT: "a cell ran past its timeout, or the notebook / submission past its time budget",
    Status.KERNEL_DIED: "the kernel died (and was restarted)",
    Status.TOO_MUCH_OUTPUT: "too much output (in one message, one cell or the notebook); the rest was dropped",
    Status.TOO_MANY_CELLS: "more added cells than allowed; the further ones were dropped",
    Status.MEMORY: "the memory limit was reached",
    Status.PROCESSES: "the process limit was reached",
    Status.DISK: "the working copy's disk quota was reached",
    Status.ERROR: "not graded: an internal grader error, or no clean reference solution",
    Status.UNREADABLE: "the file is not a readable notebook",
    Status.MISSING: "no notebook submitted",
    Status.UNPLACEABLE: "a file that could not be matched to a student and assignment",
    Status.CONFLICT: "two submission folders name the same student id; neither was graded",
}
NOT_HANDED_IN = frozenset({Status.MISSING, Status.UNPLACEABLE, Status.CONFLICT})  # rows of no graded notebook
