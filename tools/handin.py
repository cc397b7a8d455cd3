"""The instructor's side of nbgrader's hand-in loop, one command per step (`make release` & co).

    python -m tools.handin roster roster.csv          # students (id, first_name, last_name, email) -> gradebook
    python -m tools.handin release [ID ...]           # course release/ -> exchange outbound/ (students fetch)
    python -m tools.handin collect [ID ...]           # exchange inbound/ -> course submitted/ (newest per student)
    python -m tools.handin return-feedback [ID ...]   # collect, then course feedback/ -> exchange feedback/
    collect, return-feedback: --student-user FORMAT (default {student}) --class-user NAME --max-files N --max-bytes N
    python -m tools.handin --edition zh layout        # the Chinese edition's course folder, build/zh/course
    python -m tools.handin grade|export [OPTIONS]     # `python -m autograder grade|export` on this course
    options: --edition zh (the Chinese edition's course, build/zh/course)  --course DIR (default build/course)
             --exchange DIR (default: nbgrader config, build/exchange)
    roster and release lay the course out first when it has no nbgrader_config.py; release always lays
    out the built course (build/course: `generate_notebooks --check`, which stops when notebooks/ is stale).

Design
- Every step is nbgrader's own (NbGraderAPI: release_assignment, collect, release_feedback, the
  gradebook), run in this one process with the course's configuration: jupyter/nbgrader/
  nbgrader_config.py (course id, exchange) and the course folder's nbgrader_config.py. Grading in
  between is `make grade` (the sandboxed autograder, course mode), which writes autograded/,
  feedback/ and the scores into the course gradebook.
- nbgrader's release_feedback finds a student's feedback by the secret their submission carried
  (submission_secret.txt, plus timestamp.txt) in feedback/<student>/<id>/; nbgrader's own
  generate_feedback copies those from the submission, the autograder writes only the HTML. So
  `return-feedback` copies them from submitted/<student>/<id>/, and only when the feedback is
  newer than the collected submission: feedback about an older hand-in is never returned as if
  it were about the new one (it says "regrade first").
- collect never lets nbgrader read the exchange's inbound/ (every student may write there, and
  nbgrader's copy follows links, has no bound, stops at one bad name and trusts the name's
  student id): autograder/intake/inbound.py copies what may be taken (regular files only, bounded, owned by
  the named student's Unix user, dated in the past) into a private staging exchange, reports every
  refused hand-in by name, and nbgrader's own collect runs on that copy (its warnings printed).
  formgrader's Collect button runs the same intake (autograder/formgrader/collect.py).
  return-feedback collects first, so a hand-in still waiting in inbound/ makes the feedback about
  the older one stale instead of being overtaken by it.
- Student ids must be usable in the exchange's file names (nbgrader separates fields with '+').
- Nothing here deletes a submission: collect keeps each student's newest hand-in (nbgrader's
  `--update`), release replaces only the exchange's copy of a changed release.
- Editions in other languages are nbgrader courses of their own, with the same assignment names
  and grade ids: `layout --edition zh` lays out `build/zh/course` (course id `namedaxes-zh`, in the
  same exchange) from the generated `solutions/zh/` (source/) and `notebooks/zh/` (release/: the
  tested student notebooks, after nbgrader's own generate_assignment has filled the gradebook and
  only once each is checked to be nbgrader's release of that source, code for code, comments
  aside). Every step above then works on it with `--course build/zh/course`; `make grade` grades
  it against the English source (autograder.course.discovery).
"""

from __future__ import annotations

import argparse
import csv
import filecmp
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from autograder import intake
from courseinfo.course import EDITIONS, NOTEBOOKS, ROOT, SOLUTIONS, built_course, course_id

SHARED_CONFIG = ROOT / "jupyter" / "nbgrader" / "nbgrader_config.py"
ROSTER_COLUMNS = ("id", "first_name", "last_name", "email")
STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]*$")
BOOKKEEPING = ("timestamp.txt", "submission_secret.txt")
EDITION_CONFIG = """# Written by tools/handin.py layout: the {lang} edition's nbgrader course, from solutions/{lang}/.
c = get_config()  # noqa: F821
c.CourseDirectory.course_id = "{course_id}"
c.ClearSolutions.code_stub = {{"python": "# YOUR CODE HERE\\nraise NotImplementedError()"}}
c.Execute.timeout = 60
"""


class HandinError(Exception):
    """Bad input or a failed nbgrader step; the message says what to do."""


