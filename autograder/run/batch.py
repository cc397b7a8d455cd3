"""One grading batch on the pool (`run_all`): reference runs first, then grading, on N worker processes.

The pool (pool.py) runs tasks and owns the deadlines; this module is what a batch asks of it: which
references must run (not cached), which notebooks to grade, each task's time budget, and what each
finished or lost task gives (a row, published references, an internal error).

Which pending task goes next is `rank`'s choice (order.py: references, then the longest expected
notebooks, so the batch ends on short ones, those whose programs another worker has compiled counted at
half); `admit` may still hold a task back.

Time budgets: each notebook gets `notebook_budget` seconds (the
worker stops running further cells when it is spent: status `timeout`), each
student's submission `submission_budget` seconds over all their notebooks,
charged with the time each finished notebook took (a notebook starts with
what is left after its finished and running siblings, waits while siblings
still run and too little is left, and is not run once nothing is left:
status `timeout`). The worker enforces the budgets cooperatively; the main
loop's deadline (budget + margin) is the backstop that does not depend on
the worker's cooperation.

Time limits (time_limits.py): an assignment's students get a cell limit and a notebook budget that
follow what its reference's run took on this machine (measured when it ran, kept with its cached
observations), never below `--timeout` and `--notebook-budget`. A reference run that ran out of time or
lost its kernel is run once more with a longer cell limit before its assignment is refused; the summary
and the class report say so (`BatchResults.ref_retried`), and give every assignment's limits.

Every run makes a fresh run secret (`references.new_run_secret`, in memory only): it seeds the
hidden inputs of this run's scorers, so no two runs judge on the same hidden inputs.

Two runs at once: the reference observations and the XLA cache of an
assignment are computed under an exclusive lock (`fcntl.flock` on
`CACHE/<assignment>.lock`); a second run waits for it, then finds them cached.
Both are published by atomic renames (references.py, xla_cache.py).
"""

from __future__ import annotations

import collections
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from ..judge.score import task_row
from ..limits import REFERENCE_BUDGET
from ..publish.outputs import Progress
from ..publish.pages import FeedbackPages
from ..publish.words import say
from ..reasons import Phrase, phrase
from ..records import (
    Batch,
    BatchResults,
    InternalError,
    ReferenceRun,
    ReferenceTimes,
    Row,
    Status,
    Task,
    TimeLimits,
    zero_cells,
)
from ..sandbox.build import mpl_cache
from ..sandbox.xla_cache import protect_published, publish_xla_cache, remove_protected
from .order import LongestFirst
from .pool import Pool
from .reference_lock import ReferenceLock
from .references import load_references, new_run_secret, reference_key, save_references
from .time_limits import retry_timeout, time_limits
from .worker import WorkerConfig, worker_main

__all__ = ["run_all"]


@dataclass(frozen=True)
class _Caches:
    """Where this batch finds (or puts) each assignment's reference observations and XLA cache."""

    ref_dirs: dict[str, Path]
    xla_dirs: dict[str, Path]
    use_xla: bool  # offered to kernels only when they run as an unprivileged user in the sandbox

    @classmethod
    def of(cls, batch: Batch, sources: dict, sandbox) -> _Caches:
        keys = {aid: reference_key(src)[:16] for aid, src in sources.items()}
        return cls(
            {aid: batch.cache / f"{aid}-{keys[aid]}" for aid in sources},
            {aid: batch.xla_root / f"{aid}-{keys[aid]}" for aid in sources},
            sandbox.isolate and sandbox.userns,
        )

    def xla_ready(self, aid: str) -> bool:
        return self.use_xla and (self.xla_dirs[aid] / ".complete").exists()

    def times(self, aid: str, source) -> ReferenceTimes | None:
        """What the cached reference's run took (None: not recorded)."""
        refs = load_references(self.ref_dirs[aid], source)
        return refs.times if refs is not None else None

    def cached(self, aid: str, source) -> bool:
        return load_references(self.ref_dirs[aid], source) is not None and (not self.use_xla or self.xla_ready(aid))


