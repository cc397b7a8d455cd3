"""Grade a class: find the work, run it in the pool, write every output.

`grade(opts)` is the whole pipeline, one package per stage (each imports only the ones before it,
tests/autograder/test_layering.py):

- course/: the assignments (source notebooks, editions; discovery.py);
- intake/: who submitted which notebook (placement.py);
- sandbox/: what student kernels see and their limits (build.py for this run, launch.py per kernel);
- run/: reference runs and grading on N worker processes (pool.py, worker.py; the longest expected
  notebooks first, order.py), one notebook cell by
  cell in a kernel (executor.py, kernel.py), the reference cache (references.py);
- judge/: observations -> verdicts -> points (score.py, compare.py, programs.py with exported.py,
  compiling.py and hidden_inputs.py, scorer_process.py);
- publish/: what is written (outputs.py, feedback.py, gradebook.py, report.py).

Whatever happens to single submissions (and even after a grader bug in the
pool), `grade` writes `grades.csv`, `results.json` and `report.html`, with a
row for every placed notebook (status `error` where grading failed inside the
grader); a broken reference solution turns only its assignment's rows into
`error` rows (exit status 3). Ctrl-C or SIGTERM stops the pool at once and
writes nothing (a partial class must not replace a previous complete one).

The records passed between them are in records.py, every cap in limits.py.
"""

from __future__ import annotations

import os
import signal
import sys
import tempfile
import time
import traceback
from dataclasses import replace
from pathlib import Path

from .course.deadlines import LatePolicy, load_policy
from .course.discovery import discover_sources, repo_root
from .intake.placement import handed_in_times, place_course, place_submissions
from .publish.outputs import merge_previous, missing_reason, summary, write_outputs
from .records import CSV_COLUMNS, GraderError, Options, Row, make_row, zero_cells
from .run.pool import run_all
from .sandbox import workcopy
from .sandbox.build import build_sandbox, grading_xla_flags, warn
from .sandbox.protections import as_json

__all__ = ["Options", "GraderError", "grade", "repo_root", "CSV_COLUMNS"]


