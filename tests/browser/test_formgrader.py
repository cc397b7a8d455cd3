"""The instructor's view: `make formgrader` serves nbgrader's formgrader on a course folder, and a hostile
submission graded by `python -m autograder grade` (course mode) runs nothing in the instructor's browser.

One formgrader session (the suite's time budget) on a copy of build/course, with
two graded students of 02_scaled_sum:

- `hostile` hands in a notebook whose added cells display every payload of
  tests/helpers/inert_payloads.py for real (in the sandboxed kernel), adds
  markdown cells with raw HTML, `javascript:` links, attachments and a fake
  "Score: 7 / 7" banner, and makes a test fail with a hostile message;
- `control` is graded too, then its autograded notebook is replaced by the raw
  payloads (what formgrader would show without `autograder.publish.inert`), to prove
  that this very page runs them: the checks below can fail.

- `patcher` answers every exercise wrongly, patches the visible checks, `observe` and
  `record` so that every cell passes in a plain kernel, and tries to write a file
  outside its folder: the sandboxed grader gives it 0 points (nbgrader's own
  autograde, which formgrader's Autograde button runs as the formgrader's user,
  would give it full marks and write the file). In formgrader, its Autograde
  button and the Generate/Release Feedback buttons (per submission and per
  assignment) are shown disabled, greyed out, each with its reason (title and
  screen-reader text), under a note naming `make grade` / `make return-feedback`
  (autograder.formgrader.guard); a click posts nothing and opens no dialog (they
  used to open formgrader's red "Error" dialog, which read as breakage): nothing
  runs, the file is not written, the gradebook keeps the sandboxed 0 and the
  feedback pages and autograded notebooks stay as the grader wrote them. The
  same holds for direct POSTs to the API routes (with the token; without it 403).

Each payload records itself in `window.__pwned`, calls `alert` and fetches
`/api/contents?pwned=...` (the Jupyter API the instructor's token opens).
Then the feedback pages and report.html made by the same run are opened from
disk with the same checks, and shown to still render under their CSP.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import sys
import urllib.error
import urllib.request
from datetime import UTC
from pathlib import Path

import autograder_specs as specs
import inert_payloads as P
import machine

from autograder.course.classroom import grade_command

ROOT = Path(__file__).resolve().parents[2]

A02 = specs.A02
SETTLE_MS = 1500  # time for a payload's script, handler or fetch to fire after load

# Inside the rendered notebook (formgrader's own page scripts are outside it): what could be active.
DOM_ACTIVE = """(root) => {
  const el = document.querySelector(root);
  if (!el) return ['no ' + root];
  const found = [];
  for (const n of el.querySelectorAll('*')) {
    const tag = n.tagName.toLowerCase();
    if (['script', 'iframe', 'object', 'embed', 'svg', 'math', 'base', 'form', 'frame'].includes(tag)) found.push(tag);
    for (const a of n.attributes) {
      const v = a.value.replace(/[\\s\\x00-\\x1f]/g, '').toLowerCase();
      if (a.name.startsWith('on')) found.push(tag + ' ' + a.name);
      // the class report's histograms (report_figures.py): SVG shown as an image, which runs nothing; they
      // still count as active if the SVG itself carries a script, a handler, foreign content or a link
      const histogram = tag === 'img' && a.name === 'src' && n.classList.contains('histogram')
          && /^data:image\\/svg\\+xml;base64,/.test(v)
          && !/<script|<foreignobject|<a[\\s>]|\\son[a-z]+=|javascript:|href=/i.test(atob(a.value.split(',')[1]));
      if (['href', 'src', 'action', 'formaction', 'xlink:href', 'data'].includes(a.name) && !histogram
          && (v.startsWith('javascript:') || (v.startsWith('data:') && !/^data:image\\/(png|jpeg);base64,/.test(v))))
        found.push(tag + ' ' + a.name + '=' + v.slice(0, 40));
    }
  }
  return found;
}"""


def _hostile_submission(source_nb) -> bytes:
    import nbformat
    from nbformat.v4 import new_code_cell

    nb = specs.release_notebook(A02)
    for gid in ("scaled_sum_answer", "global_max_share_answer"):
        nb.cells[specs.find(nb, gid)].source = specs.solution_code(source_nb, gid)
    nb.cells[specs.find(nb, "scaled_mean_answer")].source = f"def scaled_mean(x):\n    raise ValueError({P.REASON!r})"
    at = specs.find(nb, "scaled_sum_answer") + 1
    nb.cells[at:at] = [new_code_cell(P.student_code()), *P.markdown_cells()]
    return nbformat.writes(nb).encode()


def _patcher_submission(mark: Path) -> bytes:
    """All answers wrong; every check, observation and record patched to pass in the kernel; a file written
    outside the submission (as whoever runs the kernel)."""
    import nbformat

    nb = specs.release_notebook(A02)
    wrong = {
        "scaled_sum_answer": "def scaled_sum(x):\n    return x",
        "scaled_mean_answer": "def scaled_mean(x):\n    return x",
        "global_max_share_answer": "def global_max_share(x):\n    return x",
    }
    for gid, code in wrong.items():
        nb.cells[specs.find(nb, gid)].source = code
    patch = f"""
