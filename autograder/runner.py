"""Grade a class: references, placement, parallel workers, scores, outputs.

The main process finds the assignments and the submissions, makes sure the
reference observations exist (running each solution notebook once, cached),
hands submissions to N long-lived worker processes (one per core), and at the
end writes grades.csv, results.json, the gradebook and the summary. Each
worker keeps a warm, sandboxed kernel ready for its next submission, builds the
graded notebook, runs it, scores it against the references and writes the
autograded notebook and the feedback HTML.
"""
from __future__ import annotations

import csv
import hashlib
import importlib.metadata
import importlib.util
import io
import json
import multiprocessing as mp
import os
import queue
import shutil
import signal
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from .compare import compare, load_observations
from .executor import RunResult, cell_label, run_notebook
from .feedback import scrub_text
from .notebooks import SourceNotebook, UnreadableNotebook, build_graded, read_submission
from .placement import Intake, place_course, place_submissions
from .sandbox import Sandbox, probe_bwrap

__all__ = ["Options", "GraderError", "grade", "repo_root", "CSV_COLUMNS"]

CSV_COLUMNS = ["student", "assignment", "score", "max_score", "status", "reason"]
CACHE_FORMAT = "autograder-references-1"


class GraderError(Exception):
    """A problem with the grader's inputs or set-up (not with a submission): exit non-zero."""


def repo_root() -> Path:
    return Path(__file__).resolve().parent.parent


@dataclass
class Options:
    course: Path
    submissions: Path | None = None
    out: Path | None = None
    students: list[str] = field(default_factory=list)
    assignments: list[str] = field(default_factory=list)
    jobs: int = 0
    timeout: float = 30.0
    cache: Path | None = None
    isolate: bool = True
    memory_mb: int = 4096
    cpu_seconds: int = 0
    gradebook: bool = True
    feedback: bool = True
    quiet: bool = False


# ---------------------------------------------------------------- discovery
def discover_sources(course: Path, only: list[str]) -> dict[str, SourceNotebook]:
    """Source notebooks: <course>/source/<id>/<id>.ipynb, else the repository's solutions/<id>.ipynb."""
    found: dict[str, Path] = {}
    source_dir = course / "source"
    if source_dir.is_dir():
        for folder in sorted(p for p in source_dir.iterdir() if p.is_dir() and not p.name.startswith(".")):
            nbs = sorted(p for p in folder.glob("*.ipynb"))
            if len(nbs) > 1:
                raise GraderError(f"{folder}: more than one notebook; the autograder expects one per assignment")
            if nbs:
                found[folder.name] = nbs[0]
    if not found:
        for nb in sorted((repo_root() / "solutions").glob("*.ipynb")):
            found[nb.stem] = nb
    if only:
        unknown = sorted(set(only) - set(found))
        if unknown:
            raise GraderError(f"unknown assignment(s): {', '.join(unknown)} (known: {', '.join(found) or 'none'})")
        found = {k: v for k, v in found.items() if k in only}
    if not found:
        raise GraderError(f"no source notebooks found (looked in {source_dir} and {repo_root() / 'solutions'})")
    sources = {}
    for aid, path in found.items():
        try:
            sources[aid] = SourceNotebook.load(aid, path)
        except Exception as err:  # noqa: BLE001
            raise GraderError(f"cannot read the source notebook {path}: {err}") from err
        if not sources[aid].test_cells:
            raise GraderError(f"{path}: no graded test cells")
    return sources


def _package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def reference_key(source: SourceNotebook) -> str:
    """Hash of the source notebook, the namedaxes sources and the versions that shape results."""
    h = hashlib.sha256(CACHE_FORMAT.encode())
    h.update(source.raw)
    pkg = _package_dir("namedaxes")
    if pkg is not None:
        for f in sorted(pkg.rglob("*.py")):
            h.update(str(f.relative_to(pkg)).encode())
            h.update(f.read_bytes())
    for dist in ("jax", "jaxlib", "numpy"):
        try:
            h.update(f"{dist}={importlib.metadata.version(dist)}".encode())
        except importlib.metadata.PackageNotFoundError:
            pass
    return h.hexdigest()


