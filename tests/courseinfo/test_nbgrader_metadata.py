"""`courseinfo.nbgrader_metadata`: one reader of nbgrader's cell metadata, for trusted and hostile notebooks."""

import ast
from pathlib import Path

import nbformat
import pytest

from courseinfo.nbgrader_metadata import NbgraderCell, nbgrader_cell, nbgrader_dict

ROOT = Path(__file__).resolve().parents[2]


def _cell(nbgrader, cell_type="code"):
    return nbformat.from_dict({"cell_type": cell_type, "metadata": {"nbgrader": nbgrader}, "source": ""})


def test_the_kinds_of_cell_read_as_nbgrader_writes_them():
    answer = nbgrader_cell(_cell({"grade_id": "f_answer", "solution": True, "grade": False, "locked": False}))
    test = nbgrader_cell(_cell({"grade_id": "f_total", "solution": False, "grade": True, "points": 2, "locked": True}))
    setup = nbgrader_cell(_cell({"grade_id": "setup", "solution": False, "grade": False, "locked": True}))
    assert (answer.solution, answer.is_test, answer.locked, answer.grade_id) == (True, False, False, "f_answer")
    assert (test.is_test, test.locked, test.points, test.grade_id) == (True, True, 2.0, "f_total")
    assert (setup.is_test, setup.locked, setup.solution) == (False, True, False)
    # nbgrader's rule: a graded cell is locked even if its flag says otherwise; an answer never is
    assert nbgrader_cell(_cell({"grade": True, "locked": False})).locked
    assert not nbgrader_cell(_cell({"solution": True, "locked": True})).locked


@pytest.mark.parametrize(
    "cell",
    [
        None,
        "a string",
        {"metadata": "not a dict"},
        {"metadata": {"nbgrader": ["x"]}},
        {"metadata": {"nbgrader": {"grade_id": ["x"], "solution": "true", "grade": 1, "points": "lots"}}},
        {"metadata": {"nbgrader": {"grade_id": "", "locked": "yes", "points": float("nan"), "checksum": 3}}},
        {"metadata": {"nbgrader": {"points": True, "task": "true"}}},
    ],
)
def test_hostile_metadata_reads_as_no_metadata_and_never_raises(cell):
    assert nbgrader_cell(cell) == NbgraderCell()


def test_points_as_written_and_the_raw_dict_for_code_that_edits_it():
    assert nbgrader_cell(_cell({"grade": True, "points": "1.5"})).points == 1.5
    meta = {"grade_id": "x", "checksum": "abc"}
    cell = _cell(meta)
    assert nbgrader_dict(cell) == meta and nbgrader_cell(cell).checksum == "abc"
    assert nbgrader_dict({"metadata": {}}) == {}


def test_the_course_sources_read_the_same_through_the_helper():
    """Every solution notebook: the helper gives exactly what the raw metadata says (no grade can change)."""
    for path in sorted((ROOT / "solutions").glob("[0-9]*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            raw = cell.metadata.get("nbgrader", {})
            meta = nbgrader_cell(cell)
            assert meta.grade_id == (raw.get("grade_id") or None)
            assert (meta.solution, meta.grade) == (bool(raw.get("solution")), bool(raw.get("grade")))
            assert meta.points == float(raw.get("points", 0) or 0)


def test_no_other_module_rereads_nbgrader_metadata():
    """The course package, the grader, the tools and the website ask the helper: no `.get("nbgrader")` left
    outside it, except code that copies or sanitises the dict itself (listed with why)."""
    allowed = {
        "autograder/publish/inert.py",  # sanitises the dict it writes into a feedback page (an allow-list)
        "tools/generate_notebooks.py",  # rewrites nbgrader's checksums in the dict itself
    }
    found = []
    for folder in ("courseinfo", "namedaxes", "autograder", "tools", "website", "hub"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel in allowed or rel == "courseinfo/nbgrader_metadata.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if (
                    isinstance(node, ast.Call)
                    and getattr(node.func, "attr", None) == "get"
                    and node.args
                    and isinstance(node.args[0], ast.Constant)
                    and node.args[0].value == "nbgrader"
                ):
                    found.append(f"{rel}:{node.lineno}")
    assert not found, found
