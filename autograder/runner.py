"""Grade a class: find the work, run it in the pool, write every output.

`grade(opts)` is the whole pipeline, read top to bottom as its steps: `resolve` (the command line's
options into one frozen `Batch` of paths and settings), `find` (the assignments), `place_handins`
(whose hand-ins there are), `isolate` (the sandbox), `run` (references and grading on the pool), `complete` (the
rows that need no kernel), `publish` (every file) and `exit_status` (what went wrong, the exit status), the
last two taking the batch graded, whole (`records.Graded`).
One package per stage (each imports only the ones before it, tests/autograder/test_layering.py):

- course/: the assignments (source notebooks, editions; discovery.py);
- intake/: who submitted which notebook (placement.py);
- sandbox/: what student kernels see and their limits (build.py for this run, launch.py per kernel);
- run/: reference runs and grading on N worker processes (batch.py, pool.py, worker.py; the longest expected
  notebooks first, no assignment compiled by two workers without need, order.py), one notebook cell by
  cell in a kernel (executor.py, kernel.py), the reference cache (references.py);
- judge/: observations -> verdicts -> points (score.py, compare.py, programs.py with exported.py,
  compiling.py and hidden_inputs.py, scorer_process.py);
- publish/: every file written (batch.py the publish step, pages.py each hand-in's pages, outputs.py,
  feedback.py, gradebook.py, report.py).

Whatever happens to single submissions (and even after a grader bug in the
pool), `grade` writes `grades.csv`, `results.json` and `report.html`, with a
row for every placed notebook (status `error` where grading failed inside the
grader); a broken reference solution turns only its assignment's rows into
`error` rows (exit status 3). Ctrl-C or SIGTERM stops the pool at once and
writes nothing (a partial class must not replace a previous complete one).

The records passed between them are in records.py (`Batch`, `BatchResults`), every cap in limits.py.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from .course.deadlines import LatePolicy, load_policy
from .course.discovery import course_assignments, discover_sources, repo_root
from .intake.placement import Intake, handed_in_times, place_course, place_submissions
from .publish.outputs import missing_reason
from .publish.publishing import print_problems, publish
from .records import CSV_COLUMNS, Batch, BatchResults, Graded, GraderError, Options, Row, Status, make_row, zero_cells
from .run.batch import run_all
from .sandbox import workcopy
from .sandbox.build import build_sandbox, grading_xla_flags, warn

__all__ = ["Options", "GraderError", "grade", "repo_root", "CSV_COLUMNS", "resolve"]


def grade(opts: Options) -> int:
    """Grade the batch `opts` asks for; the exit status (0, 3: a reference solution, 4: an internal error).
    Each step is a function below (`run` is run/batch.py's `run_all`, `publish` publish/publishing.py's)."""
    started = time.monotonic()
    _environment()
    batch = resolve(opts)
    sources, policy = find(batch)
    intake = place_handins(batch, sources, policy)
    sources = handed_in_sources(batch, sources, intake)
    try:
        with _workspace(batch) as batch:
            results, sandbox = BatchResults(), None
            try:
                sandbox = isolate(batch)
                results = run_all(batch, sources, intake, sandbox)
            except (KeyboardInterrupt, GraderError):
                raise
            except Exception:  # noqa: BLE001 - a grader bug: still a grades.csv (error rows) and a report
                results.internal.append("the grading pool failed:\n" + traceback.format_exc())
            results.rows += complete(sources, intake, results)
            graded = Graded(batch, sources, intake, policy, sandbox, results, started)
            publish(graded)
            return exit_status(graded)
    finally:
        intake.close()


def _environment() -> None:
    """The grading XLA flags (kernels, references and scorers inherit them), and this Python's bin on PATH
    (nbgrader's gradebook runs `alembic` from PATH)."""
    os.environ["XLA_FLAGS"] = grading_xla_flags(os.environ.get("XLA_FLAGS", ""))
    bindir = os.path.dirname(sys.executable)
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")


def resolve(opts: Options) -> Batch:
    """The options resolved once into the batch's paths and settings (nothing is written yet)."""
    course = Path(opts.course).resolve()
    if opts.submissions is None and not (course / "submitted").is_dir():
        raise GraderError(
            f"no submissions: {course / 'submitted'} does not exist (put submissions there, or pass --submissions DIR)"
        )
    out = Path(opts.out).resolve() if opts.out else course / "grades"
    cache = Path(opts.cache).resolve() if opts.cache else repo_root() / "build" / "autograder" / "references"
    submissions = Path(opts.submissions).resolve() if opts.submissions is not None else None
    if submissions is None:
        # course mode: nbgrader's submission timestamps too (formgrader shows a submission as graded
        # only when they match)
        gradebooks = ((f"sqlite:///{course / 'gradebook.db'}", course / "submitted"),)
    else:
        gradebooks = ((f"sqlite:///{out / 'gradebook.db'}", None),)
        if opts.course_gradebook:  # --course-gradebook: the course's gradebook as well
            gradebooks += ((f"sqlite:///{course / 'gradebook.db'}", None),)
    return Batch(
        opts=opts,
        course=course,
        out=out,
        cache=cache,
        xla_root=cache.parent / "xla-cache",
        submissions=submissions,
        autograded_root=(course if submissions is None else out) / "autograded",
        nbgrader_feedback_root=course / "feedback" if submissions is None else None,
        gradebooks=gradebooks,
        jobs=opts.jobs or os.cpu_count() or 1,
    )


def find(batch: Batch) -> tuple[dict, LatePolicy | None]:
    """The assignments to grade and the course's late policy (a malformed deadlines.toml stops here,
    before anything is written)."""
    sources = discover_sources(batch.course, batch.opts.assignments)
    if len({s.file_name for s in sources.values()}) != len(sources):
        raise GraderError("two assignments use the same notebook file name")
    # deadlines.toml names any of the course's assignments; those not graded in this run are ignored
    return sources, load_policy(batch.course, {*sources, *course_assignments(batch.course)})


def place_handins(batch: Batch, sources: dict, policy: LatePolicy | None) -> Intake:
    """Who handed in which notebook (and how late, in course mode)."""
    notebooks = {s.file_name: aid for aid, s in sources.items()}
    students = batch.opts.students or None
    if batch.submissions is not None:
        if not batch.submissions.exists():
            raise GraderError(f"submissions not found: {batch.submissions}")
        intake = place_submissions(batch.submissions, notebooks, students)
    else:
        intake = place_course(batch.course, notebooks, students)
        if policy is not None:
            mark_late(intake, policy, sources, batch.course)
    missing_students = sorted(set(batch.opts.students) - intake.students - {u.student for u in intake.conflicts})
    if missing_students:
        intake.close()
        raise GraderError(f"no submission folder for student(s): {', '.join(missing_students)}")
    return intake


def handed_in_sources(batch: Batch, sources: dict, intake: Intake) -> dict:
    """A folder of submissions graded without ASSIGNMENT=: only the assignments someone in the folder handed
    in (a notebook placed, or a file recognisably meant for one), so a folder holding notebook 10 gets no
    `missing` rows (and no reference runs) for the other assignments. Regrading some students (STUDENT=)
    keeps the assignments the whole folder has, so their rows are those of the class's run. A course folder,
    or one naming assignments: all."""
    if batch.submissions is None or batch.opts.assignments:
        return sources
    if batch.opts.students:
        notebooks = {s.file_name: aid for aid, s in sources.items()}
        with place_submissions(batch.submissions, notebooks, None) as whole:
            seen = _assignments_of(whole)
    else:
        seen = _assignments_of(intake)
    kept = {aid: source for aid, source in sources.items() if aid in seen}
    if kept and len(kept) < len(sources) and not batch.opts.quiet:
        print(f"grading the assignment(s) handed in: {', '.join(kept)} (ASSIGNMENT=... chooses)", flush=True)
    return kept or sources


def _assignments_of(intake: Intake) -> set[str]:
    return {p.assignment for p in intake.placed.values()} | {u.assignment for u in intake.unplaced}


@contextlib.contextmanager
def _workspace(batch: Batch) -> Iterator[Batch]:
    """The output and cache folders, and this run's private work folder (removed at the end); SIGTERM
    stops the batch like Ctrl-C meanwhile."""
    batch.out.mkdir(parents=True, exist_ok=True)
    batch.xla_root.mkdir(parents=True, exist_ok=True)
    work_root = Path(tempfile.mkdtemp(prefix="agr-"))
    previous_term = signal.signal(signal.SIGTERM, _terminate)
    try:
        yield replace(batch, work_root=work_root)
    finally:
        signal.signal(signal.SIGTERM, previous_term)
        workcopy.remove_tree(work_root)


def _terminate(signum, frame):
    raise KeyboardInterrupt


def isolate(batch: Batch):
    """The sandbox of this run's kernels (loudly said when student code will run without isolation)."""
    sandbox, why = build_sandbox(batch)
    if why:
        warn(
            f"WARNING: student code will run WITHOUT isolation: {why}.\n"
            f"Kernels still get CPU-time, memory and file-size limits, but can read and write what "
            f"this user can and reach the network. Install bubblewrap (Debian: apt-get install "
            f"bubblewrap) and make sure it may create namespaces here."
        )
    return sandbox


def complete(sources: dict, intake: Intake, results: BatchResults) -> list[Row]:
    """The rows that need no kernel, so every hand-in and every missing one has its row: a placed notebook
    the run gave no row (only after a grader bug: never a silent gap), notebooks not handed in, unplaceable
    files, conflicting ids."""
    rows = []
    graded = {(r.student, r.assignment) for r in results.rows}
    for (student, aid), placed in sorted(intake.placed.items()):
        if (student, aid) not in graded:
            reason = "internal grader error (see the grader's output); regrade this student"
            cells = zero_cells(sources[aid], "internal grader error")
            rows.append(make_row(student, aid, placed.origin, sources[aid], Status.ERROR, reason, cells))
    return rows + not_submitted_rows(sources, intake)


def exit_status(graded: Graded) -> int:
    """What went wrong, on stderr; the exit status (3: a reference solution, 4: an internal error, 0)."""
    print_problems(graded)
    if graded.results.ref_problems:
        return 3
    return 4 if graded.results.internal else 0


def not_submitted_rows(sources: dict, intake: Intake) -> list[Row]:
    """Rows that need no kernel: missing notebooks, unplaceable files, conflicting ids."""
    rows = []
    for student in sorted(intake.students):
        for aid, source in sources.items():
            if (student, aid) in intake.placed:
                continue
            cells = zero_cells(source, "no notebook submitted")
            reason = missing_reason(intake, student, aid, source.file_name)
            rows.append(make_row(student, aid, "", source, Status.MISSING, reason, cells))
    for u in intake.unplaced:
        rows.append(make_row(u.student, "", u.origin, None, Status.UNPLACEABLE, f"{u.origin}: {u.reason}"))
    for u in intake.conflicts:
        rows.append(make_row(u.student, "", u.origin, None, Status.CONFLICT, f"{u.origin}: {u.reason}"))
    return rows


def mark_late(intake: Intake, policy: LatePolicy, sources: dict, course: Path) -> None:
    """Each collected hand-in's lateness (course mode: the times collect validated; a folder of
    submissions has none, so nothing there is judged late)."""
    times = handed_in_times(course, intake.placed)
    for key, placed in intake.placed.items():
        late = policy.late(placed.student, placed.assignment, times.get(key), sources[placed.assignment].max_score)
        if late is not None:
            intake.placed[key] = replace(placed, late=late)