def load_references(folder: Path, source: SourceNotebook) -> dict[str, dict] | None:
    meta = folder / "meta.json"
    if not meta.is_file():
        return None
    try:
        info = json.loads(meta.read_text())
        refs = {}
        for gid in source.test_ids():
            npz = folder / f"{gid}.npz"
            js = folder / f"{gid}.json"
            refs[gid] = load_observations(npz.read_bytes() if npz.exists() else None,
                                          js.read_bytes() if js.exists() else None)
        if sorted(info.get("tests", [])) != sorted(source.test_ids()):
            return None
        return refs
    except (OSError, ValueError):
        return None


# ---------------------------------------------------------------- tasks & results
@dataclass
class Task:
    seq: int
    kind: str                      # grade | reference
    assignment: str
    student: str = ""
    path: str = ""
    origin: str = ""
    ref_dir: str = ""
    autograded_path: str = ""
    feedback_paths: tuple = ()
    xla_dir: str = ""              # the assignment's XLA compilation cache (reference: the folder to fill)


def _xla_prelude(folder: str) -> str:
    """Trusted code run before the first cell: reuse the reference run's compiled programs."""
    if not folder:
        return ""
    return (f"import jax as _j\n_j.config.update('jax_persistent_cache_enable_xla_caches', 'none')\n"
            f"_j.config.update('jax_compilation_cache_dir', {folder!r})\ndel _j\n")


@dataclass
class Config:
    sources: dict
    sandbox: Sandbox
    timeout: float
    work_root: Path
    log_dir: Path
    feedback: bool
    mpl_cache: Path | None


def _one_line(text: str, n: int = 400) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _error_text(ename: str, evalue: str) -> str:
    if ename == "NotImplementedError" and not evalue.strip():
        return "NotImplementedError: not answered yet (the answer cell still raises NotImplementedError)"
    return _one_line(f"{ename}: {evalue}" if evalue.strip() else ename)


def score_run(source: SourceNotebook, nb, run: RunResult, refs: dict[str, dict], workdir: str) -> list[dict]:
    """Per test cell: grade_id, points, max_points, passed, reason (trusted: observations only)."""
    index = {}
    for i, cell in enumerate(nb.cells):
        meta = cell.get("metadata", {}).get("nbgrader")
        if isinstance(meta, dict) and meta.get("grade_id"):
            index[meta["grade_id"]] = i
    cells = []
    for test in source.test_cells:
        gid = test.grade_id
        i = index.get(gid)
        outcome = run.outcomes.get(i) if i is not None else None
        error = _error_text(outcome.ename, outcome.evalue) if outcome and outcome.status != "ok" else ""
        passed, reason = False, ""
        got = run.observations.get(gid)
        if got is not None:
            try:
                verdict = compare(refs[gid], load_observations(*got))
                passed = verdict.passed
                reason = "" if passed else (error if outcome and outcome.status == "error" else verdict.reason())
            except Exception:  # noqa: BLE001 - anything odd in what was recorded: no points
                reason = "the recorded results could not be read"
        elif outcome is None:
            reason = "this test cell was not run"
        elif outcome.status == "ok":
            reason = "the hidden test recorded no results (was `record` or the results folder tampered with?)"
        else:
            reason = error
        cells.append({"grade_id": gid, "points": float(test.points) if passed else 0.0,
                      "max_points": float(test.points), "passed": bool(passed),
                      "reason": scrub_text(reason, workdir)})
    return cells


def _row(task: Task, source: SourceNotebook, status: str, reason: str, cells: list[dict]) -> dict:
    return {"student": task.student, "assignment": task.assignment, "origin": task.origin,
            "score": round(sum(c["points"] for c in cells), 6), "max_score": source.max_score,
            "status": status, "reason": reason, "cells": cells}