def check_student_id(sid: str, where: str = "") -> str:
    if not STUDENT_ID.match(sid):
        raise HandinError(
            f"{where}student id {sid!r}: use letters, digits and . _ - @ only "
            f"(nbgrader's exchange puts ids in file names, separated by '+')"
        )
    return sid


# ------------------------------------------------------------------ configuration
def load_config(course: Path, exchange: Path | None):
    from traitlets.config import Config
    from traitlets.config.loader import PyFileConfigLoader

    config = Config()
    for path in (SHARED_CONFIG, course / "nbgrader_config.py"):
        if path.is_file():
            config.merge(PyFileConfigLoader(path.name, str(path.parent)).load_config())
    config.CourseDirectory.root = str(course)
    if exchange is not None:
        config.Exchange.root = str(exchange)
    return config


def _api(course: Path, exchange: Path | None):
    # nbgrader's gradebook runs the `alembic` console script of its own environment
    os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    from nbgrader.apps import NbGraderAPI

    if not course.is_dir():
        raise HandinError(f"no course folder at {course} (`make notebooks` lays it out)")
    return NbGraderAPI(config=load_config(course, exchange))


def _outbound(api) -> Path:
    return Path(api.exchange_root) / api.course_id / "outbound"


def _check(result: dict, step: str) -> str:
    if not result or not result.get("success"):
        log = (result or {}).get("log", "") + (result or {}).get("error", "")
        raise HandinError(f"nbgrader {step} failed:\n{log.strip()}")
    return result.get("log", "")


# ------------------------------------------------------------------ steps
def layout_edition(
    course: Path, lang: str, ids: list[str], solutions: Path = SOLUTIONS, notebooks: Path = NOTEBOOKS
) -> list[str]:
    """Lay out (or refresh) the nbgrader course of edition `lang` in `course` (see the module docstring)
    from `solutions/<lang>/` and `notebooks/<lang>/`."""
    import nbformat

    from autograder.course import edition_problem

    if lang not in EDITIONS:
        raise HandinError(f"unknown edition {lang!r} (known: {', '.join(EDITIONS)})")
    sources, releases = solutions / lang, notebooks / lang
    found = sorted(p.stem for p in sources.glob("*.ipynb")) if sources.is_dir() else []
    ids = ids or found
    if not ids:
        raise HandinError(f"no {lang} edition to lay out: {sources} has no notebooks (`make notebooks` generates it)")
    for aid in ids:
        for folder in (sources, releases):
            if not (folder / f"{aid}.ipynb").is_file():
                raise HandinError(f"{folder / (aid + '.ipynb')} is missing (`make notebooks` generates it)")
    course.mkdir(parents=True, exist_ok=True)
    (course / "nbgrader_config.py").write_text(EDITION_CONFIG.format(lang=lang, course_id=course_id(lang)))
    for aid in ids:
        dest = course / "source" / aid / f"{aid}.ipynb"
        dest.parent.mkdir(parents=True, exist_ok=True)
        if not dest.is_file() or dest.read_bytes() != (sources / f"{aid}.ipynb").read_bytes():
            shutil.copyfile(sources / f"{aid}.ipynb", dest)
    api = _api(course, None)
    lines = []
    for aid in ids:
        _check(api.generate_assignment(aid, force=True), f"generate_assignment {aid}")
        made = course / "release" / aid / f"{aid}.ipynb"
        tested = releases / f"{aid}.ipynb"
        problem = edition_problem(nbformat.read(str(made), as_version=4), nbformat.read(str(tested), as_version=4))
        if problem is not None:
            raise HandinError(
                f"{tested} is not nbgrader's release of {sources / (aid + '.ipynb')} ({problem}): "
                f"`make notebooks` regenerates both"
            )
        shutil.copyfile(tested, made)  # students get exactly the tested notebook
        lines.append(f"{aid}: laid out in {course} (course {course_id(lang)})")
    return lines


