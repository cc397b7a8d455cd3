"""A worker process: keeps a warm sandboxed kernel (`KernelSupply`, kernel_supply.py), grades one task at a time.

Where the sandbox allows, its kernels are forked from a zygote in the worker's own slot, about 1.4 s of CPU
less per notebook (kernel_supply.py). The run that fills the students' XLA cache (the release as students get
it, never the solution) writes it into its own working copy, and the worker copies the entries out before the
copy is emptied, so references run in the slot too.

For a grading task it rebuilds the notebook from the source (test and locked
cells from the instructor, answers from the student), runs it in a fresh
sandboxed kernel, scores it against the reference observations and writes the
autograded notebook and the feedback page. For a reference task it runs the
solution notebook and returns its observations, then fills the XLA cache from the release.

Threat model: the submitted file and everything the kernel writes are hostile.
Any failure to read or merge the file, of any kind (deep nesting, huge
numbers, wrong types anywhere in the nbformat structure), becomes an
`unreadable` row; the kernel's working copy is removed without following
anything planted in it (workcopy.remove). The main process (pool.py) owns the
deadlines: it talks to this process over one pipe, learns the pid of every
kernel started here (so it can kill them if this process hangs), and kills
this process's whole process group when it must. A worker never decides to
stop; SIGTERM (or the death of the main process) makes it kill its kernels
and exit at once.
"""

from __future__ import annotations

import copy
import ctypes
import os
import signal
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from courseinfo.nbgrader_metadata import nbgrader_cell

from ..course.notebooks import SourceNotebook, UnreadableNotebook, build_graded, read_submission, shared_cache_run
from ..judge.formulas import formula_prelude
from ..judge.score import error_text, prepare_scorer, score_run, scorer_stats, submission_status, task_row
from ..limits import MAX_ADDED_CELLS, NOTEBOOK_OUTPUT_CHARS
from ..messages import speaking, submission_language
from ..publish.pages import FeedbackPages
from ..publish.words import say
from ..reasons import Phrase, phrase
from ..records import (
    CellEnd,
    InternalError,
    ReferenceRun,
    ReferenceTimes,
    Row,
    Status,
    Task,
    zero_cells,
)
from ..sandbox.launch import Sandbox
from ..sandbox.xla_cache import REFERENCE_CACHE, keep_reference_cache, reference_xla_prelude, xla_prelude
from .cell_endings import cell_label
from .executor import NotebookLimits, run_notebook
from .kernel_prelude import kernel_prelude
from .kernel_supply import KernelSupply
from .pipe import KernelGone, KernelStarted, TaskDone
from .references import load_references
from .time_limits import slowest, worth_retrying

__all__ = ["WorkerConfig", "Worker", "worker_main"]


@dataclass
class WorkerConfig:
    sources: dict
    sandbox: Sandbox
    timeout: float
    work_root: Path
    log_dir: Path
    feedback: bool
    mpl_cache: Path | None
    max_added_cells: int = MAX_ADDED_CELLS
    max_output_chars: int = NOTEBOOK_OUTPUT_CHARS
    run_secret: bytes | None = None  # this grading run's secret (references.new_run_secret): seeds hidden inputs
    zygote: bool = False  # fork kernels from a zygote per worker (sandbox.fork_why() is empty)


