"""What the course's source notebooks say for the class report: the course id (nbgrader_config.py),
each assignment's title (its first heading), each exercise's name (its test cell's one-line
docstring) and the section that teaches it (the last `##` heading above its test cell). Trusted input
(the instructor's course), all optional: the report works without it.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..course.discovery import repo_root

__all__ = ["CourseInfo", "course_info", "default_course"]


# ---------------------------------------------------------------- the course: names for things
@dataclass
class CourseInfo:
    """What the source notebooks say about the course (all optional: the report works without them)."""

    course_id: str = ""
    titles: dict[str, str] = field(default_factory=dict)  # assignment -> first heading
    exercises: dict[str, dict[str, str]] = field(default_factory=dict)  # assignment -> grade_id -> docstring
    sections: dict[str, dict[str, str]] = field(default_factory=dict)  # assignment -> grade_id -> heading above it
    sections_zh: dict[str, dict[str, str]] = field(default_factory=dict)  # the same, the Chinese edition's headings
    checks: dict[str, dict[str, str]] = field(default_factory=dict)  # assignment -> grade_id -> `q.<name>.check`
    modules: dict[str, str] = field(default_factory=dict)  # assignment -> its exercise module (`... import <m> as q`)
    folder: str = ""


def _docstring(source: str) -> str:
    """The first line of a test cell's docstring ("" if it has none or does not parse)."""
    code = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!")))
    try:  # (IPython magics and shell lines are not Python)
        doc = ast.get_docstring(ast.parse(code))
    except (SyntaxError, ValueError):
        match = re.match(r'\s*(?:"""|\'\'\')(.+?)(?:"""|\'\'\'|$)', code, re.S)
        doc = match.group(1) if match else None
    return " ".join(doc.strip().splitlines()[0].split()) if doc and doc.strip() else ""


def _heading(cells: list) -> str:
    from ..course.notebooks import cell_source

    for cell in cells:
        if isinstance(cell, dict) and cell.get("cell_type") == "markdown":
            for line in cell_source(cell).splitlines():
                if line.startswith("#"):
                    return line.lstrip("#").strip()
    return ""


def _section(cells: list) -> str:
    """The last section heading (`## ...`, not a title or a subsection such as an exercise's) in `cells`."""
    from ..course.notebooks import cell_source

    found = ""
    for cell in cells:
        if isinstance(cell, dict) and cell.get("cell_type") == "markdown":
            for line in cell_source(cell).splitlines():
                if line.startswith("## "):
                    found = line[3:].strip()
    return found


_MODULE = re.compile(r"^\s*from namedaxes\.exercises import (\w+) as q\b", re.M)
_CHECKED = re.compile(r"^\s*q\.(\w+)\.check\(", re.M)


def _course_id(course: Path) -> str:
    config = course / "nbgrader_config.py"
    if not config.is_file():
        return ""
    try:  # the instructor's own config file, loaded as nbgrader loads it
        from traitlets.config.loader import PyFileConfigLoader

        loaded = PyFileConfigLoader(config.name, path=str(course)).load_config()
        value = loaded.CourseDirectory.get("course_id", "")
    except Exception:  # noqa: BLE001 - a broken config only costs the title its course name
        return ""
    return value if isinstance(value, str) else ""


def _source_notebooks(course: Path | None) -> dict[str, Path]:
    """<course>/source/<id>/<one>.ipynb, else the repository's solutions/<id>.ipynb (as the grader finds them)."""
    found: dict[str, Path] = {}
    if course is not None and (course / "source").is_dir():
        for folder in sorted(p for p in (course / "source").iterdir() if p.is_dir()):
            nbs = sorted(folder.glob("*.ipynb"))
            if len(nbs) == 1:
                found[folder.name] = nbs[0]
    if not found:
        found = {p.stem: p for p in sorted((repo_root() / "solutions").glob("*.ipynb"))}
    return found


def default_course(out: Path) -> Path | None:
    """OUT's parent when it is an nbgrader course (course mode writes COURSE/grades), else build/course."""
    out = Path(out).resolve()
    if (out.parent / "nbgrader_config.py").is_file() and (out.parent / "source").is_dir():
        return out.parent
    built = repo_root() / "build" / "course"
    return built if built.is_dir() else None


def course_info(course: Path | None, assignments: list[str]) -> CourseInfo:
    """Titles and exercise names for `assignments` from the course's source notebooks."""
    from courseinfo.nbgrader_metadata import nbgrader_cell

    from ..course.notebooks import cell_source

    info = CourseInfo(course_id=_course_id(course) if course else "", folder=str(course or ""))
    paths = _source_notebooks(course)
    for aid in assignments:
        if aid not in paths:
            continue
        try:
            nb = json.loads(paths[aid].read_text(encoding="utf-8"))
            cells = nb["cells"] if isinstance(nb.get("cells"), list) else []
        except (OSError, ValueError, AttributeError, KeyError):
            continue
        info.titles[aid] = _heading(cells)
        names, sections, checks, heading = {}, {}, {}, ""
        for cell in cells:
            meta, source = nbgrader_cell(cell), cell_source(cell)
            module = _MODULE.search(source) if isinstance(cell, dict) and cell.get("cell_type") == "code" else None
            if module and aid not in info.modules:
                info.modules[aid] = module.group(1)
            if meta.is_test and meta.grade_id:
                names[meta.grade_id] = _docstring(source)
                sections[meta.grade_id] = heading
                checked = _CHECKED.search(source)
                if checked:
                    checks[meta.grade_id] = checked.group(1)
            heading = _section([cell]) or heading
        info.exercises[aid] = names
        info.sections[aid] = sections
        info.checks[aid] = checks
        info.sections_zh[aid] = _edition_sections(aid)
    return info


def _edition_sections(aid: str) -> dict[str, str]:
    """grade_id -> the section heading above its test cell in the Chinese edition (solutions/zh/, the same
    grade ids), so the report's Chinese line names the section as a Chinese reader finds it."""
    from courseinfo.nbgrader_metadata import nbgrader_cell

    try:
        nb = json.loads((repo_root() / "solutions" / "zh" / f"{aid}.ipynb").read_text(encoding="utf-8"))
        cells = nb["cells"] if isinstance(nb.get("cells"), list) else []
    except (OSError, ValueError, AttributeError, KeyError):
        return {}
    found, heading = {}, ""
    for cell in cells:
        meta = nbgrader_cell(cell)
        if meta.is_test and meta.grade_id:
            found[meta.grade_id] = heading
        heading = _section([cell]) or heading
    return found
