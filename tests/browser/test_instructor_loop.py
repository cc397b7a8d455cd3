"""The instructor's loop in Chromium, on a class graded for real (tests/helpers/instructor_class.py: four students
on notebook 01 with known mistakes, one copied answer, one late hand-in and one extension).

From the class report: the misconception map's groups (two different mistakes of one exercise are two groups,
each under the visible check's words, with the hint the exercise names, one click away, and the students' ids
on click), the late and extension lines, the link to the similarity report and its one pair, then a student's
feedback page from the report's table, whose long message shows its first sentences and the rest on one click.
axe-core checks the report and the similarity report. Screenshots in build/screenshots/: the report's map and
late lines (the docs' own: `python -m tools.doc_images` copies it into docs/images/), the similarity report,
and the feedback page.

The class is graded once per test run, shared with tests/autograder/test_autograder_instructor_class.py.
"""

from __future__ import annotations

import pytest
from instructor_class import AID, graded_class

RANK = "rank_weighted_sum_values"


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    info = graded_class(tmp_path_factory)
    assert info["returncode"] == 0, info["stderr"][-3000:]
    return info["out"]


def _group_rows(page, gid: str):
    """The rows of an exercise's table in the map (its h3 holds the grade id)."""
    heading = page.locator("#misconceptions ~ h3", has=page.locator("code.gid", has_text=gid))
    return heading.locator("xpath=following-sibling::table[1]").locator("tr", has=page.locator("td.num"))


def test_the_map_the_pairs_the_late_lines_and_a_whole_message(browser, out, screenshots):
    from axe import serious_violations

    page = browser.new_page()
    page.goto((out / "report.html").as_uri())

    # the map: two mistakes of rank_weighted_sum, two groups, each the check's words and its own hint
    rows = _group_rows(page, RANK)
    assert rows.count() == 2
    said = {rows.nth(i).locator(".ids").text_content(): rows.nth(i) for i in range(2)}
    assert set(said) == {"ben", "cy"}
    assert "That is the plain total of x over the devices" in said["ben"].inner_text()
    assert "这是 x 在各设备上的普通总和" in said["ben"].locator("[lang=zh-CN]").first.inner_text()
    assert "positions along the axis start at 0" in said["cy"].inner_text()
    hints = {s: row.locator("a[href^='#hint-']").get_attribute("href") for s, row in said.items()}
    assert hints == {"ben": f"#hint-{AID}-{RANK}-2", "cy": f"#hint-{AID}-{RANK}-3"}
    ids = said["cy"].locator("details")
    assert not ids.locator(".ids").is_visible()
    ids.locator("summary").click()
    assert ids.locator(".ids").is_visible(), "a click shows the students' ids"
    target = page.locator(hints["cy"])
    assert not target.is_visible(), "the exercise's hints start folded"
    said["cy"].locator("a[href^='#hint-']").click()
    assert target.is_visible() and target.locator("code").first.inner_text() == "lax.axis_index(DEVICES) * x"
    for gid, who in (("last_device_value_values", "ben"), ("center_pmap_and_vmap", "eve")):
        one = _group_rows(page, gid)
        assert one.count() == 1 and one.first.locator(".ids").text_content() == who, gid
    assert "every device returned zeros" in _group_rows(page, "last_device_value_values").first.inner_text().lower()
    top = page.locator("#misconceptions ~ table").first.locator("tr", has=page.locator("td.num"))
    assert top.count() == 3, "the three to revisit first"

    # the late and extension lines, in the course's time zone
    late = page.locator("#late ~ table").first
    cy, dee = late.locator("tr", has_text="cy"), late.locator("tr", has_text="dee")
    assert "1 d 13 h 1 min after the due date 2026-12-10 23:59 UTC+01:00" in cy.inner_text()
    assert "2 started day(s) × 10 % of 5 point(s) = 1 point(s) off" in cy.inner_text()
    assert dee.inner_text().split("\t")[2].startswith("On time with an extension to 2026-12-13 23:59 UTC+01:00")
    box = late.bounding_box()  # the page from its top to the end of the late lines: the map, the students, late
    bottom = page.evaluate("window.scrollY") + box["y"] + box["height"] + 16  # the box is the viewport's
    clip = {"x": 0, "y": 0, "width": page.viewport_size["width"], "height": bottom}
    page.screenshot(path=str(screenshots / "class-report-misconception-map.png"), full_page=True, clip=clip)
    assert not (found := serious_violations(page)), f"axe-core on the class report: {found}"

    # the similarity report: the copied pair, side by side
    page.get_by_role("link", name="similarity.html").click()
    page.wait_for_load_state("load")
    pairs = page.locator("h3").all_inner_texts()
    assert len(pairs) == 1 and pairs[0].startswith("dee & eve"), pairs
    assert page.locator("pre", has_text="mine_is_last = position == final_position").count() == 1
    assert page.locator("pre", has_text="is_last = idx == last_idx").count() == 1
    page.screenshot(path=str(screenshots / "instructor-loop-similarity.png"), full_page=True)
    assert not (found := serious_violations(page)), f"axe-core on the similarity view: {found}"

    # a feedback page, from the report's table: the whole message, its rest one click away
    page.go_back()
    page.locator("table.students tr", has_text="ben").get_by_role("link", name="2/5").click()
    page.wait_for_load_state("load")
    banner = page.locator("table").first
    message = banner.locator("tr", has_text="last_device_value").locator("td").nth(2)
    # the judge's words on the hidden inputs: ben's known mistake, named on each case
    assert message.inner_text().startswith("results differ from the reference on hidden inputs (pmap_2: values")
    rest = message.locator("details")
    why = rest.locator("code", has_text="lax.psum(1, DEVICES) - 1").first  # the fix, in the rest of the message
    assert rest.evaluate("d => d.open") is False and not why.is_visible()
    rest.locator("summary").click()
    assert rest.evaluate("d => d.open") is True and why.is_visible()
    whole = message.inner_text()
    assert "Positions along the axis run from 0 to 4 here: the last device is at position 4" in whole
    assert whole.endswith("and 1 more)")
    assert "…" not in message.inner_text()
    page.screenshot(path=str(screenshots / "instructor-loop-feedback.png"))
    for student, line in (
        ("cy", "Late hand-in: handed in 2026-12-12 13:00 UTC+01:00"),
        ("dee", "On time with an extension to 2026-12-13 23:59 UTC+01:00"),
    ):
        page.goto((out / "feedback" / student / f"{AID}.html").as_uri())
        assert page.locator("blockquote").first.get_by_text(line, exact=False).is_visible(), student
