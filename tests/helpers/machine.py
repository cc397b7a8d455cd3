"""How busy this machine is, for the tests' wall-clock limits (issue 61).

A limit measured on a quiet machine fails on a busy one: the fixture grading a 77-submission class ran past
its fixed 900 s on 2 shared cores at load 7-16, and 103 tests errored with nothing telling the newcomer why.
So a test's limit is its quiet figure times how busy the machine is (`busy_factor`: the 1-minute load
average over the cores this process may use, at least 1), measured when the limit is asked for; and a
limit that still runs out fails with one sentence saying the machine was too busy (the load before and
after), not a bare TimeoutExpired.

    proc = machine.run(cmd, quiet_s=900, what="grading the attack class", cwd=..., capture_output=True)
    assert time.monotonic() - t0 < machine.limit(5)
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from courseinfo import validate_limit

__all__ = ["busy_factor", "limit", "too_busy", "run", "communicate", "as_from_a_terminal"]


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _load() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:
        return 0.0


def busy_factor() -> float:
    """How many programs wait for each core now (the 1-minute load average over the cores), at least 1: the
    product's own measure (`courseinfo.validate_limit.busy_factor`, which Validate and the course's processes
    follow)."""
    return validate_limit.busy_factor(_load(), _cores())


def limit(quiet_s: float) -> float:
    """The limit of something that takes at most `quiet_s` seconds on a quiet machine, on this one now."""
    return quiet_s * busy_factor()


def too_busy(what: str, allowed: float, quiet_s: float, load_before: float) -> str:
    return (
        f"the machine is too busy for this test: {what} ran past {allowed:.0f} s ({quiet_s:.0f} s on a quiet "
        f"machine, scaled by the load: {load_before:.1f} before, {_load():.1f} now, on {_cores()} cores)"
    )


def run(cmd, *, quiet_s: float, what: str, **kwargs) -> subprocess.CompletedProcess:
    """subprocess.run with `limit(quiet_s)` as its timeout; running past it fails the test with `too_busy`."""
    load, allowed = _load(), limit(quiet_s)
    try:
        return subprocess.run(cmd, timeout=allowed, **kwargs)
    except subprocess.TimeoutExpired:
        pytest.fail(too_busy(what, allowed, quiet_s, load), pytrace=False)


def communicate(proc: subprocess.Popen, *, quiet_s: float, what: str):
    """proc.communicate() with `limit(quiet_s)` as its timeout (the process killed when it runs out; its pipes
    then read for 5 s more at most, since a child of it that outlives it may hold them open)."""
    load, allowed = _load(), limit(quiet_s)
    try:
        return proc.communicate(timeout=allowed)
    except subprocess.TimeoutExpired:
        proc.kill()
        try:
            proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            for pipe in (proc.stdin, proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()
            proc.wait()
        pytest.fail(too_busy(what, allowed, quiet_s, load), pytrace=False)


# Python raises KeyboardInterrupt on SIGINT only where SIGINT was neither ignored nor blocked when it started, and
# both are inherited through fork and exec: a test run started as a shell's background job (`nohup make test &`
# from a script) hands every process SIGINT ignored. This prefix starts a command with SIGINT as a terminal
# leaves it (default, unblocked), for the tests that press Ctrl-C.
_TERMINAL_SIGINT = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT}); os.execvp(sys.argv[1], sys.argv[1:])"
)


def as_from_a_terminal(cmd: list[str]) -> list[str]:
    """`cmd` started with SIGINT as a terminal leaves it (see `_TERMINAL_SIGINT`), whatever this process has."""
    return [sys.executable, "-c", _TERMINAL_SIGINT, *cmd]