class Worker:
    def __init__(self, wid: int, cfg: WorkerConfig):
        self.wid = wid
        self.cfg = cfg
        self.kernels = KernelSupply(wid, cfg)  # its warm kernel, or its slot's zygote that forks them
        self.refs: dict[str, dict] = {}
        self.pages = FeedbackPages()  # the feedback pages and executed notebooks this worker writes (publish/)
        self.cpu0 = 0.0  # this process's CPU when the current task began (timings)

    def _references(self, task: Task) -> dict:
        if task.assignment not in self.refs:
            refs = load_references(Path(task.ref_dir), self.cfg.sources[task.assignment], self.cfg.run_secret)
            if refs is None:
                raise RuntimeError(f"reference observations for {task.assignment} are missing in {task.ref_dir}")
            self.refs[task.assignment] = refs
        return self.refs[task.assignment]

    def run(self, task: Task) -> Row | ReferenceRun:
        t0 = time.monotonic()
        self.cpu0 = time.process_time()
        source: SourceNotebook = self.cfg.sources[task.assignment]
        if task.kind == "reference":
            return self.reference(task, source)
        refs = self._references(task)
        try:
            student_nb = read_submission(Path(task.path))
            lang = submission_language(student_nb)
        except Exception as err:  # noqa: BLE001 - whatever a hostile file does to the parser: unreadable
            return self.unreadable(task, source, err, t0)
        with speaking(lang):  # the feedback page and the graded notebook in the student's language
            if lang in source.edition_problems:
                row = task_row(
                    task,
                    source,
                    Status.ERROR,
                    phrase(
                        "edition_mismatch", lang=lang, assignment=task.assignment, problem=source.edition_problems[lang]
                    ),
                    zero_cells(source, phrase("cell_not_run")),
                    lang,
                )
                self.write_outputs(task, source, None, row)
                return row.timed(seconds=time.monotonic() - t0)
            row = self.grade(task, source, refs, student_nb, lang, t0)
        return row

    def unreadable(self, task: Task, source: SourceNotebook, err: BaseException, t0: float) -> Row:
        why = str(err) if isinstance(err, UnreadableNotebook) else unreadable_reason(err)
        row = task_row(
            task, source, Status.UNREADABLE, f"{task.origin}: {why}", zero_cells(source, phrase("notebook_unreadable"))
        )
        self.write_outputs(task, source, None, row)
        return row.timed(seconds=time.monotonic() - t0)

    def grade(self, task: Task, source: SourceNotebook, refs: dict, student_nb, lang: str, t0: float) -> Row:
        """Grade one readable submission; its language (validated) picks the prose and the words, not the score."""
        try:
            graded, merge = build_graded(source, student_nb, max_added_cells=self.cfg.max_added_cells, language=lang)
        except Exception as err:  # noqa: BLE001 - whatever a hostile file does to the merge: unreadable
            return self.unreadable(task, source, err, t0)
        tests = _test_cells(graded)
        from . import kernel as kernel_mod

        kernel_cpu, compiled = kernel_mod.CPU_SECONDS[0], scorer_stats()
        # the scorer starts and compiles this assignment's reference programs while the kernel runs
        # (once per worker and assignment: later tasks find them compiled and the thread ends at once)
        prep = prepare_scorer(refs)
        try:
            kernel = self.kernels.take_kernel(task.prestart)
            workdir = kernel.workdir
            t_run = time.monotonic()
            try:
                limits = NotebookLimits(
                    task.cell_timeout or self.cfg.timeout,
                    budget=task.budget or None,
                    budget_label=task.budget_label or budget_label(task),
                    max_output_chars=self.cfg.max_output_chars,
                )
                run = run_notebook(
                    graded,
                    tests,
                    kernel,
                    lambda n: self.kernels.kernel(workdir, label=f"r{n}"),
                    limits,
                    prelude=kernel_prelude(lang) + xla_prelude(task.xla_dir) + formula_prelude(source, refs),
                )
            finally:
                self.kernels.release(workdir, task.prestart)
        finally:
            t_wait = time.monotonic()
            if prep is not None:
                prep.join()  # before anything else uses the scorer (one thread at a time)
        if merge.dropped_cells:
            run.events.append(
                (Status.TOO_MANY_CELLS, phrase("cells_dropped", n=merge.dropped_cells, limit=self.cfg.max_added_cells))
            )
        t_score = time.monotonic()
        cells = score_run(source, graded, run, refs, str(workdir))
        stages = dict(
            run.stages,
            prepare=t_run - t0,
            run=run.seconds,
            scorer_wait=t_score - t_wait,
            score=time.monotonic() - t_score,
        )
        stages.update(_scorer_stages(compiled))
        stages["kernel_cpu"] = kernel_mod.CPU_SECONDS[0] - kernel_cpu  # its kernels' CPU (cgroups)
        status, reason = submission_status(run, merge, cells, str(workdir))
        row = task_row(task, source, status, reason, cells, lang, observe_log=tuple(run.observe_log))
        t_write = time.monotonic()
        self.write_outputs(task, source, graded, row, source.editions.get(lang))
        stages["write"] = time.monotonic() - t_write
        stages["worker_cpu"] = time.process_time() - self.cpu0
        return row.timed(
            seconds=time.monotonic() - t0,
            exec_seconds=run.seconds,
            stages=tuple((k, round(v, 3)) for k, v in stages.items()),
        )

    def write_outputs(self, task: Task, source: SourceNotebook, graded, row: Row, edition=None) -> None:
        """`edition`: the source edition the graded notebook's prose came from (its markdown is the instructor's)."""
        pages = task.feedback_paths if self.cfg.feedback else ()
        self.pages.hand_in(row, graded, edition if edition is not None else source, task.autograded_path, pages)

    def reference(self, task: Task, source: SourceNotebook) -> ReferenceRun:
        """Run the solution notebook: its observations and what its cells took (the students' time limits
        follow them, time_limits.py); then, if it ran cleanly and it is wanted, fill the students' XLA cache."""
        nb = copy.deepcopy(source.nb)
        timeout = task.cell_timeout or self.cfg.timeout
        tests = {t.index: t.grade_id for t in source.test_cells}
        kernel = self.kernels.take_kernel(task.prestart)
        workdir = kernel.workdir
        try:
            run = run_notebook(
                nb,
                tests,
                kernel,
                lambda n: self.kernels.kernel(workdir, label=f"r{n}"),
                NotebookLimits(timeout),
                prelude=kernel_prelude("en"),
            )
        finally:
            self.kernels.release(workdir, task.prestart)
        problems = self.reference_problems(source, nb, run)
        if task.xla_dir and not problems:
            self.fill_xla_cache(task, source, timeout)
        statuses = [o.status for o in run.outcomes.values()]
        return ReferenceRun(
            task.assignment,
            problems,
            run.observations,
            run.seconds,
            times=ReferenceTimes(slowest(run.outcomes), run.seconds),
            retry=bool(problems) and worth_retrying(statuses, run.start_error),
        )

    @staticmethod
    def reference_problems(source: SourceNotebook, nb, run) -> list[str]:
        """What makes a reference run unusable, in the instructor's English (empty: none)."""
        problems = []
        if run.start_error:
            problems.append("the kernel did not start: " + run.start_error)
        for i, outcome in sorted(run.outcomes.items()):
            if outcome.status != CellEnd.OK:
                problems.append(  # the instructor's (English)
                    f"{say(cell_label(nb, i), 'en')}: {outcome.status}: "
                    f"{say(error_text(outcome.ename, outcome.evalue), 'en')}"
                )
        for t in source.test_cells:
            if t.grade_id not in run.observations:
                problems.append(
                    f"test cell '{t.grade_id}' recorded nothing (its hidden part must end with "
                    f'record("{t.grade_id}", ...))'
                )
        return problems

    def fill_xla_cache(self, task: Task, source: SourceNotebook, timeout: float) -> None:
        """Run the release as students get it (`shared_cache_run`) in a kernel that writes every program it
        compiles into its own working copy, and copy them into the run's staging folder: the set-up and
        library programs every student's kernel compiles too, and none compiled from an answer of the
        solution, so a kernel that counts its cache hits learns nothing about the solution."""
        kernel = self.kernels.take_kernel(task.prestart)
        workdir = kernel.workdir
        prelude = kernel_prelude("en") + reference_xla_prelude(str(workdir / REFERENCE_CACHE))
        try:
            run_notebook(
                shared_cache_run(source),
                {},
                kernel,
                lambda n: self.kernels.kernel(workdir, label=f"c{n}"),
                NotebookLimits(timeout),
                prelude=prelude,
            )
            keep_reference_cache(workdir, Path(task.xla_dir))
        finally:
            self.kernels.release(workdir, task.prestart)


