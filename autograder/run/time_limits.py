"""How long a graded cell and notebook may run: what the reference's own run took here, scaled, never
below the floors.

A fixed limit fails on a busy machine: notebook 10's `measure` cell went past 30 s in the reference run
of a loaded 2-core machine, and every row of the class became `error`. So the limits follow the
machine: the reference solution is run (or was, and is cached) on it, the grader times each of its
cells from outside the kernel, and a student's cell gets `multiple` times the reference's slowest
cell, at least the floor (`--timeout`, CELL_TIMEOUT); a notebook gets `multiple` times the reference's
whole run, at least its floor (`--notebook-budget`). `--timeout-multiple 0` turns the scaling off:
every cell gets exactly `--timeout`.

The reference's first run has the floor as its cell limit. A reference run that ran out of time, or
lost or never got its kernel, says nothing about the solution and much about the machine, so it runs
once more with REFERENCE_RETRY_FACTOR times that limit before its assignment is refused (the report
says so); a reference that raised an error is refused at once (running it again changes nothing).

Threat model: the times come from the trusted reference run, measured by the grader's worker, and are
kept in the reference cache's authenticated meta.json (references.py); a student's kernel cannot
lengthen anyone's limit.
"""

from __future__ import annotations

import math

from ..limits import CELL_TIME_MULTIPLE, REFERENCE_RETRY_FACTOR
from ..records import CellEnd, ReferenceTimes, TimeLimits

__all__ = ["time_limits", "retry_timeout", "worth_retrying", "slowest", "RETRYABLE"]

RETRYABLE = (
    CellEnd.TIMEOUT,
    CellEnd.DIED,
    CellEnd.NOT_RUN,
)  # how a reference cell ends when the machine, not the solution, failed


def time_limits(
    times: ReferenceTimes | None, cell_floor: float, notebook_floor: float, multiple: float = CELL_TIME_MULTIPLE
) -> TimeLimits:
    """The limits of an assignment whose reference took `times`: `multiple` x those, never below the floors
    (`multiple` 0, or no times: the floors exactly), in whole seconds. A notebook's budget is never below its cell
    limit."""
    if times is None or multiple <= 0:
        return TimeLimits(cell_floor, notebook_floor)
    cell = max(cell_floor, math.ceil(multiple * times.slowest_cell))  # whole seconds: "ran longer than 39 s"
    notebook = max(notebook_floor, math.ceil(multiple * times.whole), cell)
    return TimeLimits(cell, notebook, times, multiple)


def retry_timeout(first: float) -> float:
    """The cell limit of a reference's second run, after its first ran out of `first` seconds."""
    return REFERENCE_RETRY_FACTOR * first


def worth_retrying(statuses, start_error: str) -> bool:
    """Did a reference run fail the way a busy machine makes it fail (a cell out of time, a kernel lost or
    not started), rather than by an error of the solution's own?"""
    return bool(start_error) or any(s in RETRYABLE for s in statuses)


def slowest(outcomes) -> float:
    """The slowest cell of a run (`RunResult.outcomes`), in seconds (0 for none)."""
    return max((o.seconds for o in outcomes.values()), default=0.0)