# ---------------------------------------------------------------- the worker process
class _Worker:
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
            shutil.rmtree(self.warm.workdir, ignore_errors=True)
            self.warm = None

    def _references(self, task: Task) -> dict:
        if task.assignment not in self.refs:
            refs = load_references(Path(task.ref_dir), self.cfg.sources[task.assignment])
            if refs is None:
                raise RuntimeError(f"reference observations for {task.assignment} are missing in {task.ref_dir}")
            self.refs[task.assignment] = refs
        return self.refs[task.assignment]

    def run(self, task: Task) -> dict:
        t0 = time.monotonic()
        source: SourceNotebook = self.cfg.sources[task.assignment]
        if task.kind == "reference":
            return self.reference(task, source)
        refs = self._references(task)
        try:
            student_nb = read_submission(Path(task.path))
        except UnreadableNotebook as err:
            cells = [{"grade_id": t.grade_id, "points": 0.0, "max_points": float(t.points), "passed": False,
                      "reason": "the notebook could not be read"} for t in source.test_cells]
            row = _row(task, source, "unreadable", f"{task.origin}: {err}", cells)
            self.write_outputs(task, source, None, row)
            row["seconds"] = time.monotonic() - t0
            return row
        graded, merge = build_graded(source, student_nb)
        tests = {}
        for i, cell in enumerate(graded.cells):
            meta = cell.get("metadata", {}).get("nbgrader")
            if isinstance(meta, dict) and meta.get("grade") and not meta.get("solution"):
                tests[i] = meta["grade_id"]
        kernel = self.take_kernel()
        workdir = kernel.workdir
        try:
            run = run_notebook(graded, tests, kernel,
                               lambda n: self._kernel(workdir, label=f"r{n}"), self.cfg.timeout,
                               prelude=_xla_prelude(task.xla_dir))
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        cells = score_run(source, graded, run, refs, str(workdir))
        status, reason = self._status(run, merge, cells, str(workdir))
        row = _row(task, source, status, reason, cells)
        self.write_outputs(task, source, graded, row)
        row["seconds"] = time.monotonic() - t0
        row["exec_seconds"] = run.seconds
        return row

    @staticmethod
    def _status(run: RunResult, merge, cells: list[dict], workdir: str) -> tuple[str, str]:
        parts = []
        status = "ok"
        if run.start_error and all(o.status == "not_run" for o in run.outcomes.values()):
            return "error", scrub_text(_one_line("the kernel did not start: " + run.start_error), workdir)
        if run.events:
            status = run.events[0][0]
            seen = []
            for _, text in run.events:
                if text not in seen:
                    seen.append(text)
            parts += seen
        if merge.answers_missing:
            parts.append("no answer cell found for " + ", ".join(merge.answers_missing) + " (graded as unanswered)")
        failed = [c["grade_id"] for c in cells if not c["passed"]]
        if failed:
            parts.append("failed: " + ", ".join(failed))
        return status, scrub_text("; ".join(parts), workdir)

    def write_outputs(self, task: Task, source: SourceNotebook, graded, row: dict) -> None:
        import nbformat
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
        import copy
        nb = copy.deepcopy(source.nb)
        tests = {t.index: t.grade_id for t in source.test_cells}
        kw = {}
        if task.xla_dir:                     # the only kernel that may write the assignment's XLA cache
            kw = {"writable": (task.xla_dir,),
                  "extra_env": {"JAX_COMPILATION_CACHE_DIR": task.xla_dir,
                                # keep the folder's path out of the cache keys (it is renamed after the run)
                                "JAX_PERSISTENT_CACHE_ENABLE_XLA_CACHES": "none",
                                "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
                                "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0"}}
        kernel = self._kernel(**kw) if kw else self.take_kernel()
        workdir = kernel.workdir
        try:
            run = run_notebook(nb, tests, kernel, lambda n: self._kernel(workdir, label=f"r{n}", **kw),
                               self.cfg.timeout)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        problems = []
        if run.start_error:
            problems.append("the kernel did not start: " + run.start_error)
        for i, outcome in sorted(run.outcomes.items()):
            if outcome.status != "ok":
                problems.append(f"{cell_label(nb, i)}: {outcome.status}: {_error_text(outcome.ename, outcome.evalue)}")
        for t in source.test_cells:
            if t.grade_id not in run.observations:
                problems.append(f"test cell '{t.grade_id}' recorded nothing (its hidden part must end with "
                                f"record(\"{t.grade_id}\", ...))")
        return {"kind": "reference", "assignment": task.assignment, "problems": problems,
                "observations": run.observations, "seconds": run.seconds}


