"""Run a graded notebook cell by cell, surviving timeouts and dying kernels.

- Before each test cell its observation files are deleted; right after it, they
  are read (without following links) into the grader's memory. So a test cell
  is judged only on what it recorded itself.
- A cell past its timeout is interrupted; if the kernel cannot be interrupted
  (a loop inside compiled XLA code) or dies (os._exit, a segfault, a resource
  limit), the kernel is killed, a fresh one is started in the same working
  copy, the earlier cells (not the test cells) are replayed, the offending
  cell is marked failed and the rest of the notebook still runs.
"""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from typing import Callable

from nbformat import NotebookNode
from nbformat import v4 as nbv4

from .compare import MAX_OBSERVATION_BYTES
from .guard import GUARD_CODE, split_hidden
from .kernel import CellRun, Kernel, KernelStartError

__all__ = ["CellOutcome", "RunResult", "run_notebook", "cell_label", "ARRAYS_SUFFIX", "VALUES_SUFFIX"]

ARRAYS_SUFFIX = ".npz"      # namedaxes.grading.ARRAYS_SUFFIX
VALUES_SUFFIX = ".json"     # namedaxes.grading.VALUES_SUFFIX
MAX_RESTARTS = 4


@dataclass
class CellOutcome:
    status: str                 # ok | error | timeout | died | not_run
    ename: str = ""
    evalue: str = ""
    seconds: float = 0.0


@dataclass
class RunResult:
    outcomes: dict[int, CellOutcome] = field(default_factory=dict)
    observations: dict[str, tuple[bytes | None, bytes | None]] = field(default_factory=dict)
    events: list[tuple[str, str]] = field(default_factory=list)     # (status, reason)
    start_error: str = ""
    restarts: int = 0
    seconds: float = 0.0


def cell_label(nb: NotebookNode, index: int) -> str:
    cell = nb.cells[index]
    meta = cell.get("metadata", {})
    gid = (meta.get("nbgrader") or {}).get("grade_id") if isinstance(meta.get("nbgrader"), dict) else None
    if gid:
        return f"cell '{gid}'"
    if (meta.get("autograder") or {}).get("student_added"):
        added = [i for i, c in enumerate(nb.cells) if (c.metadata.get("autograder") or {}).get("student_added")]
        return f"the cell you added after cell {index} (#{added.index(index) + 1} of your added cells)"
    cid = cell.get("id")
    return f"cell '{cid}'" if cid else f"cell {index + 1}"


# ---------------------------------------------------------------- observations
def clear_observations(observe_dir, grade_id: str) -> None:
    for suffix in (ARRAYS_SUFFIX, VALUES_SUFFIX):
        path = os.path.join(observe_dir, grade_id + suffix)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        try:
            if stat.S_ISDIR(st.st_mode):
                import shutil
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)
        except OSError:
            pass


