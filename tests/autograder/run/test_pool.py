"""The scheduler (autograder.run.pool.Pool) against workers that die, hang, or leave kernels behind.

The workers here are stand-ins (no notebooks, no kernels): each task's
`student` field says what the worker does with it. A "kernel" is a `sleep`
process in its own session, announced to the main process exactly as
worker.py announces real kernels, so the tests can check that nothing the
pool started outlives it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import machine

from autograder.publish.words import say
from autograder.reasons import phrase
from autograder.records import Task
from autograder.run.pipe import KernelStarted, TaskDone
from autograder.run.pool import LOST_DIED, Pool, ReferenceLock, lost_hung

BUDGET, MARGIN = 0.5, 0.5


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ")[-1][0] != "Z"
    except OSError:
        return False


def _kill_quietly(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def fake_worker(wid, conn, marker_dir):
    """Do what the task's student name says: ok | die | die_once | hang (with a kernel)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.setpgid(0, 0)
    (Path(marker_dir) / f"worker-{os.getpid()}").write_text("")
    while True:
        task = conn.recv()
        if task is None:
            return
        what = task.student
        if what == "die" or (what == "die_once" and not (Path(marker_dir) / f"{task.seq}").exists()):
            (Path(marker_dir) / f"{task.seq}").write_text(str(os.getpid()))
            os._exit(1)
        if what == "hang":
            kernel = subprocess.Popen(["sleep", "1000"], start_new_session=True)
            conn.send(KernelStarted(kernel.pid))
            (Path(marker_dir) / f"kernel-{task.seq}-{kernel.pid}").write_text("")
            time.sleep(1000)
        conn.send(TaskDone(task.seq, {"status": "ok", "student": what, "worker": os.getpid()}))


def run_pool(tmp_path, students, jobs=2):
    pool = Pool(jobs, fake_worker, (str(tmp_path),), budget=lambda t: BUDGET, margin=MARGIN)
    for seq, s in enumerate(students):
        pool.submit(Task(seq, "grade", "a", s))
    done, lost = [], []
    t0 = time.monotonic()
    try:
        pool.run(lambda t, r: done.append((t.student, r)), lambda t, why: lost.append((t.student, why)))
    finally:
        pool.close()
    return done, lost, time.monotonic() - t0


def test_every_task_is_answered_by_a_pool_of_workers(tmp_path):
    done, lost, _ = run_pool(tmp_path, ["ok"] * 6)
    assert [s for s, _ in done] == ["ok"] * 6 and lost == []
    assert len({r["worker"] for _, r in done}) <= 2


def test_a_worker_that_dies_is_replaced_and_its_task_retried_once(tmp_path):
    done, lost, _ = run_pool(tmp_path, ["ok", "die_once", "ok", "die", "ok"])
    assert sorted(s for s, _ in done) == ["die_once", "ok", "ok", "ok"]
    assert lost == [("die", LOST_DIED)]  # twice dead: reported, not retried again
    assert (tmp_path / "1").exists() and (tmp_path / "3").exists()


def test_a_hung_worker_and_its_kernels_are_killed_retried_then_reported(tmp_path):
    done, lost, seconds = run_pool(tmp_path, ["hang", "ok", "ok"])
    assert sorted(s for s, _ in done) == ["ok", "ok"]
    assert len(lost) == 1 and lost[0][0] == "hang"
    assert "stopped responding (no result within 1 s)" in say(lost[0][1], "en")  # data; words when publishing
    kernels = [int(p.name.rsplit("-", 1)[1]) for p in tmp_path.glob("kernel-*")]
    assert len(kernels) == 2  # one per attempt
    deadline = time.monotonic() + 5
    while any(alive(k) for k in kernels) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(k) for k in kernels), kernels
    assert seconds < machine.limit(2 * (BUDGET + MARGIN) + 10)


def test_a_task_lost_twice_is_a_row_reason_as_data_said_in_the_readers_language():
    reason, cell = phrase("lost_twice", why=lost_hung(61.4)), phrase("not_graded_because", why=LOST_DIED)
    assert say(reason, "en") == (
        "the grader's worker process stopped responding (no result within 61 s) and was killed, twice; "
        "not graded: regrade this student"
    )
    assert say(cell, "en") == "not graded: the grader's worker process died while grading this notebook"
    assert (
        say(reason, "zh")
        == "评分器的工作进程停止了响应（61 秒内没有结果），已被终止，两次；未评分：请为这位学生重新评分"
    )
    assert say(cell, "zh") == "未评分：评分器的工作进程在为这个笔记本评分时终止了"