def _worker_main(wid: int, cfg: Config, tasks, results) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)          # the main process decides when to stop
    worker = _Worker(wid, cfg)

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


# ---------------------------------------------------------------- progress
class Progress:
    def __init__(self, total: int, quiet: bool = False):
        self.total, self.done, self.quiet = total, 0, quiet
        self.counts: dict[str, int] = {}
        self.t0 = time.monotonic()
        self.tty = sys.stderr.isatty()
        self._last = 0.0

    def update(self, status: str) -> None:
        self.done += 1
        self.counts[status] = self.counts.get(status, 0) + 1
        self.show()

    def show(self, final: bool = False) -> None:
        if self.quiet or self.total == 0 or (final and self.done == self.total):
            return
        now = time.monotonic()
        if not (self.tty or final or now - self._last > 5 or self.done == self.total):
            return
        self._last = now
        width = 30
        filled = int(width * self.done / self.total)
        bar = "#" * filled + "." * (width - filled)
        counts = " ".join(f"{k} {v}" for k, v in sorted(self.counts.items()))
        elapsed = now - self.t0
        line = f"grading [{bar}] {self.done}/{self.total}  {counts}  {elapsed:.0f} s"
        if self.tty:
            sys.stderr.write("\r" + line + ("\n" if self.done == self.total or final else ""))
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()


# ---------------------------------------------------------------- main
def _warn(msg: str) -> None:
    bar = "!" * 78
    sys.stderr.write(f"\n{bar}\n{msg}\n{bar}\n\n")
    sys.stderr.flush()


def _build_sandbox(opts: Options, course: Path, out: Path, cache: Path, work_root: Path,
                   xla_root: Path) -> tuple[Sandbox, str]:
    root = repo_root()
    needed = [sys.prefix, sys.base_prefix]                  # the Python the kernel runs, and namedaxes
    pkg = _package_dir("namedaxes")
    if pkg is not None:
        needed.append(str(pkg))
    exposed = needed + [str(xla_root)]                      # read-only (the XLA cache is also unlistable)
    keep = {os.path.realpath(p) for p in needed}
    hidden = [str(course), str(out), str(cache), str(work_root), tempfile.gettempdir()]
    if opts.submissions is not None:
        hidden.append(str(opts.submissions if opts.submissions.is_dir() else opts.submissions.parent))
    for child in root.iterdir():
        real = os.path.realpath(child)
        if child.is_dir() and not any(k == real or k.startswith(real + os.sep) for k in keep) \
                and not child.name.endswith(".egg-info"):
            hidden.append(str(child))
    timeout = opts.timeout
    cpu = opts.cpu_seconds or int(max(600, 30 * timeout))
    sandbox = Sandbox(isolate=opts.isolate, python=sys.executable, hidden=hidden, exposed=exposed,
                      cpu_seconds=cpu, memory_bytes=opts.memory_mb * 2**20)
    why = ""
    if opts.isolate:
        why = probe_bwrap(sandbox) or ""
        if why:                                  # no user namespaces? then bwrap as we are, still isolated
            sandbox.userns = False
            if probe_bwrap(sandbox) is None:
                _warn(f"warning: the sandbox cannot switch to an unprivileged user ({why}); kernels run "
                      f"isolated but with this user's privileges, and without the shared XLA cache.")
                why = ""
            else:
                sandbox.isolate = False
    return sandbox, why


def _mpl_cache(folder: Path) -> Path | None:
    """A prebuilt matplotlib font cache, copied into each kernel (saves a rebuild per kernel)."""
    if importlib.util.find_spec("matplotlib") is None:
        return None
    try:
        version = importlib.metadata.version("matplotlib")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    target = folder / f"mpl-cache-{version}"
    if (target / ".complete").exists():
        return target
    tmp = folder / f"mpl-cache-{version}.tmp{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    env = dict(os.environ, MPLCONFIGDIR=str(tmp))
    try:
        import subprocess
        subprocess.run([sys.executable, "-c", "import matplotlib.font_manager"], env=env, timeout=120,
                       capture_output=True, check=True)
        (tmp / ".complete").write_text("")
        shutil.rmtree(target, ignore_errors=True)
        os.replace(tmp, target)
    except Exception:  # noqa: BLE001 - kernels then build their own font cache
        shutil.rmtree(tmp, ignore_errors=True)
        return None
    return target


