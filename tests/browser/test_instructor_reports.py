"""What an instructor acts on, in Chromium: the class report's misconception map (ids on click, labels in
English and Chinese), its late hand-ins, and its link to the similarity view, on a generated class with
known misconceptions, one known late hand-in and one known copied pair; axe-core on both pages."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from answer_class import AID, COPY, INDEXED, LOOP, REFERENCE, SCAN, hand_ins, source

from autograder.publish import report
from autograder.publish.outputs import public, write_outputs
from autograder.publish.similarity import write_similarity
from autograder.reasons import Kind, Verdict, Words, phrase
from autograder.records import CellResult, Late, make_row

# one copied pair (ann, ben); two honest answers written differently; one the reference's way
ANSWERS = {"ann": LOOP, "ben": COPY, "cy": SCAN, "dee": INDEXED, "eve": REFERENCE}
PMEAN = Verdict(
    False,
    (phrase(Kind.VALUES_DIFFER, key="new_params"), phrase(Kind.COMM_MISSING, missing=Words(("psum",)), seen="pmean")),
)


def _class(tmp_path):
    src = source()
    gids = [t.grade_id for t in src.test_cells]
    intake, rows = hand_ins(tmp_path, ANSWERS), []
    for student in ANSWERS:
        wrong = student in ("ann", "ben", "cy")
        cells = tuple(
            CellResult(
                g, 0.0 if wrong and i == 0 else t.points, t.points, not (wrong and i == 0), PMEAN if wrong else ""
            )
            for i, (g, t) in enumerate(zip(gids, src.test_cells, strict=True))
        )
        late = None
        if student == "dee":
            due = datetime(2026, 12, 10, 23, 59, tzinfo=UTC)
            late = Late((due + timedelta(hours=30)).isoformat(), due.isoformat(), 30 * 3600.0, 2, 0.2, 1.0)
        rows.append(make_row(student, AID, f"{student}.ipynb", src, "ok", "", cells, late=late))
    out = tmp_path / "out"
    out.mkdir()
    write_outputs(out, [public(r) for r in rows], rows)
    write_similarity(out, {AID: src}, intake)
    return report.write_report(out)


def test_the_map_the_late_hand_ins_and_the_similarity_view(browser, tmp_path, screenshots):
    from axe import serious_violations

    page = browser.new_page()
    page.goto(_class(tmp_path).as_uri())
    top = page.locator("#misconceptions ~ table").first
    assert "3 of 5" in top.inner_text()
    assert "expected psum" in top.inner_text() and page.locator("#misconceptions ~ table [lang=zh-CN]").count() >= 1
    ids = top.locator("details").first
    assert ids.locator(".ids").text_content() == "ann, ben, cy" and not ids.locator(".ids").is_visible()
    ids.locator("summary").click()
    assert ids.locator(".ids").is_visible(), "a click shows the students' ids"
    taught = page.locator("#misconceptions ~ p", has_text="Taught in the section").first
    assert taught.inner_text().startswith(
        "Taught in the section “2. Loss and gradients on one device” of 04_gradient_averaging."
    )
    assert taught.locator("[lang=zh-CN]").inner_text().startswith("讲解见 04_gradient_averaging")
    hint = top.locator("a[href^='#hint-']").first
    target = page.locator(hint.get_attribute("href"))
    assert not target.is_visible(), "the exercise's hints start folded"
    hint.click()
    assert target.is_visible(), "the group's hint link opens the exercise's hints at that hint"
    assert target.locator("code").count() >= 1 and target.locator("[lang=zh-CN]").inner_text().strip()
    late = page.locator("#late + p + table").inner_text()
    assert "dee" in late and "−1" in late
    page.screenshot(path=str(screenshots / "class_report_map.png"), full_page=True)
    assert not (found := serious_violations(page)), f"axe-core on the class report: {found}"
    page.get_by_role("link", name="similarity.html").click()
    page.wait_for_load_state("load")
    pairs = page.locator("h3").all_inner_texts()
    assert len(pairs) == 1 and pairs[0].startswith("ann & ben: 100%"), pairs
    assert page.locator("pre", has_text="seen.append(l)").count() == 1
    page.screenshot(path=str(screenshots / "similarity.png"), full_page=True)
    assert not (found := serious_violations(page)), f"axe-core on the similarity view: {found}"
