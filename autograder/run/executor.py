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

In every kernel the grader runs, a visible check only makes sure the answer exports and leaves the judging to
the judge (worker.kernel_prelude, `namedaxes.grading.judged_outside`): the judge decides each test cell outside
the kernel, so a visible part fails only where the answer does not run or export.
A test cell whose visible check failed scores 0 whatever its hidden part records (judge/score.py); its
hidden part still runs, in a last pass of its own after every other hidden part (`FINDING`), so that the
judge can say *what* went wrong on the hidden inputs: the class's misconception map groups those findings.
An answer its visible part found not written yet (`NotAttempted`) has nothing for the judge: its hidden part
is not run again (a kernel naming its error so gains nothing: the cell is 0 all the same). That pass can
cost nothing: the cell keeps its outcome, a hidden part that times out or kills its kernel ends the pass (no
restart, no replay, no cell marked), and a limit the kernel hits during it is not the submission's (the
sandbox's verdict is taken before the pass begins).

Budgets (`NotebookLimits`): `budget` seconds of wall clock for the whole notebook (kernel starts
and replays included): a cell's timeout is cut to what is left, and once it is
spent the remaining cells are not run (status `timeout`). `max_output_chars`
caps the output kept over the whole notebook (status `too_much_output`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from nbformat import NotebookNode

from courseinfo.nbgrader_metadata import nbgrader_cell

from ..limits import MAX_RESTARTS, NOTEBOOK_OUTPUT_CHARS, SNAPSHOT_TIMEOUT, START_ERROR_CHARS
from ..reasons import Phrase, phrase
from ..records import CellEnd, CellOutcome, RunResult, Status
from .cell_endings import append_error_output, cell_label, interrupted, lost_ending, mark_rest, post_mortem
from .cell_outputs import CellRun, NotebookOutputCap
from .kernel import Kernel, KernelStartError
from .namespace_guard import GUARD_CODE, split_hidden
from .observations import ARRAYS_SUFFIX, VALUES_SUFFIX, clear_all_observations, harvest_observations, logged_names

__all__ = [
    "CellOutcome",
    "RunResult",
    "run_notebook",
    "NotebookLimits",
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


NOT_STARTED = "NotAttempted"  # the error a visible check raises for an answer that is still its stub
VISIBLE, HIDDEN, FINDING = "visible", "hidden", "finding"  # the three passes over a notebook's code cells


@dataclass(frozen=True)
class NotebookSteps:
    """The order of a notebook's run (module docstring): every code cell (a test cell: its visible part), then
    the test cells' hidden parts, then the same hidden parts again for the judge's findings (`FINDING`: run
    only for a cell whose visible check failed)."""

    code_cells: list[int]
    hidden_of: dict[int, str]  # test cell -> its hidden part ('' where it has none)
    order: list[tuple[int, str]]  # (cell, VISIBLE | HIDDEN | FINDING)

    @classmethod
    def of(cls, nb: NotebookNode, tests: dict[int, str]) -> NotebookSteps:
        code_cells = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
        hidden_of = {i: split_hidden(nb.cells[i].source)[1] for i in code_cells if i in tests}
        with_hidden = [i for i in code_cells if hidden_of.get(i)]
        order = [(i, VISIBLE) for i in code_cells] + [(i, HIDDEN) for i in with_hidden]
        return cls(code_cells, hidden_of, order + [(i, FINDING) for i in with_hidden])

    def rest(self, p: int) -> list[int]:
        """The cells of step `p` on, once each (not the FINDING pass: it is no cell's own step)."""
        return list(dict.fromkeys(j for j, kind in self.order[p:] if kind != FINDING))

    def done_cells(self, p: int) -> list[int]:
        """The cells whose visible part ran before step `p` (what a new kernel replays)."""
        return [j for j, kind in self.order[:p] if kind == VISIBLE]


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


@dataclass(frozen=True)
class NotebookLimits:
    """How long a notebook's run may take and how much output it keeps.

    `cell_timeout`: seconds per cell; `start_timeout`: seconds for a kernel to start (and run the
    prelude); `budget`: wall-clock seconds for the whole run (None: no budget), `budget_label` what it is,
    as a phrase (default: "the notebook's time budget of N s"); `max_output_chars`: output kept over the
    whole notebook."""

    cell_timeout: float
    start_timeout: float = 90.0
    budget: float | None = None
    budget_label: Phrase | None = None
    max_output_chars: int = NOTEBOOK_OUTPUT_CHARS


def run_notebook(
    nb: NotebookNode,
    tests: dict[int, str],
    first_kernel: Kernel | None,
    new_kernel: Callable[[int], Kernel],
    limits: NotebookLimits,
    prelude: str = "",
    guard: bool = True,
) -> RunResult:
    """Execute the code cells of `nb` in place (outputs written into the cells).

    `tests` maps cell index -> grade_id of the test cells. `first_kernel` is an
    already started (warm) kernel, or None to start one with `new_kernel(0)`;
    `new_kernel(n)` starts the n-th replacement kernel in the same working copy.
    `prelude` is trusted code run silently in every kernel before the first cell.

    What happened (the outcomes' texts, the events) is data (`reasons.Phrase`); only the error output
    appended to a failed cell of `nb` is words (`cell_endings.append_error_output`).
    """
    return _NotebookRun(nb, tests, new_kernel, limits, prelude, guard).run(first_kernel)


class _NotebookRun:
    """One notebook's run: every code cell in order (a test cell: its visible part), then the hidden parts
    (module docstring), a fresh kernel and a replay after a kernel is lost."""

    def __init__(self, nb, tests, new_kernel, limits: NotebookLimits, prelude: str, guard: bool):
        self.nb, self.tests, self.new_kernel, self.limits, self.prelude = nb, tests, new_kernel, limits, prelude
        self.t0 = time.monotonic()
        self.deadline = self.t0 + limits.budget if limits.budget else float("inf")
        self.result = RunResult()
        self.steps = NotebookSteps.of(nb, tests)
        self.hidden_of = self.steps.hidden_of
        self.guard_after = guard_index(nb) if guard else None
        self.fatal: set[int] = set()
        self.kernel: Kernel | None = None
        self.output_cap = NotebookOutputCap(limits.max_output_chars)
        budget = limits.budget
        self.what: Phrase | str = limits.budget_label or (phrase("budget_notebook", seconds=budget) if budget else "")
        self.before_findings: object = None  # the sandbox's verdict when the FINDING pass began (else unset)
        self.findings_began = False
        self.visible_seconds: dict[int, float] = {}

    # ------------------------------------------------------------ helpers
    def left(self) -> float:
        return self.deadline - time.monotonic()

    def out_of_time(self, rest: list[int]) -> None:
        mark_rest(self.result, rest, phrase("budget_ran_out", what=self.what))
        self.result.events.append((Status.TIMEOUT, phrase("ran_out_of", what=self.what, n=len(rest))))

    def log(self, gid: str, when: str, names: list[str]) -> None:
        if names:
            self.result.observe_log.append(f"{gid}: {when}: {logged_names(names)}")

    def start(self, n: int, warm: Kernel | None) -> Kernel | None:
        """A ready kernel with the prelude run (two tries), or None (`start_error` says why)."""
        k, start_timeout = warm, self.limits.start_timeout
        for attempt in range(2):
            try:
                if k is None:
                    k = self.new_kernel(n * 2 + attempt)
                k.wait_ready(max(1.0, min(start_timeout, self.left())))
                if self.prelude:
                    run = k.execute(self.prelude, start_timeout, store_history=False)
                    if run.status != "ok":
                        raise RuntimeError(f"the grader's prelude failed: {run.ename}: {run.evalue}")
                return k
            except KernelStartError as err:
                if k is not None:
                    k.kill()
                k = None
                self.result.start_error = _bounded(str(err), START_ERROR_CHARS)  # it quotes the kernel's log
        return None

    # ------------------------------------------------------------ the run
    def run(self, first_kernel: Kernel | None) -> RunResult:
        result = self.result
        self.kernel = self.start(0, first_kernel)
        result.stages["start"] = time.monotonic() - self.t0
        if self.kernel is None:
            if self.left() <= 0:  # the budget ran out while the kernel was starting
                self.out_of_time(self.steps.code_cells)
                result.start_error = ""
            else:
                for i in self.steps.code_cells:
                    result.outcomes[i] = CellOutcome(CellEnd.NOT_RUN)
            result.seconds = time.monotonic() - self.t0
            return result
        pos: int | None = 0
        try:
            if self.guard_after == -1:
                _install_guard(self.kernel, self.limits.cell_timeout)
            while pos is not None and pos < len(self.steps.order):
                pos = self.step(pos)
        finally:
            if self.kernel is not None:
                self.kernel.kill()
                # a limit hit that did not kill it (disk, processes); not one of the FINDING pass
                hit = self.before_findings if self.findings_began else post_mortem(self.kernel)
                if hit is not None and not any(s == hit.status for s, _ in result.events):
                    result.events.append((hit.status, hit.reason))
        result.seconds = time.monotonic() - self.t0
        return result

    def step(self, pos: int) -> int | None:
        """Run step `pos` (a cell's visible part, or a test cell's hidden part): the next step, or None."""
        i, kind = self.steps.order[pos]
        outcome = self.result.outcomes.get(i)
        if kind == FINDING:
            failed = outcome is not None and outcome.status == CellEnd.ERROR and i not in self.fatal
            return self.finding(pos, i) if failed and outcome.ename != NOT_STARTED else pos + 1
        hidden_step = kind == HIDDEN
        if hidden_step and (outcome is None or outcome.status != CellEnd.OK):
            return pos + 1  # its visible part failed: its hidden part runs in the FINDING pass
        if self.left() <= 0:
            self.out_of_time(self.steps.rest(pos))
            return None
        timeout = self.limits.cell_timeout
        label = cell_label(self.nb, i)
        t_step = time.monotonic()
        if hidden_step:
            full = timeout - self.visible_seconds.get(i, 0.0)
            limit = min(max(0.1, full), self.left())
            cut = limit < full  # this cell's timeout is the rest of the budget
            run = self.hidden(i, limit)
        else:
            limit = min(timeout, self.left())
            cut = limit < timeout
            run = self.visible(i, label, limit)
        self.harvest(i, hidden_step, run)
        stage = "hidden" if hidden_step else "cells"
        self.result.stages[stage] = self.result.stages.get(stage, 0.0) + time.monotonic() - t_step
        how = phrase("stopped_budget", what=self.what) if cut else phrase("ran_longer", seconds=timeout)
        if run.status in ("ok", "error"):
            said = phrase("hidden_part_failed") if hidden_step and run.status == "error" else run.evalue
            self.result.outcomes[i] = CellOutcome(CellEnd(run.status), run.ename, said, run.seconds)
            if i == self.guard_after and not hidden_step:
                _install_guard(self.kernel, timeout)
            return pos + 1
        if run.status == "timeout":
            ending = interrupted(run, label, how)
            self.result.outcomes[i] = ending.outcome
            self.result.events.append(ending.event)
            self.fatal.add(i)
            return pos + 1
        self.lost(i, run, label, how)  # hung (killed after a timeout), oversized or died
        return pos + 1 if self.restart(pos, label) else None

    def finding(self, pos: int, i: int) -> int | None:
        """The hidden part of test cell `i`, whose visible check failed, for the judge's finding only: its
        observations are harvested, its outcome is kept; out of time, a timeout or a lost kernel end the pass."""
        if not self.findings_began:
            self.findings_began, self.before_findings = True, post_mortem(self.kernel)
        if self.left() <= 0:
            return None
        t_step = time.monotonic()
        self.visible_seconds.setdefault(i, 0.0)
        run = self.hidden(i, min(self.limits.cell_timeout, self.left()))
        if run.status in ("ok", "error"):
            self.harvest(i, True, run)
        self.result.stages["findings"] = self.result.stages.get("findings", 0.0) + time.monotonic() - t_step
        return pos + 1 if run.status in ("ok", "error") else None

    def hidden(self, i: int, limit: float) -> CellRun:
        """A test cell's hidden part, in the namespace its visible part left (nothing it prints is kept)."""
        gid = self.tests.get(i)
        self.log(gid, "found before the hidden part ran", clear_all_observations(self.kernel.observe_dir))
        run = _execute_hidden(self.kernel, gid, self.hidden_of[i], limit)
        run.seconds += self.visible_seconds.get(i, 0.0)
        return run

    def visible(self, i: int, label: Phrase, limit: float) -> CellRun:
        """A cell (a test cell: its visible part, then its namespace snapshot), its outputs into the notebook
        up to the cell's and the notebook's caps."""
        cell, gid = self.nb.cells[i], self.tests.get(i)
        if gid is not None:
            self.log(gid, "found before the cell ran", clear_all_observations(self.kernel.observe_dir))
        source = split_hidden(cell.source)[0] if self.hidden_of.get(i) else cell.source
        snap = {"snapshot": SNAPSHOT_CODE.format(gid=gid)} if self.hidden_of.get(i) else None
        run = self.kernel.execute(source, limit, max_chars=self.output_cap.left, user_expressions=snap)
        cell.outputs = run.outputs
        cell.execution_count = run.execution_count
        event = self.output_cap.charge(run, label)
        if event is not None:
            self.result.events.append(event)
        return run

    def harvest(self, i: int, hidden_step: bool, run: CellRun) -> None:
        """After a test cell's part: its observations (after the hidden part, or a cell without one), and
        what else was in the observation folder, logged; the folder emptied."""
        gid = self.tests.get(i)
        if gid is None:
            return
        observe_dir = self.kernel.observe_dir
        if self.hidden_of.get(i) and not hidden_step:
            self.log(gid, "written by the visible part", clear_all_observations(observe_dir))
            if run.status == "ok":  # (its user expression took the snapshot)
                self.visible_seconds[i] = run.seconds
            elif run.status == "error":  # a failed part evaluates no user expression: for the FINDING pass
                _snapshot(self.kernel, gid)
            return
        got = harvest_observations(observe_dir, gid)
        if got is not None:
            self.result.observations[gid] = got
        own = {gid + ARRAYS_SUFFIX, gid + VALUES_SUFFIX}
        beside = [n for n in clear_all_observations(observe_dir) if n not in own]
        self.log(gid, "beside the cell's own results", beside)

    def lost(self, i: int, run: CellRun, label: Phrase, how: Phrase) -> None:
        """A cell that hung, sent an oversized message or whose kernel died: its outcome and event
        (`cell_endings.lost_ending`), its error output, and the kernel killed."""
        ending = lost_ending(run, self.kernel, label, how)
        self.result.outcomes[i] = ending.outcome
        self.result.events.append(ending.event)
        append_error_output(self.nb.cells[i], ending.outcome)
        self.fatal.add(i)
        self.kernel.kill()
        self.kernel = None

    def restart(self, pos: int, label: Phrase) -> bool:
        """A fresh kernel with the earlier cells replayed, to go on after step `pos`; False: the rest is not run."""
        result = self.result
        if result.restarts >= MAX_RESTARTS:
            mark_rest(result, self.steps.rest(pos + 1), phrase("too_many_restarts"))
            return False
        if self.left() <= 0:
            self.out_of_time(self.steps.rest(pos + 1))
            return False
        result.restarts += 1
        t_restart = time.monotonic()
        self.kernel = self.start(result.restarts, None)
        if self.kernel is None:
            mark_rest(result, self.steps.rest(pos + 1), phrase("not_restarted"))
            result.events.append((Status.KERNEL_DIED, phrase("not_restarted_because", error=result.start_error)))
            return False
        replayed = _replay(
            self.kernel,
            self.nb,
            self.steps.done_cells(pos),
            self.tests,
            self.fatal,
            self.limits.cell_timeout,
            self.guard_after,
            self.deadline,
            snapshots=self.hidden_of,
        )
        if replayed != "ok":
            self.kernel.kill()
            self.kernel = None
            if replayed == "budget":
                self.out_of_time(self.steps.rest(pos + 1))
                return False
            mark_rest(result, self.steps.rest(pos + 1), phrase("replay_failed_rest"))
            result.events.append((Status.KERNEL_DIED, phrase("replay_failed", label=label)))
            return False
        result.stages["restarts"] = result.stages.get("restarts", 0.0) + time.monotonic() - t_restart
        return True


def _bounded(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


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
