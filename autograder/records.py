"""The records passed between the grader's parts, typed once.

- `Task`: one unit of work for a worker (run a reference solution, or grade
  one student's notebook for one assignment).
- `CellOutcome`, `RunResult`: what running one notebook produced (run/executor.py makes them,
  judge/score.py reads them): each cell's ending, the observation bytes each test cell recorded,
  the kernel's events.
- `KernelStarted`, `KernelGone`, `TaskDone`: the messages a worker sends the pool over its pipe;
  `ReferenceRun` and `InternalError`: what a reference task, or a task that failed inside the
  grader, gives back (a graded notebook gives back its `Row`).
- `CellResult`: the verdict for one graded test cell.
- `Row`: one student x assignment result; what `grades.csv`, `results.json`,
  the gradebook, the feedback page and the class report are made from.

Rows and cell results are TypedDicts: they travel between processes and into
JSON unchanged, and the type checker still knows their keys.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from .limits import (
    CELL_TIMEOUT,
    KERNEL_MEMORY_MB,
    MAX_ADDED_CELLS,
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
    "CellResult",
    "Row",
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
    budget_label: str = ""  # what the budget is, for messages ("the notebook's time budget of 300 s")
    budget_of_submission: float = 0.0  # > 0: the budget is what was left of this submission budget (seconds)
    prestart: bool = True  # another task may follow on this worker: boot its next kernel meanwhile (pool)


@dataclass
class CellOutcome:
    status: str  # ok | error | timeout | died | not_run
    ename: str = ""
    evalue: str = ""
    seconds: float = 0.0


@dataclass
class RunResult:
    outcomes: dict[int, CellOutcome] = field(default_factory=dict)
    observations: dict[str, tuple[bytes | None, bytes | None]] = field(default_factory=dict)
    events: list[tuple[str, str]] = field(default_factory=list)  # (status, reason)
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


@dataclass
class InternalError:
    """A task that failed inside the grader (a grader bug, or a worker lost twice): `detail` says how."""

    detail: str


@dataclass
class TaskDone:
    """worker -> pool: task `seq` is finished; `result` is its Row (grade), ReferenceRun or InternalError."""

    seq: int
    result: Any


class CellResult(TypedDict):
    grade_id: str
    points: float
    max_points: float
    passed: bool
    reason: str


class _RowBase(TypedDict):
    student: str
    assignment: str
    origin: str
    score: float
    max_score: float
    status: str  # STATUSES
    reason: str
    cells: list[CellResult]


class Row(_RowBase, total=False):
    seconds: float  # wall time in the worker (not in results.json)
    exec_seconds: float  # of which running the notebook
    stages: dict  # where its wall time went, seconds by stage (timings.json only)
    grader_peak_kb: int  # the worker's peak resident memory while grading it (not in results.json)
    observe_log: list[str]  # files found in the observation folder that no hidden part wrote
    language: str  # the submission's language (validated; reasons and feedback are in it)


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
