"""Every cap the grader puts on a submission, a kernel, a run or its own parts, in one table.

Threat model: every submission is hostile, and so is everything its kernel sends or writes; the
grader never copies, reads or keeps student-controlled data without a bound, and no kernel may take
more than its share of the machine. Each bound below is used where it is enforced (the module named
in `TABLE`), and nowhere restated: a module imports its cap from here, so changing a limit is one
line, and `TABLE` says what each one bounds, in which unit, and what happens past it.

Defaults only: the command line overrides the per-run ones (`python -m autograder grade --help`:
`--timeout`, `--memory-mb`, `--cpu-seconds`, `--notebook-budget`, `--submission-budget`,
`--max-added-cells`, `--max-output-chars`), formgrader's collect its intake ones
(`c.HardenedCollect.max_files`, ...). Tolerances (`judge/compare.py` RTOL, ATOL) are rules of
judging, not caps, and are not here.
"""

from __future__ import annotations

__all__ = ["TABLE"]  # and every name in it

_MiB = 2**20
_GiB = 2**30

# ---- one run (records.Options; the command line's defaults)
CELL_TIMEOUT = 30.0
NOTEBOOK_BUDGET = 300.0
SUBMISSION_BUDGET = 900.0
KERNEL_MEMORY_MB = 4096
# ---- a submission (course/notebooks.py, run/executor.py)
MAX_NOTEBOOK_BYTES = 50 * _MiB
MAX_ADDED_CELLS = 100
NOTEBOOK_OUTPUT_CHARS = 5_000_000
# ---- a kernel's messages (run/kernel.py)
MAX_OUTPUT_CHARS = 1_000_000
MAX_OUTPUTS = 300
MAX_MESSAGE_BYTES = 8 * _MiB
RCV_HWM = 64
INTERRUPT_GRACE = 5.0
DEATH_GRACE = 1.0
# ---- a kernel's run (run/executor.py)
MAX_RESTARTS = 4
MAX_LOGGED_NAMES = 20
SNAPSHOT_TIMEOUT = 30.0
# ---- the sandbox (sandbox/launch.py, sandbox/workcopy.py, sandbox/xla_cache.py)
KERNEL_CPU_SECONDS = 900
KERNEL_MEMORY_BYTES = 4 * _GiB
KERNEL_FILE_BYTES = 512 * _MiB
KERNEL_OPEN_FILES = 1024
WORKCOPY_BYTES = 512 * _MiB
WORKCOPY_FILES = 20_000
KERNEL_TMP_BYTES = 256 * _MiB
KERNEL_SHM_BYTES = 256 * _MiB
KEEP_VERSIONS = 4
# ---- observations and the judge (judge/compare.py, judge/programs.py, judge/score.py, judge/scorer_process.py)
MAX_OBSERVATION_BYTES = 64 * _MiB
MAX_ARRAYS = 512
MAX_CASES = 64
MAX_COMPILED = 512
MAX_ECHO_ITEMS = 6
MAX_ECHO_CHARS = 48
MAX_ERROR_CHARS = 160
SCORER_TIMEOUT = 60.0
SCORER_MEMORY_MB = 4096
MAX_FRAME = 256 * _MiB
MAX_REPLY = 4 * _MiB
# ---- the pool (run/pool.py)
HANG_MARGIN = 90.0
STOP_GRACE = 2.0
MAX_ATTEMPTS = 2
REFERENCE_BUDGET = 1800.0
# ---- intake: intake/placement.py and intake/handin.py
MAX_ZIP_BYTES = 2 * _GiB
MAX_ZIP_MEMBERS = 20000
HANDIN_MAX_FILES = 200
HANDIN_MAX_BYTES = 64 * _MiB
HANDIN_MAX_DEPTH = 8
HANDIN_FUTURE_SLACK = 300.0
HANDIN_MAX_TRIES = 10

