"""The records passed between the grader's parts, typed once.

- `Task`: one unit of work for a worker (run a reference solution, or grade
  one student's notebook for one assignment).
- `CellOutcome`, `RunResult`: what running one notebook produced (run/executor.py makes them,
  judge/score.py reads them): each cell's ending, the observation bytes each test cell recorded,
  the kernel's events (time-outs, deaths, limits, output caps: phrases, not words).
- `KernelStarted`, `KernelGone`, `TaskDone`: the messages a worker sends the pool over its pipe;
  `ReferenceRun` and `InternalError`: what a reference task, or a task that failed inside the
  grader, gives back (a graded notebook gives back its `Row`).
- `Phrase`, `Words`, `Verdict`: what the judge found, and what happened while a notebook ran, as
  data: a `Kind` from a closed set (each the key of its sentence in `messages.TEXT`), its typed
  fields (which variable, case or cell, which `Property` failed, what was expected, what was seen,
  numbers as numbers). No words: `publish/words.py` writes them, in the reader's language, when a
  file is published.
- `CellResult`: the result for one graded test cell (its reason a `Reason`: data or literal text).
- `Row`: one student x assignment result; what `grades.csv`, `results.json`,
  the gradebook, the feedback page and the class report are made from. Made in one place
  (`make_row`).

All are frozen dataclasses, parsed once at an edge (`from_json`: the scorer's pipe, a previous
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
    CELL_TIMEOUT,
    KERNEL_MEMORY_MB,
    MAX_ADDED_CELLS,
    MAX_ECHO_CHARS,
    NOTEBOOK_BUDGET,
    NOTEBOOK_OUTPUT_CHARS,
    SUBMISSION_BUDGET,
)

__all__ = [
    "GraderError",
    "Options",
    "Task",
    "CellOutcome",
    "RunResult",
    "KernelStarted",
    "KernelGone",
    "TaskDone",
    "ReferenceRun",
    "InternalError",
    "Kind",
    "Property",
    "Phrase",
    "Words",
    "Field",
    "phrase",
    "Verdict",
    "Reason",
    "CellResult",
    "Row",
    "make_row",
    "zero_cells",
    "CSV_COLUMNS",
    "STATUSES",
]

CSV_COLUMNS = ["student", "assignment", "score", "max_score", "status", "reason"]


class GraderError(Exception):
    """A problem with the grader's inputs or set-up (not with a submission): exit non-zero."""


@dataclass
class Options:
    """What `python -m autograder grade` was asked to do."""

    course: Path
    submissions: Path | None = None
    out: Path | None = None
    students: list[str] = field(default_factory=list)
    assignments: list[str] = field(default_factory=list)
    jobs: int = 0
    timeout: float = CELL_TIMEOUT
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


@dataclass
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


@dataclass
class CellOutcome:
    """How one cell ended. `evalue`: what the kernel's error said (literal text), or, where the grader
    ended the cell (timeout, kernel death, a limit, not run, a hidden part's error), a `Phrase`."""

    status: str  # ok | error | timeout | died | not_run
    ename: str = ""
    evalue: str | Phrase = ""
    seconds: float = 0.0


@dataclass
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
class KernelStarted:
    """worker -> pool: a kernel of this worker runs as process `pid` (its process group is killed with it)."""

    pid: int


@dataclass(frozen=True)
class KernelGone:
    """worker -> pool: the worker killed its kernel `pid` itself."""

    pid: int


@dataclass
class ReferenceRun:
    """What running a reference solution gave: its observations, or the problems that make it unusable."""

    assignment: str
    problems: list[str]
    observations: dict[str, tuple[bytes | None, bytes | None]]
    seconds: float


@dataclass(frozen=True)
class InternalError:
    """A task that failed inside the grader (a grader bug, or a worker lost twice): `detail` says how."""

    detail: str


@dataclass(frozen=True)
class TaskDone:
    """worker -> pool: task `seq` is finished; `result` is its Row (grade), ReferenceRun or InternalError."""

    seq: int
    result: Row | ReferenceRun | InternalError