def _test_cells(graded) -> dict[int, str]:
    """Cell index -> grade id of the graded notebook's test cells."""
    tests = {}
    for i, cell in enumerate(graded.cells):
        meta = nbgrader_cell(cell)
        if meta.is_test and meta.grade_id:
            tests[i] = meta.grade_id
    return tests


def _scorer_stages(before: dict) -> dict[str, float]:
    """The scorer's work for this notebook (prepare included): what `scorer_stats` grew by since `before`."""
    stages = {}
    for k, v in scorer_stats().items():
        if v - before.get(k, 0) > 0:
            stages[k if k.startswith("scorer") else "compile_" + k] = v - before.get(k, 0)
    return stages


def budget_label(task: Task) -> Phrase | None:
    """What the task's time budget is, as data (None: the notebook's own budget)."""
    if task.budget_of_submission <= 0:
        return None
    return phrase("budget_left", total=task.budget_of_submission, left=max(0.0, task.budget))


def unreadable_reason(err: BaseException) -> str:
    """Why a file that broke the parser or the merge is unreadable (no grader internals)."""
    if isinstance(err, RecursionError):
        return "not a readable notebook (nested too deeply)"
    if isinstance(err, MemoryError):
        return "not a readable notebook (too large to read)"
    return f"not a readable notebook (its structure is not a notebook's: {type(err).__name__})"


