"""The student's own workspace: seeded from the release, never overwritten, merged on request.

    python -m tools.workspace prepare work/                 # `make lab`: create, seed missing notebooks, report
    python -m tools.workspace prepare work-alice/ --no-seed # class mode: assignments come from the exchange
    python -m tools.workspace update work/ [--release DIR] [--edition zh=DIR] [--yes]   # `make update-work`

Design
- `notebooks/` is the release (generated, committed, checked for drift); students never work in it.
  `make lab` opens a workspace (default `work/`, git-ignored). `prepare` copies a release notebook
  into the workspace only when the workspace has no copy of it yet: it never writes over a file.
- Next to each seeded or merged notebook the workspace keeps the release it came from
  (`.release/<id>.ipynb`, the *base*). Comparing base, workspace and new release tells who changed
  what, so `update` is a three-way merge, cell by cell (cells are matched by nbgrader `grade_id`,
  else by the nbformat cell id, which JupyterLab preserves):
    * answer cells (nbgrader `solution`) keep the student's source and outputs, with the release's metadata;
    * locked and test cells, and cells the student did not edit, come from the new release;
    * cells the student edited that the release left alone are kept; cells the student added are
      kept after the cell they followed;
    * a *conflict* is student work the merge would drop: an edited cell the release also changed,
      an answer or edited cell the release removed. Conflicts are listed and need a "yes"
      (a prompt on a terminal, `--yes` otherwise); without it nothing is written.
  Before any notebook is rewritten, the current file is copied to `.backups/<time>/`.
- Two layouts are understood, for workspace and release alike: `<id>.ipynb` (seeded from
  notebooks/) and `<id>/<id>.ipynb` (nbgrader's fetched layout, and its exchange's `outbound/`).
- Editions in other languages (`EDITIONS`: "zh") live in a subfolder named like the language, in
  the release (`notebooks/zh/`) and in the workspace (`work/zh/`): each is a workspace of its own
  (its own `.release/` bases and `.backups/`) seeded and merged by the same rules. `prepare` seeds
  every edition the release has; `update` merges every edition whose workspace folder exists (a
  class student's `work-ID/zh/` exists once they fetched the Chinese course), from `release/<lang>`
  or the folder `--edition LANG=DIR` names (the exchange's `namedaxes-zh/outbound`). Conflicts of
  all editions are listed together and need one "yes". The language of a notebook travels in its
  metadata (`metadata.namedaxes.language`) and in the folder name, so kernels started on
  `work/zh/` notebooks speak Chinese (namedaxes.i18n).
- Bad input (unreadable JSON, a folder that is a file) is reported and nothing is written.
"""

from __future__ import annotations

import argparse
import copy
import datetime as _dt
import hashlib
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from courseinfo.course import EDITIONS, NOTEBOOKS
from courseinfo.nbgrader_metadata import nbgrader_cell

RELEASE = NOTEBOOKS
BASE_DIR = ".release"
BACKUP_DIR = ".backups"
# Outputs and counters the student's own run produced; everything else about a cell is content.
RUN_KEYS = ("outputs", "execution_count")
# Editions in other languages: the subfolder of a release and of a workspace that holds each.


class WorkspaceError(Exception):
    """A problem the student must fix (bad path, unreadable notebook); nothing has been written."""


# ------------------------------------------------------------------ notebooks and cells
def read_nb(path: Path):
    try:
        return nbformat.read(str(path), as_version=4)
    except Exception as err:  # any parse problem is the same problem for the student
        raise WorkspaceError(f"{path} is not a readable notebook ({type(err).__name__}: {err})") from err


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def release_notebooks(release: Path) -> dict[str, Path]:
    """Assignment id -> notebook, for a folder of <id>.ipynb or of <id>/<id>.ipynb."""
    if not release.is_dir():
        raise WorkspaceError(f"release folder not found: {release}")
    found = {p.stem: p for p in sorted(release.glob("*.ipynb"))}
    for folder in sorted(p for p in release.iterdir() if p.is_dir() and not p.name.startswith(".")):
        nb = folder / f"{folder.name}.ipynb"
        if nb.is_file():
            found.setdefault(folder.name, nb)
    return found


def edition_releases(release: Path) -> dict[str, Path]:
    """Language -> the release folder of that edition, for the editions `release` has (release/zh/)."""
    return {lang: release / lang for lang in EDITIONS if (release / lang).is_dir()}