def import_roster(course: Path, csv_path: Path) -> int:
    """Add or update students from a CSV with columns id, first_name, last_name, email."""
    try:
        text = csv_path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as err:
        raise HandinError(f"cannot read the roster {csv_path}: {err}") from err
    rows = list(csv.DictReader(text.splitlines()))
    header = [h.strip() for h in (csv.reader(text.splitlines()[:1]).__next__() if text.strip() else [])]
    if "id" not in header:
        raise HandinError(
            f"{csv_path}: the first line must name the columns {', '.join(ROSTER_COLUMNS)} "
            f"(found: {', '.join(header) or 'nothing'})"
        )
    unknown = [h for h in header if h not in ROSTER_COLUMNS + ("lms_user_id",)]
    if unknown:
        raise HandinError(f"{csv_path}: unknown column(s) {', '.join(unknown)}; expected {', '.join(ROSTER_COLUMNS)}")
    students, seen = [], set()
    for line, row in enumerate(rows, start=2):
        row = {(k or "").strip(): (v or "").strip() for k, v in row.items()}
        sid = check_student_id(row.get("id", ""), f"{csv_path}, line {line}: ")
        if sid in seen:
            raise HandinError(f"{csv_path}, line {line}: student id {sid!r} appears twice")
        seen.add(sid)
        students.append({k: (row.get(k) or None) for k in ROSTER_COLUMNS + ("lms_user_id",) if k in header})
    api = _api(course, None)
    with api.gradebook as gb:
        for s in students:
            sid = s.pop("id")
            gb.update_or_create_student(sid, **s)
    return len(students)


def release(course: Path, exchange: Path | None, ids: list[str]) -> list[str]:
    api = _api(course, exchange)
    released_dir = course / "release"
    if not ids and released_dir.is_dir():
        ids = sorted(p.name for p in released_dir.iterdir() if p.is_dir())
    if not ids:
        raise HandinError(f"nothing to release: {released_dir} is empty (`make notebooks` builds it)")
    lines = []
    for aid in ids:
        src = released_dir / aid
        if not src.is_dir():
            raise HandinError(f"no release of {aid} in {released_dir} (`make notebooks` builds it)")
        dest = _outbound(api) / aid
        if not dest.is_dir():
            _check(api.release_assignment(aid), f"release_assignment {aid}")
            lines.append(f"{aid}: released")
        elif _same_files(src, dest):
            lines.append(f"{aid}: already released, unchanged")
        else:
            forced = _api_with(api, "ExchangeReleaseAssignment", force=True)
            _check(forced.release_assignment(aid), f"release_assignment {aid}")
            lines.append(
                f"{aid}: released again (it changed; students who fetched it keep their copy "
                f"and can merge the new one with `make update-work`)"
            )
    return lines


def _same_files(a: Path, b: Path) -> bool:
    def names(p: Path) -> list[str]:
        return sorted(str(f.relative_to(p)) for f in p.rglob("*") if f.is_file())

    return names(a) == names(b) and all(filecmp.cmp(a / n, b / n, shallow=False) for n in names(a))


def _api_with(api, section: str, **values):
    """The same API with some configuration changed (nbgrader reads it when the API is made)."""
    import copy

    from nbgrader.apps import NbGraderAPI

    config = copy.deepcopy(api.config)
    for k, v in values.items():
        setattr(config[section], k, v)
    return NbGraderAPI(config=config)


def collect(
    course: Path,
    exchange: Path | None,
    ids: list[str],
    limits: intake.Limits | None = None,
    student_user: str = "{student}",
    class_user: str | None = None,
) -> list[str]:
    """nbgrader's collect, from a staging copy that autograder/intake/inbound.py made of what may be taken (its
    docstring)."""
    import tempfile

    api = _api(course, exchange)
    outbound = _outbound(api)
    ids = ids or (sorted(p.name for p in outbound.iterdir() if p.is_dir()) if outbound.is_dir() else [])
    if not ids:
        raise HandinError(f"nothing released in {outbound} yet (`make release` first)")
    inbound = Path(api.exchange_root) / api.course_id / "inbound"
    lines, notes = [], []
    for aid in ids:
        if not inbound.is_dir():
            lines.append(f"{aid}: nothing handed in yet ({inbound} does not exist)")
            continue
        # in the course folder (instructor-only, mode 0700): the copy is on the disk that will hold submitted/
        with tempfile.TemporaryDirectory(prefix=".collect-staging-", dir=course) as tmp:
            staging = Path(tmp) / api.course_id / "inbound"
            try:
                taken = intake.stage(
                    inbound, staging, aid, limits or intake.Limits(), student_user, class_user=class_user
                )
            except ValueError as err:
                raise HandinError(str(err)) from None
            # nbgrader's owner check would compare with the staging copy's owner (this process):
            # intake.stage has checked the real owners already, more strictly.
            staged = _api_with(api, "Exchange", root=tmp)
            staged = _api_with(staged, "ExchangeCollect", check_owner=False)
            log = _check(staged.collect(aid, update=True), f"collect {aid}")
        got = sorted(set(re.findall(r"(?:Collecting|Updating) submission: (\S+) ", log)))
        have = sorted(p.parent.name for p in (course / "submitted").glob(f"*/{aid}") if p.is_dir())
        lines.append(
            f"{aid}: {len(got)} new or newer hand-in(s)"
            + (f" ({', '.join(got)})" if got else "")
            + f"; {len(have)} collected in all"
            + (f"; {len(taken.refused)} refused (below)" if taken.refused else "")
        )
        for r in taken.refused:
            lines.append(intake.printable(f"  REFUSED {r.entry}: {r.reason}"))
        lines += [f"  nbgrader: {w}" for w in _warnings(log)]
        notes += [n for n in taken.notes if n not in notes]
    return lines + notes


