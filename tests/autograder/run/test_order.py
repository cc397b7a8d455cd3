"""The order a free worker takes pending tasks in (autograder.run.order, Pool's `rank`): references
first, then an assignment the worker has graded (its scorer has compiled that assignment's reference
programs), then one no other worker has, then the longest expected notebooks, so a batch ends on short
ones. Mostly no worker is started: the pool's choice (`Pool._next`) is asked directly; the last test runs
a pool of stand-in workers."""

from __future__ import annotations

import os
import signal
import time

import autograder_specs as specs
import pytest

from autograder.course.notebooks import SourceNotebook
from autograder.records import Task
from autograder.run.order import LongestFirst, code_size
from autograder.run.pipe import TaskDone
from autograder.run.pool import Pool, _Slot

SHORT, LONG = "01_axis_names", "03_nested_axes"  # 03 has about twice the code of 01, and takes about twice as long


@pytest.fixture(scope="module")
def sources() -> dict[str, SourceNotebook]:
    return {aid: SourceNotebook.load(aid, specs.REPO / "solutions" / f"{aid}.ipynb") for aid in (SHORT, LONG)}


def _pool(order: LongestFirst, admit=lambda task: "send") -> Pool:
    return Pool(2, target=None, args=(), budget=lambda t: 1.0, rank=order.rank, admit=admit)


def _drain(pool: Pool) -> list[tuple[str, str, int]]:
    taken = []
    while (task := pool._next()) is not None:
        taken.append((task.kind, task.assignment, task.seq))
    return taken


def test_the_longer_notebook_goes_first_before_anything_is_measured(sources):
    assert code_size(sources[LONG]) > 1.5 * code_size(sources[SHORT])
    pool = _pool(LongestFirst(sources))
    for seq, aid in enumerate([SHORT, SHORT, LONG, LONG]):  # discovered in this order
        pool.submit(Task(seq, "grade", aid, f"s{seq}"))
    assert _drain(pool) == [("grade", LONG, 2), ("grade", LONG, 3), ("grade", SHORT, 0), ("grade", SHORT, 1)]


def test_references_go_before_every_grading_task(sources):
    pool = _pool(LongestFirst(sources))
    pool.submit(Task(0, "grade", LONG, "s0"))
    pool.submit(Task(1, "reference", SHORT))
    assert [kind for kind, _, _ in _drain(pool)] == ["reference", "grade"]


def test_measured_times_replace_the_size_estimate(sources):
    order = LongestFirst(sources)
    order.finished(Task(0, "grade", SHORT, "a"), 9.0)  # 01 turned out slow in this run
    order.finished(Task(1, "grade", LONG, "b"), 3.0)
    assert order.expected(SHORT) == 9.0 and order.expected(LONG) == 3.0
    pool = _pool(order)
    pool.submit(Task(2, "grade", LONG, "c"))
    pool.submit(Task(3, "grade", SHORT, "d"))
    assert _drain(pool) == [("grade", SHORT, 3), ("grade", LONG, 2)]


def test_an_unmeasured_assignment_is_estimated_at_the_measured_rate(sources):
    order = LongestFirst(sources)
    order.finished(Task(0, "grade", SHORT, "a"), 2.0)
    order.finished(Task(1, "grade", SHORT, "b"), 4.0)
    rate = 3.0 / code_size(sources[SHORT])
    assert order.expected(LONG) == pytest.approx(code_size(sources[LONG]) * rate)
    order.finished(Task(2, "reference", LONG), 50.0)  # a reference run says nothing of a student's notebook
    order.finished(Task(3, "grade", LONG, "c"), None)  # nor does a notebook no worker ran
    assert order.expected(LONG) == pytest.approx(code_size(sources[LONG]) * rate)


def test_a_retried_task_goes_first_and_a_deferred_one_keeps_its_place(sources):
    held = {"s2"}
    pool = _pool(LongestFirst(sources), admit=lambda task: "defer" if task.student in held else "send")
    pool.submit(Task(0, "grade", SHORT, "s0"))
    pool.submit(Task(2, "grade", LONG, "s2"))  # would go first, but its student's budget holds it back
    pool.submit(Task(1, "grade", SHORT, "s1"), front=True)  # its worker was lost: it goes again at once
    assert _drain(pool) == [("grade", SHORT, 1), ("grade", SHORT, 0)]
    assert [t.seq for t in pool.pending] == [2]
    held.clear()
    assert _drain(pool) == [("grade", LONG, 2)]


