"""End-to-end: what an instructor acts on, on a class graded for real (tests/helpers/instructor_class.py).

Four students on notebook 01, graded in course mode with due dates, a late policy and one extension: two
different known mistakes of one exercise, a copied answer, a late hand-in and one on time only by its
extension. Checked here without a browser (tests/browser/test_instructor_loop.py walks the same class in
Chromium): the misconception map's groups, each under the visible check's words with the hint its exercise
names; the similarity report's pair; the late and extension lines in grades.csv, results.json, the feedback
pages, the report and nbgrader's gradebook, in the due date's time zone; a whole message on a feedback
page. A typo in deadlines.toml stops the batch before anything is graded and leaves grades.csv as it was.
"""

from __future__ import annotations

import json
import re

import pytest
from autograder_harness import read_csv
from instructor_class import AID, DUE, MAX_SCORE, SCORES, graded_class

from autograder.course.classroom import grade_command


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    info = graded_class(tmp_path_factory)
    assert info["returncode"] == 0, info["stderr"][-3000:]
    return info


def _rows(graded) -> dict[str, dict]:
    return {r["student"]: r for r in read_csv(graded["out"] / "grades.csv")}


def _cells(graded, student: str) -> dict[str, dict]:
    rows = json.loads((graded["out"] / "results.json").read_text(encoding="utf-8"))["rows"]
    return {c["grade_id"]: c for c in next(r for r in rows if r["student"] == student)["cells"]}


def test_the_scores_are_the_points_less_the_late_penalty(graded):
    rows = _rows(graded)
    assert {s: float(r["score"]) for s, r in rows.items()} == SCORES
    assert {float(r["max_score"]) for r in rows.values()} == {MAX_SCORE} and {r["status"] for r in rows.values()} == {
        "ok"
    }


def test_two_mistakes_of_one_exercise_are_two_findings_each_the_checks_words_and_its_hint(graded):
    """The issue's measurement, on a real class: the judge names each wrong program's known mistake on its
    hidden inputs, as the visible check named it on its own."""
    mistakes = {
        (s, gid): c["finding"].get("mistake") for s in SCORES for gid, c in _cells(graded, s).items() if "finding" in c
    }
    assert mistakes == {
        ("ben", "last_device_value_values"): "last_nobody",
        ("ben", "rank_weighted_sum_values"): "weighted_no_weights",
        ("cy", "rank_weighted_sum_values"): "weighted_from_one",
        ("eve", "center_pmap_and_vmap"): "center_local",
    }
    report = (graded["out"] / "report.html").read_text(encoding="utf-8")
    rank = report[report.index('class="gid">rank_weighted_sum_values', report.index("<h3>")) :]
    groups = [r for r in rank[: rank.index("</table>")].split("<tr>") if " of 4</td>" in r]
    assert len(groups) == 2, "two mistakes, two groups"
    plain, first = sorted(groups, key=lambda g: "ben" not in g)
    assert "ben" in plain and "That is the plain total of x over the devices" in plain
    assert f'href="#hint-{AID}-rank_weighted_sum_values-2"' in plain
    assert "cy" in first and "positions along the axis start at 0" in first
    assert f'href="#hint-{AID}-rank_weighted_sum_values-3"' in first
    assert "这是 x 在各设备上的普通总和" in plain, "the check's words in Chinese too"


def test_the_copied_answer_is_listed(graded):
    found = json.loads((graded["out"] / "similarity.json").read_text(encoding="utf-8"))
    pairs = [(p["a"], p["b"]) for e in found for p in e["pairs"]]
    assert pairs == [("dee", "eve")]


def test_late_and_extension_lines_in_grades_csv_in_one_time_zone(graded):
    rows = _rows(graded)
    assert {s: r["late_penalty"] for s, r in rows.items()} == {"ben": "", "cy": "1", "dee": "0", "eve": ""}
    assert (rows["cy"]["handed_in"], rows["cy"]["due"]) == ("2026-12-12T13:00:00+01:00", DUE)
    assert (rows["dee"]["handed_in"], rows["dee"]["due"]) == ("2026-12-12T13:00:00+01:00", "2026-12-13T23:59:00+01:00")
    assert rows["cy"]["late"] == CY_LATE and rows["dee"]["late"] == DEE_EXTENDED
    late = {s: c.get("late") for s, c in ((r["student"], r) for r in _results(graded))}
    assert late["cy"]["says"] == CY_LATE and late["dee"]["course_due"] == DUE and late["ben"] is None