def parse_edition(text: str) -> tuple[str, Path]:
    """`zh=DIR` (the --edition option) -> ("zh", DIR); an unknown language is an error."""
    lang, sep, folder = text.partition("=")
    if not sep or lang not in EDITIONS or not folder:
        raise WorkspaceError(f"--edition {text!r}: use LANG=DIR with LANG one of {', '.join(EDITIONS)}")
    return lang, Path(folder)


def work_notebook(work: Path, aid: str) -> Path | None:
    """The student's copy of assignment `aid`, in either layout, or None."""
    for path in (work / f"{aid}.ipynb", work / aid / f"{aid}.ipynb"):
        if path.is_file():
            return path
    return None


def cell_key(cell) -> str | None:
    gid = nbgrader_cell(cell).grade_id
    if gid:
        return f"grade:{gid}"
    cid = cell.get("id")
    return f"id:{cid}" if cid else None


def is_answer(cell) -> bool:
    return nbgrader_cell(cell).solution


def is_locked(cell) -> bool:
    meta = nbgrader_cell(cell)
    return meta.locked_flag or meta.is_test


def _source(cell) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _label(cell) -> str:
    gid = nbgrader_cell(cell).grade_id
    first = next((ln for ln in _source(cell).splitlines() if ln.strip()), "")[:60]
    return f"{cell.get('cell_type', 'cell')} cell " + (f"'{gid}'" if gid else f'"{first}"')


# ------------------------------------------------------------------ the merge
@dataclass
class Merge:
    notebook: object
    kept_answers: list[str] = field(default_factory=list)
    kept_edits: list[str] = field(default_factory=list)
    kept_added: int = 0
    from_release: list[str] = field(default_factory=list)  # cells the new release changed or added
    conflicts: list[str] = field(default_factory=list)


def _with_run(target, ran) -> None:
    """Give `target` the outputs of `ran` when they belong to the same code."""
    if target.get("cell_type") == "code" and ran.get("cell_type") == "code" and _source(target) == _source(ran):
        for k in RUN_KEYS:
            if k in ran:
                target[k] = copy.deepcopy(ran[k])


def merge(base, work, release) -> Merge:
    """Three-way merge of a workspace notebook (see the module docstring). `base` may be None."""
    base_cells = {cell_key(c): c for c in base.cells if cell_key(c)} if base is not None else None
    release_keys = {cell_key(c) for c in release.cells if cell_key(c)}
    work_cells = {cell_key(c): c for c in work.cells if cell_key(c)}

    def from_base(key) -> bool:  # a release cell (not one the student added)
        return key in release_keys if base_cells is None else key in base_cells

    # student-added cells, grouped by the release cell they follow (None: the top)
    added: dict[str | None, list] = {}
    anchor = None
    for c in work.cells:
        k = cell_key(c)
        if k is None or not from_base(k):
            added.setdefault(anchor, []).append(c)
        else:
            anchor = k
    out = Merge(notebook=copy.deepcopy(release))
    cells = []
    placed_anchors = {None}

    def edited(w) -> bool:  # did the student change this release cell?
        b = base_cells.get(cell_key(w)) if base_cells is not None else None
        return b is None or _source(w) != _source(b)

    for r in release.cells:
        k = cell_key(r)
        w = work_cells.get(k) if k else None
        cell = copy.deepcopy(r)
        if w is None or is_locked(r):
            if w is not None:
                _with_run(cell, w)
        elif is_answer(r):
            for key in ("source", "attachments", *RUN_KEYS):
                if key in w:
                    cell[key] = copy.deepcopy(w[key])
            if _source(w) != _source(r):
                out.kept_answers.append(nbgrader_cell(r).grade_id or k)
        elif _source(w) == _source(r):
            _with_run(cell, w)
        elif not edited(w):
            pass  # the release changed it, the student did not
        else:
            b = base_cells.get(k) if base_cells is not None else None
            if b is not None and _source(b) == _source(r):
                cell = copy.deepcopy(w)  # only the student changed it: keep theirs
                out.kept_edits.append(_label(w))
            else:
                out.conflicts.append(
                    f"{_label(w)}: you edited it and the new release changed it (the merge takes the release's version)"
                )
        b = base_cells.get(k) if base_cells is not None else None
        if b is None or _source(b) != _source(r):  # the instructor added or changed this cell
            out.from_release.append(_label(r))
        cells.append(cell)
        if k in added:
            cells.extend(copy.deepcopy(added[k]))
            out.kept_added += len(added[k])
            placed_anchors.add(k)
    cells[0:0] = copy.deepcopy(added.get(None, []))
    out.kept_added += len(added.get(None, []))
    for k, group in added.items():  # added after a cell the release removed
        if k not in placed_anchors:
            cells.extend(copy.deepcopy(group))
            out.kept_added += len(group)
    for k, w in work_cells.items():  # release cells the new release removed
        if k in release_keys or not from_base(k):
            continue
        if edited(w):
            out.conflicts.append(
                f"{_label(w)}: the new release no longer has this cell (your version stays in the backup)"
            )
    out.notebook.cells = cells
    return out