def test_a_dropped_task_leaves_the_queue(sources):
    pool = _pool(LongestFirst(sources), admit=lambda task: "drop" if task.seq == 0 else "send")
    pool.submit(Task(0, "grade", LONG, "s0"))
    pool.submit(Task(1, "grade", SHORT, "s1"))
    assert _drain(pool) == [("grade", SHORT, 1)] and not pool.pending


def _slot(pool: Pool, wid: int, graded: set[str]) -> _Slot:
    """A worker of `pool` (no process) that has graded `graded`."""
    slot = _Slot(wid, proc=None, conn=None, graded=set(graded))
    pool.slots[wid] = slot
    return slot


def _grading(pool: Pool, aids: list[str]) -> None:
    for seq, aid in enumerate(aids):
        pool.submit(Task(seq, "grade", aid, f"s{seq}"))


def test_a_worker_stays_with_the_assignment_it_has_graded_though_another_is_longer(sources):
    pool = _pool(LongestFirst(sources))
    short, _ = _slot(pool, 0, {SHORT}), _slot(pool, 1, {LONG})
    _grading(pool, [LONG, SHORT])
    assert pool._next(short).assignment == SHORT  # its scorer has 01's reference programs compiled
    assert pool._next(pool.slots[1]).assignment == LONG


def test_a_worker_takes_an_assignment_no_other_worker_has_before_another_workers(sources):
    """The other worker has 03 and will grade the rest of it: this one starts on 01, paying one compile."""
    pool = _pool(LongestFirst(sources))
    fresh, _ = _slot(pool, 0, set()), _slot(pool, 1, {LONG})
    _grading(pool, [LONG, LONG, SHORT])
    assert pool._next(fresh).assignment == SHORT
    assert pool._next(None).assignment == LONG  # a worker not started yet: nothing of its own, 01 is taken


def test_a_worker_whose_assignments_are_done_takes_another_workers_rather_than_idle(sources):
    pool = _pool(LongestFirst(sources))
    done_with_short, _ = _slot(pool, 0, {SHORT}), _slot(pool, 1, {LONG})
    _grading(pool, [LONG])
    assert pool._next(done_with_short).assignment == LONG


def test_references_and_retried_tasks_still_go_before_a_workers_own_assignment(sources):
    pool = _pool(LongestFirst(sources))
    worker = _slot(pool, 0, {SHORT})
    pool.submit(Task(0, "grade", SHORT, "s0"))
    pool.submit(Task(1, "reference", LONG))
    pool.submit(Task(2, "grade", LONG, "s2"), front=True)  # its worker was lost
    assert [pool._next(worker).seq for _ in range(3)] == [2, 1, 0]


def worker_answering_its_pid(wid, conn):
    """A stand-in worker: each task takes 0.3 s and is answered with the pid that ran it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.setpgid(0, 0)
    while (task := conn.recv()) is not None:
        time.sleep(0.3)
        conn.send(TaskDone(task.seq, {"worker": os.getpid()}))


def test_two_workers_grade_two_assignments_one_each_so_each_compiles_one(sources):
    """Through the pool's own loop: the first worker takes 03 (the longest), the second 01 (03 is the first
    one's), and each keeps to its own: no assignment is graded by both workers (before, both took 03 first,
    and both compiled both assignments' reference programs)."""
    order = LongestFirst(sources)
    pool = Pool(2, worker_answering_its_pid, (), budget=lambda t: 10.0, rank=order.rank)
    _grading(pool, [SHORT, SHORT, SHORT, LONG, LONG, LONG])
    ran: dict[str, set[int]] = {SHORT: set(), LONG: set()}
    try:
        pool.run(lambda task, res: ran[task.assignment].add(res["worker"]), lambda task, why: None)
    finally:
        pool.close()
    assert len(ran[SHORT]) == 1 and len(ran[LONG]) == 1 and ran[SHORT] != ran[LONG]
