"""The course's deadlines: deadlines.toml and extensions.csv read into a policy, errors that name the
line, and the penalty each lateness costs (course/deadlines.py), applied by records.make_row."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from autograder.course.deadlines import load_policy
from autograder.publish.words import say_late
from autograder.records import CellResult, GraderError, make_row

AIDS = ("01_axis_names", "02_scaled_sum")
POLICY = """\
[due]
01_axis_names = 2026-12-10T23:59:00+01:00
02_scaled_sum = "2026-12-17 23:59:00+01:00"

[late]
grace_minutes = 15
penalty_per_day = 0.1
max_penalty = 0.25
"""
DUE = datetime(2026, 12, 10, 22, 59, tzinfo=UTC)  # 01's due date in UTC


def course_with(tmp_path, policy: str = POLICY, extensions: str | None = None):
    (tmp_path / "deadlines.toml").write_text(policy)
    if extensions is not None:
        (tmp_path / "extensions.csv").write_text(extensions)
    return tmp_path


def test_no_deadlines_file_means_nothing_is_late(tmp_path):
    assert load_policy(tmp_path, AIDS) is None


@pytest.mark.parametrize(
    ("late_by", "days", "penalty"),
    [
        (timedelta(seconds=-1), None, None),  # on time
        (timedelta(minutes=14), 0, 0.0),  # within the grace: late, but nothing off
        (timedelta(minutes=16), 1, 0.7),  # a started day: 10 % of 7 points
        (timedelta(days=1, seconds=1), 2, 1.4),  # two started days
        (timedelta(days=9), 9, 1.75),  # capped at 25 %
    ],
)
def test_the_penalty_is_per_started_day_after_the_grace_and_capped(tmp_path, late_by, days, penalty):
    policy = load_policy(course_with(tmp_path), AIDS)
    late = policy.late("ann", AIDS[0], DUE + late_by, 7.0)
    if days is None:
        assert late is None
        return
    assert (late.days, late.penalty, late.extended) == (days, pytest.approx(penalty), False)
    assert late.due == "2026-12-10T23:59:00+01:00"


def test_an_extension_moves_one_students_due_date(tmp_path):
    course = course_with(tmp_path, extensions="student,assignment,days\nann,01_axis_names,2\nbob,*,0.5\n")
    policy = load_policy(course, AIDS)
    assert policy.late("ann", AIDS[1], datetime(2026, 12, 18, tzinfo=UTC), 7.0).extended is False
    late = policy.late("bob", AIDS[0], DUE + timedelta(days=1), 7.0)
    assert (late.days, late.extended, late.due) == (1, True, "2026-12-11T11:59:00+01:00")
    assert late.course_due == "2026-12-10T23:59:00+01:00" and not late.on_time
    assert policy.late("cy", AIDS[0], DUE + timedelta(days=1), 7.0).days == 1


def test_the_instructors_report_says_the_students_due_date_the_page_says_yours(tmp_path):
    """Issue 61: the class report (the instructor's) said "after your due date" of a student's extension."""
    course = course_with(tmp_path, extensions="student,assignment,days\nbob,*,0.5\n")
    late = load_policy(course, AIDS).late("bob", AIDS[0], DUE + timedelta(days=1), 7.0)
    assert "after your due date 2026-12-11 11:59 UTC+01:00" in say_late(late, "en")
    report = say_late(late, "en", instructor=True)
    assert "after the student's due date 2026-12-11 11:59 UTC+01:00" in report and "your" not in report
    assert "比该学生的截止时间" in say_late(late, "zh", instructor=True)


def test_a_hand_in_on_time_only_by_its_extension_says_so_and_costs_nothing(tmp_path):
    """Issue 48: the student who used an extension lost nothing, and no page, row or report said why."""
    course = course_with(tmp_path, extensions="student,assignment,days\nann,01_axis_names,2\n")
    policy = load_policy(course, AIDS)
    assert policy.late("ann", AIDS[0], DUE - timedelta(hours=1), 7.0) is None  # on time: the extension not used
    late = policy.late("ann", AIDS[0], DUE + timedelta(days=1), 7.0)
    assert (late.on_time, late.days, late.penalty, late.extended) == (True, 0, 0.0, True)
    assert (late.handed_in, late.due, late.course_due) == (
        "2026-12-11T23:59:00+01:00",  # in the due date's time zone, whatever zone the hand-in time came in
        "2026-12-12T23:59:00+01:00",
        "2026-12-10T23:59:00+01:00",
    )
    assert say_late(late, "en") == (
        "On time with an extension to 2026-12-12 23:59 UTC+01:00 (the assignment's due date 2026-12-10 23:59 "
        "UTC+01:00, extended by 2 d): handed in 2026-12-11 23:59 UTC+01:00, 1 d after the assignment's due date; "
        "no points off."
    )
    assert say_late(late, "zh") == (
        "延期后按时提交，截止时间延至 2026-12-12 23:59 UTC+01:00"
        "（本作业的截止时间 2026-12-10 23:59 UTC+01:00 延期 2 天）："
        "提交于 2026-12-11 23:59 UTC+01:00，比本作业的截止时间晚 1 天；不扣分。"
    )


@pytest.mark.parametrize(
    ("late_by", "policy", "said"),
    [
        (  # issue 48: "0 d 0 h 0 min after the due date: 0.9 point(s) off"
            timedelta(seconds=30),
            POLICY.replace("grace_minutes = 15", "grace_minutes = 0"),
            "Late hand-in: handed in 2026-12-10 23:59:30 UTC+01:00, 30 s after the due date 2026-12-10 23:59 "
            "UTC+01:00. The course's rule: 10 % of the maximum per started day late, at most 25 %: 1 started day(s) "
            "× 10 % of 7 point(s) = 0.7 point(s) off.",
        ),
        (
            timedelta(minutes=14),
            POLICY,
            "Late hand-in: handed in 2026-12-11 00:13 UTC+01:00, 14 min after the due date 2026-12-10 23:59 "
            "UTC+01:00. That is within the course's grace of 15 min: no points off.",
        ),
        (
            timedelta(days=9),
            POLICY,
            "Late hand-in: handed in 2026-12-19 23:59 UTC+01:00, 9 d after the due date 2026-12-10 23:59 UTC+01:00. "
            "The course's rule: after a grace of 15 min, 10 % of the maximum per started day late, at most 25 %: 9 "
            "started day(s) late, capped at 25 % of 7 point(s) = 1.75 point(s) off.",
        ),
    ],
)
def test_the_late_line_says_when_how_late_and_the_rule(tmp_path, late_by, policy, said):
    late = load_policy(course_with(tmp_path, policy), AIDS).late("ann", AIDS[0], DUE + late_by, 7.0)
    assert say_late(late, "en") == said
    assert "0 d 0 h 0 min" not in said


@pytest.mark.parametrize(
    ("policy", "extensions", "message"),
    [
        (POLICY.replace("2026-12-10T23:59:00+01:00", "2026-12-10T23:59:00"), None, r"deadlines.toml:2: .*no time zone"),
        (POLICY.replace('"2026-12-17 23:59:00+01:00"', '"next friday"'), None, r"deadlines.toml:3: .*not a date"),
        (
            POLICY.replace("02_scaled_sum =", "02_scaled_sun ="),
            None,
            r"deadlines.toml:3: no assignment '02_scaled_sun'",
        ),
        (POLICY.replace("0.25", "25"), None, r"deadlines.toml:8: \[late\] max_penalty = 25: write a fraction"),
        (POLICY.replace("grace_minutes = 15", "grace_minutes = -5"), None, r"deadlines.toml:6: grace_minutes = -5"),
        # numbers no time is made of (issue 58: OverflowError / ValueError at load before)
        *(
            (
                POLICY.replace("grace_minutes = 15", f"grace_minutes = {bad}"),
                None,
                rf"deadlines.toml:6: grace_minutes = {said}: write minutes, from 0 to 5256000 \(3650 days\)",
            )
            for bad, said in (("inf", "inf"), ("nan", "nan"), ("-inf", "-inf"), ("1e300", "1e\\+300"))
        ),
        (POLICY.replace("0.1", "nan"), None, r"deadlines.toml:7: \[late\] penalty_per_day = nan: write a fraction"),
        (POLICY.replace("0.25", "inf"), None, r"deadlines.toml:8: \[late\] max_penalty = inf: write a fraction"),
        # a due date the extension moves past the calendar's end (issue 58: OverflowError in mark_late before)
        (
            POLICY.replace("2026-12-10T23:59:00+01:00", "9999-12-31T23:59:00+01:00"),
            "student,assignment,days\nann,02_scaled_sum,1\nbob,01_axis_names,0.5\n",
            r"extensions.csv:3: days 0.5: this extension moves 01_axis_names's due date "
            r"9999-12-31T23:59:00\+01:00 past the calendar's last day \(9999-12-31\)",
        ),
        (
            POLICY.replace("2026-12-10T23:59:00+01:00", "9999-12-31T23:59:00+01:00"),
            "student,assignment,days\nann,*,2\n",
            r"extensions.csv:2: days 2: this extension moves 01_axis_names's due date",
        ),
        (POLICY, "student,assignment,days\nann,*,inf\n", r"extensions.csv:2: days 'inf' must be between 0 and 3650"),
        (POLICY + "penalty_per_hour = 1\n", None, r"unknown key\(s\) penalty_per_hour"),
        ("[due\n", None, r"deadlines.toml: .*line 1"),
        (POLICY, "student,assignment,days\nann,01_axis_names,two\n", r"extensions.csv:2: days 'two' is not a number"),
        (POLICY, "student,assignment,days\n\nann,03_x,1\n", r"extensions.csv:3: no assignment '03_x'"),
        (POLICY, "student,assignment,days\nann,*,1\nann,*,2\n", r"extensions.csv:3: a second extension for ann"),
        (POLICY, "id,days\nann,1\n", r"extensions.csv:1: the first line must be student,assignment,days"),
        (POLICY, "student,assignment,days\nann,*,1,extra\n", r"extensions.csv:2: 4 fields"),
    ],
)
def test_a_malformed_file_is_an_error_that_names_its_line(tmp_path, policy, extensions, message):
    with pytest.raises(GraderError, match=message):
        load_policy(course_with(tmp_path, policy, extensions), AIDS)


def test_a_due_date_at_the_calendars_end_without_an_extension_is_graded(tmp_path):
    """9999-12-31 is a due date like any other (nothing is late by it); only an extension past it is refused."""
    policy = POLICY.replace("2026-12-10T23:59:00+01:00", "9999-12-31T23:59:00+01:00")
    loaded = load_policy(course_with(tmp_path, policy, "student,assignment,days\nann,02_scaled_sum,3\n"), AIDS)
    assert loaded.late("ann", "01_axis_names", DUE + timedelta(days=3), 10) is None
    assert loaded.due_for("ann", "02_scaled_sum") == datetime(2026, 12, 20, 22, 59, tzinfo=UTC)


def test_extensions_without_due_dates_are_an_error(tmp_path):
    (tmp_path / "extensions.csv").write_text("student,assignment,days\nann,*,1\n")
    with pytest.raises(GraderError, match="extensions without due dates"):
        load_policy(tmp_path, AIDS)


def test_make_row_takes_the_penalty_off_and_never_below_zero(tmp_path):
    policy = load_policy(course_with(tmp_path), AIDS)
    late = policy.late("ann", AIDS[0], DUE + timedelta(days=2), 7.0)  # 2 days: 1.4 points

    class Source:
        max_score = 7.0

    full = (CellResult("a", 4.0, 4.0, True), CellResult("b", 3.0, 3.0, True))
    row = make_row("ann", AIDS[0], "", Source, "ok", "", full, late=late)
    assert (row.score, row.late.penalty) == (pytest.approx(5.6), pytest.approx(1.4))
    poor = (CellResult("a", 1.0, 4.0, False), CellResult("b", 0.0, 3.0, False))
    row = make_row("ann", AIDS[0], "", Source, "ok", "", poor, late=late)
    assert (row.score, row.late.penalty) == (0.0, 1.0)


def test_the_late_sentence_is_said_in_the_students_language(tmp_path):
    policy = load_policy(course_with(tmp_path), AIDS)
    late = policy.late("ann", AIDS[0], DUE + timedelta(days=1, hours=2, minutes=5), 7.0)
    assert say_late(late, "en") == (
        "Late hand-in: handed in 2026-12-12 02:04 UTC+01:00, 1 d 2 h 5 min after the due date 2026-12-10 23:59 "
        "UTC+01:00. The course's rule: after a grace of 15 min, 10 % of the maximum per started day late, at most "
        "25 %: 2 started day(s) × 10 % of 7 point(s) = 1.4 point(s) off."
    )
    assert say_late(late, "zh") == (
        "逾期提交：提交于 2026-12-12 02:04 UTC+01:00，比截止时间 2026-12-10 23:59 UTC+01:00 晚 1 天 2 小时 5 分钟。"
        "课程规则：宽限 15 分钟之后，每逾期一天（不足一天按一天计）扣满分的 10 %，最多扣 25 %："
        "2 天 × 7 分的 10 % = 扣 1.4 分。"
    )
    poor = make_row(
        "ann", AIDS[0], "", type("S", (), {"max_score": 7.0}), "ok", "", (CellResult("a", 1.0, 7.0, False),), late=late
    )
    assert say_late(poor.late, "en").endswith(
        "= 1.4 point(s) off. Only the 1 point(s) earned were taken off: a score never goes below 0."
    )
    assert say_late(poor.late, "zh").endswith("= 扣 1.4 分。只扣了所得的 1 分：分数不会低于 0。")
