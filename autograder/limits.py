"""Every cap the grader puts on a submission, a kernel, a run or its own parts, in one table.

Threat model: every submission is hostile, and so is everything its kernel sends or writes; the
grader never copies, reads or keeps student-controlled data without a bound, and no kernel may take
more than its share of the machine. Each bound below is used where it is enforced (the module its
`Cap` names), and nowhere restated: a module imports its cap from here. Each cap is one declaration,
`NAME: Annotated[type, Cap(unit, where, what)] = value`: its value, in which unit, where it is
enforced, what it bounds and what happens past it; `TABLE` is read from these declarations, so
changing or adding a limit is one statement.

Defaults only: the command line overrides the per-run ones (`python -m autograder grade --help`:
`--timeout`, `--timeout-multiple`, `--memory-mb`, `--cpu-seconds`, `--notebook-budget`, `--submission-budget`,
`--max-added-cells`, `--max-output-chars`), formgrader's collect its intake ones
(`c.HardenedCollect.max_files`, ...). Tolerances (`namedaxes.judging` RTOL, ATOL) are rules of
judging, not caps, and are not here.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Annotated, get_type_hints


@dataclass(frozen=True)
class Cap:
    """What a cap is measured in, the module that enforces it (and imports it from here), what it bounds
    and what happens past it. The value is the constant's own: `NAME: Annotated[type, Cap(...)] = value`."""

    unit: str
    where: str
    what: str


_MiB = 2**20
_GiB = 2**30