def _missing_reason(intake: Intake, student: str, assignment: str, file_name: str) -> str:
    if student in intake.empty:
        return "empty submission: no files in the student's folder"
    near = [u for u in intake.unplaced if u.student == student and u.assignment == assignment]
    if near:
        return f"no {file_name} submitted; found {near[0].origin} ({near[0].reason}), not graded"
    return f"no {file_name} submitted"


def grade(opts: Options) -> int:
    t_start = time.monotonic()
    bindir = os.path.dirname(sys.executable)          # nbgrader's gradebook runs `alembic` from PATH
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
    course = Path(opts.course).resolve()
    if opts.submissions is None and not (course / "submitted").is_dir():
        raise GraderError(f"no submissions: {course / 'submitted'} does not exist "
                          f"(put submissions there, or pass --submissions DIR)")
    out = Path(opts.out).resolve() if opts.out else course / "grades"
    cache = Path(opts.cache).resolve() if opts.cache else repo_root() / "build" / "autograder" / "references"
    sources = discover_sources(course, opts.assignments)
    notebooks = {s.file_name: aid for aid, s in sources.items()}
    if len(notebooks) != len(sources):
        raise GraderError("two assignments use the same notebook file name")

    if opts.submissions is not None:
        sub = Path(opts.submissions).resolve()
        if not sub.exists():
            raise GraderError(f"submissions not found: {sub}")
        intake = place_submissions(sub, notebooks, opts.students or None)
        db_url = f"sqlite:///{out / 'gradebook.db'}"
        autograded_root = out / "autograded"
        nbgrader_feedback_root = None
    else:
        intake = place_course(course, notebooks, opts.students or None)
        db_url = f"sqlite:///{course / 'gradebook.db'}"
        autograded_root = course / "autograded"
        nbgrader_feedback_root = course / "feedback"
    missing_students = sorted(set(opts.students) - intake.students)
    if missing_students:
        intake.close()
        raise GraderError(f"no submission folder for student(s): {', '.join(missing_students)}")

    out.mkdir(parents=True, exist_ok=True)
    xla_root = cache.parent / "xla-cache"
    xla_root.mkdir(parents=True, exist_ok=True)
    work_root = Path(tempfile.mkdtemp(prefix="agr-"))
    jobs = opts.jobs or os.cpu_count() or 1
    try:
        sandbox, why = _build_sandbox(opts, course, out, cache, work_root, xla_root)
        if why:
            _warn(f"WARNING: student code will run WITHOUT isolation: {why}.\n"
                  f"Kernels still get CPU-time, memory and file-size limits, but can read and write what "
                  f"this user can and reach the network. Install bubblewrap (Debian: apt-get install bubblewrap) "
                  f"and make sure it may create namespaces here.")
        rows, internal, ref_seconds = _run_all(opts, sources, intake, out, cache, xla_root, work_root, sandbox,
                                               jobs, autograded_root, nbgrader_feedback_root)
        # missing and unplaceable rows (no kernel needed)
        writer = None
        for student in sorted(intake.students):
            for aid, source in sources.items():
                if (student, aid) not in intake.placed:
                    cells = [{"grade_id": t.grade_id, "points": 0.0, "max_points": float(t.points),
                              "passed": False, "reason": "no notebook submitted"} for t in source.test_cells]
                    row = {"student": student, "assignment": aid, "origin": "", "score": 0.0,
                           "max_score": source.max_score, "status": "missing",
                           "reason": _missing_reason(intake, student, aid, source.file_name), "cells": cells}
                    rows.append(row)
                    if opts.feedback:
                        if writer is None:
                            from .feedback import FeedbackWriter
                            writer = FeedbackWriter()
                        page = writer.html(None, aid, row, cells)
                        p = out / "feedback" / student / f"{aid}.html"
                        p.parent.mkdir(parents=True, exist_ok=True)
                        p.write_text(page, encoding="utf-8")
        for u in intake.unplaced:
            rows.append({"student": u.student, "assignment": "", "origin": u.origin, "score": 0.0,
                         "max_score": 0.0, "status": "unplaceable", "reason": f"{u.origin}: {u.reason}",
                         "cells": []})
        all_rows = _merge_previous(out, rows, opts, intake)
        _write_outputs(out, all_rows, rows)
        if opts.gradebook:
            try:
                write_db(db_url, sources, rows)
            except Exception as err:  # noqa: BLE001
                internal.append(f"writing the gradebook {db_url} failed: {err}")
        wall = time.monotonic() - t_start
        _summary(out, sources, intake, rows, wall, sandbox, jobs, opts.quiet, ref_seconds)
        if internal:
            sys.stderr.write("\nINTERNAL GRADER ERRORS (affected rows have status 'error'):\n")
            for msg in internal:
                sys.stderr.write(msg.rstrip() + "\n")
            return 4
        return 0
    finally:
        intake.close()
        shutil.rmtree(work_root, ignore_errors=True)