class Kind(StrEnum):
    """What a reason says: a closed set, each the key of its sentence in `messages.TEXT`.

    The judge (`autograder/judge/`) says which kind, with its typed fields; the words come from
    `TEXT` only when publishing (`autograder/publish/words.py`), in the reader's language."""

    # a test cell's reasons (judge/score.py)
    NOT_ANSWERED = "not_answered"
    RESULTS_UNREADABLE = "results_unreadable"
    CELL_NOT_RUN = "cell_not_run"
    NOTHING_RECORDED = "nothing_recorded"
    HIDDEN_INPUTS = "hidden_inputs"
    HIDDEN_PART_FAILED = "hidden_part_failed"
    AND_MORE = "and_more"
    NOTEBOOK_UNREADABLE = "notebook_unreadable"
    # a row's reasons (judge/score.py)
    KERNEL_NOT_STARTED = "kernel_not_started"
    ANSWERS_MISSING = "answers_missing"
    FAILED_TESTS = "failed_tests"
    # what the judge found (judge/compare.py, exported.py, compiling.py, programs.py, scorer_process.py)
    NO_PROGRAM = "no_program"
    TOO_MANY_PROGRAMS = "too_many_programs"
    PROGRAM_UNREADABLE = "program_unreadable"
    PROGRAM_NEEDS_DEVICES = "program_needs_devices"
    SIDE_EFFECTS = "side_effects"
    HOST_CALLS = "host_calls"
    WRONG_MESH = "wrong_mesh"
    PROGRAM_FAILED = "program_failed"
    PROGRAM_FAILED_HIDDEN = "program_failed_hidden"
    COMM_OVER = "comm_over"
    NO_COMM = "no_comm"
    COMM_MISSING = "comm_missing"
    COMM_EXTRA_AXES = "comm_extra_axes"
    COMM_SURPLUS = "comm_surplus"
    LAYOUT_INPUT = "layout_input"
    LAYOUT_REGION_INPUT = "layout_region_input"
    LAYOUT_REGIONS = "layout_regions"
    LAYOUT_REGION_DEAD = "layout_region_dead"
    LAYOUT_OUTPUT = "layout_output"
    LAYOUT_INPUT_NAME = "layout_input_name"
    LAYOUT_UNSTATED = "layout_unstated"
    LAYOUT_REPLICATED = "layout_replicated"
    LAYOUT_SPLIT = "layout_split"
    LAYOUT_DIM = "layout_dim"
    LAYOUT_NO_REGION = "layout_no_region"
    SIG_DEVICES = "sig_devices"
    SIG_GLOBAL_VIEW = "sig_global_view"
    SIG_NO_AXIS = "sig_no_axis"
    SIG_PER_DEVICE = "sig_per_device"
    SIG_TAKES = "sig_takes"
    SIG_STRUCTURE = "sig_structure"
    SIG_RETURNS = "sig_returns"
    SHAPE_DTYPE = "shape_dtype"
    EXPECTED_GOT = "expected_got"
    VALUES_DIFFER = "values_differ"
    AXES_NOT_NAMES = "axes_not_names"
    AXES_SEEN = "axes_seen"
    AXES_NONE = "axes_none"
    AXES_MISSING = "axes_missing"
    KEY_MISSING = "key_missing"
    EXPECTED_ARRAY = "expected_array"
    EXPECTED_NOT_ARRAY = "expected_not_array"
    SCORER_TIMEOUT = "scorer_timeout"
    SCORER_DIED = "scorer_died"
    SCORER_FAILED = "scorer_failed"
    # what happened while a notebook ran (run/executor.py, run/worker.py, sandbox/cgroups.py,
    # sandbox/workcopy.py): a cell's outcome, the run's events
    CELL_GRADE_ID = "cell_grade_id"
    CELL_ADDED = "cell_added"
    CELL_ID = "cell_id"
    CELL_NUMBER = "cell_number"
    CELLS_DROPPED = "cells_dropped"
    BUDGET_NOTEBOOK = "budget_notebook"
    BUDGET_LEFT = "budget_left"
    BUDGET_RAN_OUT = "budget_ran_out"
    RAN_OUT_OF = "ran_out_of"
    OUTPUT_NOTEBOOK_CAP = "output_notebook_cap"
    OUTPUT_CELL_CAP = "output_cell_cap"
    STOPPED_BUDGET = "stopped_budget"
    RAN_LONGER = "ran_longer"
    THIS_CELL_INTERRUPTED = "this_cell_interrupted"
    CELL_INTERRUPTED = "cell_interrupted"
    THIS_CELL_HUNG = "this_cell_hung"
    CELL_HUNG = "cell_hung"
    THIS_CELL_OVERSIZED = "this_cell_oversized"
    CELL_OVERSIZED = "cell_oversized"
    LIMIT_RESTARTED = "limit_restarted"
    DIED_CPU = "died_cpu"
    DIED_SEGV = "died_segv"
    DIED_KILLED = "died_killed"
    DIED_FSIZE = "died_fsize"
    DIED_SIGNAL = "died_signal"
    DIED_EXIT = "died_exit"
    THIS_CELL_DIED = "this_cell_died"
    CELL_DIED = "cell_died"
    TOO_MANY_RESTARTS = "too_many_restarts"
    NOT_RESTARTED = "not_restarted"
    NOT_RESTARTED_BECAUSE = "not_restarted_because"
    REPLAY_FAILED_REST = "replay_failed_rest"
    REPLAY_FAILED = "replay_failed"
    NOT_RUN_BECAUSE = "not_run_because"
    LIMIT_MEMORY = "limit_memory"
    LIMIT_PROCESSES = "limit_processes"
    LIMIT_DISK = "limit_disk"
    EDITION_MISMATCH = "edition_mismatch"
    # a row the pool answers without a worker's result (run/pool.py)
    BUDGET_SPENT_ELSEWHERE = "budget_spent_elsewhere"
    BUDGET_USED_UP = "budget_used_up"
    NO_REFERENCE = "no_reference"
    NO_REFERENCE_CELL = "no_reference_cell"
    INTERNAL_ERROR = "internal_error"
    INTERNAL_ERROR_CELL = "internal_error_cell"
    WORKER_DIED = "worker_died"
    WORKER_HUNG = "worker_hung"
    LOST_TWICE = "lost_twice"
    NOT_GRADED_BECAUSE = "not_graded_because"


