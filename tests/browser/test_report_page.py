"""The instructor's class report in Chromium: the histograms really load and show."""
from __future__ import annotations

import csv
import json

from autograder import report

# A small class: two assignments, four students, one timeout, one missing submission.
TESTS = {"01_axis_names": {"axis_sum": 1.0, "axis_mean": 2.0},
         "02_scaled_sum": {"scaled_sum_total": 2.0, "scaled_mean_value": 1.0, "global_max_share_value": 3.0}}
FAILED = {("bob", "01_axis_names"): {"axis_mean": "NameError: name 'DEVICES' is not defined"},
          ("bob", "02_scaled_sum"): {"scaled_sum_total": "CheckFailed: expected [4. 4.], got [1. 2.]"},
          ("dan", "02_scaled_sum"): {"scaled_sum_total": "CheckFailed: expected [8. 8.], got [2. 2.]",
                                     "global_max_share_value": "this test cell was not run"}}
STATUS = {("cara", "02_scaled_sum"): ("timeout", "cell 'scaled_sum_total' ran longer than 30 s and was interrupted"),
          ("eve", "02_scaled_sum"): ("missing", "no 02_scaled_sum.ipynb submitted")}


def _class_out(out):
    rows = []
    for student in ("ann", "bob", "cara", "dan", "eve"):
        for aid, tests in TESTS.items():
            status, reason = STATUS.get((student, aid), ("ok", ""))
            failed = FAILED.get((student, aid), {})
            if status != "ok":
                failed = {gid: reason for gid in tests}
            cells = [{"grade_id": gid, "points": 0.0 if gid in failed else pts, "max_points": pts,
                      "passed": gid not in failed, "reason": failed.get(gid, "")} for gid, pts in tests.items()]
            rows.append({"student": student, "assignment": aid, "score": sum(c["points"] for c in cells),
                         "max_score": sum(tests.values()), "status": status, "reason": reason, "cells": cells})
    out.mkdir(parents=True)
    with (out / "grades.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["student", "assignment", "score", "max_score", "status", "reason"])
        w.writerows([r["student"], r["assignment"], r["score"], r["max_score"], r["status"], r["reason"]] for r in rows)
    (out / "results.json").write_text(json.dumps({"rows": rows}))


def test_class_report_histograms_load_in_chromium(browser, tmp_path, screenshots):
    out = tmp_path / "grades"
    _class_out(out)
    path = report.write_report(out)
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
    page.screenshot(path=str(screenshots / "class_report.png"), full_page=True)
    assert [u for u in requests if not u.startswith("data:")] == [path.as_uri()], "self-contained: one file, no fetches"