# name: (unit, where it is enforced, what it bounds and what happens past it)
TABLE: dict[str, tuple[str, str, str]] = {
    "CELL_TIMEOUT": ("s", "records.py", "wall time of one cell (Options.timeout); past it the cell is interrupted"),
    "NOTEBOOK_BUDGET": ("s", "records.py", "wall time of one notebook, all cells and restarts; the rest is not run"),
    "SUBMISSION_BUDGET": ("s", "records.py", "wall time of one student's notebooks together (the pool splits it)"),
    "KERNEL_MEMORY_MB": (
        "MiB",
        "records.py",
        "a kernel's memory (Options.memory_mb: cgroup, RLIMIT_DATA); past it: memory",
    ),
    "MAX_NOTEBOOK_BYTES": ("bytes", "course/notebooks.py", "a submitted notebook file; a bigger one is unreadable"),
    "MAX_ADDED_CELLS": ("cells", "course/notebooks.py", "cells a student added; further ones are dropped"),
    "NOTEBOOK_OUTPUT_CHARS": ("chars", "run/executor.py", "output kept per notebook; the rest is dropped"),
    "MAX_OUTPUT_CHARS": ("chars", "run/kernel.py", "output kept per cell; the rest is dropped"),
    "MAX_OUTPUTS": ("outputs", "run/kernel.py", "outputs kept per cell; the rest are dropped"),
    "MAX_MESSAGE_BYTES": ("bytes", "run/kernel.py", "one ZeroMQ frame from a kernel; libzmq drops the connection"),
    "RCV_HWM": ("messages", "run/kernel.py", "messages queued per socket before libzmq stops reading"),
    "INTERRUPT_GRACE": ("s", "run/kernel.py", "after an interrupt, before the kernel is killed"),
    "DEATH_GRACE": ("s", "run/kernel.py", "a dropped socket whose kernel exits this soon was a death"),
    "MAX_RESTARTS": ("kernels", "run/executor.py", "kernel restarts per notebook; then the rest is not run"),
    "MAX_LOGGED_NAMES": ("names", "run/executor.py", "stray observation files named in the log"),
    "SNAPSHOT_TIMEOUT": ("s", "run/executor.py", "the trusted snapshot / restore around a hidden part"),
    "KERNEL_CPU_SECONDS": ("s", "sandbox/launch.py", "a kernel's CPU time (RLIMIT_CPU)"),
    "KERNEL_MEMORY_BYTES": ("bytes", "sandbox/launch.py", "a kernel's memory when no --memory-mb is given"),
    "KERNEL_FILE_BYTES": ("bytes", "sandbox/launch.py", "one file a kernel writes (RLIMIT_FSIZE)"),
    "KERNEL_OPEN_FILES": ("files", "sandbox/launch.py", "a kernel's open files (RLIMIT_NOFILE)"),
    "WORKCOPY_BYTES": ("bytes", "sandbox/workcopy.py", "a working copy's tmpfs; past it ENOSPC, status disk"),
    "WORKCOPY_FILES": ("inodes", "sandbox/workcopy.py", "files and folders in a working copy"),
    "KERNEL_TMP_BYTES": ("bytes", "sandbox/launch.py", "a kernel's private /tmp"),
    "KERNEL_SHM_BYTES": ("bytes", "sandbox/launch.py", "a kernel's private /dev/shm"),
    "KEEP_VERSIONS": ("caches", "sandbox/xla_cache.py", "published XLA caches kept per assignment"),
    "MAX_OBSERVATION_BYTES": ("bytes", "judge/compare.py", "one recorded observation file, and its arrays inflated"),
    "MAX_ARRAYS": ("arrays", "judge/compare.py", "arrays in one recorded .npz"),
    "MAX_CASES": ("cases", "judge/programs.py", "exported programs in one observation"),
    "MAX_COMPILED": ("programs", "judge/programs.py", "compiled programs the judge keeps in memory"),
    "MAX_ECHO_ITEMS": ("items", "judge/programs.py", "student-controlled names (axes, calls, paths) one reason echoes"),
    "MAX_ECHO_CHARS": ("characters", "judge/programs.py", "one student-controlled name echoed in a reason"),
    "MAX_ERROR_CHARS": ("characters", "judge/programs.py", "a compile error's text echoed in a reason"),
    "SCORER_TIMEOUT": ("s", "judge/score.py", "one request to the clean scorer; then the cell scores 0"),
    "SCORER_MEMORY_MB": ("MiB", "judge/scorer_process.py", "the clean scorer's address space for data"),
    "MAX_FRAME": ("bytes", "judge/scorer_process.py", "one request the scorer reads"),
    "MAX_REPLY": ("bytes", "judge/scorer_process.py", "one reply the grader reads from the scorer"),
    "HANG_MARGIN": ("s", "run/pool.py", "past a task's budget before its worker counts as hung and is killed"),
    "STOP_GRACE": ("s", "run/pool.py", "a worker's time to kill its kernels after SIGTERM"),
    "MAX_ATTEMPTS": (
        "tries",
        "run/pool.py",
        "a lost task (worker died or hung) is tried this often, then an error row",
    ),
    "REFERENCE_BUDGET": ("s", "run/pool.py", "a reference run, before its worker counts as hung"),
    "MAX_ZIP_BYTES": ("bytes", "intake/placement.py", "a submitted zip, inflated"),
    "MAX_ZIP_MEMBERS": ("members", "intake/placement.py", "entries of a submitted zip"),
    "HANDIN_MAX_FILES": ("files", "intake/handin.py", "files and folders in one hand-in; more: refused"),
    "HANDIN_MAX_BYTES": ("bytes", "intake/handin.py", "bytes of one hand-in; more: refused"),
    "HANDIN_MAX_DEPTH": ("folders", "intake/handin.py", "folders inside a hand-in folder; deeper: refused"),
    "HANDIN_FUTURE_SLACK": ("s", "intake/handin.py", "a hand-in dated later than now + this is refused"),
    "HANDIN_MAX_TRIES": ("hand-ins", "intake/handin.py", "a student's hand-ins read, newest first, before giving up"),
}