class Property(StrEnum):
    """Which property of a submission a finding is about (checked in this order: type, shape,
    dtype, layout, values, communication)."""

    RESULTS = "results"  # nothing (readable) recorded, or the wrong kind of value
    PROGRAM = "program"  # the recorded program itself: unreadable, not allowed, failed to run
    SIGNATURE = "signature"  # the program's inputs, outputs, devices, mesh
    SHAPE = "shape"
    DTYPE = "dtype"
    LAYOUT = "layout"
    VALUES = "values"
    COMMUNICATION = "communication"
    GRADER = "grader"  # the grader could not judge it (scorer timeout, crash)


_PROPERTY = {
    Kind.RESULTS_UNREADABLE: Property.RESULTS,
    Kind.KEY_MISSING: Property.RESULTS,
    Kind.EXPECTED_ARRAY: Property.RESULTS,
    Kind.EXPECTED_NOT_ARRAY: Property.RESULTS,
    Kind.NO_PROGRAM: Property.PROGRAM,
    Kind.TOO_MANY_PROGRAMS: Property.PROGRAM,
    Kind.PROGRAM_UNREADABLE: Property.PROGRAM,
    Kind.PROGRAM_NEEDS_DEVICES: Property.PROGRAM,
    Kind.SIDE_EFFECTS: Property.PROGRAM,
    Kind.HOST_CALLS: Property.PROGRAM,
    Kind.PROGRAM_FAILED: Property.PROGRAM,
    Kind.PROGRAM_FAILED_HIDDEN: Property.PROGRAM,
    Kind.WRONG_MESH: Property.SIGNATURE,
    Kind.SIG_DEVICES: Property.SIGNATURE,
    Kind.SIG_PER_DEVICE: Property.SIGNATURE,
    Kind.SIG_TAKES: Property.SIGNATURE,
    Kind.SIG_STRUCTURE: Property.SIGNATURE,
    Kind.SIG_RETURNS: Property.SIGNATURE,
    Kind.LAYOUT_INPUT: Property.LAYOUT,
    Kind.LAYOUT_REGION_INPUT: Property.LAYOUT,
    Kind.LAYOUT_REGIONS: Property.LAYOUT,
    Kind.LAYOUT_REGION_DEAD: Property.LAYOUT,
    Kind.LAYOUT_OUTPUT: Property.LAYOUT,
    Kind.VALUES_DIFFER: Property.VALUES,
    Kind.AXES_NOT_NAMES: Property.COMMUNICATION,
    Kind.AXES_MISSING: Property.COMMUNICATION,
    Kind.COMM_MISSING: Property.COMMUNICATION,
    Kind.COMM_EXTRA_AXES: Property.COMMUNICATION,
    Kind.COMM_SURPLUS: Property.COMMUNICATION,
    Kind.SCORER_TIMEOUT: Property.GRADER,
    Kind.SCORER_DIED: Property.GRADER,
    Kind.SCORER_FAILED: Property.GRADER,
}


