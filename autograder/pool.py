"""The worker pool: reference runs first, then grading, on N worker processes.

The main process hands tasks to long-lived workers (one per core), collects
their results, notices a worker that died (its task becomes an internal-error
row) and replaces it. A submission's reference must exist before it is graded:
an assignment's grading tasks are released when its reference run finished.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import queue
import sys
import time
from pathlib import Path

from .outputs import Progress
from .records import GraderError, Task
from .references import load_references, reference_key, save_references
from .scoring import make_row, zero_cells
from .worker import Config, worker_main
from .isolation import mpl_cache
from .xla_cache import publish_xla_cache, remove_protected

__all__ = ["run_all"]


def run_all(opts, sources, intake, out, cache, xla_root, work_root, sandbox, jobs, autograded_root,
             nbfeedback_root):
    """Reference tasks (where not cached), then grading tasks, on `jobs` workers.

    The XLA compilation cache the reference run fills is offered (read-only,
    unlistable) to the student kernels only when they run as an unprivileged
    user in the sandbox; otherwise a kernel could read the compiled solution.
    """
    log_dir = work_root / "logs"
    log_dir.mkdir()
    use_xla = sandbox.isolate and sandbox.userns
    for folder in xla_root.iterdir():           # whatever is there: never listable from a kernel
        if folder.is_dir() and not folder.name.endswith(".tmp") and folder.stat().st_mode & 0o444:
            os.chmod(folder, 0o100)
    keys = {aid: reference_key(src)[:16] for aid, src in sources.items()}
    ref_dirs = {aid: cache / f"{aid}-{keys[aid]}" for aid in sources}
    xla_dirs = {aid: xla_root / f"{aid}-{keys[aid]}" for aid in sources}
    need_ref = [aid for aid, src in sources.items() if load_references(ref_dirs[aid], src) is None
                or (use_xla and not (xla_dirs[aid] / ".complete").exists())]
    blockers = {aid: {"reference"} if aid in need_ref else set() for aid in sources}
    seq = 0
    ref_tasks, grade_tasks = [], {aid: [] for aid in sources}
    for aid in need_ref:
        tmp = ""
        if use_xla:
            tmp = xla_dirs[aid].with_name(xla_dirs[aid].name + ".tmp")
            remove_protected(tmp)
            tmp.mkdir(parents=True)
            os.chmod(tmp, 0o300)             # the reference kernel writes entries by name; nobody lists
        ref_tasks.append(Task(seq, "reference", aid, xla_dir=str(tmp)))
        seq += 1
    for (student, aid), placed in sorted(intake.placed.items()):
        src = sources[aid]
        fb = [str(out / "feedback" / student / f"{aid}.html")]
        if nbfeedback_root is not None:
            fb.append(str(nbfeedback_root / student / aid / f"{src.notebook_name}.html"))
        grade_tasks[aid].append(Task(seq, "grade", aid, student, str(placed.path), placed.origin,
                                     str(ref_dirs[aid]),
                                     str(autograded_root / student / aid / src.file_name), tuple(fb)))
        seq += 1
    n_grade = sum(len(v) for v in grade_tasks.values())
    total = len(ref_tasks) + n_grade
    rows: list[dict] = []
    internal: list[str] = []
    ref_seconds: dict[str, float] = {}
    if total == 0:
        return rows, internal, ref_seconds

    cfg = Config(sources=sources, sandbox=sandbox, timeout=opts.timeout, work_root=work_root, log_dir=log_dir,
                 feedback=opts.feedback, mpl_cache=mpl_cache(cache.parent))
    ctx = mp.get_context("fork")
    tasks_q, results_q = ctx.Queue(), ctx.Queue()
    jobs = max(1, min(jobs, total))
    workers: dict[int, mp.Process] = {}

    def spawn(wid: int) -> None:
        p = ctx.Process(target=worker_main, args=(wid, cfg, tasks_q, results_q), daemon=True)
        p.start()
        workers[wid] = p

    for wid in range(jobs):
        spawn(wid)
    by_seq = {t.seq: t for t in ref_tasks}
    for aid in sources:
        for t in grade_tasks[aid]:
            by_seq[t.seq] = t
    def release(aid: str) -> None:
        for t in grade_tasks[aid]:
            t.xla_dir = str(xla_dirs[aid]) if use_xla and (xla_dirs[aid] / ".complete").exists() else ""
            tasks_q.put(t)

    for t in ref_tasks:
        tasks_q.put(t)
    if need_ref and not opts.quiet:
        sys.stderr.write(f"running the reference solution of {len(need_ref)} assignment(s): "
                         f"{', '.join(need_ref)}\n")
    for aid in sources:
        if not blockers[aid]:
            release(aid)
    progress = Progress(n_grade, opts.quiet)
    in_flight: dict[int, int] = {}
    done: set[int] = set()
    next_wid = jobs
    try:
        while len(done) < total:
            try:
                kind, wid, s, res = results_q.get(timeout=0.5)
            except queue.Empty:
                for wid, p in list(workers.items()):
                    if not p.is_alive():
                        del workers[wid]
                        lost = in_flight.pop(wid, None)
                        if lost is not None and lost not in done:
                            done.add(lost)
                            internal.append(f"worker {wid} died while grading {by_seq[lost]}")
                            _record(by_seq[lost], {"internal_error": "worker process died"}, sources, rows,
                                    progress, internal)
                        if len(done) < total:
                            spawn(next_wid); next_wid += 1
                continue
            if kind == "start":
                in_flight[wid] = s
                continue
            in_flight.pop(wid, None)
            if s in done:
                continue
            done.add(s)
            task = by_seq[s]
            if task.kind == "reference":
                if "internal_error" in res:
                    raise GraderError(f"running the reference solution of {task.assignment} failed inside "
                                      f"the grader:\n{res['internal_error']}")
                if res["problems"]:
                    raise GraderError(f"the reference solution of {task.assignment} "
                                      f"({sources[task.assignment].path}) does not run cleanly; fix it first:\n  - "
                                      + "\n  - ".join(res["problems"]))
                save_references(ref_dirs[task.assignment], sources[task.assignment], res["observations"])
                if task.xla_dir:
                    publish_xla_cache(Path(task.xla_dir), xla_dirs[task.assignment])
                ref_seconds[task.assignment] = res["seconds"]
                blockers[task.assignment].discard("reference")
                if not blockers[task.assignment]:
                    release(task.assignment)
                continue
            _record(task, res, sources, rows, progress, internal)
    finally:
        for _ in workers:
            tasks_q.put(None)
        deadline = time.monotonic() + 15
        for p in workers.values():
            p.join(timeout=max(0.1, deadline - time.monotonic()))
        for p in workers.values():
            if p.is_alive():
                p.terminate()
                p.join(5)
    progress.show(final=True)
    return rows, internal, ref_seconds


def _record(task: Task, res: dict, sources, rows, progress, internal) -> None:
    if "internal_error" in res:
        internal.append(f"{task.student} / {task.assignment}:\n{res['internal_error']}")
        source = sources[task.assignment]
        res = make_row(task, source, "error", "internal grader error (see the grader's output); regrade this student",
                       zero_cells(source, "internal grader error"))
    rows.append(res)
    progress.update(res["status"])
