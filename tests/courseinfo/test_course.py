"""courseinfo/course.py is the one place for the course's ids, editions, languages and folders.

The tools run as modules (`python -m tools.NAME`) from any folder, since the course package installs
`tools` (the hub's graders may pass the checkout's root but not list it); neither they nor the
website edit sys.path; the course ids are spelled only in courseinfo/course.py (the Python of tools/,
hub/ and jupyter/ reads them from there), and the website's settings (website/settings.py, which
Sphinx also imports, in the site's own venv without the course package) take its editions and folders.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from courseinfo import course

ROOT = Path(__file__).resolve().parents[2]
READERS = ("tools", "hub", "jupyter", "website", "autograder", "namedaxes")  # read the ids from courseinfo.course


def _python_files(*folders: str) -> list[Path]:
    return [p for folder in folders for p in sorted((ROOT / folder).rglob("*.py"))]


def test_the_ids_and_folders_of_each_edition():
    assert course.COURSES == ("namedaxes", "namedaxes-zh")
    assert [course.edition_of(c) for c in course.COURSES] == ["", "zh"]
    assert course.course_id() == course.course_id("en") == "namedaxes"
    assert course.built_course() == ROOT / "build" / "course"
    assert course.built_course("zh") == ROOT / "build" / "zh" / "course"
    assert course.edition_folder(course.SOLUTIONS, "zh") == ROOT / "solutions" / "zh"
    assert course.notebook_ids() == sorted(p.stem for p in (ROOT / "solutions").glob("*.ipynb"))
    assert course.notebook_ids()[0] == "01_axis_names"


@pytest.mark.parametrize("bad", ["fr", "zh ", "ZH"])
def test_an_unknown_edition_or_course_is_an_error(bad):
    with pytest.raises(ValueError, match=rf"unknown edition {re.escape(repr(bad))} \(known: zh\)"):
        course.course_id(bad)
    with pytest.raises(ValueError, match=r"unknown course 'namedaxes-fr' \(known: namedaxes, namedaxes-zh\)"):
        course.edition_of("namedaxes-fr")


def test_no_tool_or_website_module_edits_sys_path():
    edits = []
    for path in _python_files("tools", "website", "courseinfo"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and node.attr == "path"
                and isinstance(node.value, ast.Name)
                and node.value.id == "sys"
            ):
                edits.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not edits, f"reads or edits sys.path (import tools.X, website.X instead): {edits}"


def test_only_tools_course_spells_the_course_ids():
    spelled = []
    for path in _python_files(*READERS):
        if path == ROOT / "courseinfo" / "course.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in course.COURSES[1:]:
                spelled.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}")
    assert not spelled, f"course ids spelled outside courseinfo/course.py (use courseinfo.course): {spelled}"


def test_the_makefile_spells_no_course_fact():
    """The Makefile passes the variables it was given (EDITION, HUB, COURSE, ...) to the Python it runs, which
    resolves them from courseinfo.course: no course id, edition folder or built course in the Makefile."""
    make = (ROOT / "Makefile").read_text()
    facts = [*course.COURSES[1:], "build/course", "build/zh", "notebooks/zh", "solutions/zh", "build/exchange"]
    spelled = [fact for fact in facts if fact in make]
    assert not spelled, f"the Makefile spells what courseinfo/course.py says: {spelled}"
    assert "EDITION" in make and "--edition" not in make, "EDITION reaches the tools as an option of $(call opts,...)"
    by_path = re.findall(r"python\S*\"? \S*(?:tools|website)/\w+\.py", make)
    assert not by_path, f"the Makefile runs tools by path (use python -m tools.NAME): {by_path}"


def test_a_tool_runs_as_a_module_from_another_folder(tmp_path):
    for tool in ("handin", "generate_notebooks"):
        out = subprocess.run(
            [sys.executable, "-m", f"tools.{tool}", "--help"], cwd=tmp_path, capture_output=True, text=True
        )
        assert out.returncode == 0 and "usage:" in out.stdout, (tool, out.stdout, out.stderr)


def test_the_site_has_the_same_editions_notebooks_and_folders():
    """In the site's own venv, as Sphinx imports it (conf.py): from the checkout's root, without the course package."""
    site_python = ROOT / ".venv-site" / "bin" / "python"
    python = str(site_python) if site_python.exists() else sys.executable
    code = "from website import settings as s; print(list(s.EDITIONS), s.notebook_ids(), s.SOLUTIONS, s.RELEASE)"
    out = subprocess.run([python, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert (
        out.split("\n")[0] == f"{list(course.LANGUAGES)} {course.notebook_ids()} {course.SOLUTIONS} {course.NOTEBOOKS}"
    )
    from website import settings

    for lang in course.LANGUAGES:
        assert settings.folder(course.NOTEBOOKS, lang) == course.edition_folder(course.NOTEBOOKS, lang)