def _read_nofollow(dir_fd: int, name: str) -> bytes | None:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_OBSERVATION_BYTES:
            return None
        chunks, left = [], MAX_OBSERVATION_BYTES + 1
        while left > 0:
            chunk = os.read(fd, min(left, 2**20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        return data if len(data) <= MAX_OBSERVATION_BYTES else None
    finally:
        os.close(fd)


def harvest_observations(observe_dir, grade_id: str) -> tuple[bytes | None, bytes | None] | None:
    """The bytes of <grade_id>.npz / .json, read without following links; None if nothing."""
    try:
        dir_fd = os.open(observe_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        npz = _read_nofollow(dir_fd, grade_id + ARRAYS_SUFFIX)
        values = _read_nofollow(dir_fd, grade_id + VALUES_SUFFIX)
    finally:
        os.close(dir_fd)
    if npz is None and values is None:
        return None
    return npz, values


# ---------------------------------------------------------------- the run
def guard_index(nb: NotebookNode) -> int:
    """The last locked code cell before the first answer or test cell (-1 if none)."""
    last = -1
    for i, cell in enumerate(nb.cells):
        meta = cell.get("metadata", {}).get("nbgrader")
        meta = meta if isinstance(meta, dict) else {}
        if meta.get("solution") or meta.get("grade"):
            break
        if cell.cell_type == "code" and meta.get("locked"):
            last = i
    return last


def _install_guard(kernel: Kernel, timeout: float) -> None:
    run = kernel.execute(GUARD_CODE, timeout, store_history=False)
    if run.status != "ok":
        raise RuntimeError(f"installing the monkeypatch guard failed: {run.status} {run.ename}: {run.evalue}")


def _execute_cell(kernel: Kernel, source: str, timeout: float, is_test: bool) -> CellRun:
    """Run a cell; a test cell's hidden part runs as a second execution (the guard restores in between)."""
    visible, hidden = split_hidden(source) if is_test else (source, "")
    if not hidden:
        return kernel.execute(source, timeout)
    first = kernel.execute(visible, timeout)
    if first.status != "ok":
        return first
    second = kernel.execute(hidden, timeout, store_history=False)
    second.outputs = first.outputs + second.outputs
    second.execution_count = first.execution_count
    second.seconds += first.seconds
    return second


def run_notebook(nb: NotebookNode, tests: dict[int, str], first_kernel: Kernel | None,
                 new_kernel: Callable[[int], Kernel], cell_timeout: float,
                 start_timeout: float = 90.0, guard: bool = True, prelude: str = "") -> RunResult:
    """Execute the code cells of `nb` in place (outputs written into the cells).

    `tests` maps cell index -> grade_id of the test cells. `first_kernel` is an
    already started (warm) kernel, or None to start one with `new_kernel(0)`;
    `new_kernel(n)` starts the n-th replacement kernel in the same working copy.
    `prelude` is trusted code run silently in every kernel before the first cell.
    """
    import time
    t0 = time.monotonic()
    result = RunResult()
    code_cells = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    guard_after = guard_index(nb) if guard else None
    fatal: set[int] = set()
    kernel = first_kernel

    def start(n: int, warm: Kernel | None) -> Kernel | None:
        k = warm
        for attempt in range(2):
            try:
                if k is None:
                    k = new_kernel(n * 2 + attempt)
                k.wait_ready(start_timeout)
                if prelude:
                    run = k.execute(prelude, start_timeout, store_history=False)
                    if run.status != "ok":
                        raise RuntimeError(f"the grader's prelude failed: {run.ename}: {run.evalue}")
                return k
            except KernelStartError as err:
                if k is not None:
                    k.kill()
                k = None
                result.start_error = str(err)
        return None

    kernel = start(0, kernel)
    if kernel is None:
        for i in code_cells:
            result.outcomes[i] = CellOutcome("not_run")
        result.seconds = time.monotonic() - t0
        return result

    pos = 0
    try:
        if guard_after == -1:
            _install_guard(kernel, cell_timeout)
        while pos < len(code_cells):
            i = code_cells[pos]
            cell = nb.cells[i]
            gid = tests.get(i)
            if gid is not None:
                clear_observations(kernel.observe_dir, gid)
            run = _execute_cell(kernel, cell.source, cell_timeout, gid is not None)
            cell.outputs = run.outputs
            cell.execution_count = run.execution_count
            if gid is not None:
                got = harvest_observations(kernel.observe_dir, gid)
                if got is not None:
                    result.observations[gid] = got
            label = cell_label(nb, i)
            if run.status in ("ok", "error"):
                result.outcomes[i] = CellOutcome(run.status, run.ename, run.evalue, run.seconds)
                if i == guard_after:
                    _install_guard(kernel, cell_timeout)
                pos += 1
                continue
            if run.status == "timeout":
                result.outcomes[i] = CellOutcome("timeout", "TimeoutError",
                                                 f"this cell ran longer than {cell_timeout:g} s and was interrupted",
                                                 run.seconds)
                result.events.append(("timeout", f"{label} ran longer than {cell_timeout:g} s and was interrupted"))
                fatal.add(i)
                pos += 1
                continue
            # hung (killed after a timeout) or died: a new kernel, replay, go on
            if run.status == "hung":
                what = (f"{label} ran longer than {cell_timeout:g} s and could not be interrupted "
                        f"(e.g. a loop inside compiled code); its kernel was restarted")
                result.outcomes[i] = CellOutcome("timeout", "TimeoutError",
                                                 f"this cell ran longer than {cell_timeout:g} s and could not be "
                                                 f"interrupted; the kernel was restarted", run.seconds)
                result.events.append(("timeout", what))
            else:
                code = kernel.proc.returncode if kernel.proc is not None else None
                if code is not None and code > 128 and kernel.sandbox.isolate:
                    code = 128 - code          # bwrap reports a child killed by signal N as exit 128+N
                why = _death_reason(code)
                result.outcomes[i] = CellOutcome("died", "DeadKernelError", f"the kernel died in this cell{why}",
                                                 run.seconds)
                result.events.append(("kernel_died", f"the kernel died in {label}{why}; it was restarted"))
            _append_error_output(cell, result.outcomes[i])
            fatal.add(i)
            kernel.kill()
            kernel = None
            if result.restarts >= MAX_RESTARTS:
                _mark_rest(result, code_cells[pos + 1:], "too many kernel restarts")
                break
            result.restarts += 1
            kernel = start(result.restarts, None)
            if kernel is None:
                _mark_rest(result, code_cells[pos + 1:], "the kernel could not be restarted")
                result.events.append(("kernel_died", "the kernel could not be restarted: " + result.start_error))
                break
            if not _replay(kernel, nb, code_cells[:pos], tests, fatal, cell_timeout, guard_after):
                kernel.kill()
                kernel = None
                _mark_rest(result, code_cells[pos + 1:], "the kernel failed while re-running earlier cells")
                result.events.append(("kernel_died", f"after {label}, re-running the earlier cells in a fresh "
                                                     f"kernel failed too; the remaining cells were not run"))
                break
            pos += 1
    finally:
        if kernel is not None:
            kernel.kill()
    result.seconds = time.monotonic() - t0
    return result


def _death_reason(returncode: int | None) -> str:
    if returncode is None:
        return ""
    if returncode < 0:
        try:
            name = __import__("signal").Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        hint = {"SIGXCPU": ": CPU time limit reached", "SIGSEGV": ": segmentation fault",
                "SIGKILL": " (killed: out of memory?)", "SIGXFSZ": ": file size limit reached"}.get(name, f" ({name})")
        return hint
    return f" (exit code {returncode})"


def _append_error_output(cell: NotebookNode, outcome: CellOutcome) -> None:
    cell.outputs = list(cell.get("outputs", [])) + [
        nbv4.new_output("error", ename=outcome.ename, evalue=outcome.evalue, traceback=[f"{outcome.ename}: {outcome.evalue}"])]


def _mark_rest(result: RunResult, indices: list[int], why: str) -> None:
    for j in indices:
        result.outcomes[j] = CellOutcome("not_run", "NotRun", f"not run: {why}")


def _replay(kernel: Kernel, nb: NotebookNode, indices: list[int], tests: dict[int, str], fatal: set[int],
            timeout: float, guard_after: int | None) -> bool:
    if guard_after == -1:
        _install_guard(kernel, timeout)
    for j in indices:
        if j in tests or j in fatal:
            continue
        run = kernel.execute(nb.cells[j].source, timeout)
        if run.status not in ("ok", "error"):
            return False
        if j == guard_after:
            _install_guard(kernel, timeout)
    return True
