"""The order a free worker takes pending tasks in (autograder.run.order, Pool's `rank`): references
first, then the longest expected notebooks, so a batch ends on short ones, a notebook whose assignment only
another worker has graded (its scorer compiled that assignment's reference programs) counted at half.
Mostly no worker is started: the pool's choice (`Pool._next`) is asked directly; the last test runs a pool
of stand-in workers."""

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
MIDDLE = "04_gradient_averaging"  # a little shorter than 03


@pytest.fixture(scope="module")
def sources() -> dict[str, SourceNotebook]:
    return {aid: SourceNotebook.load(aid, specs.REPO / "solutions" / f"{aid}.ipynb") for aid in (SHORT, MIDDLE, LONG)}


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


def _measured(sources, short: float, long: float) -> LongestFirst:
    order = LongestFirst(sources)
    order.finished(Task(90, "grade", SHORT, "a"), short)
    order.finished(Task(91, "grade", LONG, "b"), long)
    return order


def test_a_fresh_worker_starts_an_assignment_nobody_has_rather_than_compile_anothers_again(sources):
    """03 is a little longer, but the other worker has compiled it and grades it: this one starts 01 (someone
    must compile 01 anyway) and no assignment is compiled twice."""
    pool = _pool(_measured(sources, short=2.0, long=3.0))
    fresh, _ = _slot(pool, 0, set()), _slot(pool, 1, {LONG})
    _grading(pool, [LONG, LONG, SHORT])
    assert pool._next(fresh).assignment == SHORT
    assert pool._next(None).assignment == LONG  # no worker left who has not compiled it: longest first again


def test_a_worker_keeps_to_its_assignment_rather_than_take_a_little_longer_one_compiled_elsewhere(sources):
    pool = _pool(_measured(sources, short=2.0, long=3.0))
    short, long = _slot(pool, 0, {SHORT}), _slot(pool, 1, {LONG})
    _grading(pool, [LONG, SHORT])
    assert pool._next(short).assignment == SHORT
    assert pool._next(long).assignment == LONG


def test_a_notebook_more_than_twice_as_long_is_not_left_for_the_end(sources):
    """Longest first still wins when the other worker's notebooks are much longer: starting the short
    assignment would leave a long notebook to run alone at the end."""
    pool = _pool(_measured(sources, short=2.0, long=9.0))
    fresh, _ = _slot(pool, 0, set()), _slot(pool, 1, {LONG})
    _grading(pool, [SHORT, LONG])
    assert pool._next(fresh).assignment == LONG


def test_among_equals_the_worker_takes_an_assignment_it_has_graded(sources):
    pool = _pool(_measured(sources, short=3.0, long=3.0))
    worker = _slot(pool, 0, {SHORT})
    _grading(pool, [LONG, SHORT])  # 03 first in line, nobody has it
    assert pool._next(worker).assignment == SHORT


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
    """Through the pool's own loop, nothing measured yet: the first worker takes 03 (the longest), the second
    04 (03 is the first one's, and not twice as long), and each keeps to its own: no assignment is graded by
    both workers (before, both took 03 first and both compiled both assignments' reference programs)."""
    pool = Pool(2, worker_answering_its_pid, (), budget=lambda t: 10.0, rank=LongestFirst(sources).rank)
    _grading(pool, [MIDDLE, MIDDLE, MIDDLE, LONG, LONG, LONG])
    ran: dict[str, set[int]] = {MIDDLE: set(), LONG: set()}
    try:
        pool.run(lambda task, res: ran[task.assignment].add(res["worker"]), lambda task, why: None)
    finally:
        pool.close()
    assert len(ran[MIDDLE]) == 1 and len(ran[LONG]) == 1 and ran[MIDDLE] != ran[LONG]
