"""autograder.publish.report: the instructor's class report, built from a small synthetic OUT folder."""

import base64
import csv
import json
import re
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest

from autograder.publish import class_results, course_info, report, report_figures

ROOT = Path(__file__).resolve().parents[3]

# Two assignments; test cells (grade_id, points) as autograder.runner writes them.
TESTS = {
    "01_axis_names": [("axis_sum", 1.0), ("axis_mean", 2.0)],
    "02_scaled_sum": [("scaled_sum_total", 2.0), ("scaled_mean_values", 1.0), ("global_max_share", 3.0)],
}
WRONG_SUM = "CheckFailed: `scaled_sum` has the wrong values: expected [{}], got [{}]"
# One-line docstrings of the source test cells (global_max_share has none: it is named by its grade_id).
DOCS = {
    "axis_sum": "`axis_sum` adds x over the axis named `DEVICES`.",
    "axis_mean": "`axis_mean` averages over 'devices' <and> nothing else.",
    "scaled_sum_total": "`scaled_sum` sums x * 2.0 over 'devices'.",
    "scaled_mean_values": "`scaled_mean` gives every device the mean.",
}
TITLES = {
    "01_axis_names": "01 — naming an axis",
    "02_scaled_sum": "02 — `scaled_sum`: adding up across devices",
    "03_nested_axes": "03 — axes inside axes",
}
COURSE_ID = "named-axes-2026"


def make_course(course: Path) -> Path:
    """A minimal nbgrader course: nbgrader_config.py and one source notebook per assignment."""
    course.mkdir(parents=True, exist_ok=True)
    (course / "nbgrader_config.py").write_text(
        f"c = get_config()  # noqa: F821\nc.CourseDirectory.course_id = {COURSE_ID!r}\n"
    )
    for aid, title in TITLES.items():
        cells = [{"cell_type": "markdown", "metadata": {}, "source": f"# {title}\n\nSome text."}]
        for gid, pts in TESTS.get(aid, []):
            doc = f'"""{DOCS[gid]}"""\n' if gid in DOCS else ""
            cells.append(
                {
                    "cell_type": "code",
                    "execution_count": None,
                    "outputs": [],
                    "source": doc + "q.check()",
                    "metadata": {
                        "nbgrader": {
                            "grade": True,
                            "solution": False,
                            "locked": True,
                            "grade_id": gid,
                            "points": pts,
                            "schema_version": 3,
                        }
                    },
                }
            )
        (course / "source" / aid).mkdir(parents=True, exist_ok=True)
        (course / "source" / aid / f"{aid}.ipynb").write_text(
            json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
        )
    return course


def _row(student, aid, status="ok", reason="", failed=None):
    """failed: {grade_id: reason} of the test cells this student failed."""
    failed = failed or {}
    cells = []
    for gid, pts in TESTS[aid]:
        if status == "missing":
            cells.append(
                {
                    "grade_id": gid,
                    "points": 0.0,
                    "max_points": pts,
                    "passed": False,
                    "reason": report.NO_SUBMISSION_REASON,
                }
            )
        else:
            ok = gid not in failed
            cells.append(
                {
                    "grade_id": gid,
                    "points": pts if ok else 0.0,
                    "max_points": pts,
                    "passed": ok,
                    "reason": "" if ok else failed[gid],
                }
            )
    return {
        "student": student,
        "assignment": aid,
        "origin": "",
        "score": sum(c["points"] for c in cells),
        "max_score": sum(p for _, p in TESTS[aid]),
        "status": status,
        "reason": reason,
        "cells": cells,
    }