# ------------------------------------------------------------------ workspace operations
def _check_folder(work: Path) -> None:
    if work.exists() and not work.is_dir():
        raise WorkspaceError(f"{work} exists and is not a folder")


def _record_base(work: Path, aid: str, release_nb: Path) -> None:
    base = work / BASE_DIR / f"{aid}.ipynb"
    base.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(release_nb, base)


def prepare(
    work: Path, release: Path = RELEASE, seed: bool = True, editions: dict[str, Path] | None = None
) -> dict[str, list[str]]:
    """Create the workspace; copy release notebooks it lacks (never overwrite). Returns a report.

    `editions` (default: those `release` has, when seeding): language -> release folder; each is
    prepared in `work/<language>/` the same way, reported as `<language>/<id>`."""
    _check_folder(work)
    if editions is None:
        editions = edition_releases(release) if seed else {}
    for lang in editions:
        _check_folder(work / lang)
    report = _prepare_one(work, release, seed)
    for lang, folder in sorted(editions.items()):
        sub = _prepare_one(work / lang, folder, seed)
        for key in report:
            report[key] += [f"{lang}/{aid}" for aid in sub[key]]
    return report


def _prepare_one(work: Path, release: Path, seed: bool) -> dict[str, list[str]]:
    notebooks = release_notebooks(release)
    work.mkdir(parents=True, exist_ok=True)
    report: dict[str, list[str]] = {"seeded": [], "newer": []}
    for aid, src in notebooks.items():
        mine = work_notebook(work, aid)
        if mine is None:
            if not seed:
                continue
            dest = work / f"{aid}.ipynb"
            tmp = dest.with_name(dest.name + ".tmp")
            shutil.copyfile(src, tmp)
            tmp.replace(dest)
            _record_base(work, aid, src)
            report["seeded"].append(aid)
            continue
        base = work / BASE_DIR / f"{aid}.ipynb"
        if base.is_file() and _digest(base) != _digest(src):
            report["newer"].append(aid)
    return report


def _backup(work: Path, files: list[Path], stamp: str) -> Path:
    folder, n = work / BACKUP_DIR / stamp, 1
    while folder.exists():  # never reuse a backup folder (two updates in one second)
        n += 1
        folder = work / BACKUP_DIR / f"{stamp}-{n}"
    for f in files:
        dest = folder / f.relative_to(work)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(f, dest)
    return folder


def plan_update(work: Path, release: Path = RELEASE) -> dict[str, tuple[Path, Path, Merge | None]]:
    """aid -> (workspace notebook, release notebook, merge or None for a new notebook); up-to-date ones left out."""
    _check_folder(work)
    if not work.is_dir():
        raise WorkspaceError(f"no workspace at {work} yet (`make lab` creates it)")
    plan = {}
    for aid, src in release_notebooks(release).items():
        mine = work_notebook(work, aid)
        if mine is None:
            plan[aid] = (work / f"{aid}.ipynb", src, None)
            continue
        base_path = work / BASE_DIR / f"{aid}.ipynb"
        if base_path.is_file() and _digest(base_path) == _digest(src):
            continue
        base = read_nb(base_path) if base_path.is_file() else None
        result = merge(base, read_nb(mine), read_nb(src))
        plan[aid] = (mine, src, result)
    return plan


def plan_editions(
    work: Path, release: Path = RELEASE, editions: dict[str, Path] | None = None
) -> list[tuple[str, Path, Path, dict]]:
    """[(label prefix, workspace folder, release folder, plan)] for the workspace and each edition
    whose workspace folder exists (`editions` default: those `release` has)."""
    plans = [("", work, release, plan_update(work, release))]
    for lang, folder in sorted((edition_releases(release) if editions is None else editions).items()):
        if (work / lang).is_dir() and folder.is_dir():
            plans.append((f"{lang}/", work / lang, folder, plan_update(work / lang, folder)))
    return plans