def write_db(db_url, sources, rows):
    from .gradebook import write_gradebook
    return write_gradebook(db_url, sources, rows)


def _run_all(opts, sources, intake, out, cache, xla_root, work_root, sandbox, jobs, autograded_root,
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
            _remove_protected(tmp)
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
                 feedback=opts.feedback, mpl_cache=_mpl_cache(cache.parent))
    ctx = mp.get_context("fork")
    tasks_q, results_q = ctx.Queue(), ctx.Queue()
    jobs = max(1, min(jobs, total))
    workers: dict[int, mp.Process] = {}

    def spawn(wid: int) -> None:
        p = ctx.Process(target=_worker_main, args=(wid, cfg, tasks_q, results_q), daemon=True)
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
                _save_references(ref_dirs[task.assignment], sources[task.assignment], res["observations"])
                if task.xla_dir:
                    _publish_xla_cache(Path(task.xla_dir), xla_dirs[task.assignment])
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
        cells = [{"grade_id": t.grade_id, "points": 0.0, "max_points": float(t.points), "passed": False,
                  "reason": "internal grader error"} for t in source.test_cells]
        res = _row(task, source, "error", "internal grader error (see the grader's output); regrade this student",
                   cells)
    rows.append(res)
    progress.update(res["status"])


def _remove_protected(folder: Path) -> None:
    """rmtree for a published XLA cache folder (which we made unreadable)."""
    if not folder.exists():
        return
    try:
        os.chmod(folder, 0o700)
    except OSError:
        pass
    shutil.rmtree(folder, ignore_errors=True)


def _publish_xla_cache(tmp: Path, final: Path) -> None:
    """Make the reference run's XLA cache searchable but not listable, read-only, and put it in place.

    Inside the sandbox the kernel's user owns these files (its user namespace maps
    it to us), so the owner bits are the ones that count: a folder with only the
    search bit lets it open an entry whose name it already knows, nothing more.
    """
    (tmp / ".complete").write_text("")
    for entry in tmp.iterdir():
        os.chmod(entry, 0o400)
    os.chmod(tmp, 0o100)
    assignment = final.name.rsplit("-", 1)[0]
    for old in final.parent.glob(f"{assignment}-*"):   # caches of older versions of this assignment
        if old.name.rsplit("-", 1)[0] == assignment and not old.name.endswith(".tmp"):
            _remove_protected(old)
    os.replace(tmp, final)