@dataclass(frozen=True)
class Phrase:
    """A sentence as data: its `kind` and the values of its fields (literal text, numbers, or other
    phrases). `case`: the program case it is about (the words say "<case>: ..." ahead of the sentence
    when the sentence does not name it itself). `prop`: which property failed, where the kind alone
    does not say (shape or dtype); see `failed`.

    Literal fields are bounded where they are made (`limits.MAX_ECHO_*`, `MAX_ERROR_CHARS`) and
    again where a phrase crosses a pipe (`from_json`)."""

    kind: Kind
    fields: tuple[tuple[str, Field], ...] = ()
    case: str = ""
    prop: Property | None = None

    def get(self, name: str, default: Field = "") -> Field:
        return next((v for k, v in self.fields if k == name), default)

    @property
    def failed(self) -> Property | None:
        """Which property this finding says failed (None: words inside another sentence)."""
        return self.prop or _PROPERTY.get(self.kind)

    @property
    def variable(self) -> str:
        """The observation key or program case it is about ('' if none)."""
        return str(self.get("key", "")) or self.case

    @property
    def expected(self) -> Field:
        return self.get("want")

    @property
    def seen(self) -> Field:
        return self.get("got")

    def to_json(self) -> dict:
        out: dict[str, Any] = {"kind": self.kind.value, "fields": [[k, _field_json(v)] for k, v in self.fields]}
        if self.case:
            out["case"] = self.case
        if self.prop is not None:
            out["prop"] = self.prop.value
        return out

    @classmethod
    def from_json(cls, data: Any, depth: int = 0) -> Phrase:
        """Parsed at the edge (the scorer's pipe): a closed set of kinds, bounded fields; raises ValueError."""
        if not isinstance(data, dict) or depth > _MAX_DEPTH:
            raise ValueError("a phrase is a JSON object")
        fields = data.get("fields") or []
        if not isinstance(fields, list) or len(fields) > _MAX_FIELDS:
            raise ValueError("a phrase's fields are a short list")
        parsed = []
        for item in fields:
            if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)):
                raise ValueError("a phrase's field is a [name, value] pair")
            parsed.append((item[0][:40], _field_from_json(item[1], depth + 1)))
        prop = data.get("prop")
        return cls(
            Kind(data.get("kind")),
            tuple(parsed),
            case=str(data.get("case", ""))[:MAX_ECHO_CHARS],
            prop=Property(prop) if prop is not None else None,
        )


@dataclass(frozen=True)
class Words:
    """Parts written one after another with `sep` between them (a list of names, "a; b; and 2 more")."""

    parts: tuple[Field, ...]
    sep: str = ""


Field = str | int | float | Phrase | Words
_MAX_DEPTH = 6
_MAX_FIELDS = 12
_MAX_PARTS = 64
_MAX_LITERAL = 400


def _field_json(value: Field) -> Any:
    if isinstance(value, Phrase):
        return {"phrase": value.to_json()}
    if isinstance(value, Words):
        return {"words": [_field_json(p) for p in value.parts], "sep": value.sep}
    return value


def _field_from_json(value: Any, depth: int) -> Field:
    if isinstance(value, bool) or value is None:
        raise ValueError("a field is text, a number, a phrase or words")
    if isinstance(value, str):
        return value[:_MAX_LITERAL]
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, dict) and depth <= _MAX_DEPTH:
        if "phrase" in value:
            return Phrase.from_json(value["phrase"], depth + 1)
        parts = value.get("words")
        if isinstance(parts, list) and len(parts) <= _MAX_PARTS:
            return Words(tuple(_field_from_json(p, depth + 1) for p in parts), str(value.get("sep", ""))[:8])
    raise ValueError("a field is text, a number, a phrase or words")


def phrase(kind: str | Kind, /, case: str = "", prop: Property | None = None, **fields: Field) -> Phrase:
    """`Phrase(Kind(kind), fields)`: how the judge says what it found (no words: those come at publishing)."""
    return Phrase(Kind(kind), tuple(fields.items()), case=case, prop=prop)