import os
try:
    with open({str(mark)!r}, "w") as fh:
        fh.write(str(os.getuid()))
except OSError:
    pass
for ex in (q.scaled_sum, q.scaled_sum_uses_psum, q.scaled_mean, q.global_max_share):
    ex.check = lambda *answer: print("Correct!")
    ex.observe = lambda *answer: {{}}
record = lambda *args, **kwargs: None
"""
    cell = nb.cells[specs.find(nb, "scaled_sum_answer")]
    cell.source += "\n" + patch
    return nbformat.writes(nb).encode()


def _raw_payload_notebook() -> str:
    """What formgrader would render without autograder.publish.inert: the payloads as they came."""
    import nbformat

    nb = specs.release_notebook(A02)
    at = specs.find(nb, "scaled_sum_answer") + 1
    nb.cells[at:at] = [*P.markdown_cells(), *P.output_cells()]
    return nbformat.writes(nb)


def _plain_course(tmp: Path) -> Path:
    """A copy of build/course (laid out by `make notebooks`): configuration, gradebook, source/, release/."""
    built = ROOT / "build" / "course"
    if not (built / "nbgrader_config.py").is_file():
        machine.run(
            [sys.executable, "-m", "tools.generate_notebooks", "--check"],
            cwd=ROOT,
            check=True,
            capture_output=True,
            quiet_s=600,
            what="building the plain course",
        )
    course = tmp / "course"
    course.mkdir()
    for name in ("nbgrader_config.py", "gradebook.db"):
        if (built / name).exists():
            shutil.copy(built / name, course / name)
    shutil.copytree(built / "source", course / "source")
    if (built / "release").is_dir():
        shutil.copytree(built / "release", course / "release")
    return course


def _course(tmp: Path) -> Path:
    """A copy of build/course with three submissions of 02_scaled_sum."""
    import nbformat

    course = _plain_course(tmp)
    source_nb = nbformat.read(ROOT / "solutions" / f"{A02}.ipynb", as_version=4)
    for student in ("control", "hostile"):
        folder = course / "submitted" / student / A02
        folder.mkdir(parents=True)
        (folder / f"{A02}.ipynb").write_bytes(_hostile_submission(source_nb))
        (folder / "timestamp.txt").write_text("2026-12-01 09:00:00")
    folder = course / "submitted" / "patcher" / A02
    folder.mkdir(parents=True)
    (folder / f"{A02}.ipynb").write_bytes(_patcher_submission(_mark(tmp)))
    (folder / "timestamp.txt").write_text("2026-12-01 09:00:00")
    return course


def _mark(tmp: Path) -> Path:
    """Where the patcher's cell tries to write (outside its submission, outside the course)."""
    return tmp / "written-by-student-code.txt"


GUARDED_ACTIONS = {  # the route of each guarded action, and the words its message uses
    "autograde": (f"/formgrader/api/submission/{A02}/patcher/autograde", "make grade"),
    "generate_feedback": (f"/formgrader/api/assignment/{A02}/generate_feedback", "make grade"),
    "generate_feedback_student": (f"/formgrader/api/assignment/{A02}/patcher/generate_feedback", "make grade"),
    "release_feedback": (f"/formgrader/api/assignment/{A02}/release_feedback", "make return-feedback"),
    "release_feedback_student": (f"/formgrader/api/assignment/{A02}/patcher/release_feedback", "make return-feedback"),
}


