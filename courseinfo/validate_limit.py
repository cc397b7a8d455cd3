"""Validate's per-cell time limit on the student's machine: nbgrader's 30 s, scaled by how busy the machine is.

    c.Execute.timeout = cell_timeout()     # jupyter/nbgrader_config.py, read again at each press of Validate

A fixed 30 s fails a right notebook on a busy machine (issue 61: 2 shared cores at load 7-16, a cell
interrupted after 30 s, the same notebook passing when pressed again). The grader's own limits follow its
machine (autograder/run/time_limits.py: the reference's times there, scaled); Validate has no reference run
on the student's machine, so its limit follows the machine's load instead: nbgrader's 30 s times the
programs waiting for each core (the 1-minute load average over the cores, at least 1), times
`HEADROOM` for a load that rises while Validate runs. A quiet machine keeps 60 s; at load 16 on 2 cores a
cell gets 480 s. Validate judges nothing (the grader does), so a long limit costs only a wait; when it
still runs out, the kernel says so in one sentence (namedaxes.kernel_start), never a bare traceback.
"""

from __future__ import annotations

import math
import os

__all__ = ["busy_factor", "cell_timeout", "timeout_reply", "NBGRADER_CELL_TIMEOUT", "HEADROOM"]

NBGRADER_CELL_TIMEOUT = 30  # nbgrader's own default (Execute.timeout)
HEADROOM = 2  # a load that rises while Validate runs


def cell_timeout(load: float | None = None, cores: int | None = None) -> int:
    """Seconds a cell may run under Validate on a machine with this 1-minute `load` average and `cores`."""
    return math.ceil(NBGRADER_CELL_TIMEOUT * HEADROOM * busy_factor(load, cores))


def busy_factor(load: float | None = None, cores: int | None = None) -> float:
    """The programs waiting for each core: the 1-minute `load` average (read now when None) over the `cores`
    this process may use, at least 1. A fixed limit times this holds on a busy machine (the course's several
    processes' jobs, namedaxes.multiprocess, follow it too)."""
    if load is None:
        try:
            load = os.getloadavg()[0]
        except OSError:  # no load average on this system: as if quiet
            load = 0.0
    if not cores:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1.0, load / max(1, cores))


def timeout_reply(limit: int) -> dict:
    """nbgrader's `Execute.error_on_timeout`: the reply nbclient makes up when a cell runs out of time. Its
    error name is the kernel's (KeyboardInterrupt, said by namedaxes.kernel_start in the notebook's language),
    so nbgrader adds it only where the kernel said nothing: then this line, instead of nbgrader's
    "CellTimeoutError: No reply from kernel before timeout" after the kernel's own sentence."""
    return {
        "ename": "KeyboardInterrupt",
        "evalue": "",
        "traceback": [f"The machine is busy; the cell ran past Validate's limit of {limit} s on this machine now."],
    }