@dataclass(frozen=True)
class Verdict:
    """What the judge decided for one test cell's recording: passed, or the findings that failed it.
    `on_hidden_inputs`: the findings are introduced as results that differ on hidden inputs (False:
    the findings say it themselves, e.g. the grader could not judge it)."""

    passed: bool
    differences: tuple[Phrase, ...] = ()
    on_hidden_inputs: bool = True

    def to_json(self) -> dict:
        return {
            "passed": self.passed,
            "differences": [d.to_json() for d in self.differences],
            "on_hidden_inputs": self.on_hidden_inputs,
        }

    @classmethod
    def from_json(cls, data: Any, limit: int = 50) -> Verdict:
        """Parsed at the edge (the scorer's pipe); raises ValueError on anything else."""
        if not isinstance(data, dict) or not isinstance(data.get("differences", []), list):
            raise ValueError("a verdict is a JSON object")
        diffs = tuple(Phrase.from_json(d) for d in data.get("differences", [])[:limit])
        return cls(data.get("passed") is True and not diffs, diffs, data.get("on_hidden_inputs", True) is not False)


Reason = str | Phrase | Words | Verdict
"""Why a cell or a row scored what it did: literal text (what the kernel said), a phrase (the judge's
findings, what happened while the notebook ran, why the pool did not run it), phrases in a row, or
the judge's verdict. Made into words by `autograder/publish/words.py` only."""


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

    @classmethod
    def from_json(cls, data: Any) -> CellResult:
        """A cell of a previous results.json (its reason is words by now)."""
        if not isinstance(data, dict):
            raise ValueError("a cell result is a JSON object")
        return cls(
            str(data.get("grade_id", "")),
            float(data.get("points", 0.0)),
            float(data.get("max_points", 0.0)),
            data.get("passed") is True,
            str(data.get("reason", "")),
        )


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
    status: str  # STATUSES
    reason: Reason
    cells: tuple[CellResult, ...] = ()
    language: str = ""  # the submission's language (validated; reasons and feedback are in it); "": none read (English)
    seconds: float | None = None  # wall time in the worker (timings.json only; None: no worker ran it)
    exec_seconds: float = 0.0  # of which running the notebook
    stages: tuple[tuple[str, float], ...] = ()  # where its wall time went, seconds by stage (timings.json only)
    grader_peak_kb: int = 0  # the worker's peak resident memory while grading it (timings.json only)
    observe_log: tuple[str, ...] = ()  # files found in the observation folder that no hidden part wrote

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
            status=str(data.get("status", "")),
            reason=str(data.get("reason", "")),
            cells=tuple(CellResult.from_json(c) for c in (cells if isinstance(cells, list) else [])),
            language=str(data.get("language", "")),
            observe_log=tuple(str(x) for x in (log if isinstance(log, list) else [])),
        )


def zero_cells(source: _Graded, reason: Reason) -> tuple[CellResult, ...]:
    """Every test cell of the assignment at 0 points, for the same reason."""
    return tuple(CellResult(t.grade_id, 0.0, float(t.points), False, reason) for t in source.test_cells)


def make_row(
    student: str,
    assignment: str,
    origin: str,
    source: _Graded | None,
    status: str,
    reason: Reason,
    cells: tuple[CellResult, ...] = (),
    language: str = "",
    observe_log: tuple[str, ...] = (),
) -> Row:
    """The one place rows are made: the score is the sum of the cells' points (rounded), the maximum
    the assignment's (0 for a file that belongs to no assignment: `source` None)."""
    return Row(
        student=student,
        assignment=assignment,
        origin=origin,
        score=round(sum((c.points for c in cells), 0.0), 6),
        max_score=source.max_score if source is not None else 0.0,
        status=status,
        reason=reason,
        cells=tuple(cells),
        language=language,
        observe_log=tuple(observe_log),
    )


# What a row's status means (grades.csv, report). The first problem of a run decides it.
STATUSES = {
    "ok": "graded (whatever the score)",
    "timeout": "a cell ran past its timeout, or the notebook / submission past its time budget",
    "kernel_died": "the kernel died (and was restarted)",
    "too_much_output": "too much output (in one message, one cell or the notebook); the rest was dropped",
    "too_many_cells": "more added cells than allowed; the further ones were dropped",
    "memory": "the memory limit was reached",
    "processes": "the process limit was reached",
    "disk": "the working copy's disk quota was reached",
    "error": "not graded: an internal grader error, or no clean reference solution",
    "unreadable": "the file is not a readable notebook",
    "missing": "no notebook submitted",
    "unplaceable": "a file that could not be matched to a student and assignment",
    "conflict": "two submission folders name the same student id; neither was graded",
}
