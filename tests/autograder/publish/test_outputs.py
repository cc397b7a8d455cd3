"""`make grade`'s closing summary: only the assignments that were handed in, and where the class report is."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

from autograder.intake.placement import Intake
from autograder.publish.outputs import summary
from autograder.records import Batch, BatchResults, Graded, Options, Row
from autograder.sandbox.protections import Protection

ROOT = Path(__file__).resolve().parents[3]


class _Sandbox:
    def protections(self):
        return [Protection("network_off", "no network", True, "a network namespace")]


def _row(student, aid, status, score):
    return Row(student, aid, "", score, 7.0, status, "")


def test_summary_lists_only_handed_in_assignments_and_the_report(tmp_path, capsys):
    sources = {aid: SimpleNamespace(max_score=7.0) for aid in ("01_axis_names", "02_scaled_sum", "03_nested_axes")}
    rows = [
        _row("ann", "01_axis_names", "missing", 0.0),
        _row("bo", "01_axis_names", "missing", 0.0),
        _row("ann", "02_scaled_sum", "ok", 7.0),
        _row("bo", "02_scaled_sum", "missing", 0.0),
        _row("ann", "03_nested_axes", "missing", 0.0),
        _row("bo", "03_nested_axes", "missing", 0.0),
    ]
    (tmp_path / "report.html").write_text("<html></html>")
    batch = Batch(Options(course=tmp_path), tmp_path, tmp_path, tmp_path, tmp_path, None, tmp_path, None, (), 2)
    results = BatchResults(rows=rows)
    summary(Graded(batch, sources, Intake(students={"ann", "bo"}), None, _Sandbox(), results, time.monotonic()), {})
    out = capsys.readouterr().out.splitlines()
    means = [ln for ln in out if " mean " in ln]
    assert means == [f"  {'02_scaled_sum':<28} mean  7.00 / 7  over 1 hand-in(s), 1 student(s) without one"]
    assert "  not handed in by anyone: 01_axis_names, 03_nested_axes" in out
    assert out[-1] == f"class report: {tmp_path / 'report.html'}"


def test_make_grade_does_not_echo_its_command_line():
    """The instructor sees the grader's progress and summary, not a screenful of options."""
    recipe = (ROOT / "Makefile").read_text().split("\ngrade: ", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    assert recipe and recipe[0].startswith("\t@$(HANDIN) grade"), recipe[:1]  # tools/handin.py: autograder grade


def test_a_partial_regrade_keeps_the_other_assignments_limits(tmp_path):
    """results.json's "references" of a --student run: this run's notes, and the previous run's for the
    assignments it did not grade, so a regrade of a few students publishes the class's limits unchanged."""
    import json

    from autograder.publish.outputs import merge_previous_notes
    from autograder.records import Options

    previous = {"01": {"cell_timeout": 30, "limits": "a"}, "02": {"cell_timeout": 39, "limits": "b"}}
    (tmp_path / "results.json").write_text(json.dumps({"rows": [], "references": previous}))
    now = {"02": {"cell_timeout": 41, "limits": "c"}}
    partial = Options(course=tmp_path, students=["ada"])
    assert merge_previous_notes(tmp_path, now, partial) == {"01": previous["01"], "02": now["02"]}
    assert merge_previous_notes(tmp_path, now, Options(course=tmp_path)) == now  # a whole run: its own only
    (tmp_path / "results.json").write_text("[not an object]")
    assert merge_previous_notes(tmp_path, now, partial) == now
