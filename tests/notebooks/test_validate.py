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

from courseinfo import course

ROOT = Path(__file__).resolve().parents[2]
AID = "02_scaled_sum"
SOURCE = ROOT / "solutions" / f"{AID}.ipynb"
RELEASE = ROOT / "notebooks" / f"{AID}.ipynb"
MARKERS = re.compile(r"^\s*### (BEGIN|END) SOLUTION\s*$")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
WRONG_SCALED_SUM = "def scaled_sum(x):\n    return x * 2.0\n"  # no collective: every device keeps its own


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
        # the check's own message, not a bare NotImplementedError, and no traceback through the course's code
        text = ANSI.sub("", f["raw_error"])
        assert text.startswith("✗ `") and "is not written yet" in text, text[-600:]
        assert not re.search(r"Traceback|File \"|namedaxes[/.]checking|\.py\b", text), text


def test_validate_passes_on_the_release_once_the_answers_are_filled_in(tmp_path):
    """What a student who solved everything sees: the release, answer cells written, locked cells untouched."""
    source = nbformat.read(SOURCE, as_version=4)
    answers = {
        c.metadata["nbgrader"]["grade_id"]: c.source
        for c in source.cells
        if (c.metadata.get("nbgrader") or {}).get("solution") and c.cell_type == "code"
    }
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


def _release_with(tmp_path, answers: dict) -> Path:
    """The release of notebook 02 with some answer cells (by grade_id) filled in."""
    release = nbformat.read(RELEASE, as_version=4)
    for cell in release.cells:
        gid = (cell.metadata.get("nbgrader") or {}).get("grade_id")
        if gid in answers:
            cell.source = answers[gid]
    path = tmp_path / f"{AID}.ipynb"
    nbformat.write(release, path)
    return path


def _words(text: str) -> str:
    """Text compared across line wrapping: runs of whitespace as one space."""
    return re.sub(r"\s+", " ", text).strip()


def _message_of(check, answer) -> str:
    from namedaxes.checking import CheckFailed

    with pytest.raises(CheckFailed) as err:
        check(answer)
    return str(err.value)


def test_validate_shows_a_wrong_answers_message_not_a_traceback(tmp_path):
    """What the Validate dialog shows for a wrong `scaled_sum`: exactly the check's message, then the hint line."""
    from namedaxes.exercises import scaled_sum as q

    namespace: dict = {}
    exec(f"from jax import lax\nfrom namedaxes import DEVICES\n{WRONG_SCALED_SUM}", namespace)
    expected = {
        "scaled_sum_total": _message_of(q.scaled_sum.check, namespace["scaled_sum"]),
        "scaled_sum_uses_psum": _message_of(q.scaled_sum_uses_psum.check, namespace["scaled_sum"]),
    }
    path = _release_with(tmp_path, {"scaled_sum_answer": WRONG_SCALED_SUM})
    failed = Validator().validate(str(path))["failed"]
    by_id = {c.metadata["nbgrader"]["grade_id"]: c.source.strip() for c in _grade_cells(nbformat.read(path, 4))}
    for gid, message in expected.items():
        shown = next(f["raw_error"] for f in failed if f["source"] == by_id[gid])
        lines = ANSI.sub("", shown).splitlines()
        assert _words(" ".join(lines[:-1])) == _words("✗ " + message), shown
        assert lines[-1].startswith("Stuck? Run `q.scaled_sum") and lines[-1].endswith(".hint()` for a hint.")
        assert all(len(ln) <= 80 for ln in lines), "nbgrader's command line would cut these lines"