def _warnings(log: str) -> list[str]:
    """nbgrader's WARNING and ERROR records in a captured log (a record may span several lines)."""
    out, keep = [], False
    for line in log.splitlines():
        if line.startswith("["):
            keep = line.startswith(("[WARNING]", "[ERROR]", "[CRITICAL]"))
            if keep:
                out.append(line.strip())
        elif keep and line.strip() and out:
            out[-1] += " " + line.strip()
    return out


def return_feedback(
    course: Path,
    exchange: Path | None,
    ids: list[str],
    limits: intake.Limits | None = None,
    student_user: str = "{student}",
    class_user: str | None = None,
) -> list[str]:
    """Collect first (a hand-in waiting in inbound/ makes the feedback about the older one stale), then return
    each page that is newer than the hand-in it is about."""
    api = _api(course, exchange)
    if not (Path(api.exchange_root) / api.course_id).is_dir():
        raise HandinError(f"nothing was released through {api.exchange_root} yet (`make release` first)")
    feedback = course / "feedback"
    ids = ids or (sorted({p.name for p in feedback.glob("*/*") if p.is_dir()}) if feedback.is_dir() else [])
    if not ids:
        raise HandinError(f"no feedback in {feedback} yet (`make grade` writes it)")
    lines = ["collecting first, so that no feedback goes out about a hand-in that a newer one replaces:"]
    lines += ["  " + line for line in collect(course, exchange, ids, limits, student_user, class_user)]
    for aid in ids:
        ready, stale, unsent = [], [], []
        with_pages = set()
        for folder in sorted(p for p in feedback.glob(f"*/{aid}") if p.is_dir()):
            sid = folder.parent.name
            pages = sorted(folder.glob("*.html"))
            submitted = course / "submitted" / sid / aid
            if not pages:
                continue
            with_pages.add(sid)
            if not all((submitted / f).is_file() for f in BOOKKEEPING):
                unsent.append(sid)  # not handed in through the exchange: nothing to match
                continue
            handed_in = max(p.stat().st_ctime for p in submitted.iterdir())  # when collect placed it
            if min(p.stat().st_mtime for p in pages) < handed_in:
                stale.append(sid)
                continue
            for name in BOOKKEEPING:
                shutil.copyfile(submitted / name, folder / name)
            ready.append(sid)
        line = f"{aid}: feedback returned to {len(ready)} student(s)" + (f" ({', '.join(ready)})" if ready else "")
        if ready:
            excluded = sorted({p.parent.name for p in feedback.glob(f"*/{aid}")} - set(ready))
            api2 = _api_with(api, "CourseDirectory", student_id_exclude=",".join(excluded)) if excluded else api
            _check(api2.release_feedback(aid), f"release_feedback {aid}")
        if stale:
            line += f"; NOT returned to {', '.join(stale)}: they handed in again after grading (run `make grade`)"
        if unsent:
            line += f"; {', '.join(unsent)}: not handed in through the exchange (no submission secret)"
        ungraded = sorted({p.parent.name for p in (course / "submitted").glob(f"*/{aid}") if p.is_dir()} - with_pages)
        if ungraded:  # collected, never graded: nothing to return yet
            line += f"; not graded yet: {', '.join(ungraded)} (run `make grade`, then return feedback again)"
        lines.append(line)
    return lines


def lay_out(course: Path, edition: str) -> None:
    """Lay out an edition's course folder: English by the notebook generator (`--check`: it rebuilds
    build/course and stops when notebooks/ is out of date), another edition by `layout_edition`. Either is
    skipped when its content stamp (tools/stamp.py) says nothing changed since it last passed: no input, no
    generated file, not the course's own source/ and release/ (the gradebook there)."""
    from tools.stamp import edition_stamp, notebooks_stamp

    stamp = edition_stamp(course, edition) if edition else notebooks_stamp()
    if (course / "gradebook.db").is_file() and stamp.fresh():
        return
    if not edition:
        if subprocess.run([sys.executable, "-m", "tools.generate_notebooks", "--check"], cwd=ROOT).returncode:
            raise HandinError("notebooks/ is out of date: `make notebooks`, commit, then run this again")
        return  # the check writes the stamp when it passes
    for line in layout_edition(course, edition, []):
        print(line)
    stamp.write()


