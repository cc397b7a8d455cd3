"""The instructor's view: `make formgrader` serves nbgrader's formgrader on the course folder (build/course)."""
from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_make_formgrader_lists_every_assignment_of_the_course(browser, make_server, screenshots):
    server = make_server("formgrader")      # lays out build/course first if it is missing
    course = ROOT / "build" / "course"      # what `make notebooks` / `make check-notebooks` generated
    assignments = sorted(p.name for p in (course / "source").iterdir() if (p / f"{p.name}.ipynb").is_file())
    assert "02_scaled_sum" in assignments, assignments
    status, body = server.request("/formgrader/api/assignments")
    assert status == 200, body[:500]
    listed = {a["name"] for a in json.loads(body)}
    assert set(assignments) <= listed, f"formgrader should list every assignment of {course.name}: {sorted(listed)}"

    page = browser.new_page()
    page.goto(f"{server.url}/formgrader?token={server.token}")
    for aid in assignments:
        page.get_by_role("link", name=aid, exact=True).wait_for(timeout=60_000)
    assert page.get_by_text("could not be created").count() == 0, "the exchange folder is set up (build/exchange)"
    page.screenshot(path=str(screenshots / "formgrader.png"))
    page.close()
    problems = server.stop()
    assert not problems and server.proc.returncode == 0, f"{problems}\n{server.log()}"