def test_in_a_real_kernel_a_failed_check_is_a_checkfailed_error_output_and_a_passed_one_a_green_line(tmp_path):
    """The notebook's error output (what nbgrader grades and Validate reads): ename CheckFailed, the message as
    evalue, the rendered lines as traceback; a passed check prints one green line; a stub in a plain cell one line."""
    from nbclient import NotebookClient

    source = nbformat.read(SOURCE, as_version=4)
    right = next(
        c.source for c in source.cells if (c.metadata.get("nbgrader") or {}).get("grade_id") == "scaled_mean_answer"
    )
    path = _release_with(
        tmp_path,
        {
            "scaled_sum_answer": WRONG_SCALED_SUM,
            "scaled_mean_answer": "\n".join(ln for ln in right.splitlines() if not MARKERS.match(ln)),
        },
    )
    nb = nbformat.read(path, as_version=4)
    NotebookClient(
        nb, timeout=120, allow_errors=True, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    outputs = {(c.metadata.get("nbgrader") or {}).get("grade_id"): c.outputs for c in nb.cells if c.cell_type == "code"}
    errors = [o for o in outputs["scaled_sum_total"] if o.output_type == "error"]
    assert len(errors) == 1 and errors[0].ename == "CheckFailed"
    assert errors[0].evalue.startswith("`scaled_sum` returned different values on different devices")
    assert "\x1b[31m" in errors[0].traceback[0]  # red
    assert _words(ANSI.sub("", " ".join(errors[0].traceback[:-1]))) == _words("✗ " + errors[0].evalue)
    passed = [o for o in outputs["scaled_mean_value"] if o.output_type == "stream"]
    assert [o.text for o in passed] == ["\x1b[32m✓ `scaled_mean` passes the visible checks.\x1b[0m\n"]


def test_in_a_real_kernel_a_plain_cell_stopped_by_a_stub_shows_one_line(tmp_path):
    """A demonstration that runs an unwritten answer: one line naming it (the error output stays an error)."""
    from nbclient import NotebookClient
    from nbformat.v4 import new_code_cell, new_notebook

    nb = new_notebook(
        cells=[
            new_code_cell("import namedaxes.checking"),
            new_code_cell("def total(x):\n    raise NotImplementedError()"),
            new_code_cell("print(total(1))"),
            new_code_cell("raise NotImplementedError('a real one')"),
        ]
    )
    NotebookClient(nb, timeout=60, allow_errors=True, kernel_name="python3").execute()
    stub, real = (next(o for o in nb.cells[i].outputs if o.output_type == "error") for i in (2, 3))
    assert stub.ename == "NotImplementedError"
    lines = [ANSI.sub("", ln) for ln in stub.traceback]
    assert _words(" ".join(lines)) == (
        "✗ This cell runs `total`, which is not written yet: replace `raise "
        "NotImplementedError()` in its cell with your code, run that cell, then "
        "this one again."
    ) and all(len(ln) <= 80 for ln in lines)
    assert (
        any("Traceback" in ANSI.sub("", ln) or "a real one" in ln for ln in real.traceback) and len(real.traceback) > 1
    )  # anything else: IPython's own traceback


# ================================================================== every notebook, both editions
EDITIONS = ("", *course.EDITIONS)  # "" is English: solutions/, notebooks/; "zh": solutions/zh/, notebooks/zh/
ALL_IDS = sorted(p.stem for p in (ROOT / "solutions").glob("*.ipynb"))


def _solved_release(aid: str, edition: str = ""):
    """The release of `aid` in `edition` as a student who solved it hands it in: every answer cell holds the
    solution's code (its markers dropped), every locked cell untouched."""

    def folder(top: str) -> Path:
        return ROOT / top / edition if edition else ROOT / top

    source = nbformat.read(folder("solutions") / f"{aid}.ipynb", as_version=4)
    answers = {
        c.metadata["nbgrader"]["grade_id"]: c.source
        for c in source.cells
        if (c.metadata.get("nbgrader") or {}).get("solution")
    }
    release = nbformat.read(folder("notebooks") / f"{aid}.ipynb", as_version=4)
    for cell in release.cells:
        gid = (cell.metadata.get("nbgrader") or {}).get("grade_id")
        if gid in answers:
            cell.source = "\n".join(ln for ln in answers[gid].splitlines() if not MARKERS.match(ln))
    return release


def _checksums_only() -> Validator:
    """nbgrader's Validator with its own preprocessors except Execute: running a notebook changes no cell's
    source, and "changed" is decided from the sources and their checksums alone, so this is Validate's
    verdict on changed cells without starting a kernel (the executing runs are the tests above and below)."""
    from nbgrader.preprocessors import Execute

    validator = Validator()
    validator.preprocessors = [p for p in validator.preprocessors if p is not Execute]
    assert len(validator.preprocessors) == 2
    return validator


@pytest.mark.parametrize("edition", EDITIONS, ids=course.LANGUAGES)
def test_validate_finds_no_changed_cell_in_any_untouched_or_solved_notebook(tmp_path, edition):
    validator = _checksums_only()
    seen = []
    for aid in ALL_IDS:
        release = ROOT / "notebooks" / edition / f"{aid}.ipynb"
        locked = [
            c for c in nbformat.read(release, as_version=4).cells if "checksum" in (c.metadata.get("nbgrader") or {})
        ]
        assert locked, f"{release.name}: nbgrader gave no cell a checksum"
        for kind, nb in (
            ("untouched", nbformat.read(release, as_version=4)),
            ("solved", _solved_release(aid, edition)),
        ):
            path = tmp_path / kind / f"{aid}.ipynb"
            path.parent.mkdir(exist_ok=True)
            nbformat.write(nb, path)
            results = validator.validate(str(path))
            assert "changed" not in results and "type_changed" not in results, (edition, aid, kind, results)
            seen.append((aid, kind))
    assert len(seen) == 2 * len(ALL_IDS) >= 14


def test_a_changed_locked_cell_of_the_chinese_edition_is_reported():
    """The check above can fail: a student's edit of the Chinese set-up cell is a changed cell."""
    nb = nbformat.read(ROOT / "notebooks" / "zh" / f"{AID}.ipynb", as_version=4)
    setup = next(c for c in nb.cells if (c.metadata.get("nbgrader") or {}).get("grade_id") == "setup")
    setup.source += "\nprint('edited')"
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{AID}.ipynb"
        nbformat.write(nb, path)
        results = _checksums_only().validate(str(path))
    assert [c["source"] for c in results.get("changed", [])] == [setup.source.strip()]


def test_validate_on_the_untouched_chinese_release_fails_only_its_tests(tmp_path):
    """Real Validate (one kernel) on the Chinese notebook 02 as released, copied out of any `zh` folder (as on
    Colab): no "changed" cell, exactly the test cells fail, in Chinese (the notebook's own set-up cell says so).
    (Solved notebooks pass Validate: the English test above; their checksums: the test above.)"""
    untouched = _copy(ROOT / "notebooks" / "zh" / f"{AID}.ipynb", tmp_path)
    results = Validator().validate(str(untouched))
    assert set(results) == {"failed"}, list(results)
    graded = _grade_cells(nbformat.read(untouched, as_version=4))
    assert [f["source"] for f in results["failed"]] == [c.source.strip() for c in graded]
    assert "zh" not in tmp_path.parts
    for f in results["failed"]:
        assert "还没有编写" in ANSI.sub("", f["raw_error"]), f["raw_error"][-400:]