def make_class(out: Path, feedback_for=()) -> list[dict]:
    rows = [
        _row("ann", "01_axis_names"),
        _row("ann", "02_scaled_sum"),
        _row("bob", "01_axis_names", failed={"axis_mean": "NameError: name 'DEVICES' is not defined"}),
        _row(
            "bob",
            "02_scaled_sum",
            reason="failed: scaled_sum_total",
            failed={"scaled_sum_total": WRONG_SUM.format("4. 4.", "1. 2.")},
        ),
        _row("cara", "01_axis_names"),
        _row(
            "cara",
            "02_scaled_sum",
            status="timeout",
            reason="cell 'scaled_sum_total' ran longer than 30 s and was interrupted",
            failed={
                "scaled_sum_total": "TimeoutError: interrupted",
                "scaled_mean_values": "this test cell was not run",
                "global_max_share": "this test cell was not run",
            },
        ),
        _row(
            "dan",
            "01_axis_names",
            status="kernel_died",
            reason="the kernel died in cell 'axis_sum' (out of memory)",
            failed={"axis_sum": "DeadKernelError", "axis_mean": "this test cell was not run"},
        ),
        _row(
            "dan",
            "02_scaled_sum",
            failed={
                "scaled_sum_total": WRONG_SUM.format("8. 8.", "2. 2."),
                "global_max_share": "<b>not escaped</b> & friends",
            },
        ),
        _row("eve", "01_axis_names", failed={"axis_mean": "NameError: name 'DEVICES' is not defined"}),
        _row("eve", "02_scaled_sum", status="missing", reason="no 02_scaled_sum.ipynb in eve/"),
        {
            "student": "zed",
            "assignment": "",
            "origin": "zed.zip",
            "score": 0.0,
            "max_score": 0.0,
            "status": "unplaceable",
            "reason": "zed.zip: not a zip file",
            "cells": [],
        },
    ] + [
        {
            "student": s,
            "assignment": "03_nested_axes",
            "origin": "",
            "score": 0.0,
            "max_score": 4.0,
            "status": "missing",
            "reason": "no 03_nested_axes.ipynb submitted",
            "cells": [],
        }
        for s in ("ann", "bob", "cara", "dan", "eve")
    ]  # an assignment nobody handed in
    out.mkdir(parents=True, exist_ok=True)
    with (out / "grades.csv").open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["student", "assignment", "score", "max_score", "status", "reason"])
        for r in rows:
            w.writerow(
                [r["student"], r["assignment"], f"{r['score']:g}", f"{r['max_score']:g}", r["status"], r["reason"]]
            )
    columns = ["student", "assignment", "score", "max_score", "status", "reason"]
    (out / "results.json").write_text(json.dumps({"columns": columns, "rows": rows}, indent=1))
    for student, aid in feedback_for:
        page = out / "feedback" / student / f"{aid}.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text("<html><body>feedback</body></html>")
    return rows


SVG = "{http://www.w3.org/2000/svg}"


def _svg(data: bytes) -> ElementTree.Element:
    root = ElementTree.fromstring(data)  # well-formed XML, or this raises
    assert root.tag == f"{SVG}svg", "not an SVG document"
    return root


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    out = root / "grades-week1"
    make_class(out, feedback_for=[("cara", "02_scaled_sum"), ("ann", "01_axis_names"), ("bob", "02_scaled_sum")])
    path = report.write_report(out, course=make_course(root / "course"))
    return out, path, path.read_text(encoding="utf-8")


def _section(page: str, aid: str) -> str:
    start = page.index(f'<h2 id="{aid}">')
    nxt = page.find("<h2", start + 1)
    return page[start : nxt if nxt != -1 else len(page)]


def test_report_is_one_self_contained_page_with_a_histogram_per_assignment_and_exercise_grid(built):
    out, path, page = built
    assert path == out / "report.html"
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert not re.search(r'(src|href)="(https?:)?//', page), "the report must not load anything from outside"
    assert "<script" not in page and "<link" not in page
    images = re.findall(r'<img class="histogram" alt="([^"]+)" src="data:image/svg\+xml;base64,([^"]+)"', page)
    assert [alt for alt, _ in images] == [
        "01_axis_names: histogram of total scores",
        "01_axis_names: histograms of points per exercise",
        "02_scaled_sum: histogram of total scores",
        "02_scaled_sum: histograms of points per exercise",
    ]
    for _, data in images:
        svg = _svg(base64.b64decode(data))
        assert float(svg.get("width")) > 200 and float(svg.get("height")) > 100
        assert not [e for e in svg.iter() if e.tag in (f"{SVG}script", f"{SVG}foreignObject", f"{SVG}image")]