PR_SET_PDEATHSIG = 1


def _die_with_parent(sig: int = signal.SIGTERM) -> None:
    """Ask Linux to send `sig` to this process when the main process dies (even by SIGKILL)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _reset_peak_rss() -> None:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")  # resets VmHWM (Linux >= 4.0)
    except OSError:
        pass


def _peak_rss_kb() -> int:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def worker_main(wid: int, conn, cfg: WorkerConfig) -> None:
    """Serve tasks from the pipe `conn` until it sends None (or closes)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the main process decides when to stop
    os.setpgid(0, 0)  # so the main process can kill us with our helpers
    _die_with_parent()
    from . import kernel as kernel_mod

    worker = Worker(wid, cfg)

    def stop(*_):
        worker.kernels.close()
        kernel_mod.kill_all()
        os._exit(1)

    signal.signal(signal.SIGTERM, stop)
    if os.getppid() == 1:  # the main process died before we got here
        os._exit(1)

    def tell(msg) -> None:
        try:
            conn.send(msg)
        except OSError:
            stop()

    kernel_mod.on_kernel_start = lambda pid: tell(KernelStarted(pid))
    kernel_mod.on_kernel_gone = lambda pid: tell(KernelGone(pid))
    worker.kernels.prestart()
    if cfg.feedback:
        try:  # load nbconvert's templates while the kernel boots
            worker.pages.writer.html(None, "", task_row(Task(0, "grade", ""), None, Status.OK, ""), ())
        except Exception:  # noqa: BLE001 - a real export will report the problem
            pass
    try:
        while True:
            try:
                task = conn.recv()
            except (EOFError, OSError):
                break
            if task is None:
                break
            _reset_peak_rss()
            try:
                res = worker.run(task)
            except Exception:  # noqa: BLE001 - a grader bug must not take the batch down
                res = InternalError(traceback.format_exc())
            if isinstance(res, Row):
                res = res.timed(grader_peak_kb=_peak_rss_kb())
            tell(TaskDone(task.seq, res))
    finally:
        worker.kernels.close()
