"""The worker pool: tasks on N worker processes, one at a time each, the main loop owning every deadline.

Threat model: a submission may make the grading *worker* die (a grader bug
hit by hostile input, the OOM killer) or hang (a kernel message loop that
never ends, a wedged system call), and may stall the batch with many slow
cells. The instructor may press Ctrl-C at any moment, or start a second
`make grade` while one runs. None of this may lose the batch, leave kernels
running, or corrupt a cache.

The scheduler shape (`Pool`): one duplex pipe per worker, and the main loop
owns every deadline. The main process sends a worker one task at a time; the
worker answers `KernelStarted(pid)` for each kernel it starts (`KernelGone(pid)`
when it killed it) and `TaskDone(seq, result)` at the end (pipe.py). The main loop waits
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
notebooks, so the batch ends on short ones, those whose programs another worker has compiled counted at
half); `admit` may still hold a task back. The pool tells `rank` which assignments each worker has graded
(`_Slot.graded`).

No queue shared between processes: a worker that dies cannot take a lock or a
half-written message down with it (the old `mp.Queue` reader could die holding
its lock and stall every other worker).

`run_all` (run/batch.py) is what one grading batch asks of the pool: its tasks, their budgets, their
references and caches.
"""

from __future__ import annotations

import collections
import multiprocessing as mp
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import wait as wait_any

from ..limits import HANG_MARGIN, MAX_ATTEMPTS, STOP_GRACE
from ..reasons import Phrase, phrase
from ..records import Task
from .pipe import KernelGone, KernelStarted, TaskDone
from .reference_lock import ReferenceLock

__all__ = ["Pool", "HANG_MARGIN", "STOP_GRACE", "ReferenceLock"]


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
    graded: set[str] = field(default_factory=set)  # assignments it was sent grading tasks of (its scorer has them)


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
        rank: Callable[[Task, frozenset, frozenset], object] = lambda task, here, elsewhere: 0,
    ):
        self.ctx = ctx or mp.get_context("fork")
        self.jobs = max(1, jobs)
        self.target, self.args, self.budget, self.margin = target, args, budget, margin
        self.admit = admit  # right before a task goes to a worker: "send", "defer" or "drop"
        # which pending task goes first: the lowest `rank(task, here, elsewhere)` (order.py), `here` the assignments
        # the worker that takes it has graded, `elsewhere` those the other workers have; ties keep their turn
        self.rank = rank
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

    def _next(self, slot: _Slot | None = None) -> Task | None:
        """The pending task that goes first by rank for `slot` (None: a worker not started yet; retried tasks
        before all) and that `admit` lets go now; deferred ones stay pending, in their place."""
        here = frozenset(slot.graded) if slot is not None else frozenset()
        elsewhere = frozenset().union(*(s.graded for s in self.slots.values() if s is not slot))
        for task in sorted(self.pending, key=lambda t: (t.seq not in self.retried, self.rank(t, here, elsewhere))):
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
                task = self._next(idle[-1] if idle else None)
                if task is None:
                    break
                slot = idle.pop() if idle else self._spawn()
                if task.kind == "grade":
                    slot.graded.add(task.assignment)
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