def grade(opts: Options) -> int:
    t_start = time.monotonic()
    os.environ["XLA_FLAGS"] = grading_xla_flags(os.environ.get("XLA_FLAGS", ""))
    bindir = os.path.dirname(sys.executable)  # nbgrader's gradebook runs `alembic` from PATH
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
    course = Path(opts.course).resolve()
    if opts.submissions is None and not (course / "submitted").is_dir():
        raise GraderError(
            f"no submissions: {course / 'submitted'} does not exist (put submissions there, or pass --submissions DIR)"
        )
    out = Path(opts.out).resolve() if opts.out else course / "grades"
    cache = Path(opts.cache).resolve() if opts.cache else repo_root() / "build" / "autograder" / "references"
    sources = discover_sources(course, opts.assignments)
    notebooks = {s.file_name: aid for aid, s in sources.items()}
    if len(notebooks) != len(sources):
        raise GraderError("two assignments use the same notebook file name")
    policy = load_policy(course, sources)  # a malformed deadlines.toml stops here, before anything is written

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
    if policy is not None and opts.submissions is None:
        mark_late(intake, policy, sources, course)
    missing_students = sorted(set(opts.students) - intake.students - {u.student for u in intake.conflicts})
    if missing_students:
        intake.close()
        raise GraderError(f"no submission folder for student(s): {', '.join(missing_students)}")

    out.mkdir(parents=True, exist_ok=True)
    xla_root = cache.parent / "xla-cache"
    xla_root.mkdir(parents=True, exist_ok=True)
    work_root = Path(tempfile.mkdtemp(prefix="agr-"))
    jobs = opts.jobs or os.cpu_count() or 1
    previous_term = signal.signal(signal.SIGTERM, _terminate)  # SIGTERM stops the batch like Ctrl-C
    rows: list[Row] = []
    internal: list[str] = []
    ref_seconds: dict[str, float] = {}
    ref_problems: dict[str, list[str]] = {}
    sandbox = None
    try:
        try:
            sandbox, why = build_sandbox(opts, course, out, cache, work_root, xla_root)
            if why:
                warn(
                    f"WARNING: student code will run WITHOUT isolation: {why}.\n"
                    f"Kernels still get CPU-time, memory and file-size limits, but can read and write what "
                    f"this user can and reach the network. Install bubblewrap (Debian: apt-get install "
                    f"bubblewrap) and make sure it may create namespaces here."
                )
            rows, internal, ref_seconds, ref_problems = run_all(
                opts,
                sources,
                intake,
                out,
                cache,
                xla_root,
                work_root,
                sandbox,
                jobs,
                autograded_root,
                nbgrader_feedback_root,
            )
        except (KeyboardInterrupt, GraderError):
            raise
        except Exception:  # noqa: BLE001 - a grader bug: still a grades.csv (error rows) and a report
            internal.append("the grading pool failed:\n" + traceback.format_exc())
        graded = {(r.student, r.assignment) for r in rows}
        for (student, aid), placed in sorted(intake.placed.items()):
            if (student, aid) not in graded:  # only after a grader bug: never a silent gap
                rows.append(
                    make_row(
                        student,
                        aid,
                        placed.origin,
                        sources[aid],
                        "error",
                        "internal grader error (see the grader's output); regrade this student",
                        zero_cells(sources[aid], "internal grader error"),
                    )
                )
        rows += not_submitted_rows(opts, sources, intake, out)
        all_rows = merge_previous(out, rows, opts, intake)
        write_outputs(out, all_rows, rows, as_json(sandbox.protections()) if sandbox is not None else None)
        if not opts.students:  # the whole class (of some assignments: the others' sections are kept)
            try:
                from .publish.similarity import write_similarity

                write_similarity(out, sources, intake)
            except Exception as err:  # noqa: BLE001 - it reports, it never decides a score
                internal.append(f"writing the similarity report {out / 'similarity.html'} failed: {err}")
        try:
            from .publish.report import write_report

            write_report(out, course=course)  # the course names the report and its exercises
        except Exception as err:  # noqa: BLE001 - grades.csv is written; say why the report is not
            internal.append(f"writing the class report {out / 'report.html'} failed: {err}")
        if opts.gradebook:
            # course mode: nbgrader's submission timestamps too (formgrader shows a submission as
            # graded only when they match); --course-gradebook: the course's gradebook as well
            dbs = [(db_url, course / "submitted" if opts.submissions is None else None)]
            if opts.submissions is not None and opts.course_gradebook:
                dbs.append((f"sqlite:///{course / 'gradebook.db'}", None))
            for url, submitted in dbs:
                try:
                    write_db(url, sources, rows, submitted, policy)
                except Exception as err:  # noqa: BLE001
                    internal.append(f"writing the gradebook {url} failed: {err}")
        wall = time.monotonic() - t_start
        if sandbox is not None:
            summary(out, sources, intake, rows, wall, sandbox, jobs, opts.quiet, ref_seconds)
        if ref_problems:
            for aid, problems in sorted(ref_problems.items()):
                sys.stderr.write(
                    f"\nautograder: error: the reference solution of {aid} ({sources[aid].path}) "
                    f"does not run cleanly; its rows have status 'error'. Fix it first:\n  - "
                    + "\n  - ".join(problems)
                    + "\n"
                )
        if internal:
            sys.stderr.write("\nINTERNAL GRADER ERRORS (affected rows have status 'error'):\n")
            for msg in internal:
                sys.stderr.write(msg.rstrip() + "\n")
        if ref_problems:
            return 3
        return 4 if internal else 0
    finally:
        signal.signal(signal.SIGTERM, previous_term)
        intake.close()
        workcopy.remove_tree(work_root)


def _terminate(signum, frame):
    raise KeyboardInterrupt


def not_submitted_rows(opts: Options, sources, intake, out: Path) -> list[Row]:
    """Rows that need no kernel: missing notebooks, unplaceable files, conflicting ids."""
    rows = []
    writer = None
    for student in sorted(intake.students):
        for aid, source in sources.items():
            if (student, aid) in intake.placed:
                continue
            cells = zero_cells(source, "no notebook submitted")
            reason = missing_reason(intake, student, aid, source.file_name)
            row = make_row(student, aid, "", source, "missing", reason, cells)
            rows.append(row)
            if opts.feedback:
                if writer is None:
                    from .publish.feedback import FeedbackWriter

                    writer = FeedbackWriter()
                page = writer.html(None, aid, row, cells)
                p = out / "feedback" / student / f"{aid}.html"
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_text(page, encoding="utf-8")
    for u in intake.unplaced:
        rows.append(make_row(u.student, "", u.origin, None, "unplaceable", f"{u.origin}: {u.reason}"))
    for u in intake.conflicts:
        rows.append(make_row(u.student, "", u.origin, None, "conflict", f"{u.origin}: {u.reason}"))
    return rows


def mark_late(intake, policy: LatePolicy, sources, course: Path) -> None:
    """Each collected hand-in's lateness (course mode: the times collect validated; a folder of
    submissions has none, so nothing there is judged late)."""
    times = handed_in_times(course, intake.placed)
    for key, placed in intake.placed.items():
        late = policy.late(placed.student, placed.assignment, times.get(key), sources[placed.assignment].max_score)
        if late is not None:
            intake.placed[key] = replace(placed, late=late)


def write_db(db_url, sources, rows, submitted=None, policy=None):
    from .publish.gradebook import write_gradebook

    return write_gradebook(db_url, sources, rows, submitted, policy)
