"""A worker process: keeps a warm sandboxed kernel, grades one task at a time.

For a grading task it rebuilds the notebook from the source (test and locked
cells from the instructor, answers from the student), runs it in a fresh
sandboxed kernel, scores it against the reference observations and writes the
autograded notebook and the feedback page. For a reference task it runs the
solution notebook and returns its observations (and fills the XLA cache).
The main process (pool.py) owns the deadlines; a worker never decides to stop.
"""
from __future__ import annotations

import copy
import os
import shutil
import signal
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from . import workcopy
from .executor import cell_label, run_notebook
from .notebooks import SourceNotebook, UnreadableNotebook, build_graded, nbgrader_meta, read_submission
from .records import Row, Task
from .references import load_references
from .sandbox import Sandbox
from .scoring import error_text, make_row, score_run, submission_status, zero_cells
from .xla_cache import REFERENCE_ENV, xla_prelude

__all__ = ["Config", "Worker", "worker_main"]


@dataclass
class Config:
    sources: dict
    sandbox: Sandbox
    timeout: float
    work_root: Path
    log_dir: Path
    feedback: bool
    mpl_cache: Path | None


class Worker:
    def __init__(self, wid: int, cfg: Config):
        self.wid = wid
        self.cfg = cfg
        self.n = 0
        self.refs: dict[str, dict] = {}
        self.warm = None
        self._writer = None

    @property
    def writer(self):
        if self._writer is None:
            from .feedback import FeedbackWriter
            self._writer = FeedbackWriter()
        return self._writer

    def _kernel(self, workdir: Path | None = None, label: str = "k0", **kw):
        from .kernel import Kernel
        if workdir is None:
            self.n += 1
            workdir = self.cfg.work_root / f"w{self.wid}-{self.n}"
            workdir.mkdir(parents=True)
            if self.cfg.mpl_cache is not None:
                shutil.copytree(self.cfg.mpl_cache, workdir / ".matplotlib")
        return Kernel(workdir, self.cfg.sandbox, label=label, log_dir=self.cfg.log_dir, **kw).start()

    def prestart(self) -> None:
        try:
            self.warm = self._kernel()
        except Exception:  # noqa: BLE001 - a failed prestart just means a cold start later
            self.warm = None

    def take_kernel(self):
        kernel, self.warm = self.warm, None
        if kernel is None:
            kernel = self._kernel()
        self.prestart()
        return kernel

    def close(self) -> None:
        if self.warm is not None:
            self.warm.kill()
            workcopy.remove(self.warm.workdir)   # unmounts its quota tmpfs
            self.warm = None

    def _references(self, task: Task) -> dict:
        if task.assignment not in self.refs:
            refs = load_references(Path(task.ref_dir), self.cfg.sources[task.assignment])
            if refs is None:
                raise RuntimeError(f"reference observations for {task.assignment} are missing in {task.ref_dir}")
            self.refs[task.assignment] = refs
        return self.refs[task.assignment]

    def run(self, task: Task) -> Row | dict:
        t0 = time.monotonic()
        source: SourceNotebook = self.cfg.sources[task.assignment]
        if task.kind == "reference":
            return self.reference(task, source)
        refs = self._references(task)
        try:
            student_nb = read_submission(Path(task.path))
        except UnreadableNotebook as err:
            row = make_row(task, source, "unreadable", f"{task.origin}: {err}",
                           zero_cells(source, "the notebook could not be read"))
            self.write_outputs(task, source, None, row)
            row["seconds"] = time.monotonic() - t0
            return row
        graded, merge = build_graded(source, student_nb)
        tests = {}
        for i, cell in enumerate(graded.cells):
            meta = nbgrader_meta(cell)
            if meta.get("grade") is True and not meta.get("solution") and meta.get("grade_id"):
                tests[i] = meta["grade_id"]
        kernel = self.take_kernel()
        workdir = kernel.workdir
        try:
            run = run_notebook(graded, tests, kernel,
                               lambda n: self._kernel(workdir, label=f"r{n}"), self.cfg.timeout,
                               prelude=xla_prelude(task.xla_dir))
        finally:
            workcopy.remove(workdir)
        cells = score_run(source, graded, run, refs, str(workdir))
        status, reason = submission_status(run, merge, cells, str(workdir))
        row = make_row(task, source, status, reason, cells)
        self.write_outputs(task, source, graded, row)
        row["seconds"] = time.monotonic() - t0
        row["exec_seconds"] = run.seconds
        return row

    def write_outputs(self, task: Task, source: SourceNotebook, graded, row: dict) -> None:
        import nbformat
        from .inert import make_inert
        if graded is not None:       # formgrader renders it in the instructor's browser: nothing may run there
            graded = make_inert(graded, source)
        if task.autograded_path and graded is not None:
            path = Path(task.autograded_path)
            path.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(graded, str(path))
        if self.cfg.feedback and task.feedback_paths:
            page = self.writer.html(graded, f"{task.assignment}", row, row["cells"])
            for p in task.feedback_paths:
                p = Path(p)
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_text(page, encoding="utf-8")

    def reference(self, task: Task, source: SourceNotebook) -> dict:
        """Run the solution notebook: its observations, and (if wanted) the XLA cache for the students."""
        nb = copy.deepcopy(source.nb)
        tests = {t.index: t.grade_id for t in source.test_cells}
        kw = {}
        if task.xla_dir:                     # the only kernel that may write the assignment's XLA cache
            kw = {"writable": (task.xla_dir,),
                  "extra_env": {"JAX_COMPILATION_CACHE_DIR": task.xla_dir, **REFERENCE_ENV}}
        kernel = self._kernel(**kw) if kw else self.take_kernel()
        workdir = kernel.workdir
        try:
            run = run_notebook(nb, tests, kernel, lambda n: self._kernel(workdir, label=f"r{n}", **kw),
                               self.cfg.timeout)
        finally:
            workcopy.remove(workdir)
        problems = []
        if run.start_error:
            problems.append("the kernel did not start: " + run.start_error)
        for i, outcome in sorted(run.outcomes.items()):
            if outcome.status != "ok":
                problems.append(f"{cell_label(nb, i)}: {outcome.status}: {error_text(outcome.ename, outcome.evalue)}")
        for t in source.test_cells:
            if t.grade_id not in run.observations:
                problems.append(f"test cell '{t.grade_id}' recorded nothing (its hidden part must end with "
                                f"record(\"{t.grade_id}\", ...))")
        return {"kind": "reference", "assignment": task.assignment, "problems": problems,
                "observations": run.observations, "seconds": run.seconds}


def worker_main(wid: int, cfg: Config, tasks, results) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)          # the main process decides when to stop
    worker = Worker(wid, cfg)

    def stop(*_):
        from .kernel import kill_all
        worker.close()
        kill_all()
        os._exit(1)
    signal.signal(signal.SIGTERM, stop)
    worker.prestart()
    if cfg.feedback:
        try:                                               # load nbconvert's templates while the kernel boots
            worker.writer.html(None, "", {"student": "", "score": 0, "max_score": 0, "status": "ok",
                                          "reason": ""}, [])
        except Exception:  # noqa: BLE001 - a real export will report the problem
            pass
    try:
        while True:
            task = tasks.get()
            if task is None:
                break
            results.put(("start", wid, task.seq, None))
            try:
                res = worker.run(task)
            except Exception:  # noqa: BLE001 - a grader bug must not take the batch down
                res = {"internal_error": traceback.format_exc()}
            results.put(("done", wid, task.seq, res))
    finally:
        worker.close()