CY_LATE = (
    "Late hand-in: handed in 2026-12-12 13:00 UTC+01:00, 1 d 13 h 1 min after the due date 2026-12-10 23:59 UTC+01:00. "
    "The course's rule: after a grace of 10 min, 10 % of the maximum per started day late, at most 50 %: 2 started "
    "day(s) × 10 % of 5 point(s) = 1 point(s) off."
)
DEE_EXTENDED = (
    "On time with an extension to 2026-12-13 23:59 UTC+01:00 (the assignment's due date 2026-12-10 23:59 UTC+01:00, "
    "extended by 3 d): handed in 2026-12-12 13:00 UTC+01:00, 1 d 13 h 1 min after the assignment's due date; no "
    "points off."
)


def _results(graded) -> list[dict]:
    return json.loads((graded["out"] / "results.json").read_text(encoding="utf-8"))["rows"]


def _text(page: str) -> str:
    import html

    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


def test_the_feedback_pages_and_the_report_say_what_happened(graded):
    feedback = graded["out"] / "feedback"
    assert CY_LATE in _text((feedback / "cy" / f"{AID}.html").read_text(encoding="utf-8"))
    assert DEE_EXTENDED in _text((feedback / "dee" / f"{AID}.html").read_text(encoding="utf-8"))
    for student in ("ben", "eve"):
        page = _text((feedback / student / f"{AID}.html").read_text(encoding="utf-8"))
        banner = page[page.index("Autograder feedback:") : page.index("Everything below the line")]
        assert "Late hand-in" not in banner and "extension" not in banner
    report = _text((graded["out"] / "report.html").read_text(encoding="utf-8"))
    assert "Late hand-ins and extensions" in report and CY_LATE in report and DEE_EXTENDED in report
    assert "late hand-ins: 1 (cy 01_axis_names -1)" in graded["stdout"]
    assert "on time with an extension: 1 (dee 01_axis_names)" in graded["stdout"]


def test_a_feedback_page_shows_the_whole_message(graded):
    """The judge names ben's known mistake on each hidden case, at length: nothing cut, the first sentences
    shown, the rest behind one click (a graded kernel's visible check leaves the judging to the judge)."""
    page = (graded["out"] / "feedback" / "ben" / f"{AID}.html").read_text(encoding="utf-8")
    table = page[page.index("<table>") : page.index("</table>")]
    table = table[table.index("<code>last_device_value</code>") :]
    assert "…" not in _text(table)
    shown, rest = table.split("<details><summary>the rest of the message</summary>")
    assert _text(shown).rstrip().endswith("Every device returned zeros: no device matched the position you picked.")
    assert "Positions along the axis run from 0 to 1 here: the last device is at position 1" in rest
    assert "one less than the size of the axis (<code>lax.psum(1, DEVICES) - 1</code>)" in rest
    assert _text(rest[: rest.index("</details>")]).rstrip().endswith("and 1 more)")


def test_nbgraders_gradebook_has_the_due_date_the_extension_and_the_penalty(graded):
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{graded['course'] / 'gradebook.db'}") as gb:
        assert gb.find_assignment(AID).duedate.isoformat() == "2026-12-10T22:59:00"
        cy = gb.find_submission(AID, "cy")
        assert cy.notebooks[0].late_submission_penalty == pytest.approx(1.0)
        dee = gb.find_submission(AID, "dee")
        assert dee.extension.days == 3 and dee.notebooks[0].late_submission_penalty is None
        assert gb.find_submission(AID, "ben").notebooks[0].late_submission_penalty is None


def test_a_typo_in_the_deadlines_stops_the_batch_and_keeps_the_grades(graded, tmp_path, capsys):
    """In this process (`python -m autograder grade`'s own main): the policy is read before anything runs."""
    from autograder.__main__ import main

    course = graded["course"]
    before = (course / "grades" / "grades.csv").read_bytes()
    policy = course / "deadlines.toml"
    good = policy.read_text()
    policy.write_text(good.replace(DUE, "2026-12-10T23:59:00"))
    try:
        returned = main(grade_command(course, cache=tmp_path / "cache", timeout=30)[3:])
    finally:
        policy.write_text(good)
    assert returned == 1
    said = capsys.readouterr().err
    assert f"deadlines.toml:2: the due date of {AID}: 2026-12-10T23:59:00 has no time zone" in said
    assert (course / "grades" / "grades.csv").read_bytes() == before