INTERRUPTED = textwrap.dedent("""
    import json, sys, time
    sys.path.insert(0, "tests/helpers")  # pytest's `pythonpath`, for the test module's own imports
    from tests.autograder.run.test_pool import fake_worker
    from autograder.run.pool import Pool
    from autograder.records import Task
    pool = Pool(2, fake_worker, ({tmp!r},), budget=lambda t: 600, margin=60)
    for seq in range(4):
        pool.submit(Task(seq, "grade", "a", "hang"))
    print(json.dumps(__import__("os").getpid()), flush=True)
    try:
        pool.run(lambda t, r: None, lambda t, w: None)
    except KeyboardInterrupt:
        pool.close(interrupted=True)
        print("interrupted", flush=True)
        sys.exit(130)
""")


def test_ctrl_c_stops_workers_and_kernels_within_seconds(tmp_path):
    code = INTERRUPTED.format(tmp=str(tmp_path))
    proc = subprocess.Popen(
        machine.as_from_a_terminal([sys.executable, "-c", code]),
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[3],
    )
    json.loads(proc.stdout.readline())
    deadline = time.monotonic() + 30
    while len(list(tmp_path.glob("kernel-*"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    kernels = [int(p.name.rsplit("-", 1)[1]) for p in tmp_path.glob("kernel-*")]
    try:
        assert len(kernels) == 2
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, _ = machine.communicate(proc, quiet_s=15, what="the pool stopping on Ctrl-C")
        assert time.monotonic() - t0 < machine.limit(5), "Ctrl-C took too long"
        assert proc.returncode == 130 and "interrupted" in out
        time.sleep(0.2)
        assert not any(alive(k) for k in kernels), kernels
    finally:  # what a failed stop leaves behind, so that nothing outlives the test
        for pid in [*kernels, *(int(p.name.split("-")[1]) for p in tmp_path.glob("worker-*"))]:
            _kill_quietly(pid)


def test_reference_lock_excludes_a_second_run(tmp_path):
    first = ReferenceLock(tmp_path, "02_scaled_sum")
    first.acquire()
    probe = textwrap.dedent(f"""
        import fcntl, sys
        fh = open({str(tmp_path / "02_scaled_sum.lock")!r}, "a")
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            sys.exit(7)
    """)
    assert subprocess.run([sys.executable, "-c", probe]).returncode == 7
    first.release()
    assert subprocess.run([sys.executable, "-c", probe]).returncode == 0


def test_close_leaves_no_worker(tmp_path):
    """After a finished batch, close() stops every worker."""
    pool = Pool(2, fake_worker, (str(tmp_path),), budget=lambda t: BUDGET, margin=MARGIN)
    pool.submit(Task(0, "grade", "a", "ok"))
    pool.run(lambda t, r: None, lambda t, w: None)
    procs = [s.proc for s in pool.slots.values()]
    pool.close()
    assert procs and not any(p.is_alive() for p in procs)
    assert pool.slots == {}


def prestart_worker(wid, conn):
    """Answers each task with whether the pool asked it to boot a kernel for a next task."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.setpgid(0, 0)
    while (task := conn.recv()) is not None:
        time.sleep(0.05)  # both workers are busy when the next tasks are handed out
        conn.send(TaskDone(task.seq, {"status": "ok", "prestart": task.prestart}))


def test_no_kernel_is_booted_ahead_for_a_task_that_will_not_come(tmp_path):
    """A worker boots its next kernel while grading (Task.prestart) only while tasks are left for it:
    the last tasks of a batch (fewer pending than workers, none waiting for a reference) say no."""
    pool = Pool(2, prestart_worker, (), budget=lambda t: 10.0)
    for seq in range(5):
        pool.submit(Task(seq, "grade", "a", f"s{seq}"))
    waiting = [Task(5, "grade", "b", "s5")]  # released later, as run_all releases an assignment
    pool.later = lambda: len(waiting)
    done = {}

    def on_done(task, res):
        done[task.seq] = res["prestart"]
        if task.seq == 0:
            pool.submit(waiting.pop())

    try:
        pool.run(on_done, lambda t, why: None)
    finally:
        pool.close()
    assert sorted(done) == list(range(6))
    assert done[0] and done[1] and done[2]  # 5 + 1 tasks for 2 workers: more to come
    assert sum(not v for v in done.values()) == 2  # one last task per worker
    assert not done[5]
