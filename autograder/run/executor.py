"""Run a graded notebook cell by cell, surviving timeouts and dying kernels.

- Before each test cell its observation files are deleted; right after it, they
  are read (without following links) into the grader's memory. So a test cell
  is judged only on what it recorded itself.
- A cell past its timeout is interrupted; if the kernel cannot be interrupted
  (a loop inside compiled XLA code) or dies (os._exit, a segfault, a resource
  limit), the kernel is killed, a fresh one is started in the same working
  copy, the earlier cells (not the test cells) are replayed, the offending
  cell is marked failed and the rest of the notebook still runs. Where a
  kernel died of a limit, the sandbox says which (`Kernel.post_mortem()`:
  memory, processes, disk) and that is the status.

Threat model: the kernel's code is hostile and may keep threads running
between cells. The observation folder is only ever emptied and read without
following links, size-capped (observations.py). Provenance: the whole folder is emptied before a
test cell, *again* between its visible and hidden parts, and after its
results are harvested, so the observations harvested after the hidden part
were written while it ran; anything found at those points (other than the
cell's own two files afterwards) is logged in `RunResult.observe_log`.

Hidden parts run last. The kernel is hostile and may print, store or encode the
source of every execution it is given (an IPython `pre_run_cell` callback sees
each one), so nothing it outputs after it has seen a hidden part can be shown to
anyone. A test cell's *visible* part runs in its place in the notebook; right
after it the grader snapshots the kernel's namespace (`SNAPSHOT_CODE`, trusted,
evaluated as a user expression of that same execute request: no extra round trip). Once every cell
has run, each hidden part runs in turn:
the namespace is put back as it was after its visible part (`RESTORE_CODE`),
the hidden part runs, its results are harvested, and *everything it or the
restore printed is dropped*; an error in it is reported by a fixed text, never
by what the student's code said (`HiddenTestError`). So the outputs in the
graded notebook and on the feedback page all come from executions that ran
before the kernel had seen any hidden line. After a kernel restart the replay
takes the snapshots again at each test cell's place.

Budgets: `budget` seconds of wall clock for the whole notebook (kernel starts
and replays included): a cell's timeout is cut to what is left, and once it is
spent the remaining cells are not run (status `timeout`). `max_output_chars`
caps the output kept over the whole notebook (status `too_much_output`).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from nbformat import NotebookNode
from nbformat import v4 as nbv4

from courseinfo.nbgrader_metadata import nbgrader_cell

from ..limits import (
    MAX_MESSAGE_BYTES,
    MAX_OUTPUT_CHARS,
    MAX_OUTPUTS,
    MAX_RESTARTS,
    NOTEBOOK_OUTPUT_CHARS,
    SNAPSHOT_TIMEOUT,
    START_ERROR_CHARS,
)
from ..publish.words import say
from ..reasons import Phrase, phrase
from ..records import CellOutcome, RunResult
from .cell_outputs import CellRun
from .kernel import Kernel, KernelStartError
from .namespace_guard import GUARD_CODE, split_hidden
from .observations import ARRAYS_SUFFIX, VALUES_SUFFIX, clear_all_observations, harvest_observations, logged_names

__all__ = [
    "CellOutcome",
    "RunResult",
    "run_notebook",
    "cell_label",
    "SNAPSHOT_CODE",
    "RESTORE_CODE",
    "HIDDEN_ERROR",
]

HIDDEN_ERROR = "HiddenTestError"  # the ename of every error in a hidden part (what it said is not kept)
# trusted, run silently right after a test cell's visible part, and the restore before its hidden part
# (the grade id is an nbgrader id from the source notebook: `^[a-zA-Z0-9_\-]*$`, inserted with repr)
SNAPSHOT_CODE = (
    "__import__('sys').__dict__.setdefault('_autograder_snapshots', {{}}).__setitem__({gid!r}, "
    "dict(get_ipython().user_ns))"
)  # an expression: a user_expression of the visible part
RESTORE_CODE = (
    "(lambda snap, ns: (ns.clear(), ns.update(snap)))("
    "__import__('sys').__dict__['_autograder_snapshots'].pop({gid!r}), get_ipython().user_ns)"
)


def cell_label(nb: NotebookNode, index: int) -> Phrase:
    """Which cell, as data ("cell 'axis_sum'", "the cell you added after cell 4 (#1 ...)")."""
    cell = nb.cells[index]
    meta = cell.get("metadata", {})
    gid = nbgrader_cell(cell).grade_id
    if gid:
        return phrase("cell_grade_id", grade_id=gid)
    if (meta.get("autograder") or {}).get("student_added"):
        added = [i for i, c in enumerate(nb.cells) if (c.metadata.get("autograder") or {}).get("student_added")]
        return phrase("cell_added", index=index, n=added.index(index) + 1)
    cid = cell.get("id")
    return phrase("cell_id", cell_id=cid) if cid else phrase("cell_number", number=index + 1)


# ---------------------------------------------------------------- the run
def guard_index(nb: NotebookNode) -> int:
    """The last locked code cell before the first answer or test cell (-1 if none)."""
    last = -1
    for i, cell in enumerate(nb.cells):
        meta = nbgrader_cell(cell)
        if meta.solution or meta.grade:
            break
        if cell.cell_type == "code" and meta.locked_flag:
            last = i
    return last


def _install_guard(kernel: Kernel, timeout: float) -> None:
    run = kernel.execute(GUARD_CODE, timeout, store_history=False)
    if run.status != "ok":
        raise RuntimeError(f"installing the monkeypatch guard failed: {run.status} {run.ename}: {run.evalue}")


def _snapshot(kernel: Kernel, gid: str) -> None:
    """Keep the namespace as the test cell's visible part left it (its hidden part runs in it at the end).
    (While grading, the snapshot is the visible part's own user expression: no extra execution.)"""
    kernel.execute(SNAPSHOT_CODE.format(gid=gid), SNAPSHOT_TIMEOUT, store_history=False, max_chars=0)


def _execute_hidden(kernel: Kernel, gid: str, hidden: str, timeout: float) -> CellRun:
    """Restore the test cell's namespace, run its hidden part; nothing either printed is kept."""
    t0 = time.monotonic()
    run = kernel.execute(RESTORE_CODE.format(gid=gid), timeout, store_history=False, max_chars=0)
    if run.status in ("ok", "error"):  # no snapshot (the student removed it): the namespace as it is
        left = max(0.1, timeout - (time.monotonic() - t0))
        run = kernel.execute(hidden, left, store_history=False, max_chars=0)
    run.outputs, run.output_chars, run.truncated = [], 0, False
    if run.status == "error":  # what it said is dropped; its outcome says `hidden_part_failed` (run_notebook)
        run.ename, run.evalue = HIDDEN_ERROR, ""
    run.seconds = time.monotonic() - t0
    return run


def run_notebook(
    nb: NotebookNode,
    tests: dict[int, str],
    first_kernel: Kernel | None,
    new_kernel: Callable[[int], Kernel],
    cell_timeout: float,
    start_timeout: float = 90.0,
    guard: bool = True,
    prelude: str = "",
    budget: float | None = None,
    max_output_chars: int = NOTEBOOK_OUTPUT_CHARS,
    budget_label: Phrase | None = None,
) -> RunResult:
    """Execute the code cells of `nb` in place (outputs written into the cells).

    `tests` maps cell index -> grade_id of the test cells. `first_kernel` is an
    already started (warm) kernel, or None to start one with `new_kernel(0)`;
    `new_kernel(n)` starts the n-th replacement kernel in the same working copy.
    `prelude` is trusted code run silently in every kernel before the first cell.
    `budget`: wall-clock seconds for the whole run (None: no budget); `budget_label` says
    what it is, as a phrase (default: "the notebook's time budget of N s").

    What happened (the outcomes' texts, the events) is data (`reasons.Phrase`); only the error output
    appended to a failed cell of `nb` is words (`_append_error_output`).
    """
    t0 = time.monotonic()
    deadline = t0 + budget if budget else float("inf")
    result = RunResult()
    code_cells = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    guard_after = guard_index(nb) if guard else None
    fatal: set[int] = set()
    kernel = first_kernel
    chars_left = max_output_chars
    capped = False
    what: Phrase | str = budget_label or (phrase("budget_notebook", seconds=budget) if budget else "")

    def left() -> float:
        return deadline - time.monotonic()

    def start(n: int, warm: Kernel | None) -> Kernel | None:
        k = warm
        for attempt in range(2):
            try:
                if k is None:
                    k = new_kernel(n * 2 + attempt)
                k.wait_ready(max(1.0, min(start_timeout, left())))
                if prelude:
                    run = k.execute(prelude, start_timeout, store_history=False)
                    if run.status != "ok":
                        raise RuntimeError(f"the grader's prelude failed: {run.ename}: {run.evalue}")
                return k
            except KernelStartError as err:
                if k is not None:
                    k.kill()
                k = None
                result.start_error = _bounded(str(err), START_ERROR_CHARS)  # it quotes the kernel's log
        return None

    def out_of_time(rest: list[int]) -> None:
        _mark_rest(result, rest, phrase("budget_ran_out", what=what))
        result.events.append(("timeout", phrase("ran_out_of", what=what, n=len(rest))))

    def log(gid: str, when: str, names: list[str]) -> None:
        if names:
            result.observe_log.append(f"{gid}: {when}: {logged_names(names)}")

    kernel = start(0, kernel)
    result.stages["start"] = time.monotonic() - t0
    if kernel is None:
        if left() <= 0:  # the budget ran out while the kernel was starting
            out_of_time(code_cells)
            result.start_error = ""
        else:
            for i in code_cells:
                result.outcomes[i] = CellOutcome("not_run")
        result.seconds = time.monotonic() - t0
        return result

    # every code cell in order (a test cell: its visible part), then the hidden parts (module docstring)
    hidden_of = {i: split_hidden(nb.cells[i].source)[1] for i in code_cells if i in tests}
    steps = [(i, False) for i in code_cells] + [(i, True) for i in code_cells if hidden_of.get(i)]
    visible_seconds: dict[int, float] = {}

    def rest(p: int) -> list[int]:
        return list(dict.fromkeys(j for j, _ in steps[p:]))

    def done_cells(p: int) -> list[int]:
        return [j for j, h in steps[:p] if not h]

    pos = 0
    try:
        if guard_after == -1:
            _install_guard(kernel, cell_timeout)
        while pos < len(steps):
            i, hidden_step = steps[pos]
            cell = nb.cells[i]
            gid = tests.get(i)
            if hidden_step and (result.outcomes.get(i) is None or result.outcomes[i].status != "ok"):
                pos += 1  # its visible part failed: the hidden part does not run
                continue
            if left() <= 0:
                out_of_time(rest(pos))
                break
            limit = min(cell_timeout, left())
            cut = limit < cell_timeout  # this cell's timeout is the rest of the budget
            label = cell_label(nb, i)
            t_step = time.monotonic()
            if hidden_step:
                limit = min(max(0.1, cell_timeout - visible_seconds.get(i, 0.0)), left())
                cut = limit < cell_timeout - visible_seconds.get(i, 0.0)
                log(gid, "found before the hidden part ran", clear_all_observations(kernel.observe_dir))
                run = _execute_hidden(kernel, gid, hidden_of[i], limit)
                run.seconds += visible_seconds.get(i, 0.0)
            else:
                if gid is not None:
                    log(gid, "found before the cell ran", clear_all_observations(kernel.observe_dir))
                notebook_cap = chars_left < MAX_OUTPUT_CHARS  # the notebook's cap binds before the cell's
                source = split_hidden(cell.source)[0] if hidden_of.get(i) else cell.source
                snap = {"snapshot": SNAPSHOT_CODE.format(gid=gid)} if hidden_of.get(i) else None
                run = kernel.execute(source, limit, max_chars=chars_left, user_expressions=snap)
                cell.outputs = run.outputs
                cell.execution_count = run.execution_count
                chars_left = max(0, chars_left - run.output_chars)
                if run.truncated and run.status != "oversized":
                    if notebook_cap or chars_left == 0:
                        if not capped:
                            capped = True
                            result.events.append(
                                (
                                    "too_much_output",
                                    phrase("output_notebook_cap", label=label, limit=max_output_chars),
                                )
                            )
                    else:
                        result.events.append(
                            (
                                "too_much_output",
                                phrase("output_cell_cap", label=label, limit=MAX_OUTPUT_CHARS, outputs=MAX_OUTPUTS),
                            )
                        )
            if gid is not None and hidden_of.get(i) and not hidden_step:
                log(gid, "written by the visible part", clear_all_observations(kernel.observe_dir))
                if run.status == "ok":  # (its user expression took the snapshot)
                    visible_seconds[i] = run.seconds
            elif gid is not None:
                got = harvest_observations(kernel.observe_dir, gid)
                if got is not None:
                    result.observations[gid] = got
                own = {gid + ARRAYS_SUFFIX, gid + VALUES_SUFFIX}
                log(
                    gid,
                    "beside the cell's own results",
                    [n for n in clear_all_observations(kernel.observe_dir) if n not in own],
                )
            stage = "hidden" if hidden_step else "cells"
            result.stages[stage] = result.stages.get(stage, 0.0) + time.monotonic() - t_step
            how = phrase("stopped_budget", what=what) if cut else phrase("ran_longer", seconds=cell_timeout)
            if run.status in ("ok", "error"):
                said = phrase("hidden_part_failed") if hidden_step and run.status == "error" else run.evalue
                result.outcomes[i] = CellOutcome(run.status, run.ename, said, run.seconds)
                if i == guard_after and not hidden_step:
                    _install_guard(kernel, cell_timeout)
                pos += 1
                continue
            if run.status == "timeout":
                result.outcomes[i] = CellOutcome(
                    "timeout", "TimeoutError", phrase("this_cell_interrupted", how=how), run.seconds
                )
                result.events.append(("timeout", phrase("cell_interrupted", label=label, how=how)))
                fatal.add(i)
                pos += 1
                continue
            # hung (killed after a timeout), oversized or died: a new kernel, replay, go on
            if run.status == "hung":
                result.outcomes[i] = CellOutcome(
                    "timeout", "TimeoutError", phrase("this_cell_hung", how=how), run.seconds
                )
                result.events.append(("timeout", phrase("cell_hung", label=label, how=how)))
            elif run.status == "oversized":
                mib = MAX_MESSAGE_BYTES // 2**20
                result.outcomes[i] = CellOutcome(
                    "error", "OutputTooLarge", phrase("this_cell_oversized", mib=mib), run.seconds
                )
                result.events.append(("too_much_output", phrase("cell_oversized", label=label, mib=mib)))
            else:
                code = kernel.proc.returncode if kernel.proc is not None else None
                if code is not None and code > 128 and kernel.sandbox.isolate:
                    code = 128 - code  # bwrap reports a child killed by signal N as exit 128+N
                kernel.kill()
                hit = _post_mortem(kernel)
                if hit is not None:
                    result.outcomes[i] = CellOutcome("died", "LimitReached", hit.reason, run.seconds)
                    result.events.append((hit.status, phrase("limit_restarted", label=label, reason=hit.reason)))
                else:
                    why = _death_reason(code)
                    result.outcomes[i] = CellOutcome(
                        "died", "DeadKernelError", phrase("this_cell_died", why=why), run.seconds
                    )
                    result.events.append(("kernel_died", phrase("cell_died", label=label, why=why)))
            _append_error_output(cell, result.outcomes[i])
            fatal.add(i)
            kernel.kill()
            kernel = None
            if result.restarts >= MAX_RESTARTS:
                _mark_rest(result, rest(pos + 1), phrase("too_many_restarts"))
                break
            if left() <= 0:
                out_of_time(rest(pos + 1))
                break
            result.restarts += 1
            t_restart = time.monotonic()
            kernel = start(result.restarts, None)
            if kernel is None:
                _mark_rest(result, rest(pos + 1), phrase("not_restarted"))
                result.events.append(("kernel_died", phrase("not_restarted_because", error=result.start_error)))
                break
            replayed = _replay(
                kernel, nb, done_cells(pos), tests, fatal, cell_timeout, guard_after, deadline, snapshots=hidden_of
            )
            if replayed != "ok":
                kernel.kill()
                kernel = None
                if replayed == "budget":
                    out_of_time(rest(pos + 1))
                    break
                _mark_rest(result, rest(pos + 1), phrase("replay_failed_rest"))
                result.events.append(("kernel_died", phrase("replay_failed", label=label)))
                break
            result.stages["restarts"] = result.stages.get("restarts", 0.0) + time.monotonic() - t_restart
            pos += 1
    finally:
        if kernel is not None:
            kernel.kill()
            hit = _post_mortem(kernel)  # a limit hit that did not kill it (disk, processes)
            if hit is not None and not any(s == hit.status for s, _ in result.events):
                result.events.append((hit.status, hit.reason))
    result.seconds = time.monotonic() - t0
    return result


def _bounded(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _post_mortem(kernel: Kernel):
    """The sandbox's verdict on why a kernel died (a LimitHit with .status and .reason), or None."""
    ask = getattr(kernel, "post_mortem", None)
    if ask is None:
        return None
    try:
        return ask()
    except Exception:  # noqa: BLE001 - no verdict is better than a crashed worker
        return None


def _death_reason(returncode: int | None) -> Phrase | str:
    if returncode is None:
        return ""
    if returncode < 0:
        try:
            name = __import__("signal").Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        key = {"SIGXCPU": "died_cpu", "SIGSEGV": "died_segv", "SIGKILL": "died_killed", "SIGXFSZ": "died_fsize"}.get(
            name
        )
        return phrase(key) if key else phrase("died_signal", signal=name)
    return phrase("died_exit", code=returncode)


def _append_error_output(cell: NotebookNode, outcome: CellOutcome) -> None:
    """The graded notebook shows why the grader ended the cell: that output is a published text, so its
    words are `publish.words.say`'s, in the current language (the worker's `speaking(lang)`)."""
    said = say(outcome.evalue)
    cell.outputs = list(cell.get("outputs", [])) + [
        nbv4.new_output("error", ename=outcome.ename, evalue=said, traceback=[f"{outcome.ename}: {said}"])
    ]


def _mark_rest(result: RunResult, indices: list[int], why: Phrase) -> None:
    for j in indices:
        result.outcomes[j] = CellOutcome("not_run", "NotRun", phrase("not_run_because", why=why))


def _replay(
    kernel: Kernel,
    nb: NotebookNode,
    indices: list[int],
    tests: dict[int, str],
    fatal: set[int],
    timeout: float,
    guard_after: int | None,
    deadline: float = float("inf"),
    snapshots: dict[int, str] | None = None,
) -> str:
    """Re-run the earlier cells (not the test cells): 'ok', 'failed', or 'budget' (time ran out).
    At each test cell with a hidden part (`snapshots`: index -> hidden part) the namespace is
    snapshotted again, for its hidden part at the end."""
    if guard_after == -1:
        _install_guard(kernel, timeout)
    for j in indices:
        if j in tests and j not in fatal and (snapshots or {}).get(j):
            _snapshot(kernel, tests[j])
        if j in tests or j in fatal:
            continue
        left = deadline - time.monotonic()
        if left <= 0:
            return "budget"
        run = kernel.execute(nb.cells[j].source, min(timeout, left))
        if run.status not in ("ok", "error"):
            return "budget" if deadline - time.monotonic() <= 0 else "failed"
        if j == guard_after:
            _install_guard(kernel, timeout)
    return "ok"
