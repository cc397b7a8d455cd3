"""The records passed between the grader's parts, typed once.

- `Task`: one unit of work for a worker (run a reference solution, or grade
  one student's notebook for one assignment).
- `CellResult`: the verdict for one graded test cell.
- `Row`: one student x assignment result; what `grades.csv`, `results.json`,
  the gradebook, the feedback page and the class report are made from.

Rows and cell results are TypedDicts: they travel between processes and into
JSON unchanged, and the type checker still knows their keys.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

__all__ = ["GraderError", "Options", "Task", "CellResult", "Row", "CSV_COLUMNS", "STATUSES"]

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
    timeout: float = 30.0
    cache: Path | None = None
    isolate: bool = True
    memory_mb: int = 4096
    cpu_seconds: int = 0
    gradebook: bool = True
    course_gradebook: bool = False     # with submissions: also write the course's gradebook.db
    feedback: bool = True
    quiet: bool = False
    notebook_budget: float = 300.0     # wall-clock seconds per notebook (all its cells, restarts included)
    submission_budget: float = 900.0   # wall-clock seconds per student, over all their notebooks
    max_added_cells: int = 100         # cells a student may add to a notebook; further ones are dropped
    max_output_chars: int = 5_000_000  # output kept per notebook; further output is dropped


@dataclass
class Task:
    seq: int
    kind: str                      # grade | reference
    assignment: str
    student: str = ""
    path: str = ""
    origin: str = ""
    ref_dir: str = ""
    autograded_path: str = ""
    feedback_paths: tuple = ()
    xla_dir: str = ""              # the assignment's XLA compilation cache (reference: the folder to fill)
    budget: float = 0.0            # wall-clock seconds this notebook may run (set by the pool)
    budget_label: str = ""         # what the budget is, for messages ("the notebook's time budget of 300 s")
    budget_of_submission: float = 0.0   # > 0: the budget is what was left of this submission budget (seconds)


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
    status: str                    # STATUSES
    reason: str
    cells: list[CellResult]


class Row(_RowBase, total=False):
    seconds: float                 # wall time in the worker (not in results.json)
    exec_seconds: float            # of which running the notebook
    stages: dict                   # where its wall time went, seconds by stage (timings.json only)
    grader_peak_kb: int            # the worker's peak resident memory while grading it (not in results.json)
    observe_log: list[str]         # files found in the observation folder that no hidden part wrote
    language: str                  # the submission's language (validated; reasons and feedback are in it)


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
