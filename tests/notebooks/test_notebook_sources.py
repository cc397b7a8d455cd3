"""Contracts of the instructor sources (solutions/) and the generated release (notebooks/)."""

import json
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted((ROOT / "solutions").glob("*.ipynb"))
RELEASES = sorted((ROOT / "notebooks").glob("*.ipynb"))
SLUG = re.compile(r"^[a-z0-9_]+$")
SOLUTION_BLOCK = re.compile(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", re.S)
HIDDEN_BLOCK = re.compile(r"### BEGIN HIDDEN TESTS\n(.*?)### END HIDDEN TESTS", re.S)


def _nb(path):
    return nbformat.read(path, as_version=4)


def _meta(cell):
    return cell.metadata.get("nbgrader", {})


def test_every_source_has_a_release():
    assert SOURCES, "no notebooks in solutions/"
    assert [p.name for p in SOURCES] == [p.name for p in RELEASES]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.stem)
def test_source_is_clean_and_starts_with_device_setup(path):
    nb = _nb(path)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not c.outputs and c.execution_count is None for c in code), "commit sources without outputs"
    first = code[0]
    assert "setup_devices()" in first.source and _meta(first).get("locked"), (
        "the first code cell must be the locked setup_devices() cell"
    )
    assert nb.metadata["kernelspec"]["name"] == "python3"
    assert "Learning goals" in nb.cells[0].source or "Learning goals" in nb.cells[1].source


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.stem)
def test_test_cells_have_docstring_slug_points_and_record(path):
    nb = _nb(path)
    tests = [c for c in nb.cells if _meta(c).get("grade")]
    answers = [c for c in nb.cells if _meta(c).get("solution")]
    assert len(answers) >= 2 and len(tests) >= 3, "at least 3 graded tests"
    for cell in tests:
        gid = _meta(cell)["grade_id"]
        assert SLUG.match(gid), f"grade_id {gid!r} is not a slug"
        assert _meta(cell).get("locked") and _meta(cell).get("points", 0) > 0, gid
        first = cell.source.splitlines()[0]
        assert first.startswith('"""') and first.endswith('"""') and len(first) > 10, (
            f"{gid}: the first line must be a one-line docstring"
        )
        hidden = HIDDEN_BLOCK.search(cell.source)
        assert hidden, f"{gid}: no hidden tests"
        assert f'record("{gid}",' in hidden.group(1), f"{gid}: hidden part must record under its own grade_id"
    for cell in answers:
        assert SOLUTION_BLOCK.search(cell.source), f"{_meta(cell)['grade_id']}: no solution markers"


def test_test_cell_grade_ids_are_unique_across_the_course():
    # the class report and feedback name tests by grade_id alone
    seen = {}
    for path in SOURCES:
        for cell in _nb(path).cells:
            gid = _meta(cell).get("grade_id")
            if gid and _meta(cell).get("grade"):
                assert gid not in seen, f"{gid} used in {path.name} and {seen[gid]}"
                seen[gid] = path.name


@pytest.mark.parametrize("path", RELEASES, ids=lambda p: p.stem)
def test_release_has_no_solutions_and_no_hidden_tests(path):
    text = path.read_text()
    for marker in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"):
        assert marker not in text, f"{path.name} leaks {marker!r}"
    source = _nb(ROOT / "solutions" / path.name)
    released = "\n".join(c.source for c in _nb(path).cells)
    # lines the source also shows outside solution/hidden blocks (e.g. in a demo) are not secrets
    public = {
        line.strip()
        for cell in source.cells
        for line in HIDDEN_BLOCK.sub("", SOLUTION_BLOCK.sub("", cell.source)).splitlines()
    }
    for cell in source.cells:
        for block in SOLUTION_BLOCK.findall(cell.source) + HIDDEN_BLOCK.findall(cell.source):
            for line in block.splitlines():
                line = line.strip()
                if len(line) > 12 and not line.startswith("#") and line not in public:
                    assert line not in released, f"{path.name} leaks solution/hidden line: {line}"


@pytest.mark.parametrize("path", RELEASES, ids=lambda p: p.stem)
def test_release_tags_every_test_cell_as_raising(path):
    nb = _nb(path)
    for cell in nb.cells:
        if _meta(cell).get("grade"):
            assert "raises-exception" in cell.metadata.get("tags", []), _meta(cell)["grade_id"]
        if _meta(cell).get("solution"):
            assert "raise NotImplementedError()" in cell.source


def test_release_notebooks_are_valid_json_with_outputs_cleared():
    for path in RELEASES:
        nb = json.loads(path.read_text())
        assert all(not c.get("outputs") for c in nb["cells"] if c["cell_type"] == "code"), path.name