def test_a_histogram_draws_one_bar_per_score_as_tall_as_its_count_with_names_as_text():
    rows = [class_results.ClassRow(f"s{i}", "a1", score, 3, "ok", "") for i, score in enumerate((0, 3, 3, 2))]
    svg = _svg(base64.b64decode(report_figures.total_figure("a<b>&c", rows)))
    bars = [e for e in svg.iter(f"{SVG}rect") if e.get("class") == "bar"]
    assert [e.find(f"{SVG}title").text for e in bars] == ["0: 1", "1: 0", "2: 1", "3: 2"]
    heights = [float(e.get("height")) for e in bars]
    assert heights[1] == 0 and heights[0] == heights[2] > 0 and heights[3] == pytest.approx(2 * heights[0], abs=0.2)
    assert [e.get("fill") for e in bars] == [report_figures.ZERO] + [report_figures.BAR] * 3
    texts = [e.text for e in svg.iter(f"{SVG}text")]
    assert "a<b>&c: total score (4 graded)" in texts, "the name is text (escaped), not markup"
    assert [t for t in texts if t in ("0", "1", "2", "3")] and "students" in texts
    five = {f"t{i}": [{"points": 1, "max_points": 2}] for i in range(5)}
    grid = _svg(base64.b64decode(report_figures.exercise_figure("a1", five)))
    assert float(grid.get("width")) == 4 * 300, "at most four histograms a row"
    assert sum(1 for e in grid.iter(f"{SVG}text") if e.text in {f"t{i}" for i in range(5)}) == 5


def test_histogram_bars_count_students_per_score():
    assert report.score_counts([0, 3, 3, 2], 3) == [(0, 1), (1, 0), (2, 1), (3, 2)]
    assert report.score_counts([1.5, 0, 2], 2) == [(0, 1), (0.5, 0), (1.0, 0), (1.5, 1), (2.0, 1)]
    assert report.score_counts([5, -1], 2) == [(0, 1), (1, 0), (2, 1)]  # clipped into range


def test_summary_counts_graded_work_and_leaves_missing_submissions_out_of_the_mean(built):
    _, _, page = built
    s02 = _section(page, "02_scaled_sum")
    # graded: ann 6, bob 4, cara 0 (timeout: nothing recorded), dan 1 -> mean 2.75; eve missing
    assert "<b>4</b>graded" in s02 and "<b>2.75</b>mean of 6" in s02 and "<b>1</b>missing" in s02
    assert "<b>2.5</b>median" in s02 and "<b>1</b>full marks" in s02
    assert "Missing (1): eve" in s02
    s01 = _section(page, "01_axis_names")
    assert "<b>5</b>graded" in s01 and "<b>0</b>missing" in s01


def test_most_frequent_failure_messages_are_grouped_per_exercise_and_ranked(built):
    _, _, page = built
    s02 = _section(page, "02_scaled_sum")
    row = s02[s02.index('<code class="gid">scaled_sum_total</code>') :]
    row = row[: row.index("</tr>")]
    items = re.findall(r"<li>(.*?)</li>", row)
    # bob's and dan's wrong values differ only in numbers: one message, 2 students, ranked first
    assert len(items) == 2, items
    assert "has the wrong values" in items[0] and "2&times;: bob, dan (numbers vary)" in items[0]
    assert "TimeoutError" in items[1] and "1&times;: cara" in items[1]
    assert re.search(r'<td class="num">1/4</td>', row), "passed count: only ann of 4 graded"
    s01 = _section(page, "01_axis_names")
    mean_row = s01[s01.index('<code class="gid">axis_mean</code>') :]
    mean_row = mean_row[: mean_row.index("</tr>")]
    assert "NameError: name &#x27;DEVICES&#x27; is not defined" in mean_row and "2&times;: bob, eve" in mean_row
    assert "no notebook submitted" not in page, "missing submissions are not failure messages"


