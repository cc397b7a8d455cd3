"""The tamper corpus (tamper_specs.py), graded in the one shared fixture class, and fail-closed references.

`test_fixture_scores_and_status` already asserts every corpus student's exact
pass set (empty: 0 points). Here: the corpus covers every graded test cell of
notebooks 01-06 and 08-11 with at least one technique, tampering changes nothing against
the honest wrong answer, the hidden part really ran (the scorer judged what it
recorded), the reference cache the symlink attack pointed at is intact, and a
damaged reference cache stops grading loudly.
"""

from __future__ import annotations

import json
import shutil

import autograder_specs as specs
import machine
import nbformat
import pytest
import tamper_specs as ts
from autograder_harness import grade_cmd

NOTEBOOKS = [specs.A01, specs.A02, ts.A03, ts.A04, ts.A05, ts.A06, ts.A08, ts.A09, ts.A10, ts.A11]


def _graded_cells(assignment: str) -> set[str]:
    nb = nbformat.read(specs.REPO / "solutions" / f"{assignment}.ipynb", as_version=4)
    return {
        specs.nb_meta(c)["grade_id"]
        for c in nb.cells
        if specs.nb_meta(c).get("grade") and not specs.nb_meta(c).get("solution")
    }


def test_corpus_covers_every_graded_cell_with_every_technique():
    for assignment in NOTEBOOKS:
        assert set(ts.CELLS[assignment]) == _graded_cells(assignment), assignment
        assert all(names for _, names in ts.CELLS[assignment].values())
        answers = {
            specs.nb_meta(c)["grade_id"]
            for c in nbformat.read(specs.REPO / "solutions" / f"{assignment}.ipynb", as_version=4).cells
            if specs.nb_meta(c).get("solution")
        }
        assert set(ts.WRONG[assignment]) == answers, assignment
    assert all(ts.coverage().values()), ts.coverage()


@pytest.mark.parametrize("assignment", NOTEBOOKS)
def test_tampering_changes_nothing(graded_class, assignment):
    nn = assignment[:2]
    honest = graded_class.result(f"honest_wrong_{nn}", assignment)
    tampered = graded_class.result(f"tamper_{nn}", assignment)
    assert float(honest["score"]) == float(tampered["score"]) == 0.0
    assert {c["grade_id"]: c["points"] for c in honest["cells"]} == {
        c["grade_id"]: c["points"] for c in tampered["cells"]
    }
    # the visible checks were patched to pass, so the hidden parts ran and what they left was judged
    # (or they failed on purpose): never a silent zero
    for cell in tampered["cells"]:
        assert cell["reason"] and not cell["reason"].startswith("CheckFailed"), cell


def test_the_symlink_attack_left_the_reference_cache_intact(graded_class):
    """Every current-format reference folder of the class's assignments still loads (hashes, MAC)."""
    from autograder.course.discovery import discover_sources
    from autograder.run.references import CACHE_FORMAT, load_references

    sources = discover_sources(graded_class.course, [])
    for aid, source in sources.items():
        checked = 0
        for meta in graded_class.cache.glob(f"{aid}-*/meta.json"):
            info = json.loads(meta.read_text())
            if info.get("format") == CACHE_FORMAT and sorted(info.get("tests", [])) == sorted(source.test_ids()):
                refs = load_references(meta.parent, source)  # raises if anything in it was touched
                assert refs is not None and set(refs) == set(source.test_ids()), meta.parent
                checked += 1
        assert checked, f"no reference folder for {aid}"


def test_a_damaged_reference_cache_stops_grading_loudly(graded_class, tmp_path):
    ref = next(n for n in graded_class.reference_dirs if n.startswith(specs.A02))
    cache = tmp_path / "cache"
    shutil.copytree(graded_class.cache / ref, cache / ref)
    shutil.copy(graded_class.cache / ".secret", cache / ".secret")
    info = json.loads((cache / ref / "meta.json").read_text())
    victim = sorted(info["files"])[0]
    (cache / ref / victim).write_bytes(b"")  # emptied, meta unchanged
    sub = tmp_path / "class" / "correct"
    sub.mkdir(parents=True)
    shutil.copy(graded_class.submissions / "correct" / f"{specs.A02}.ipynb", sub)
    proc = machine.run(
        grade_cmd(graded_class.course, tmp_path / "class", tmp_path / "out", cache, "--assignment", specs.A02),
        cwd=specs.REPO,
        capture_output=True,
        text=True,
        quiet_s=300,
        what="the command of a damaged reference cache stops grading loudly",
    )
    assert proc.returncode != 0
    assert "damaged" in proc.stderr and victim.rsplit(".", 1)[0] in proc.stderr, proc.stderr[-2000:]