ROSTER_USAGE = "usage: make roster ROSTER=students.csv  (columns: id,first_name,last_name,email)"
AUTOGRADER = ("grade", "export")  # `python -m autograder` commands, run on the course this resolves


# ------------------------------------------------------------------ command line
def _parser() -> argparse.ArgumentParser:
    """The command line: one sub-command per step (the module docstring)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False
    )
    parser.add_argument("--edition", default="", choices=["", "en", *EDITIONS], help="an edition's course")
    parser.add_argument("--course", type=Path, default=None, help="nbgrader course folder (default build/course)")
    parser.add_argument("--exchange", type=Path, default=None, help="exchange folder (default: nbgrader config)")
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("roster", help="import students into the gradebook")
    r.add_argument("csv", type=str)
    for name in AUTOGRADER:
        sub.add_parser(name, help=f"python -m autograder {name} on this course", add_help=False)
    for name in ("release", "collect", "return-feedback"):
        p = sub.add_parser(name)
        p.add_argument("ids", nargs="*", help="assignment ids (default: all)")
        if name != "release":  # return-feedback collects first
            _intake_options(p)
    lay = sub.add_parser("layout", help="lay out an edition's nbgrader course (from solutions/LANG, notebooks/LANG)")
    lay.add_argument("--edition", dest="layout_edition", default=None, choices=EDITIONS)
    lay.add_argument("ids", nargs="*", help="assignment ids (default: all)")
    return parser


def _intake_options(p: argparse.ArgumentParser) -> None:
    """What collect takes from inbound/: whose hand-ins (owners) and how much (autograder.intake.inbound)."""
    p.add_argument(
        "--student-user",
        default="{student}",
        metavar="FORMAT",
        help="the Unix user of student ID, who must own their hand-ins (default: {student})",
    )
    p.add_argument(
        "--class-user",
        default=None,
        metavar="NAME",
        help="for ids that are no Unix user (one machine): the OS user they all run as "
        "(default: the user running this)",
    )
    p.add_argument(
        "--max-files",
        type=int,
        default=intake.Limits.max_files,
        help=f"files and folders per hand-in (default {intake.Limits.max_files})",
    )
    p.add_argument(
        "--max-bytes",
        type=int,
        default=intake.Limits.max_bytes,
        help=f"bytes per hand-in (default {intake.Limits.max_bytes})",
    )


def main(argv=None) -> int:
    parser = _parser()
    args, rest = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    if args.command not in AUTOGRADER and rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    edition = "" if args.edition == "en" else args.edition
    course = (args.course or built_course(edition)).resolve()
    try:
        if args.command in AUTOGRADER:
            from autograder.__main__ import main as autograder

            return autograder([args.command, "--course", str(course), *rest])
        if args.command == "layout":
            if args.layout_edition or edition:
                for line in layout_edition(course, args.layout_edition or edition, args.ids):
                    print(line)
            else:
                lay_out(course, "")
            return 0
        for line in _step(args, course, edition):
            print(line)
        return 0
    except HandinError as err:
        sys.stderr.write(f"handin: error: {err}\n")
        return 1


def _step(args: argparse.Namespace, course: Path, edition: str) -> list[str]:
    """roster, release, collect or return-feedback on `course` (laid out first where it must be): what it says."""
    if args.command == "roster" and not args.csv:
        raise HandinError(ROSTER_USAGE)
    if args.command == "release" and course == built_course(edition).resolve():
        lay_out(course, edition)  # the release is what solutions/ generates
    elif args.command in ("roster", "release") and not (course / "nbgrader_config.py").is_file():
        lay_out(course, edition)
    if args.command == "roster":
        n = import_roster(course, Path(args.csv))
        return [f"{n} student(s) from {args.csv} are in {course / 'gradebook.db'}"]
    exchange = args.exchange.resolve() if args.exchange else None
    if args.command == "release":
        return release(course, exchange, args.ids)
    limits = intake.Limits(max_files=args.max_files, max_bytes=args.max_bytes)
    step = {"collect": collect, "return-feedback": return_feedback}[args.command]
    return step(course, exchange, args.ids, student_user=args.student_user, class_user=args.class_user, limits=limits)


if __name__ == "__main__":
    sys.exit(main())