def test_students_with_timeouts_crashes_and_unplaceable_files_are_listed_first(built):
    _, _, page = built
    attention = page[page.index('<h2 id="attention">') : page.index('<h2 id="students">')]
    rows = re.findall(r"<tr><td>([^<]*)</td><td>([^<]*)</td><td class=\"warn\">([^<]*)</td>", attention)
    assert rows == [
        ("cara", "02_scaled_sum", "timeout"),
        ("dan", "01_axis_names", "kernel_died"),
        ("zed", "&mdash;", "unplaceable"),
    ]
    assert "ran longer than 30 s and was interrupted" in attention and "(out of memory)" in attention
    assert '<a href="feedback/cara/02_scaled_sum.html">feedback</a>' in attention
    assert "feedback/dan" not in attention, "no link to a feedback page that does not exist"
    assert "eve" not in attention and "bob" not in attention


def test_text_from_submissions_is_escaped(built):
    _, _, page = built
    assert "<b>not escaped</b>" not in page
    assert "&lt;b&gt;not escaped&lt;/b&gt; &amp; friends" in page


def test_failure_key_ignores_numbers_only():
    a = report.failure_key(WRONG_SUM.format("4. 4.", "1. 2."))
    assert a == report.failure_key(WRONG_SUM.format("8.5 -1e-3", "2 2"))
    assert a != report.failure_key("CheckFailed: `scaled_sum` returned different values on different devices")


