"""The messages a worker sends the pool over its pipe (worker.py -> pool.py), one frozen record each.

Only the grader's own processes are at either end (the worker runs the student's kernel as a child and never
forwards what the kernel says), so they cross the pipe pickled.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..records import InternalError, ReferenceRun, Row

__all__ = ["KernelStarted", "KernelGone", "TaskDone"]


@dataclass(frozen=True)
class KernelStarted:
    """worker -> pool: a kernel of this worker runs as process `pid` (its process group is killed with it)."""

    pid: int


@dataclass(frozen=True)
class KernelGone:
    """worker -> pool: the worker killed its kernel `pid` itself."""

    pid: int


@dataclass(frozen=True)
class TaskDone:
    """worker -> pool: task `seq` is finished; `result` is its Row (grade), ReferenceRun or InternalError."""

    seq: int
    result: Row | ReferenceRun | InternalError