def run_all(batch: Batch, sources: dict, intake, sandbox) -> BatchResults:
    """Reference tasks (where not cached), then grading tasks, on `batch.jobs` workers.

    The XLA compilation cache the reference run fills is offered (read-only,
    unlistable) to the student kernels only when they run as an unprivileged
    user in the sandbox; otherwise a kernel could read the compiled solution.
    """
    (batch.work_root / "logs").mkdir()
    protect_published(batch.xla_root)  # whatever is there: never listable from a kernel
    caches = _Caches.of(batch, sources, sandbox)
    placed = sorted(intake.placed.items())
    locks = _lock_references(batch, sources, {aid for (_, aid), _ in placed}, caches)
    ref_tasks = _reference_tasks(locks, caches, batch.opts)
    grade_tasks = _grade_tasks(batch, sources, placed, caches, len(ref_tasks))
    results = BatchResults()
    if not ref_tasks and not any(grade_tasks.values()):
        return results
    _Grading(batch, sources, sandbox, caches, locks, results).run(ref_tasks, grade_tasks)
    return results


def _lock_references(batch: Batch, sources: dict, wanted: set[str], caches: _Caches) -> dict[str, ReferenceLock]:
    """The lock of each assignment whose references this run computes (those not cached, also after
    waiting for another run that held the lock)."""
    locks: dict[str, ReferenceLock] = {}
    for aid in sorted(wanted):  # sorted: two runs never wait for each other in a cycle
        if caches.cached(aid, sources[aid]):
            continue
        lock = ReferenceLock(batch.cache, aid)
        lock.acquire(quiet=batch.opts.quiet)
        if caches.cached(aid, sources[aid]):  # another run computed it while we waited
            lock.release()
            continue
        locks[aid] = lock
    return locks


def _reference_tasks(need_ref, caches: _Caches, opts) -> list[Task]:
    """One task per reference to compute (with the staging folder of its XLA cache, where wanted); its
    first run has the floor `--timeout` per cell (time_limits.py)."""
    tasks = []
    for seq, aid in enumerate(need_ref):
        tmp = ""
        if caches.use_xla:
            tmp = caches.xla_dirs[aid].with_name(caches.xla_dirs[aid].name + ".tmp")
            remove_protected(tmp)
            tmp.mkdir(parents=True)
            os.chmod(tmp, 0o300)  # the worker copies the reference kernel's entries in by name; nobody lists
        # the trusted reference is not held to the students' budget; this is only the hang backstop
        budget = max(REFERENCE_BUDGET, float(opts.notebook_budget))
        tasks.append(Task(seq, "reference", aid, xla_dir=str(tmp), budget=budget, cell_timeout=float(opts.timeout)))
    return tasks


def _grade_tasks(batch: Batch, sources: dict, placed: list, caches: _Caches, seq: int) -> dict[str, list[Task]]:
    """The grading tasks of each assignment, numbered from `seq`."""
    tasks: dict[str, list[Task]] = {aid: [] for aid in sources}
    for (student, aid), p in placed:
        src = sources[aid]
        fb = [str(batch.feedback_page(student, aid))]
        if batch.nbgrader_feedback_root is not None:
            fb.append(str(batch.nbgrader_feedback_root / student / aid / f"{src.notebook_name}.html"))
        tasks[aid].append(
            Task(
                seq,
                "grade",
                aid,
                student,
                str(p.path),
                p.origin,
                str(caches.ref_dirs[aid]),
                str(batch.autograded_root / student / aid / src.file_name),
                tuple(fb),
                budget=float(batch.opts.notebook_budget),
                late=p.late,
            )
        )
        seq += 1
    return tasks


