"""The worker pool: reference runs first, then grading, on N worker processes.

Threat model: a submission may make the grading *worker* die (a grader bug
hit by hostile input, the OOM killer) or hang (a kernel message loop that
never ends, a wedged system call), and may stall the batch with many slow
cells. The instructor may press Ctrl-C at any moment, or start a second
`make grade` while one runs. None of this may lose the batch, leave kernels
running, or corrupt a cache.

The scheduler shape (`Pool`): one duplex pipe per worker, and the main loop
owns every deadline. The main process sends a worker one task at a time; the
worker answers `KernelStarted(pid)` for each kernel it starts (`KernelGone(pid)`
when it killed it) and `TaskDone(seq, result)` at the end (records.py). The main loop waits
on all pipes and all process sentinels at once (`connection.wait`), so:

- a worker that dies is seen at once (its sentinel fires; its pipe hits EOF);
- a worker that sends nothing past its task's deadline (the task's time budget
  plus `margin`) is hung: it is killed, and so are the kernels it reported
  (their process groups), whatever they are doing;
- either way the worker is replaced, its task is retried once on a fresh
  worker, and a task lost twice becomes a row with status `error` and a
  reason saying what happened (`on_lost(task, why)`, `why` a phrase: the pool's
  rows are data too, said when published);
- Ctrl-C (or SIGTERM) anywhere in the loop: every worker gets SIGTERM (it kills
  its kernels and exits), then SIGKILL after `STOP_GRACE` s, and every kernel
  any worker reported is killed by process group: nothing outlives the batch.

Which pending task goes next is `rank`'s choice (order.py: references, then the longest expected
notebooks, so the batch ends on short ones); `admit` may still hold a task back.

No queue shared between processes: a worker that dies cannot take a lock or a
half-written message down with it (the old `mp.Queue` reader could die holding
its lock and stall every other worker).

Time budgets (`run_all`): each notebook gets `notebook_budget` seconds (the
worker stops running further cells when it is spent: status `timeout`), each
student's submission `submission_budget` seconds over all their notebooks,
charged with the time each finished notebook took (a notebook starts with
what is left after its finished and running siblings, waits while siblings
still run and too little is left, and is not run once nothing is left:
status `timeout`). The worker enforces the budgets cooperatively; the main
loop's deadline (budget + margin) is the backstop that does not depend on
the worker's cooperation.

Every run makes a fresh run secret (`references.new_run_secret`, in memory only): it seeds the
hidden inputs of this run's scorers, so no two runs judge on the same hidden inputs.

Two runs at once: the reference observations and the XLA cache of an
assignment are computed under an exclusive lock (`fcntl.flock` on
`CACHE/<assignment>.lock`); a second run waits for it, then finds them cached.
Both are published by atomic renames (references.py, xla_cache.py).
"""

from __future__ import annotations

import collections
import multiprocessing as mp
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import wait as wait_any
from pathlib import Path

from ..judge.score import make_row, zero_cells
from ..limits import HANG_MARGIN, MAX_ATTEMPTS, REFERENCE_BUDGET, STOP_GRACE
from ..publish.outputs import Progress
from ..publish.words import say
from ..reasons import Phrase, phrase
from ..records import InternalError, KernelGone, KernelStarted, ReferenceRun, Row, Task, TaskDone
from ..sandbox.build import mpl_cache
from ..sandbox.xla_cache import protect_published, publish_xla_cache, remove_protected
from .order import LongestFirst
from .reference_lock import ReferenceLock
from .references import load_references, new_run_secret, reference_key, save_references
from .worker import Config, worker_main

__all__ = ["Pool", "run_all", "HANG_MARGIN", "STOP_GRACE", "ReferenceLock"]


# why a task was lost (as data: it becomes a row's reason; the grader's log says it in English)
LOST_DIED = phrase("worker_died")


def lost_hung(seconds: float) -> Phrase:
    return phrase("worker_hung", seconds=seconds)