def apply_update(work: Path, plan: dict, stamp: str | None = None) -> Path | None:
    """Back up every notebook about to change, then write the merged notebooks. Returns the backup folder."""
    stamp = stamp or _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    changing = [mine for mine, _, result in plan.values() if result is not None]
    backup = _backup(work, changing, stamp) if changing else None
    for aid, (mine, src, result) in plan.items():
        if result is None:
            shutil.copyfile(src, mine)
        else:
            tmp = mine.with_name(mine.name + ".tmp")
            nbformat.write(result.notebook, str(tmp))
            tmp.replace(mine)
        _record_base(work, aid, src)
    return backup


def _ask(question: str) -> bool:
    try:
        return input(question + " [y/N] ").strip().lower() in ("y", "yes")
    except EOFError:
        return False


# ------------------------------------------------------------------ command line
def _cmd_prepare(args) -> int:
    if args.student is not None:
        from tools.handin import HandinError, check_student_id  # one rule for ids, shared with the instructor side

        try:
            check_student_id(args.student, "STUDENT=: ")
        except HandinError as err:
            raise WorkspaceError(str(err)) from err
    report = prepare(args.work, args.release, seed=not args.no_seed)
    if args.student:
        print(
            f"workspace {args.work}: you hand in as {args.student!r}; fetch, validate and submit your "
            f"assignments in Nbgrader > Assignment List"
        )
    if report["seeded"]:
        print(
            f"workspace {args.work}: copied {len(report['seeded'])} notebook(s) from {args.release} "
            f"({', '.join(report['seeded'])}); they are yours now, nothing overwrites them"
        )
    if report["newer"]:
        print(
            f"workspace {args.work}: a newer release of {', '.join(report['newer'])} is in {args.release}; "
            f"`make update-work` merges it in, keeping your answers"
        )
    return 0


def _cmd_update(args) -> int:
    editions = dict(parse_edition(e) for e in args.edition) if args.edition else None
    plans = plan_editions(args.work, args.release, editions)
    if not any(plan for _, _, _, plan in plans):
        print(
            f"workspace {args.work} is up to date with {args.release}"
            + "".join(f" (and {work} with {release})" for prefix, work, release, _ in plans if prefix)
        )
        return 0
    conflicts = []
    for prefix, _, _, plan in plans:
        for aid, (_, _, result) in sorted(plan.items()):
            if result is None:
                print(f"  {prefix}{aid}: new notebook, copied")
                continue
            print(
                f"  {prefix}{aid}: {len(result.kept_answers)} answer(s) kept, {len(result.kept_edits)} edit(s) "
                f"kept, {result.kept_added} added cell(s) kept, {len(result.from_release)} cell(s) from the "
                f"new release"
            )
            conflicts += [f"{prefix}{aid}: {c}" for c in result.conflicts]
    if conflicts:
        print("These changes of yours would not survive the merge:")
        for c in conflicts:
            print(f"  - {c}")
        ok = args.yes or (sys.stdin.isatty() and _ask("Merge anyway (your current notebooks go to the backup)?"))
        if not ok:
            print(
                "Nothing changed. Copy what you want to keep, or run again with --yes "
                "(`make update-work YES=1`); a backup is made either way."
            )
            return 1
    print("Close these notebooks in JupyterLab (or reload them from disk) so an open tab does not save over the merge.")
    for _, work, release, plan in plans:
        if not plan:
            continue
        backup = apply_update(work, plan)
        if backup is not None:
            print(f"your previous notebooks are in {backup}")
        print(f"workspace {work} updated from {release}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare", help="create the workspace and copy in the notebooks it lacks")
    p.add_argument("work", type=Path)
    p.add_argument("--release", type=Path, default=RELEASE)
    p.add_argument("--no-seed", action="store_true", help="only create the folder (assignments come from the exchange)")
    p.add_argument("--student", help="the student id this workspace hands in as (checked, not stored)")
    u = sub.add_parser("update", help="merge a newer release into the workspace, keeping the student's answers")
    u.add_argument("work", type=Path)
    u.add_argument("--release", type=Path, default=RELEASE)
    u.add_argument("--yes", action="store_true", help="merge even where some of the student's edits cannot be kept")
    u.add_argument(
        "--edition",
        action="append",
        default=[],
        metavar="LANG=DIR",
        help="the release of an edition, merged into WORK/LANG when that folder exists "
        "(default: RELEASE/LANG for each edition the release has)",
    )
    args = parser.parse_args(argv)
    try:
        return _cmd_prepare(args) if args.command == "prepare" else _cmd_update(args)
    except WorkspaceError as err:
        sys.stderr.write(f"workspace: error: {err}\n")
        return 1


if __name__ == "__main__":
    sys.exit(main())