def _snapshot(course: Path, exchange: Path) -> dict[str, bytes]:
    """Every file the guarded actions could write: autograded notebooks, feedback, the exchange."""
    files = {}
    for root in (course / "autograded", course / "feedback", exchange):
        if root.is_dir():
            files.update({str(p): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()})
    return files


def _scores(server) -> dict[str, tuple]:
    status, body = server.request(f"/formgrader/api/submissions/{A02}")
    assert status == 200, body[:500]
    return {s["student"]: (s["autograded"], s["score"], s["max_score"]) for s in json.loads(body)}


def _formgrader_cannot_autograde_or_publish(
    browser, server, course: Path, exchange: Path, tmp: Path, screenshots: Path
) -> None:
    """The Autograde button and every guarded route answer with the message; nothing runs or changes."""
    scores = _scores(server)
    assert scores["patcher"] == (True, 0.0, 7.0), f"the sandboxed grader gives the patcher 0 / 7: {scores}"
    before = _snapshot(course, exchange)
    page = browser.new_page()
    posted, dialogs = [], []
    page.on("request", lambda r: posted.append(r.url) if r.method == "POST" else None)
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(f"{server.url}/formgrader/manage_submissions/{A02}")
    row = page.locator("tr", has=page.get_by_text("patcher", exact=True))
    row.wait_for(timeout=60_000)  # the table is filled in by a script
    for cell, words in (
        ("autograde", "Autograde is disabled in this formgrader"),
        ("generate-feedback", "Generate Feedback is disabled in this formgrader"),
        ("release-feedback", "Release Feedback is disabled in this formgrader"),
    ):
        off = row.locator(f"td.{cell} button")
        off.wait_for(timeout=30_000)
        assert row.locator(f"td.{cell} a").count() == 0, f"{cell}: formgrader's clickable link is still there"
        assert off.is_disabled() and off.get_attribute("aria-disabled") == "true", cell
        assert words in off.get_attribute("title") and words in off.inner_text(), (cell, off.get_attribute("title"))
        assert float(off.evaluate("b => getComputedStyle(b).opacity")) < 0.5, f"{cell} does not look disabled"
        row.locator(f"td.{cell} > span").click()  # where a student of the page would click: nothing happens
    note = page.locator("#namedaxes-guard-note")
    assert note.is_visible() and note.locator("code").all_inner_texts() == ["make grade", "make return-feedback"]
    page.wait_for_timeout(1000)  # a dialog's fade-in, had anything been posted
    assert not page.locator(".modal").is_visible(), "no dialog opens, least of all formgrader's red Error"
    assert posted == [] and dialogs == [], (posted, dialogs)
    page.screenshot(path=str(screenshots / "formgrader_autograde_disabled.png"))
    page.goto(f"{server.url}/formgrader/manage_assignments")
    assignment = page.locator("tr", has=page.get_by_text(A02, exact=True))
    assignment.wait_for(timeout=60_000)
    for cell in ("generate-feedback", "release-feedback"):
        off = assignment.locator(f"td.{cell} button")
        off.wait_for(timeout=30_000)
        assert off.is_disabled() and "is disabled in this formgrader" in off.get_attribute("title"), cell
        assert assignment.locator(f"td.{cell} a").count() == 0, cell
    assert page.locator("#namedaxes-guard-note").is_visible()
    page.screenshot(path=str(screenshots / "formgrader_feedback_disabled.png"))
    assert posted == [] and dialogs == [], (posted, dialogs)
    page.close()
    for name, (route, words) in GUARDED_ACTIONS.items():  # direct POSTs: the API, not only the button
        status, body = server.request(route, data={})
        assert status == 200, (name, status, body[:300])
        answer = json.loads(body)
        assert answer["success"] is False and words in " ".join(answer["log"].split()), (name, answer)
        assert answer["disabled_by"] == "autograder.formgrader.guard", (name, answer)
        req = urllib.request.Request(server.url + route, data=b"", method="POST")  # no token, no cookie
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                raise AssertionError(f"{name}: answered {resp.status} without authentication")
        except urllib.error.HTTPError as err:
            assert err.code == 403, (name, err.code)
    assert not _mark(tmp).exists(), "student code ran outside the sandbox"
    assert _scores(server) == scores, "the gradebook keeps the sandboxed scores"
    assert _snapshot(course, exchange) == before, "no autograded notebook, feedback page or release changed"