# ---- one run (records.Options; the command line's defaults)
CELL_TIMEOUT: Annotated[
    float,
    Cap(
        "s",
        "records.py",
        "wall time of one cell at least (Options.timeout; more where the reference needs more, CELL_TIME_MULTIPLE); "
        "past its limit the cell is interrupted",
    ),
] = 30.0
CELL_TIME_MULTIPLE: Annotated[
    float,
    Cap(
        "times",
        "run/time_limits.py",
        "a graded cell's limit: this many times the reference's slowest cell on this machine, never below "
        "CELL_TIMEOUT (the notebook's budget likewise, from its whole run); --timeout-multiple, 0: no scaling",
    ),
] = 5.0
REFERENCE_RETRY_FACTOR: Annotated[
    float,
    Cap(
        "times",
        "run/time_limits.py",
        "a reference run that timed out (or lost its kernel) runs once more with this many times its cell "
        "limit; then its assignment is refused",
    ),
] = 4.0
NOTEBOOK_BUDGET: Annotated[
    float,
    Cap(
        "s",
        "records.py",
        "wall time of one notebook at least (more where the reference needs more), all cells and restarts; "
        "the rest is not run",
    ),
] = 300.0
SUBMISSION_BUDGET: Annotated[
    float, Cap("s", "records.py", "wall time of one student's notebooks together (the pool splits it)")
] = 900.0
KERNEL_MEMORY_MB: Annotated[
    int, Cap("MiB", "records.py", "a kernel's memory (Options.memory_mb: cgroup, RLIMIT_DATA); past it: memory")
] = 4096
# ---- a submission (course/notebooks.py, run/executor.py)
MAX_NOTEBOOK_BYTES: Annotated[
    int, Cap("bytes", "course/notebooks.py", "a submitted notebook file; a bigger one is unreadable")
] = 50 * _MiB
MAX_NOTEBOOK_VALUES: Annotated[
    int, Cap("values", "course/notebooks.py", "JSON values (and keys) of a submitted notebook; more: unreadable")
] = 500_000
MAX_ADDED_CELLS: Annotated[
    int, Cap("cells", "course/notebooks.py", "cells a student added; further ones are dropped")
] = 100
NOTEBOOK_OUTPUT_CHARS: Annotated[
    int, Cap("chars", "run/executor.py", "output kept per notebook; the rest is dropped")
] = 5_000_000
# ---- a kernel's messages (run/cell_outputs.py, run/kernel.py, run/kernel_sockets.py)
MAX_OUTPUT_CHARS: Annotated[int, Cap("chars", "run/cell_outputs.py", "output kept per cell; the rest is dropped")] = (
    1_000_000
)
MAX_OUTPUTS: Annotated[int, Cap("outputs", "run/cell_outputs.py", "outputs kept per cell; the rest are dropped")] = 300
MAX_MESSAGE_BYTES: Annotated[
    int, Cap("bytes", "run/kernel_sockets.py", "one ZeroMQ frame from a kernel; libzmq drops the connection")
] = 8 * _MiB
RCV_HWM: Annotated[
    int, Cap("messages", "run/kernel_sockets.py", "messages queued per socket before libzmq stops reading")
] = 64
INTERRUPT_GRACE: Annotated[float, Cap("s", "run/kernel.py", "after an interrupt, before the kernel is killed")] = 5.0
DEATH_GRACE: Annotated[
    float, Cap("s", "run/kernel.py", "a dropped socket whose kernel exits this soon was a death")
] = 1.0
ZYGOTE_MESSAGE_BYTES: Annotated[
    int, Cap("bytes", "run/zygote.py", "one message from a zygote's slot; the rest of it is cut and ignored")
] = 4096
FORK_TIMEOUT: Annotated[
    float, Cap("s", "run/zygote.py", "a zygote's fork and its child's report; then the kernel starts the plain way")
] = 5.0
UNREPORTED_GRACE: Annotated[
    float, Cap("s", "run/zygote.py", "an ended kernel unreported by its zygote (stopped); then it counts as killed")
] = 0.5
# ---- a kernel's run (run/executor.py)
MAX_RESTARTS: Annotated[
    int, Cap("kernels", "run/executor.py", "kernel restarts per notebook; then the rest is not run")
] = 4
MAX_LOGGED_NAMES: Annotated[int, Cap("names", "run/observations.py", "stray observation files named in the log")] = 20
SNAPSHOT_TIMEOUT: Annotated[
    float, Cap("s", "run/executor.py", "the trusted snapshot / restore around a hidden part")
] = 30.0
# ---- the sandbox (sandbox/launch.py, sandbox/workcopy.py, sandbox/xla_cache.py)
KERNEL_CPU_SECONDS: Annotated[int, Cap("s", "sandbox/launch.py", "a kernel's CPU time (RLIMIT_CPU)")] = 900
KERNEL_MEMORY_BYTES: Annotated[
    int, Cap("bytes", "sandbox/launch.py", "a kernel's memory when no --memory-mb is given")
] = 4 * _GiB
KERNEL_FILE_BYTES: Annotated[int, Cap("bytes", "sandbox/launch.py", "one file a kernel writes (RLIMIT_FSIZE)")] = (
    512 * _MiB
)
KERNEL_OPEN_FILES: Annotated[int, Cap("files", "sandbox/launch.py", "a kernel's open files (RLIMIT_NOFILE)")] = 1024
WORKCOPY_BYTES: Annotated[
    int, Cap("bytes", "sandbox/workcopy.py", "a working copy's tmpfs; past it ENOSPC, status disk")
] = 512 * _MiB
WORKCOPY_FILES: Annotated[int, Cap("inodes", "sandbox/workcopy.py", "files and folders in a working copy")] = 20_000
KERNEL_TMP_BYTES: Annotated[int, Cap("bytes", "sandbox/launch.py", "a kernel's private /tmp")] = 256 * _MiB
KERNEL_SHM_BYTES: Annotated[int, Cap("bytes", "sandbox/launch.py", "a kernel's private /dev/shm")] = 256 * _MiB
KERNEL_TMP_FILES: Annotated[
    int, Cap("inodes", "sandbox/launch.py", "files and folders in a slot's /tmp (what emptying it may cost)")
] = 20_000
KERNEL_SHM_FILES: Annotated[
    int, Cap("inodes", "sandbox/launch.py", "files and folders in a slot's /dev/shm (what emptying it may cost)")
] = 20_000
KEEP_VERSIONS: Annotated[int, Cap("caches", "sandbox/xla_cache.py", "published XLA caches kept per assignment")] = 4
# ---- observations and the judge (judge/compare.py, programs.py, compiling.py, score.py, scorer_process.py)
MAX_OBSERVATION_BYTES: Annotated[
    int, Cap("bytes", "judge/compare.py", "one recorded observation file, and its arrays inflated")
] = 64 * _MiB
MAX_ARRAYS: Annotated[int, Cap("arrays", "judge/compare.py", "arrays in one recorded .npz")] = 512
MAX_CASES: Annotated[int, Cap("cases", "judge/programs.py", "exported programs in one observation")] = 64
MAX_COMPILED: Annotated[int, Cap("programs", "judge/compiling.py", "compiled programs the judge keeps in memory")] = 512
MAX_ECHO_ITEMS: Annotated[
    int, Cap("items", "judge/differences.py", "student-controlled names (axes, calls, paths) one reason echoes")
] = 6
MAX_ECHO_CHARS: Annotated[
    int, Cap("characters", "judge/differences.py", "one student-controlled name echoed in a reason")
] = 48
MAX_ERROR_CHARS: Annotated[int, Cap("characters", "judge/programs.py", "a compile error's text echoed in a reason")] = (
    160
)
MAX_MISTAKE_RESULTS: Annotated[
    int, Cap("results", "judge/mistakes.py", "known mistakes' results one case's values are compared with")
] = 256
MAX_MISTAKE_FIELDS: Annotated[int, Cap("fields", "judge/mistakes.py", "of a known mistake's sentence")] = 6
MAX_MISTAKE_OUTPUTS: Annotated[
    int, Cap("outputs", "judge/mistakes.py", "of one case whose values a known mistake's results are compared with")
] = 8
MAX_MISTAKE_FIELD_CHARS: Annotated[
    int, Cap("characters", "judge/mistakes.py", "one text field of a known mistake's sentence")
] = 80
CELL_MESSAGE_CHARS: Annotated[
    int,
    Cap("characters", "judge/score.py", "a cell's error message kept as its reason (the feedback page shows it whole)"),
] = 4000
KERNEL_LOG_TAIL_BYTES: Annotated[
    int, Cap("bytes", "run/kernel.py", "the end of a kernel's log read into a start error (never the whole log)")
] = 600
START_ERROR_CHARS: Annotated[
    int, Cap("characters", "run/executor.py", "why a kernel did not start or restart, echoed in a row's reason")
] = 400
SCORER_TIMEOUT: Annotated[
    float, Cap("s", "judge/score.py", "one request to the clean scorer; then the cell scores 0")
] = 60.0
SCORER_MEMORY_MB: Annotated[int, Cap("MiB", "judge/scorer_process.py", "the clean scorer's address space for data")] = (
    4096
)
MAX_FRAME: Annotated[int, Cap("bytes", "judge/scorer_process.py", "one request the scorer reads")] = 256 * _MiB
MAX_REPLY: Annotated[int, Cap("bytes", "judge/scorer_process.py", "one reply the grader reads from the scorer")] = (
    4 * _MiB
)
# ---- the pool (run/pool.py)
HANG_MARGIN: Annotated[
    float, Cap("s", "run/pool.py", "past a task's budget before its worker counts as hung and is killed")
] = 90.0
STOP_GRACE: Annotated[float, Cap("s", "run/pool.py", "a worker's time to kill its kernels after SIGTERM")] = 2.0
MAX_ATTEMPTS: Annotated[
    int, Cap("tries", "run/pool.py", "a lost task (worker died or hung) is tried this often, then an error row")
] = 2
REFERENCE_BUDGET: Annotated[float, Cap("s", "run/batch.py", "a reference run, before its worker counts as hung")] = (
    1800.0
)
# ---- intake: intake/placement.py and intake/inbound.py
MAX_ZIP_BYTES: Annotated[int, Cap("bytes", "intake/placement.py", "a submitted zip, inflated")] = 2 * _GiB
MAX_ZIP_MEMBERS: Annotated[int, Cap("members", "intake/placement.py", "entries of a submitted zip")] = 20000
HANDIN_MAX_FILES: Annotated[
    int, Cap("files", "intake/inbound.py", "files and folders in one hand-in; more: refused")
] = 200
HANDIN_MAX_BYTES: Annotated[int, Cap("bytes", "intake/inbound.py", "bytes of one hand-in; more: refused")] = 64 * _MiB
HANDIN_MAX_DEPTH: Annotated[
    int, Cap("folders", "intake/inbound.py", "folders inside a hand-in folder; deeper: refused")
] = 8
HANDIN_FUTURE_SLACK: Annotated[
    float, Cap("s", "intake/inbound.py", "a hand-in dated later than now + this is refused")
] = 300.0
POLICY_MAX_BYTES: Annotated[
    int, Cap("bytes", "course/deadlines.py", "bytes of deadlines.toml or extensions.csv; more: a clear error")
] = _MiB
POLICY_MAX_DAYS: Annotated[
    int, Cap("days", "course/deadlines.py", "an extension or the grace (inf, nan, 1e300: a typo); more: a clear error")
] = 3650
SIMILARITY_ANSWER_CHARS: Annotated[
    int, Cap("characters", "publish/similarity.py", "of one answer cell compared and shown; the rest: ignored")
] = 20_000
SIMILARITY_PAIRS_SHOWN: Annotated[
    int, Cap("pairs", "publish/similarity.py", "pairs shown side by side per exercise; the others: counted")
] = 50
SIMILARITY_PAIRS_KEPT: Annotated[
    int,
    Cap(
        "pairs",
        "publish/similarity.py",
        "listed pairs per exercise kept in similarity.json, highest first; more: counted",
    ),
] = 2_000
SIMILARITY_KEPT_BYTES: Annotated[
    int,
    Cap(
        "bytes",
        "publish/similarity.py",
        "of the last similarity.json read back to keep other assignments; more: redone",
    ),
] = 64 * _MiB
HANDIN_CHANGE_SLACK: Annotated[
    float,
    Cap(
        "s",
        "intake/inbound.py",
        "a hand-in whose files changed later than its stated time + this counts from that change",
    ),
] = 300.0
HANDIN_MAX_TRIES: Annotated[
    int, Cap("hand-ins", "intake/inbound.py", "a student's hand-ins read, newest first, before giving up")
] = 10


# name -> Cap, read from the declarations above: a cap's value and its description are one statement
TABLE: dict[str, Cap] = {
    name: hint.__metadata__[0]
    for name, hint in get_type_hints(sys.modules[__name__], include_extras=True).items()
    if isinstance(getattr(hint, "__metadata__", (None,))[0], Cap)
}
__all__ = ["Cap", "TABLE", *TABLE]