def _save_references(folder: Path, source: SourceNotebook, observations: dict) -> None:
    tmp = folder.with_name(folder.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for gid, (npz, js) in observations.items():
        if npz is not None:
            (tmp / f"{gid}.npz").write_bytes(npz)
        if js is not None:
            (tmp / f"{gid}.json").write_bytes(js)
    (tmp / "meta.json").write_text(json.dumps({"assignment": source.assignment, "source": source.path.name,
                                               "tests": source.test_ids()}, indent=1))
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(tmp, folder)


# ---------------------------------------------------------------- outputs
def _public(row: dict) -> dict:
    return {k: row[k] for k in ("student", "assignment", "score", "max_score", "status", "reason", "origin",
                                "cells") if k in row}


def _sort_key(row: dict):
    return (row["student"], row["assignment"], row["status"], row["reason"])


def _merge_previous(out: Path, rows: list[dict], opts: Options, intake: Intake) -> list[dict]:
    """For --student/--assignment runs, keep the other rows of the previous results.json."""
    new = [_public(r) for r in rows]
    if not (opts.students or opts.assignments):
        return sorted(new, key=_sort_key)
    try:
        old = json.loads((out / "results.json").read_text())["rows"]
    except (OSError, ValueError, KeyError):
        old = []
    students = set(opts.students) if opts.students else None
    assignments = set(opts.assignments) if opts.assignments else None

    def replaced(r: dict) -> bool:
        in_students = students is None or r["student"] in students
        in_assign = assignments is None or r["assignment"] in assignments or \
            (r["status"] == "unplaceable" and students is not None)
        return in_students and in_assign
    kept = [r for r in old if not replaced(r)]
    return sorted(kept + new, key=_sort_key)


def _fmt(x: float) -> str:
    return f"{x:g}"


def _write_outputs(out: Path, all_rows: list[dict], rows: list[dict]) -> None:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for r in all_rows:
        w.writerow([r["student"], r["assignment"], _fmt(r["score"]), _fmt(r["max_score"]), r["status"],
                    r["reason"]])
    _atomic_write(out / "grades.csv", buf.getvalue())
    _atomic_write(out / "results.json", json.dumps({"columns": CSV_COLUMNS, "rows": all_rows}, indent=1,
                                                   ensure_ascii=False, sort_keys=True) + "\n")
    timings = [{"student": r["student"], "assignment": r["assignment"], "seconds": round(r.get("seconds", 0), 3),
                "exec_seconds": round(r.get("exec_seconds", 0), 3)} for r in rows if "seconds" in r]
    _atomic_write(out / "timings.json", json.dumps(timings, indent=1, ensure_ascii=False) + "\n")


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _summary(out, sources, intake, rows, wall, sandbox, jobs, quiet, ref_seconds) -> None:
    if quiet:
        return
    graded = [r for r in rows if r["status"] not in ("missing", "unplaceable")]
    lines = ["", f"autograder: {len(intake.students)} student(s), {len(graded)} submission(s) graded "
                 f"in {wall:.1f} s with {jobs} worker(s)"
             + (f" ({wall / len(graded):.2f} s per submission)" if graded else "")]
    lines.append("isolation: " + ("bubblewrap sandbox (no network, read-only system, own working copy)"
                                  if sandbox.isolate else "NONE (bubblewrap unavailable) - resource limits only"))
    if ref_seconds:
        lines.append("reference runs: " + ", ".join(f"{a} {s:.1f} s" for a, s in sorted(ref_seconds.items())))
    for aid, src in sources.items():
        rs = [r for r in rows if r["assignment"] == aid]
        if not rs:
            continue
        mean = sum(r["score"] for r in rs) / len(rs)
        lines.append(f"  {aid:<28} mean {mean:5.2f} / {src.max_score:g}  over {len(rs)} student(s)")
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    lines.append("status: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    if intake.unplaced:
        lines.append(f"unplaceable files ({len(intake.unplaced)}):")
        for u in intake.unplaced[:25]:
            lines.append(f"  {u.origin}: {u.reason}")
        if len(intake.unplaced) > 25:
            lines.append(f"  ... and {len(intake.unplaced) - 25} more (see grades.csv)")
    if intake.clutter:
        lines.append(f"ignored {intake.clutter} editor/OS clutter file(s) (.ipynb_checkpoints, .DS_Store, ...)")
    lines.append(f"wrote {out / 'grades.csv'}, {out / 'results.json'}, {out / 'feedback'}/")
    print("\n".join(lines))