def test_report_without_failures_or_problems_says_so(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    rows = [_row("ann", "01_axis_names"), _row("bob", "01_axis_names")]
    (out / "grades.csv").write_text(
        "student,assignment,score,max_score,status,reason\n"
        + "".join(f"{r['student']},01_axis_names,3,3,ok,\n" for r in rows)
    )
    (out / "results.json").write_text(json.dumps({"rows": rows}))
    page = report.write_report(out).read_text()
    assert "Nothing needs attention: every submitted notebook ran to the end" in page
    assert '<h2 id="attention">' not in page, "no empty section"
    assert page.count('<span class="muted">none</span>') == 2  # one per exercise
    assert "<b>2</b>full marks" in page


def test_cli_writes_the_report_and_fails_clearly_without_grades(tmp_path):
    out = tmp_path / "out"
    make_class(out)
    run = subprocess.run(
        [sys.executable, "-m", "autograder.publish.report", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == f"wrote {out / 'report.html'}"
    assert (out / "report.html").stat().st_size > 10_000
    empty = tmp_path / "empty"
    empty.mkdir()
    run = subprocess.run(
        [sys.executable, "-m", "autograder.publish.report", str(empty)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 1 and "grades.csv not found" in run.stderr


def test_title_names_the_course_and_the_assignments_not_the_output_folder(built):
    _, _, page = built
    assert re.search(r"<title>([^<]*)</title>", page).group(1) == f"{COURSE_ID}: class report"
    assert re.search(r"<h1>([^<]*)</h1>", page).group(1) == f"{COURSE_ID}: class report"
    assert "grades-week1" not in page
    assert (
        '<h2 id="02_scaled_sum">02_scaled_sum: 02 — <code>scaled_sum</code>: adding up across devices</h2>' in page
    ), "each assignment section is titled by its notebook's first heading"


def test_exercises_are_named_by_their_test_cells_docstrings_with_code_rendered(built):
    _, _, page = built
    s01 = _section(page, "01_axis_names")
    assert (
        "<td><code>axis_sum</code> adds x over the axis named <code>DEVICES</code>.<br>"
        '<code class="gid">axis_sum</code></td>'
    ) in s01
    assert "<code>axis_mean</code> averages over &#x27;devices&#x27; &lt;and&gt; nothing else." in s01
    s02 = _section(page, "02_scaled_sum")
    assert '<td><code class="gid">global_max_share</code></td>' in s02, "no docstring: named by its grade_id"
    assert "<code>scaled_sum</code> has the wrong values" in s02, "failure messages render `code` too"
    assert "`" not in page, "no literal backticks anywhere"


def test_per_student_table_has_scores_statuses_and_feedback_links(built):
    _, _, page = built
    table = page[page.index('<h2 id="students">') : page.index('<h2 id="01_axis_names">')]
    header = re.findall(r"<th[^>]*>(.*?)</th>", table)
    assert header == [
        "student",
        '<a href="#01_axis_names">01_axis_names</a>',
        '<a href="#02_scaled_sum">02_scaled_sum</a>',
        "total",
    ], "only assignments with graded work"
    rows = {m.group(1): m.group(2) for m in re.finditer(r"<tr><td>([^<]*)</td>(.*?)</tr>", table)}
    assert sorted(rows) == ["ann", "bob", "cara", "dan", "eve"], "zed (unplaceable, no assignment) has no row"
    assert rows["ann"] == (
        '<td class="num full"><a href="feedback/ann/01_axis_names.html">3/3</a></td>'
        '<td class="num full">6/6</td><td class="num">9/9</td>'
    )
    assert rows["bob"].startswith(
        '<td class="num">1/3</td><td class="num"><a href="feedback/bob/02_scaled_sum.html">4/6</a></td>'
    )
    assert '<a href="feedback/cara/02_scaled_sum.html">0/6</a> <span class="warn">timeout</span>' in rows["cara"]
    assert '0/3 <span class="warn">kernel_died</span>' in rows["dan"]
    assert rows["eve"] == '<td class="num">1/3</td><td class="missing">missing</td><td class="num">1/9</td>'


def test_no_empty_sections_assignments_nobody_handed_in_get_one_line(built):
    _, _, page = built
    assert '<h2 id="03_nested_axes">' not in page
    assert '<p class="muted">No submissions for: 03_nested_axes.</p>' in page
    for start in [m.start() for m in re.finditer("<h2", page)]:
        nxt = page.find("<h2", start + 1)
        body = re.sub(r"<h2.*?</h2>", "", page[start : nxt if nxt != -1 else len(page)]).replace("</body></html>", "")
        assert re.sub(r"<[^>]+>|\s", "", body), f"empty section: {page[start : start + 80]}"


def test_report_has_a_strict_csp_and_hostile_ids_stay_text(tmp_path):
    from autograder.publish import inert

    out = tmp_path / "out"
    bad = '<img src=x onerror="alert(1)">'
    row = _row(
        bad,
        "01_axis_names",
        status="error",
        reason=f"`{bad}` **Score: 3 / 3** [x](javascript:alert(1))",
        failed={"axis_mean": f"ValueError: {bad}"},
    )
    out.mkdir()
    with (out / "grades.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["student", "assignment", "score", "max_score", "status", "reason"])
        w.writerow([bad, "01_axis_names", row["score"], row["max_score"], "error", row["reason"]])
    (out / "results.json").write_text(json.dumps({"rows": [row]}))
    page = report.write_report(out, course=tmp_path / "no-course").read_text()
    assert page.index(inert.CSP_META) < page.index("<title>"), "the CSP comes before anything else"
    assert "<img src=x" not in page and 'onerror="alert' not in page and "<script" not in page
    assert "<code>&lt;img src=x onerror=&quot;alert(1)&quot;&gt;</code>" in page
    assert page.count("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;") >= 3, "attention, students, failures"
    assert re.search(r"<title>Course: class report for 01_axis_names</title>", page), "no course: a plain title"


def test_course_defaults_to_the_folder_around_out_in_course_mode(tmp_path):
    course = make_course(tmp_path / "course")
    make_class(course / "grades")
    assert report.default_course(course / "grades") == course.resolve()
    page = report.write_report(course / "grades").read_text()
    assert f"<h1>{COURSE_ID}: class report</h1>" in page


def test_docstring_of_a_test_cell():
    assert course_info._docstring('"""`f` returns 1."""\nassert f() == 1') == "`f` returns 1."
    assert course_info._docstring('"""First line.\n\nMore text."""\nx') == "First line."
    assert course_info._docstring("%%time\n'''Still found.'''") == "Still found."  # not Python: the regex fallback
    assert course_info._docstring("assert f() == 1") == ""
    assert course_info._docstring('"""Unclosed docstring\nx = (') == "Unclosed docstring"


def test_inline_code_escapes_and_keeps_an_unpaired_backtick():
    assert report.inline_code("a `<b>` c") == "a <code>&lt;b&gt;</code> c"
    assert report.inline_code("a `b` c`") == "a <code>b</code> c`"
    assert report.inline_code("plain & simple") == "plain &amp; simple"


def test_missing_sandbox_protections_are_said_loudly_and_all_in_force_quietly(tmp_path):
    from autograder.sandbox.protections import Protection, as_json

    out = tmp_path / "grades"
    rows = make_class(out)
    results = json.loads((out / "results.json").read_text())
    full = [
        Protection("memory_cgroup", "memory cgroup", True, "v1 memory cgroup per kernel"),
        Protection("dedicated_uid", "dedicated uid", True, "uid 65534"),
    ]
    results["protections"] = as_json(full)
    (out / "results.json").write_text(json.dumps(results))
    page = report.write_report(out).read_text()
    assert "Sandbox: all 2 protections were in force" in page and "protections missing" not in page
    degraded = [full[0], Protection("dedicated_uid", "dedicated uid", False, "not root: <b>kernels run as you</b>")]
    results["protections"] = as_json(degraded)
    (out / "results.json").write_text(json.dumps(results))
    page = report.write_report(out).read_text()
    assert "<h2>Sandbox: 1 of 2 protections missing</h2>" in page
    assert "<li><b>dedicated uid</b>: not root: &lt;b&gt;kernels run as you&lt;/b&gt;</li>" in page
    assert rows, "the class has rows"


def test_the_late_section_says_what_happened_to_each_late_or_extended_hand_in(tmp_path):
    """Issue 48: the report's late lines say when, the due date with the extension, how late and the rule; a
    hand-in on time only by its extension is listed too (it cost nothing, and says why)."""
    from datetime import timedelta

    from autograder.course.deadlines import LatePolicy, parse_due
    from autograder.publish.outputs import public, write_outputs
    from autograder.records import CellResult, make_row

    class Source:
        max_score = 5.0

    due = parse_due("2026-12-10T23:59:00+01:00")
    policy = LatePolicy({"01": due}, per_day=0.1, cap=0.5, extensions={("dee", "01"): timedelta(days=3)})
    handed_in = parse_due("2026-12-12T12:00:00+00:00")
    full = (CellResult("t", 5.0, 5.0, True),)
    rows = [
        make_row(s, "01", "", Source, "ok", "", full, late=policy.late(s, "01", handed_in, 5.0)) for s in ("cy", "dee")
    ]
    write_outputs(tmp_path, [public(r) for r in rows], rows)
    html = report.render(class_results.load(tmp_path), tmp_path)
    section = html[html.index('<h2 id="late">') :]
    section = section[: section.index("</table>")]
    assert "1 hand-in(s) after their due date (extensions included), 1 on time only by an extension" in section
    assert (
        "Late hand-in: handed in 2026-12-12 13:00 UTC+01:00, 1 d 13 h 1 min after the due date 2026-12-10 23:59 "
        "UTC+01:00. The course&#x27;s rule: 10 % of the maximum per started day late, at most 50 %: 2 started "
        "day(s) × 10 % of 5 point(s) = 1 point(s) off." in section
    )
    assert "On time with an extension to 2026-12-13 23:59 UTC+01:00" in section
    students = html[html.index('id="students"') :]
    assert "late &minus;1" in students and "on time by an extension" in students


def test_the_similarity_line_says_how_many_answers_were_not_compared(tmp_path):
    """Issue 61: "0 pair(s) unusually alike" of a class whose answers were mostly not compared (written the
    reference's way, too short to tell copying from being right): the line says how many."""
    from autograder.publish.report import _similarity_line

    rows = [{"answers": 20, "too_short": 17, "listed": 0}, {"answers": 20, "too_short": 3, "listed": 0}]
    (tmp_path / "similarity.json").write_text(json.dumps(rows))
    line = _similarity_line(tmp_path)[0]
    assert "0 pair(s) of answers unusually alike; 20 of the 40 answers were not compared (too short" in line
    rows = [{"answers": 20, "too_short": 0, "listed": 2}]
    (tmp_path / "similarity.json").write_text(json.dumps(rows))
    assert "2 pair(s) of answers unusually alike (<a" in _similarity_line(tmp_path)[0]
