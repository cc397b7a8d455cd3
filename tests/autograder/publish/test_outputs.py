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


def _graded(out: Path, sources: dict, intake: Intake, rows: list) -> Graded:
    """A batch into `out` (2 workers, not quiet) graded into `rows`, for the summary."""
    batch = Batch(Options(course=out), out, out, out, out, None, out, None, (), 2)
    return Graded(batch, sources, intake, None, _Sandbox(), BatchResults(rows=rows), time.monotonic())


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
    summary(_graded(tmp_path, sources, Intake(students={"ann", "bo"}), rows), {})
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


# ---------------------------------------------------------------- spreadsheet cells (issue 48)
LOOKALIKES = [
    "=1+1",
    " =1+1",  # a space first: spreadsheets trim it
    "\u00a0=HYPERLINK(1)",  # a no-break space
    "\u3000+1",  # an ideographic space
    "\u2003@SUM(1)",  # an em space
    "\uff1dSUM(1)",  # a fullwidth =, which NFKC makes =
    "\ufe62cmd",  # a small +
    "\ufe63x",  # a small -
    "\uff20x",  # a fullwidth @
    "\ufe6bx",  # a small @
    "\t=1",
    "\r=1",
    "-",
    "'=1",  # a leading ' of the text's own: one more keeps it
]


def test_a_cell_a_spreadsheet_could_read_as_a_formula_is_quoted_and_reads_back_as_it_was():
    from autograder.publish.outputs import csv_cell, csv_value

    for text in LOOKALIKES:
        assert csv_cell(text) == "'" + text and csv_value(csv_cell(text)) == text, repr(text)
    for text in ("alice", "a=b", "张伟", "1+1", "", " alice", "x-y"):
        assert csv_cell(text) == text and csv_value(text) == text, repr(text)


def test_grades_csv_quotes_every_lookalike_id_and_writes_one_time_zone_with_the_late_line(tmp_path):
    import csv

    from autograder.course.deadlines import LatePolicy, parse_due
    from autograder.publish.outputs import public, write_outputs
    from autograder.records import make_row

    class Source:
        max_score = 7.0

    due = parse_due("2026-12-10T23:59:00+01:00")
    policy = LatePolicy({"a": due}, per_day=0.1, cap=0.5)
    late = policy.late("x", "a", parse_due("2026-12-12T12:00:00+00:00"), 7.0)  # handed in, in UTC
    ids = [sid for sid in LOOKALIKES if "\t" not in sid and "\r" not in sid]  # intake refuses control characters
    rows = [make_row(sid, "a", "", Source, "ok", "", ()) for sid in ids]
    rows.append(make_row("late", "a", "", Source, "ok", "", (), late=late))
    write_outputs(tmp_path, [public(r) for r in rows], rows)
    with open(tmp_path / "grades.csv", newline="", encoding="utf-8") as fh:
        written = list(csv.DictReader(fh))
    assert [r["student"] for r in written[:-1]] == ["'" + sid for sid in ids] and len(ids) == len(LOOKALIKES) - 2
    last = written[-1]
    assert (last["handed_in"], last["due"]) == ("2026-12-12T13:00:00+01:00", "2026-12-10T23:59:00+01:00")
    assert last["late"].startswith("Late hand-in: handed in 2026-12-12 13:00 UTC+01:00, 1 d 13 h 1 min after the due")
    assert last["late_penalty"] == "0"  # 2 started days x 10 % of 7, lowered to the 0 points earned


def test_the_summary_names_the_late_hand_ins_and_those_on_time_by_an_extension(tmp_path, capsys):
    from dataclasses import replace

    from autograder.records import Late

    late = Late("2026-12-12T13:00:00+01:00", "2026-12-10T23:59:00+01:00", 1.0, 2, 0.2, 1.0)
    extended = replace(late, seconds=-3600.0, days=0, fraction=0.0, penalty=0.0, extended=True)
    rows = [
        _row("ann", "01_axis_names", "ok", 4.0),
        replace(_row("bo", "01_axis_names", "ok", 6.0), late=late),
        replace(_row("cy", "01_axis_names", "ok", 7.0), late=extended),
    ]
    summary(_graded(tmp_path, {"01_axis_names": SimpleNamespace(max_score=7.0)}, Intake(), rows), {})
    out = capsys.readouterr().out.splitlines()
    assert "late hand-ins: 1 (bo 01_axis_names -1)" in out
    assert "on time with an extension: 1 (cy 01_axis_names)" in out