class _Grading:
    """One batch on the pool: its tasks' budgets (`admit`, `settle`), what each finished or lost task
    gives (`on_done`, `on_lost`), and the rows of notebooks answered without a worker (`not_graded`)."""

    def __init__(self, batch: Batch, sources: dict, sandbox, caches: _Caches, locks: dict, results: BatchResults):
        opts = batch.opts
        self.batch, self.sources, self.caches, self.locks, self.results = batch, sources, caches, locks, results
        self.cfg = WorkerConfig(
            sources=sources,
            sandbox=sandbox,
            timeout=opts.timeout,
            work_root=batch.work_root,
            log_dir=batch.work_root / "logs",
            feedback=opts.feedback,
            mpl_cache=mpl_cache(batch.cache.parent),
            max_added_cells=opts.max_added_cells,
            max_output_chars=opts.max_output_chars,
            run_secret=new_run_secret(),
            zygote=not sandbox.fork_why(),
        )
        self.order = LongestFirst(sources)  # the longest expected notebooks first: the shortest make the tail
        self.notebook_budget = float(opts.notebook_budget)
        self.submission_budget = float(opts.submission_budget)
        self.pages = FeedbackPages()
        self.limits: dict[str, TimeLimits] = results.time_limits  # each released assignment's (time_limits.py)
        self.waiting: dict[str, list[Task]] = {}
        self.spent: dict[str, float] = collections.defaultdict(float)  # seconds each student's finished notebooks took
        self.reserved: dict[int, tuple[str, float]] = {}  # in flight: seq -> (student, budget)
        self.pool: Pool | None = None
        self.progress: Progress | None = None

    def run(self, ref_tasks: list[Task], grade_tasks: dict[str, list[Task]]) -> None:
        n_grade = sum(len(v) for v in grade_tasks.values())
        jobs = min(self.batch.jobs, len(ref_tasks) + n_grade)
        self.pool = Pool(jobs, worker_main, (self.cfg,), budget=lambda t: t.budget, rank=self.order.rank)
        self.progress = Progress(n_grade, self.batch.opts.quiet)
        self.waiting = {aid: list(ts) for aid, ts in grade_tasks.items()}
        self.pool.admit = self.admit
        self.pool.later = lambda: sum(len(ts) for ts in self.waiting.values())
        for t in ref_tasks:
            self.pool.submit(t)
        if self.locks and not self.batch.opts.quiet:
            sys.stderr.write(
                f"running the reference solution of {len(self.locks)} assignment(s): {', '.join(self.locks)}\n"
            )
        for aid in self.sources:
            if aid not in self.locks:
                self.release(aid)
        interrupted = True
        try:
            self.pool.run(self.on_done, self.on_lost)
            interrupted = False
        finally:
            self.pool.close(interrupted=interrupted)
            for lock in self.locks.values():
                lock.release()
        self.progress.show(final=True)

    def release(self, aid: str, times: ReferenceTimes | None = None) -> None:
        """The assignment's references are there: its time limits follow what they took (`times`, else the
        cached ones'), and its grading tasks go to the pool."""
        tasks = self.waiting.pop(aid, [])
        if not tasks:
            return
        if times is None:
            times = self.caches.times(aid, self.sources[aid])
        opts = self.batch.opts
        limits = time_limits(times, float(opts.timeout), self.notebook_budget, float(opts.timeout_multiple))
        self.limits[aid] = limits
        for t in tasks:
            t.cell_timeout, t.budget = limits.cell, limits.notebook
            t.xla_dir = str(self.caches.xla_dirs[aid]) if self.caches.xla_ready(aid) else ""
            self.pool.submit(t)

    def not_graded(self, task: Task, status: Status, reason: Phrase, cell_reason: Phrase) -> None:
        """A notebook answered without running it: its row, and its feedback page."""
        source = self.sources[task.assignment]
        row = task_row(task, source, status, reason, zero_cells(source, cell_reason))
        if self.cfg.feedback:
            self.pages.write(task.feedback_paths, task.assignment, row)
        self.results.rows.append(row)
        self.progress.update(status)

    def admit(self, t: Task) -> str:
        """Right before a grading task goes to a worker: give it its budget from its student's.

        A notebook gets its assignment's notebook budget (time_limits.py), or what is left of the
        submission budget after the student's finished notebooks (their real time) and the budgets of
        those still running.
        When siblings still run and too little is left, it waits for them (other students go
        first); when nothing is left, it is answered here, not run."""
        if t.kind != "grade" or t.seq in self.reserved:  # references; a retried task keeps its budget
            return "send"
        notebook_budget = self.limits[t.assignment].notebook
        free = self.submission_budget - self.spent[t.student]
        if free <= 0:
            spent = phrase("budget_spent_elsewhere", seconds=self.submission_budget)
            self.not_graded(t, Status.TIMEOUT, spent, phrase("budget_used_up"))
            return "drop"
        running = sum(b for who, b in self.reserved.values() if who == t.student)
        if running and free - running < min(notebook_budget, free):
            return "defer"
        left = free - running
        t.budget = min(notebook_budget, left)
        # the worker says what the budget is (worker.budget_label); its words come when publishing
        t.budget_of_submission = 0.0 if left >= notebook_budget else self.submission_budget
        self.reserved[t.seq] = (t.student, t.budget)
        return "send"

    def settle(self, task: Task, seconds: float) -> None:
        who, budget = self.reserved.pop(task.seq, (task.student, 0.0))
        self.spent[who] += min(budget, seconds)

    def on_done(self, task: Task, res: Row | ReferenceRun | InternalError) -> None:
        if task.kind == "reference":
            self.reference_done(task, res)
        elif isinstance(res, InternalError):
            self.settle(task, task.budget)
            self.results.internal.append(f"{task.student} / {task.assignment}:\n{res.detail}")
            self.not_graded(task, Status.ERROR, phrase("internal_error"), phrase("internal_error_cell"))
        else:
            self.settle(task, float(res.seconds if res.seconds is not None else task.budget))
            self.order.finished(task, res.seconds)
            self.results.rows.append(res)
            self.progress.update(res.status)

    def reference_done(self, task: Task, res: ReferenceRun | InternalError) -> None:
        """A reference run ended: its observations and XLA cache published, or its problems kept; then its
        assignment's grading tasks go to the pool, or are answered `error` (no reference)."""
        aid, problems = task.assignment, self.results.ref_problems
        if isinstance(res, ReferenceRun) and res.problems and res.retry and aid not in self.results.ref_retried:
            self.retry_reference(task, res)
            return
        try:
            if isinstance(res, InternalError):
                problems[aid] = [f"running it failed inside the grader:\n{res.detail}"]
            elif res.problems:
                problems[aid] = res.problems
            else:
                save_references(self.caches.ref_dirs[aid], self.sources[aid], res.observations, res.times)
                if task.xla_dir:
                    publish_xla_cache(Path(task.xla_dir), self.caches.xla_dirs[aid])
                self.results.ref_seconds[aid] = res.seconds
        finally:
            if aid in self.locks:
                self.locks.pop(aid).release()
        if aid in problems:
            for t in self.waiting.pop(aid, []):
                self.not_graded(t, Status.ERROR, phrase("no_reference", assignment=aid), phrase("no_reference_cell"))
        else:
            self.release(aid, res.times)

    def retry_reference(self, task: Task, res: ReferenceRun) -> None:
        """A reference that ran out of time or lost its kernel (a busy machine) runs once more, first in
        line, with a longer cell limit; its lock is kept meanwhile. The report says so."""
        first = task.cell_timeout or float(self.batch.opts.timeout)
        task.cell_timeout = retry_timeout(first)
        self.results.ref_retried[task.assignment] = (
            f"its first run ({res.seconds:.1f} s) failed with {first:g} s per cell "
            f"({clipped('; '.join(res.problems))}); it ran again with {task.cell_timeout:g} s per cell"
        )
        self.pool.submit(task, front=True)

    def on_lost(self, task: Task, why: Phrase) -> None:
        said = say(why, "en")  # the grader's own log and the reference's problems: the instructor's English
        if task.kind == "reference":
            self.on_done(task, InternalError(said + " (twice)"))
            return
        self.settle(task, task.budget)
        self.results.internal.append(f"{task.student} / {task.assignment}: {said} (twice)")
        self.not_graded(task, Status.ERROR, phrase("lost_twice", why=why), phrase("not_graded_because", why=why))


def clipped(text: str, limit: int = 300) -> str:
    """`text` in at most `limit` characters and "…", cut where a word ends (never in the middle of one)."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut).rstrip(" ,;:") + " …"
