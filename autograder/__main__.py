"""Command line: `python -m autograder grade [options]` (see --help)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .course.discovery import repo_root
from .limits import CELL_TIME_MULTIPLE, CELL_TIMEOUT, REFERENCE_RETRY_FACTOR
from .records import GraderError, Options
from .runner import grade

EPILOG = """\
examples:
  python -m autograder grade                              # build/course/submitted -> build/course/grades
  python -m autograder grade --submissions class/ --out results/
  python -m autograder grade --submissions class.zip --out results/
  python -m autograder grade --submissions class/ --out results/ --student "Ann Lee"   # regrade one student
  python -m autograder export --lms canvas                # after grading: COURSE/grades/lms-canvas.csv

outputs (in --out): grades.csv (student,assignment,score,max_score,status,reason), results.json
(per test cell), report.html (the class report), feedback/<student>/<assignment>.html,
timings.json; scores also go to nbgrader's gradebook (the course's gradebook.db, or
OUT/gradebook.db with --submissions) and the executed notebooks to autograded/<student>/<assignment>/.
exit status: 0 the batch was graded (whatever the submissions did); 1 bad arguments or set-up;
3 a reference solution does not run cleanly (its rows: status error); 4 internal grader error on
some submissions (their rows: status error); 130 interrupted (Ctrl-C, SIGTERM: nothing written).
grades.csv and report.html are written whenever the batch ran to its end.
"""


def _path(text: str) -> Path:
    p = Path(text).expanduser()
    return p if p.is_absolute() else (Path.cwd() / p)


def _export_parser(sub) -> None:
    from .publish.lms import FORMATS

    e = sub.add_parser(
        "export",
        help="write a gradebook an LMS imports (Canvas, Moodle, plain CSV) from a graded class",
        description=(
            "Writes OUT/lms-<format>.csv from OUT/grades.csv (late penalties applied) and the course's roster "
            "(its gradebook.db: make roster ROSTER=students.csv, with an lms_user_id column for Canvas's ids)."
        ),
    )
    e.add_argument("--lms", choices=FORMATS, required=True, help="the format: canvas, moodle or csv")
    e.add_argument("--course", type=_path, default=None, help="nbgrader course folder (default: build/course)")
    e.add_argument("--out", type=_path, default=None, help="the graded class's folder (default: COURSE/grades)")
    e.add_argument("--output", type=_path, default=None, help="the file to write (default: OUT/lms-<format>.csv)")


def _export(args) -> int:
    from .publish.lms import write_export

    course = args.course or repo_root() / "build" / "course"
    out = args.out or course / "grades"
    try:
        export = write_export(out, args.lms, course, args.output)
    except (OSError, ValueError) as err:
        sys.stderr.write(f"autograder: error: {err}\n")
        return 1
    print(f"wrote {export.path} ({args.lms})", *export.note(), sep="\n")
    return 0


def _grade_parser(sub) -> None:
    g = sub.add_parser(
        "grade",
        help="autograde submissions against the reference solutions",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    g.add_argument(
        "--course", type=_path, default=None, help="nbgrader course folder (default: build/course in the repository)"
    )
    g.add_argument(
        "--submissions",
        type=_path,
        default=None,
        help="folder (or .zip) with one folder (or .zip) per student; default: COURSE/submitted",
    )
    g.add_argument("--out", type=_path, default=None, help="output folder (default: COURSE/grades)")
    g.add_argument(
        "--student",
        action="append",
        default=[],
        metavar="ID",
        help="grade only this student (repeatable); other rows of OUT are kept",
    )
    g.add_argument(
        "--assignment",
        action="append",
        default=[],
        metavar="ID",
        help="grade only this assignment, e.g. 02_scaled_sum (repeatable)",
    )
    _limit_arguments(g)
    g.add_argument(
        "--cache", type=_path, default=None, help="reference observation cache (default: build/autograder/references)"
    )
    g.add_argument("--no-isolation", action="store_true", help="do not use bubblewrap (NOT for real submissions)")
    g.add_argument("--no-gradebook", action="store_true", help="do not write nbgrader's gradebook")
    g.add_argument(
        "--course-gradebook",
        action="store_true",
        help="with --submissions: also write the scores into COURSE/gradebook.db (formgrader shows them)",
    )
    g.add_argument("--no-feedback", action="store_true", help="do not write feedback HTML")
    g.add_argument("-q", "--quiet", action="store_true", help="no progress bar or summary")


def _limit_arguments(g) -> None:
    """The grade command's workers, timeouts, budgets and caps."""
    g.add_argument("-j", "--jobs", type=int, default=0, help="parallel workers (default: number of cores)")
    g.add_argument(
        "--timeout",
        "--cell-timeout",
        type=float,
        default=CELL_TIMEOUT,
        metavar="S",
        help=f"seconds per cell at least (default {CELL_TIMEOUT:g}); a cell gets more where the reference solution "
        "needed more on this machine (--timeout-multiple); the reference's own first run gets S, a second one "
        f"{REFERENCE_RETRY_FACTOR:g}x S",
    )
    g.add_argument(
        "--timeout-multiple",
        type=float,
        default=CELL_TIME_MULTIPLE,
        metavar="M",
        help=f"a cell's limit is M times the reference's slowest cell, a notebook's budget M times its whole run, "
        f"never below --timeout and --notebook-budget (default {CELL_TIME_MULTIPLE:g}; 0: exactly those)",
    )
    g.add_argument(
        "--notebook-budget",
        type=float,
        default=300.0,
        metavar="S",
        help="wall-clock seconds per notebook, all cells and restarts (default 300)",
    )
    g.add_argument(
        "--submission-budget",
        type=float,
        default=900.0,
        metavar="S",
        help="wall-clock seconds per student over all their notebooks (default 900)",
    )
    g.add_argument(
        "--max-added-cells",
        type=int,
        default=100,
        metavar="N",
        help="cells a student may add to a notebook; further ones are dropped (default 100)",
    )
    g.add_argument(
        "--max-output-chars",
        type=int,
        default=5_000_000,
        metavar="N",
        help="characters of output kept per notebook (default 5000000)",
    )
    g.add_argument("--memory-mb", type=int, default=4096, help="memory limit per kernel, MiB (RLIMIT_DATA)")
    g.add_argument(
        "--cpu-seconds", type=int, default=0, help="CPU-time limit per kernel (default max(600, 30*timeout))"
    )


