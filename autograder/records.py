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

__all__ = ["GraderError", "Options", "Task", "CellResult", "Row", "CSV_COLUMNS"]

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
    status: str                    # ok | error | timeout | died | unreadable | missing | unplaceable | ...
    reason: str
    cells: list[CellResult]


class Row(_RowBase, total=False):
    seconds: float                 # wall time in the worker (not in results.json)
    exec_seconds: float            # of which running the notebook
