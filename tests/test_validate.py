"""nbgrader's Validate (the button in `make lab`) on notebook 02: solved passes, unanswered lists the failing tests.

Runs nbgrader's own `Validator` (what the Validate button's server extension
calls) with the kernel set-up of `make lab` (the kernelspec in jupyter/data).
"""
import io
import re
import shutil
from pathlib import Path

import nbformat
import pytest
from nbgrader.validator import Validator

ROOT = Path(__file__).resolve().parents[1]
AID = "02_scaled_sum"
SOURCE = ROOT / "solutions" / f"{AID}.ipynb"
RELEASE = ROOT / "notebooks" / f"{AID}.ipynb"
MARKERS = re.compile(r"^\s*### (BEGIN|END) SOLUTION\s*$")


@pytest.fixture(autouse=True)
def lab_like_environment(monkeypatch):
    monkeypatch.setenv("JUPYTER_PATH", str(ROOT / "jupyter" / "data"))
    monkeypatch.delenv("NAMEDAXES_OBSERVE_DIR", raising=False)


def _grade_cells(nb):
    return [c for c in nb.cells if (c.metadata.get("nbgrader") or {}).get("grade")]


def _copy(src: Path, dest_dir: Path) -> Path:
    dest = dest_dir / src.name
    shutil.copy2(src, dest)
    return dest


def test_validate_passes_on_the_solved_source_notebook(tmp_path):
    path = _copy(SOURCE, tmp_path)
    validator = Validator()
    validator.stream = io.StringIO()
    validator.validate_and_print(str(path))
    text = validator.stream.getvalue()
    assert text.strip() == "Success! Your notebook passes all the tests.", text


def test_validate_on_the_unanswered_release_lists_every_failing_test_cell(tmp_path):
    path = _copy(RELEASE, tmp_path)
    release = nbformat.read(path, as_version=4)
    graded = _grade_cells(release)
    assert len(graded) >= 3, "notebook 02 has at least three test cells"
    results = Validator().validate(str(path))
    assert set(results) == {"failed"}, f"expected only failing cells (no changed cells): {list(results)}"
    failed = results["failed"]
    assert [f["source"] for f in failed] == [c.source.strip() for c in graded]
    for f in failed:
        # the check's own message, not a bare NotImplementedError
        assert "CheckFailed" in f["raw_error"] and "is not written yet" in f["raw_error"], f["raw_error"][-600:]


def test_validate_passes_on_the_release_once_the_answers_are_filled_in(tmp_path):
    """What a student who solved everything sees: the release, answer cells written, locked cells untouched."""
    source = nbformat.read(SOURCE, as_version=4)
    answers = {c.metadata["nbgrader"]["grade_id"]: c.source for c in source.cells
               if (c.metadata.get("nbgrader") or {}).get("solution") and c.cell_type == "code"}
    release = nbformat.read(RELEASE, as_version=4)
    filled = 0
    for cell in release.cells:
        gid = (cell.metadata.get("nbgrader") or {}).get("grade_id")
        if gid in answers:
            cell.source = "\n".join(ln for ln in answers[gid].splitlines() if not MARKERS.match(ln))
            filled += 1
    assert filled == len(answers) >= 3
    path = tmp_path / f"{AID}.ipynb"
    nbformat.write(release, path)
    assert Validator().validate(str(path)) == {}