def _options(parser, args) -> Options:
    """The grade command's arguments, checked, as the pipeline's `Options`."""
    if args.jobs < 0 or args.timeout <= 0 or args.timeout_multiple < 0:
        parser.error("--jobs must be >= 0, --timeout > 0 and --timeout-multiple >= 0")
    if (
        args.notebook_budget <= 0
        or args.submission_budget <= 0
        or args.max_added_cells < 0
        or args.max_output_chars < 0
    ):
        parser.error("the budgets must be > 0 and the caps >= 0")
    return Options(
        course=args.course or repo_root() / "build" / "course",
        submissions=args.submissions,
        out=args.out,
        students=args.student,
        assignments=args.assignment,
        jobs=args.jobs,
        timeout=args.timeout,
        timeout_multiple=args.timeout_multiple,
        cache=args.cache,
        isolate=not args.no_isolation,
        memory_mb=args.memory_mb,
        cpu_seconds=args.cpu_seconds,
        gradebook=not args.no_gradebook,
        course_gradebook=args.course_gradebook,
        notebook_budget=args.notebook_budget,
        submission_budget=args.submission_budget,
        max_added_cells=args.max_added_cells,
        max_output_chars=args.max_output_chars,
        feedback=not args.no_feedback,
        quiet=args.quiet,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m autograder", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    _export_parser(sub)
    _grade_parser(sub)
    args = parser.parse_args(argv)
    if args.command == "export":
        return _export(args)
    opts = _options(parser, args)
    try:
        return grade(opts)
    except GraderError as err:
        sys.stderr.write(f"autograder: error: {err}\n")
        return 3 if "reference solution" in str(err) else 1
    except KeyboardInterrupt:
        sys.stderr.write("autograder: interrupted\n")
        return 130


if __name__ == "__main__":
    sys.exit(main())
