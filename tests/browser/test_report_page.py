"""The instructor's class report in Chromium: the histograms load under the page's CSP, the per-student
table links to feedback pages that open, exercises are named by their docstrings (code rendered)."""

from __future__ import annotations

import csv
import json

from autograder.publish import report

# A small class: two assignments, four students, one timeout, one missing submission.
TESTS = {
    "01_axis_names": {"axis_sum": 1.0, "axis_mean": 2.0},
    "02_scaled_sum": {"scaled_sum_total": 2.0, "scaled_mean_value": 1.0, "global_max_share_value": 3.0},
}
FAILED = {
    ("bob", "01_axis_names"): {"axis_mean": "NameError: name 'DEVICES' is not defined"},
    ("bob", "02_scaled_sum"): {"scaled_sum_total": "CheckFailed: expected [4. 4.], got [1. 2.]"},
    ("dan", "02_scaled_sum"): {
        "scaled_sum_total": "CheckFailed: expected [8. 8.], got [2. 2.]",
        "global_max_share_value": "this test cell was not run",
    },
}
DOCS = {"axis_sum": "`axis_sum` adds x over the named axis.", "scaled_sum_total": "`scaled_sum` sums x * 2.0."}
STATUS = {
    ("cara", "02_scaled_sum"): ("timeout", "cell 'scaled_sum_total' ran longer than 30 s and was interrupted"),
    ("eve", "02_scaled_sum"): ("missing", "no 02_scaled_sum.ipynb submitted"),
}


def _class_out(out):
    rows = []
    for student in ("ann", "bob", "cara", "dan", "eve"):
        for aid, tests in TESTS.items():
            status, reason = STATUS.get((student, aid), ("ok", ""))
            failed = FAILED.get((student, aid), {})
            if status != "ok":
                failed = {gid: reason for gid in tests}
            cells = [
                {
                    "grade_id": gid,
                    "points": 0.0 if gid in failed else pts,
                    "max_points": pts,
                    "passed": gid not in failed,
                    "reason": failed.get(gid, ""),
                }
                for gid, pts in tests.items()
            ]
            rows.append(
                {
                    "student": student,
                    "assignment": aid,
                    "score": sum(c["points"] for c in cells),
                    "max_score": sum(tests.values()),
                    "status": status,
                    "reason": reason,
                    "cells": cells,
                }
            )
    out.mkdir(parents=True)
    with (out / "grades.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["student", "assignment", "score", "max_score", "status", "reason"])
        w.writerows([r["student"], r["assignment"], r["score"], r["max_score"], r["status"], r["reason"]] for r in rows)
    (out / "results.json").write_text(json.dumps({"rows": rows}))
    page = out / "feedback" / "bob" / "02_scaled_sum.html"
    page.parent.mkdir(parents=True)
    page.write_text(
        "<!DOCTYPE html><html><head><title>bob 02</title></head><body><h1>feedback for bob</h1></body></html>"
    )


def _course(course):
    course.mkdir(parents=True, exist_ok=True)
    (course / "nbgrader_config.py").write_text(
        "c = get_config()  # noqa: F821\nc.CourseDirectory.course_id = 'jax-101'\n"
    )
    for aid, tests in TESTS.items():
        cells = [{"cell_type": "markdown", "metadata": {}, "source": f"# {aid[:2]} — `{aid[3:]}`"}]
        cells += [
            {
                "cell_type": "code",
                "execution_count": None,
                "outputs": [],
                "metadata": {
                    "nbgrader": {"grade": True, "solution": False, "grade_id": gid, "points": pts, "schema_version": 3}
                },
                "source": (f'"""{DOCS[gid]}"""\n' if gid in DOCS else "") + "q.check()",
            }
            for gid, pts in tests.items()
        ]
        (course / "source" / aid).mkdir(parents=True)
        (course / "source" / aid / f"{aid}.ipynb").write_text(
            json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
        )
    return course


def test_class_report_renders_and_links_in_chromium(browser, tmp_path, screenshots):
    out = tmp_path / "course" / "grades"
    _class_out(out)
    _course(tmp_path / "course")
    path = report.write_report(out)  # OUT/.. is the course: its id, titles and docstrings
    page = browser.new_page()
    requests = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    images = page.locator("img.histogram")
    assert images.count() == 2 * len(TESTS), "a total-score histogram and an exercise grid per assignment"
    sizes = page.evaluate("""() => [...document.querySelectorAll('img.histogram')].map(
        i => ({alt: i.alt, complete: i.complete, w: i.naturalWidth, h: i.naturalHeight,
               shown: i.getBoundingClientRect().width}))""")
    for img in sizes:
        assert img["complete"] and img["w"] > 0 and img["h"] > 0 and img["shown"] > 0, img
    attention = page.locator("#attention + table").inner_text()
    assert "cara" in attention and "timeout" in attention and "eve" not in attention
    assert page.get_by_text("Missing (1): eve").count() == 1
    assert page.title() == "jax-101: class report" and page.locator("h1").inner_text() == "jax-101: class report"
    body = page.inner_text("body")
    assert "`" not in body, "code is rendered, not shown with backticks"
    assert page.locator("code", has_text="scaled_sum").count() >= 2, "heading and docstring render `scaled_sum`"
    exercise = page.locator("td", has_text="adds x over the named axis.")
    assert exercise.count() == 1 and exercise.locator("code").first.inner_text() == "axis_sum"
    students = page.locator("table.students tr")
    assert students.count() == 1 + 5, "a header and one row per student"
    cara = page.locator("table.students tr", has_text="cara").inner_text()
    assert "timeout" in cara and "0/6" in cara
    assert "missing" in page.locator("table.students tr", has_text="eve").inner_text()
    page.screenshot(path=str(screenshots / "class_report.png"), full_page=True)
    from axe import serious_violations

    assert not (found := serious_violations(page)), f"axe-core on the class report: {found}"
    assert [u for u in requests if not u.startswith("data:")] == [path.as_uri()], "self-contained: one file, no fetches"
    page.locator("table.students tr", has_text="bob").get_by_role("link", name="4/6").click()
    page.wait_for_load_state("load")
    assert page.locator("h1").inner_text() == "feedback for bob", "the score links to the student's feedback page"