def _killpg(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


@dataclass
class _Slot:
    wid: int
    proc: mp.Process
    conn: object
    task: Task | None = None
    deadline: float = 0.0
    kernels: set[int] = field(default_factory=set)


class Pool:
    """`jobs` worker processes fed one task at a time over a pipe each; the main loop owns the deadlines.

    `target(wid, conn, *args)` is the worker's main function (worker.worker_main).
    `budget(task)` is the task's time budget in seconds; the worker is hung when
    it has not answered `margin` seconds after that.
    """

    def __init__(
        self,
        jobs: int,
        target: Callable,
        args: tuple,
        budget: Callable[[Task], float],
        margin: float = HANG_MARGIN,
        ctx=None,
        admit: Callable[[Task], str] = lambda task: "send",
        rank: Callable[[Task], object] = lambda task: 0,
    ):
        self.ctx = ctx or mp.get_context("fork")
        self.jobs = max(1, jobs)
        self.target, self.args, self.budget, self.margin = target, args, budget, margin
        self.admit = admit  # right before a task goes to a worker: "send", "defer" or "drop"
        self.rank = rank  # which pending task goes first: the lowest rank (order.py); ties keep their turn
        self.retried: set[int] = set()  # seqs put back in front (a lost worker's task): they go before any rank
        self.later: Callable[[], int] = lambda: 0  # tasks not submitted yet that will come (run_all's waiting)
        self.slots: dict[int, _Slot] = {}
        self.pending: collections.deque[Task] = collections.deque()
        self.attempts: dict[int, int] = {}
        self.next_wid = 0
        self.stopped = False

    # ------------------------------------------------------------ workers
    def _spawn(self) -> _Slot:
        parent, child = self.ctx.Pipe(duplex=True)
        wid = self.next_wid
        self.next_wid += 1
        proc = self.ctx.Process(target=self.target, args=(wid, child, *self.args), daemon=True)
        proc.start()
        child.close()
        slot = _Slot(wid, proc, parent)
        self.slots[wid] = slot
        return slot

    def _kill(self, slot: _Slot) -> None:
        """Kill a worker, its process group (its helpers) and every kernel it reported, at once."""
        if slot.proc.pid:
            _killpg(slot.proc.pid)  # the worker made itself a group leader (worker_main)
        try:
            slot.proc.kill()
        except Exception:  # noqa: BLE001 - already gone
            pass
        for pid in slot.kernels:
            _killpg(pid)
        slot.proc.join(5)
        slot.conn.close()
        self.slots.pop(slot.wid, None)

    def submit(self, task: Task, front: bool = False) -> None:
        if front:
            self.retried.add(task.seq)
        (self.pending.appendleft if front else self.pending.append)(task)

    def _next(self) -> Task | None:
        """The pending task that goes first by rank (retried ones before all) and that `admit` lets go
        now; deferred ones stay pending, in their place."""
        for task in sorted(self.pending, key=lambda t: (t.seq not in self.retried, self.rank(t))):
            verdict = self.admit(task)
            if verdict == "defer":
                continue
            self.pending.remove(task)
            if verdict == "send":
                return task
        return None

    # ------------------------------------------------------------ the loop
    def run(
        self,
        on_done: Callable[[Task, dict], None],
        on_lost: Callable[[Task, Phrase], None],
        more: Callable[[], bool] = lambda: False,
    ) -> None:
        """Run until no task is pending or in flight (and `more()` says none will come)."""
        while True:
            idle = [s for s in self.slots.values() if s.task is None]
            while self.pending and (idle or len(self.slots) < self.jobs):
                task = self._next()
                if task is None:
                    break
                slot = idle.pop() if idle else self._spawn()
                task.prestart = len(self.pending) + self.later() >= len(self.slots)  # no kernel booted for no task
                try:
                    slot.conn.send(task)
                except OSError:  # it died while idle: another one takes the task
                    self.submit(task, front=True)
                    self._kill(slot)
                    continue
                slot.task = task
                slot.deadline = time.monotonic() + self.budget(task) + self.margin
            busy = [s for s in self.slots.values() if s.task is not None]
            if not busy and not self.pending:
                if not more():
                    return
                continue
            if not busy:  # only deferred tasks: let `admit` look again
                time.sleep(0.05)
                continue
            now = time.monotonic()
            timeout = max(0.05, min([s.deadline - now for s in busy] + [1.0]))
            ready = set(wait_any([s.conn for s in busy] + [s.proc.sentinel for s in busy], timeout))
            for slot in busy:
                if slot.conn in ready:
                    self._read(slot, on_done, on_lost)
            for slot in [s for s in self.slots.values() if s.task is not None]:
                if slot.proc.sentinel in ready and not slot.conn.poll():
                    self._lose(slot, LOST_DIED, on_lost)
                elif time.monotonic() > slot.deadline:
                    self._lose(slot, lost_hung(self.budget(slot.task) + self.margin), on_lost)

    def _read(self, slot: _Slot, on_done, on_lost) -> None:
        while slot.task is not None and slot.conn.poll():
            try:
                msg = slot.conn.recv()
            except (EOFError, OSError):
                self._lose(slot, LOST_DIED, on_lost)
                return
            except Exception:  # noqa: BLE001 - a garbled message: the worker is not trustworthy now
                self._lose(slot, LOST_DIED, on_lost)
                return
            if isinstance(msg, KernelStarted):
                slot.kernels.add(msg.pid)
            elif isinstance(msg, KernelGone):
                slot.kernels.discard(msg.pid)
            elif isinstance(msg, TaskDone) and msg.seq == slot.task.seq:
                task, slot.task = slot.task, None
                on_done(task, msg.result)

    def _lose(self, slot: _Slot, why: Phrase, on_lost) -> None:
        task = slot.task
        slot.task = None
        self._kill(slot)
        n = self.attempts.get(task.seq, 0) + 1
        self.attempts[task.seq] = n
        if n < MAX_ATTEMPTS:
            self.submit(task, front=True)
        else:
            on_lost(task, why)

    # ------------------------------------------------------------ stopping
    def close(self, interrupted: bool = False) -> None:
        """Stop every worker: politely after a finished batch, at once (SIGTERM, then SIGKILL) otherwise."""
        if self.stopped:
            return
        self.stopped = True
        slots = list(self.slots.values())
        if not interrupted:
            for s in slots:
                try:
                    s.conn.send(None)
                except OSError:
                    pass
            deadline = time.monotonic() + 15
            for s in slots:
                s.proc.join(timeout=max(0.1, deadline - time.monotonic()))
        for s in slots:
            if s.proc.is_alive():
                try:
                    s.proc.terminate()  # its SIGTERM handler kills its kernels
                except Exception:  # noqa: BLE001
                    pass
        deadline = time.monotonic() + STOP_GRACE
        for s in slots:
            s.proc.join(timeout=max(0.05, deadline - time.monotonic()))
        for s in slots:
            self._kill(s)


def run_all(opts, sources, intake, out, cache, xla_root, work_root, sandbox, jobs, autograded_root, nbfeedback_root):
    """Reference tasks (where not cached), then grading tasks, on `jobs` workers.

    Returns (rows, internal errors, reference seconds, reference problems by assignment).
    The XLA compilation cache the reference run fills is offered (read-only,
    unlistable) to the student kernels only when they run as an unprivileged
    user in the sandbox; otherwise a kernel could read the compiled solution.
    """
    log_dir = work_root / "logs"
    log_dir.mkdir()
    use_xla = sandbox.isolate and sandbox.userns
    protect_published(xla_root)  # whatever is there: never listable from a kernel
    keys = {aid: reference_key(src)[:16] for aid, src in sources.items()}
    ref_dirs = {aid: cache / f"{aid}-{keys[aid]}" for aid in sources}
    xla_dirs = {aid: xla_root / f"{aid}-{keys[aid]}" for aid in sources}
    rows: list[Row] = []
    internal: list[str] = []
    ref_seconds: dict[str, float] = {}
    ref_problems: dict[str, list[str]] = {}
    placed = sorted(intake.placed.items())
    wanted = {aid for (_, aid), _ in placed}

    def cached(aid: str) -> bool:
        return load_references(ref_dirs[aid], sources[aid]) is not None and (
            not use_xla or (xla_dirs[aid] / ".complete").exists()
        )

    locks: dict[str, ReferenceLock] = {}
    need_ref = []
    for aid in sorted(wanted):  # sorted: two runs never wait for each other in a cycle
        if cached(aid):
            continue
        lock = ReferenceLock(cache, aid)
        lock.acquire(quiet=opts.quiet)
        if cached(aid):  # another run computed it while we waited
            lock.release()
            continue
        locks[aid] = lock
        need_ref.append(aid)

    seq = 0
    ref_tasks, grade_tasks = [], {aid: [] for aid in sources}
    notebook_budget = float(opts.notebook_budget)
    for aid in need_ref:
        tmp = ""
        if use_xla:
            tmp = xla_dirs[aid].with_name(xla_dirs[aid].name + ".tmp")
            remove_protected(tmp)
            tmp.mkdir(parents=True)
            os.chmod(tmp, 0o300)  # the worker copies the reference kernel's entries in by name; nobody lists
        # the trusted reference is not held to the students' budget; this is only the hang backstop
        ref_tasks.append(Task(seq, "reference", aid, xla_dir=str(tmp), budget=max(REFERENCE_BUDGET, notebook_budget)))
        seq += 1
    for (student, aid), p in placed:
        src = sources[aid]
        fb = [str(out / "feedback" / student / f"{aid}.html")]
        if nbfeedback_root is not None:
            fb.append(str(nbfeedback_root / student / aid / f"{src.notebook_name}.html"))
        grade_tasks[aid].append(
            Task(
                seq,
                "grade",
                aid,
                student,
                str(p.path),
                p.origin,
                str(ref_dirs[aid]),
                str(autograded_root / student / aid / src.file_name),
                tuple(fb),
                budget=notebook_budget,
                late=p.late,
            )
        )
        seq += 1
    n_grade = sum(len(v) for v in grade_tasks.values())
    if not ref_tasks and not n_grade:
        return rows, internal, ref_seconds, ref_problems

    cfg = Config(
        sources=sources,
        sandbox=sandbox,
        timeout=opts.timeout,
        work_root=work_root,
        log_dir=log_dir,
        feedback=opts.feedback,
        mpl_cache=mpl_cache(cache.parent),
        max_added_cells=opts.max_added_cells,
        max_output_chars=opts.max_output_chars,
        run_secret=new_run_secret(),
        zygote=not sandbox.fork_why(),
    )
    order = LongestFirst(sources)  # the longest expected notebooks first: the shortest make the tail
    pool = Pool(min(jobs, len(ref_tasks) + n_grade), worker_main, (cfg,), budget=lambda t: t.budget, rank=order.rank)
    progress = Progress(n_grade, opts.quiet)
    waiting = {aid: list(ts) for aid, ts in grade_tasks.items()}
    submission_budget = float(opts.submission_budget)

    def release(aid: str) -> None:
        for t in waiting.pop(aid, []):
            t.xla_dir = str(xla_dirs[aid]) if use_xla and (xla_dirs[aid] / ".complete").exists() else ""
            pool.submit(t)

    def not_graded(task: Task, status: str, reason: Phrase, cell_reason: Phrase) -> None:
        source = sources[task.assignment]
        row = make_row(task, source, status, reason, zero_cells(source, cell_reason))
        _write_feedback(cfg, task, row)
        rows.append(row)
        progress.update(status)

    spent: dict[str, float] = collections.defaultdict(float)  # seconds each student's finished notebooks took
    reserved: dict[int, tuple[str, float]] = {}  # in flight: seq -> (student, budget)

    def admit(t: Task) -> str:
        """Right before a grading task goes to a worker: give it its budget from its student's.

        A notebook gets the notebook budget, or what is left of the submission budget after the
        student's finished notebooks (their real time) and the budgets of those still running.
        When siblings still run and too little is left, it waits for them (other students go
        first); when nothing is left, it is answered here, not run."""
        if t.kind != "grade" or t.seq in reserved:  # references; a retried task keeps its budget
            return "send"
        free = submission_budget - spent[t.student]
        if free <= 0:
            not_graded(
                t, "timeout", phrase("budget_spent_elsewhere", seconds=submission_budget), phrase("budget_used_up")
            )
            return "drop"
        running = sum(b for who, b in reserved.values() if who == t.student)
        if running and free - running < min(notebook_budget, free):
            return "defer"
        left = free - running
        t.budget = min(notebook_budget, left)
        # the worker says what the budget is (worker.budget_label); its words come when publishing
        t.budget_of_submission = 0.0 if left >= notebook_budget else submission_budget
        reserved[t.seq] = (t.student, t.budget)
        return "send"

    def settle(task: Task, seconds: float) -> None:
        who, budget = reserved.pop(task.seq, (task.student, 0.0))
        spent[who] += min(budget, seconds)

    pool.admit = admit
    pool.later = lambda: sum(len(ts) for ts in waiting.values())

    def on_done(task: Task, res: Row | ReferenceRun | InternalError) -> None:
        if task.kind == "reference":
            try:
                if isinstance(res, InternalError):
                    ref_problems[task.assignment] = [f"running it failed inside the grader:\n{res.detail}"]
                elif res.problems:
                    ref_problems[task.assignment] = res.problems
                else:
                    save_references(ref_dirs[task.assignment], sources[task.assignment], res.observations)
                    if task.xla_dir:
                        publish_xla_cache(Path(task.xla_dir), xla_dirs[task.assignment])
                    ref_seconds[task.assignment] = res.seconds
            finally:
                if task.assignment in locks:
                    locks.pop(task.assignment).release()
            if task.assignment in ref_problems:
                for t in waiting.pop(task.assignment, []):
                    not_graded(
                        t, "error", phrase("no_reference", assignment=task.assignment), phrase("no_reference_cell")
                    )
            else:
                release(task.assignment)
            return
        if isinstance(res, InternalError):
            settle(task, task.budget)
            internal.append(f"{task.student} / {task.assignment}:\n{res.detail}")
            not_graded(task, "error", phrase("internal_error"), phrase("internal_error_cell"))
        else:
            settle(task, float(res.seconds if res.seconds is not None else task.budget))
            order.finished(task, res.seconds)
            rows.append(res)
            progress.update(res.status)

    def on_lost(task: Task, why: Phrase) -> None:
        said = say(why, "en")  # the grader's own log and the reference's problems: the instructor's English
        if task.kind == "reference":
            on_done(task, InternalError(said + " (twice)"))
            return
        settle(task, task.budget)
        internal.append(f"{task.student} / {task.assignment}: {said} (twice)")
        not_graded(task, "error", phrase("lost_twice", why=why), phrase("not_graded_because", why=why))

    for t in ref_tasks:
        pool.submit(t)
    if need_ref and not opts.quiet:
        sys.stderr.write(f"running the reference solution of {len(need_ref)} assignment(s): {', '.join(need_ref)}\n")
    for aid in sources:
        if aid not in need_ref:
            release(aid)
    interrupted = True
    try:
        pool.run(on_done, on_lost)
        interrupted = False
    finally:
        pool.close(interrupted=interrupted)
        for lock in locks.values():
            lock.release()
    progress.show(final=True)
    return rows, internal, ref_seconds, ref_problems


def _write_feedback(cfg: Config, task: Task, row: Row) -> None:
    """The feedback page of a notebook that was not run (no worker involved)."""
    if not cfg.feedback or not task.feedback_paths:
        return
    from ..publish.feedback import FeedbackWriter

    page = FeedbackWriter().html(None, task.assignment, row, row.cells)
    for p in task.feedback_paths:
        p = Path(p)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(page, encoding="utf-8")