def _grade(course: Path) -> None:
    run = machine.run(
        grade_command(course, "--assignment", A02, "-q", timeout=30),
        cwd=ROOT,
        capture_output=True,
        text=True,
        quiet_s=600,
        what="grading",
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert (course / "grades" / "report.html").is_file(), "the grader writes the class report itself"


def _visit(browser, url: str, root: str | None) -> dict:
    """Open `url`, let it settle; what ran (dialogs, __pwned, requests with 'pwned') and what is active."""
    page = browser.new_page()
    dialogs, requests = [], []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.on("request", lambda r: requests.append(r.url))
    page.goto(url)
    page.wait_for_load_state("load")
    page.wait_for_timeout(SETTLE_MS)
    seen = {
        "dialogs": dialogs,
        "pwned": page.evaluate("() => window.__pwned || []"),
        "fetches": [u for u in requests if "pwned" in u],
        "requests": requests,
        "active": page.evaluate(DOM_ACTIVE, root) if root else [],
        "page": page,
    }
    return seen


def _ran(seen: dict) -> list:
    return seen["dialogs"] + seen["pwned"] + seen["fetches"]


def test_formgrader_lists_the_course_and_hostile_submissions_run_nothing(
    browser, make_server, screenshots, tmp_path, monkeypatch
):
    course = _course(tmp_path)
    _grade(course)
    autograded = course / "autograded"
    (autograded / "control" / A02 / f"{A02}.ipynb").write_text(_raw_payload_notebook(), encoding="utf-8")
    hostile_nb = (autograded / "hostile" / A02 / f"{A02}.ipynb").read_text(encoding="utf-8")
    assert "student_text" in hostile_nb and '"text/html":' not in hostile_nb and '"image/svg+xml":' not in hostile_nb

    monkeypatch.setenv("COURSE", str(course))
    exchange = tmp_path / "exchange"  # its own exchange: what Release Feedback would write is checked
    exchange.mkdir()
    server = make_server("formgrader", EXCHANGE=str(exchange))
    server.url_last("/formgrader")
    assignments = sorted(p.name for p in (course / "source").iterdir() if (p / f"{p.name}.ipynb").is_file())
    status, body = server.request("/formgrader/api/assignments")
    assert status == 200, body[:500]
    listed = {a["name"] for a in json.loads(body)}
    assert set(assignments) <= listed, f"formgrader should list every assignment of the course: {sorted(listed)}"
    status, body = server.request(f"/formgrader/api/submitted_notebooks/{A02}/{A02}")
    assert status == 200, body[:500]
    ids = {s["student"]: s["id"] for s in json.loads(body)}
    assert set(ids) == {"control", "hostile", "patcher"}, ids

    page = browser.new_page()
    page.goto(f"{server.url}/formgrader?token={server.token}")  # logs the browser in (cookie)
    for aid in assignments:
        page.get_by_role("link", name=aid, exact=True).wait_for(timeout=60_000)
    assert page.get_by_text("could not be created").count() == 0, "the exchange folder is set up"
    page.screenshot(path=str(screenshots / "formgrader.png"))
    page.close()

    control = _visit(browser, f"{server.url}/formgrader/submissions/{ids['control']}/", "#notebook-container")
    assert set(control["pwned"]) >= {"html_script", "html_onerror", "javascript"}, (
        f"the control's payloads must run in formgrader, or this test proves nothing: {control['pwned']}"
    )
    assert control["dialogs"] and control["fetches"] and control["active"]
    control["page"].close()

    hostile = _visit(browser, f"{server.url}/formgrader/submissions/{ids['hostile']}/", "#notebook-container")
    page = hostile["page"]
    assert _ran(hostile) == [], _ran(hostile)
    assert hostile["active"] == [], hostile["active"]
    text = page.locator("#notebook-container").first.inner_text()
    assert P.FAKE_BANNER in text and "onerror=" in text, "the student's text is shown, as text"
    assert "[autograder: an output of type" in text
    page.screenshot(path=str(screenshots / "formgrader_hostile_submission.png"), full_page=True)
    page.close()
    _formgrader_cannot_autograde_or_publish(browser, server, course, exchange, tmp_path, screenshots)
    problems = server.stop()
    assert not problems and server.proc.returncode == 0, f"{problems}\n{server.log()}"

    # The pages the same run wrote, opened from disk: feedback (nbgrader's folder and OUT's) and report.html.
    pages = [
        course / "feedback" / "hostile" / A02 / f"{A02}.html",
        course / "grades" / "feedback" / "hostile" / f"{A02}.html",
        course / "grades" / "report.html",
    ]
    for path in pages:
        seen = _visit(browser, path.as_uri(), "body")
        assert _ran(seen) == [] and seen["active"] == [], (path.name, _ran(seen), seen["active"])
        assert [u for u in seen["requests"] if not u.startswith("data:")] == [path.as_uri()], "nothing loaded"
        shown = seen["page"].evaluate("""() => [...document.images].map(i => i.complete && i.naturalWidth > 0)""")
        assert shown and all(shown), f"{path.name}: images (plots, histograms) render under the CSP"
        if path.name == "report.html":
            assert seen["page"].title() == f"namedaxes: class report for {A02}", "named after the course"
        else:
            styled = seen["page"].evaluate("() => getComputedStyle(document.querySelector('.jp-Cell')).display")
            assert styled != "inline", "the lab template's inline CSS applies under the CSP"
            assert seen["page"].locator("h1").first.inner_text().startswith("Autograder feedback")
        assert P.FAKE_BANNER in seen["page"].inner_text("body")
        seen["page"].screenshot(path=str(screenshots / f"inert_{path.parent.name}_{path.stem}.png"), full_page=True)
        seen["page"].close()

    # The CSP holds on its own: a script smuggled into a feedback page (as if inert had a bug) does not run.
    page_text = pages[0].read_text(encoding="utf-8")
    smuggled = tmp_path / "smuggled.html"
    smuggled.write_text(
        page_text.replace("</main>", f'<script>{P.js("csp")}</script><img src=x onerror="{P.js("csp")}"></main>'),
        encoding="utf-8",
    )
    seen = _visit(browser, smuggled.as_uri(), None)
    assert seen["pwned"] == [] and seen["dialogs"] == [], "the page's Content-Security-Policy blocks scripts"
    seen["page"].close()


def test_make_formgrader_edition_zh_serves_the_chinese_course(browser, make_server, screenshots, tmp_path):
    """`make formgrader EDITION=zh` on the Chinese course (laid out by tools/handin.py layout): the same
    assignments as the English course, in the course namedaxes-zh."""
    import pytest

    from tools import handin

    if not (ROOT / "notebooks" / "zh" / f"{A02}.ipynb").is_file():
        pytest.skip("the Chinese edition (notebooks/zh/, solutions/zh/) has not been generated yet")
    course = tmp_path / "zh" / "course"
    handin.layout_edition(course, "zh", [A02])
    server = make_server("formgrader", EDITION="zh", COURSE=str(course))
    status, body = server.request("/formgrader/api/assignments")
    assert status == 200, body[:500]
    assert [a["name"] for a in json.loads(body)] == [A02]
    page = browser.new_page()
    page.goto(f"{server.url}/formgrader?token={server.token}")
    page.get_by_role("link", name=A02, exact=True).wait_for(timeout=60_000)
    page.screenshot(path=str(screenshots / "formgrader_zh.png"))
    page.close()
    problems = server.stop()
    assert not problems and server.proc.returncode == 0, f"{problems}\n{server.log()}"
    assert "namedaxes-zh" in (course / "nbgrader_config.py").read_text()


def _hand_in(inbound: Path, student: str, when: str, notebook: bytes | Path, name: str | None = None) -> Path:
    """What nbgrader's submit writes, owned by the student's Unix user; `notebook` a Path: a link to it."""
    folder = inbound / (name or f"{student}+{A02}+{when}+r1")
    folder.mkdir()
    if isinstance(notebook, Path):
        (folder / f"{A02}.ipynb").symlink_to(notebook)
    else:
        (folder / f"{A02}.ipynb").write_bytes(notebook)
    (folder / "timestamp.txt").write_text(when)
    owner = pwd.getpwnam(student).pw_uid
    for path in [folder, *folder.iterdir()]:
        os.chown(path, owner, owner, follow_symlinks=False)
    return folder


def test_formgrader_collect_refuses_hostile_hand_ins_by_name_and_collects_the_rest(
    browser, make_server, screenshots, tmp_path
):
    """formgrader's Collect button (its API route, nbgrader's NbGraderAPI.collect) runs the course's hardened
    collect (jupyter/formgrader/nbgrader_config.py -> autograder.formgrader.collect): student `bin` hands in
    a link to the instructor's source notebook, `daemon` a folder with a garbage timestamp and an honest
    hand-in, and a folder named with HTML markup. The dialog names every refusal, as text; only the honest
    hand-in is collected; inbound/ is untouched."""
    import pytest

    try:
        pwd.getpwnam("daemon"), pwd.getpwnam("bin")
    except KeyError:
        pytest.skip("the system users daemon and bin (the students) are missing")
    if os.geteuid() != 0:
        pytest.skip("setting a hand-in's owner (os.chown) needs root")
    course = _plain_course(tmp_path)
    exchange = tmp_path / "exchange"
    shutil.copytree(course / "release" / A02, exchange / "namedaxes" / "outbound" / A02)  # released
    inbound = exchange / "namedaxes" / "inbound"
    inbound.mkdir()
    os.chmod(inbound, 0o2733)  # nbgrader's release makes it so
    solution = course / "source" / A02 / f"{A02}.ipynb"
    os.chmod(solution, 0o600)
    honest_nb = (course / "release" / A02 / f"{A02}.ipynb").read_bytes() + b"\n"  # the student's own bytes
    from datetime import datetime

    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.%f UTC")  # made now: its files change no later
    honest = _hand_in(inbound, "daemon", when, honest_nb)
    garbage = _hand_in(inbound, "daemon", "not-a-time", honest_nb)
    evil = _hand_in(inbound, "bin", when, solution)
    markup = _hand_in(inbound, "bin", when, honest_nb, name=f"<img src=x onerror=alert(1)>+{A02}+{when}+r2")

    server = make_server("formgrader", COURSE=str(course), EXCHANGE=str(exchange))
    page = browser.new_page()
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(f"{server.url}/formgrader?token={server.token}")  # logs the browser in (cookie)
    page.goto(f"{server.url}/formgrader/manage_assignments")
    row = page.locator("tr").filter(has=page.get_by_role("link", name=A02, exact=True)).first
    with page.expect_response(lambda r: r.url.endswith(f"/formgrader/api/assignment/{A02}/collect")) as answered:
        row.locator("td.collect a").click(timeout=60_000)
    assert answered.value.status == 200, answered.value.status
    modal = page.locator("#success-modal")
    modal.get_by_text(f"Successfully collected submissions of '{A02}'").wait_for(timeout=60_000)
    text = " ".join(modal.inner_text().split())  # its lines are wrapped to fit
    page.wait_for_timeout(500)  # the dialog's fade-in
    page.screenshot(path=str(screenshots / "formgrader_collect_refusals.png"))
    images = modal.locator("img").count()
    page.close()
    assert dialogs == [] and images == 0, f"a folder's name is shown as text, never as markup: {dialogs}"
    assert f"[WARNING] REFUSED {markup.name}: student id '<img src=x onerror=alert(1)>' is not a valid id" in text
    assert (
        f"[WARNING] REFUSED {evil.name}: {evil.name}/{A02}.ipynb is a symbolic link: only regular files "
        f"are collected" in text
    ), text
    assert f"[WARNING] REFUSED {garbage.name}: timestamp 'not-a-time' cannot be read (ParserError)" in text, text
    assert f"[INFO] Collecting submission: daemon {A02}" in text, text

    submitted = course / "submitted"
    assert (submitted / "daemon" / A02 / f"{A02}.ipynb").read_bytes() == honest_nb
    assert (submitted / "daemon" / A02 / "timestamp.txt").read_text() == when
    assert not (submitted / "bin").exists(), "the link to the solution is not collected"
    assert [p for p in course.iterdir() if p.name.startswith(".collect-staging-")] == [], "staging is removed"
    assert honest.is_dir() and garbage.is_dir() and markup.is_dir() and (evil / f"{A02}.ipynb").is_symlink(), (
        "inbound/ is untouched"
    )

    # the same route without the token or cookie: 403, nothing collected
    req = urllib.request.Request(f"{server.url}/formgrader/api/assignment/{A02}/collect", data=b"", method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            raise AssertionError(f"collect answered {resp.status} without authentication")
    except urllib.error.HTTPError as err:
        assert err.code == 403, err.code
    problems = server.stop()
    assert not problems and server.proc.returncode == 0, f"{problems}\n{server.log()}"
