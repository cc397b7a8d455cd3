"""Which assignments there are: the nbgrader source notebooks of a course, and their editions.

The course is one source in several languages (English, and editions generated from it such as
`solutions/zh/`): the code, grade ids, points and cell order of an edition are the English
source's; only prose (markdown, comments) differs. Grading always uses the English source as
the reference (its reference run, its observations), whichever edition a course folder holds:

- a course whose source notebooks say `metadata.namedaxes.language = "zh"` (e.g. `build/zh/course`)
  is graded against `solutions/<id>.ipynb`, the English source of the same assignment; its own
  notebook becomes the "zh" edition;
- otherwise each English source gets the editions the repository has (`solutions/<lang>/<id>.ipynb`).

An edition is attached only when `edition_problem` finds its cells the reference's: same number,
types, cell ids and nbgrader metadata, and code cells with the same Python tokens (comments
aside, and the words of the labels the code prints: `courseinfo.labels.canonical`, the rule the
generator translates them by). A course folder whose edition does not match stops grading (GraderError); a repository
edition that does not match is recorded in `SourceNotebook.edition_problems`, and submissions in
that language are refused (status error) rather than graded on mixed cells.
"""

from __future__ import annotations

import importlib.util
import io
import tokenize
from pathlib import Path

from courseinfo.nbgrader_metadata import nbgrader_dict

from ..messages import LANGUAGES, submission_language
from ..records import GraderError
from .notebooks import SourceNotebook, cell_source

__all__ = ["repo_root", "package_dir", "discover_sources", "edition_problem", "code_tokens"]

# nbgrader metadata that must agree between editions (everything nbgrader grades by)
_NBGRADER_KEYS = ("grade", "grade_id", "locked", "points", "solution", "task")


def repo_root() -> Path:
    return Path(__file__).resolve().parents[2]


def package_dir(name: str) -> Path | None:
    """The folder of an importable package (without importing it)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def course_assignments(course: Path) -> list[str]:
    """Every assignment of the course, graded in this run or not (what its deadlines.toml may name)."""
    return list(_source_paths(course))


def _source_paths(course: Path) -> dict[str, Path]:
    """<course>/source/<id>/<id>.ipynb, else the repository's solutions/<id>.ipynb, by assignment id."""
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
    return found


def discover_sources(course: Path, only: list[str]) -> dict[str, SourceNotebook]:
    """Source notebooks: <course>/source/<id>/<id>.ipynb, else the repository's solutions/<id>.ipynb."""
    source_dir = course / "source"
    found = _source_paths(course)
    if only:
        unknown = sorted(set(only) - set(found))
        if unknown:
            raise GraderError(f"unknown assignment(s): {', '.join(unknown)} (known: {', '.join(found) or 'none'})")
        found = {k: v for k, v in found.items() if k in only}
    if not found:
        raise GraderError(f"no source notebooks found (looked in {source_dir} and {repo_root() / 'solutions'})")
    sources = {}
    for aid, path in found.items():
        course_edition = None
        try:
            sources[aid] = SourceNotebook.load(aid, path)
        except Exception as err:
            raise GraderError(f"cannot read the source notebook {path}: {err}") from err
        lang = submission_language(sources[aid].nb)
        if lang != "en":  # an edition's course: grade against the English source
            english = repo_root() / "solutions" / f"{aid}.ipynb"
            if not english.is_file():
                raise GraderError(
                    f"{path} is the '{lang}' edition of {aid}, but its English source "
                    f"{english} (the reference) is missing"
                )
            course_edition, path = (lang, path), english
            try:
                sources[aid] = SourceNotebook.load(aid, path)
            except Exception as err:
                raise GraderError(f"cannot read the source notebook {path}: {err}") from err
        if not sources[aid].test_cells:
            raise GraderError(f"{path}: no graded test cells")
        attach_editions(sources[aid], course_edition)
    return sources


def attach_editions(source: SourceNotebook, course_edition: tuple[str, Path] | None = None) -> None:
    """Give `source` its editions in other languages (see the module docstring)."""
    candidates = {
        lang: repo_root() / "solutions" / lang / f"{source.assignment}.ipynb" for lang in LANGUAGES if lang != "en"
    }
    if course_edition is not None:
        candidates[course_edition[0]] = course_edition[1]
    for lang, path in candidates.items():
        if not path.is_file():
            continue
        try:
            edition = SourceNotebook.load(source.assignment, path).nb
            problem = edition_problem(source.nb, edition)
        except Exception as err:  # noqa: BLE001 - any failure to read an edition is that edition's problem
            problem = f"{path} is not readable ({type(err).__name__}: {err})"
        if problem is None and submission_language(edition) != lang:
            problem = f"{path} does not say it is the '{lang}' edition (metadata.namedaxes.language)"
        if problem is None:
            source.editions[lang] = edition
        elif course_edition is not None and lang == course_edition[0]:
            raise GraderError(
                f"{path} is not an edition of the reference {source.path}: {problem}. "
                f"Regenerate the editions (make notebooks) and lay out the course again."
            )
        else:
            source.edition_problems[lang] = problem


def code_tokens(code: str) -> list[tuple[int, str]] | str:
    """The Python tokens of a cell without comments, blank lines and a leading docstring (the code as Python runs it);
    the source itself when it is not Python that tokenize reads (IPython magics). An edition translates the
    labels the code prints: their words are left out (`courseinfo.labels.canonical`), their f-string fields kept."""
    from courseinfo.labels import canonical

    code = canonical(code)
    try:
        tokens = [
            (t.type, t.string)
            for t in tokenize.generate_tokens(io.StringIO(code).readline)
            if t.type not in (tokenize.COMMENT, tokenize.NL)
        ]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return code
    if len(tokens) >= 2 and tokens[0][0] == tokenize.STRING and tokens[1][0] in (tokenize.NEWLINE, tokenize.ENDMARKER):
        tokens = tokens[2:]  # a leading docstring is prose (an edition translates a test cell's), not code
    return tokens


def edition_problem(reference, edition) -> str | None:
    """None when `edition` has `reference`'s cells (prose aside), else what differs first."""
    ref_cells, ed_cells = reference.cells, edition.cells
    if len(ref_cells) != len(ed_cells):
        return f"{len(ed_cells)} cells, the reference has {len(ref_cells)}"
    for i, (r, e) in enumerate(zip(ref_cells, ed_cells)):
        where = f"cell {i}" + (f" ('{r.get('id')}')" if r.get("id") else "")
        if r.get("cell_type") != e.get("cell_type"):
            return f"{where} is a {e.get('cell_type')} cell, the reference's a {r.get('cell_type')} cell"
        if r.get("id") != e.get("id"):
            return f"{where} has the cell id {e.get('id')!r}"
        rm, em = nbgrader_dict(r), nbgrader_dict(e)
        if any(rm.get(k) != em.get(k) for k in _NBGRADER_KEYS):
            return f"{where} has other nbgrader metadata"
        if r.get("cell_type") == "code" and code_tokens(cell_source(r)) != code_tokens(cell_source(e)):
            return f"{where} has other code"
    return None
