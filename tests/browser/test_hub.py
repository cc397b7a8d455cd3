"""The class loop on the real hub, in Chromium: real Unix accounts, PAM logins, formgrader as a hub service.

One private deployment for the module (tests/hub/conftest.py: the accounts and folders `make hub`
makes, its own names `nxtb-*`), one hub (hub.server.start: the proxy, JupyterHub, the two formgrader
services), one assignment (02_scaled_sum):

    1. instructor: logs in, opens formgrader (/services/namedaxes/formgrader), Release
    2. ada and ben: log in (their own servers, as their own Unix users), Assignment List, Fetch,
       answer (ada: all three exercises right; ben: the first right, the third wrong), Validate, Submit
    3. instructor: Collect in formgrader; `make grade HUB=1`; `make return-feedback HUB=1`
    4. each: Fetch Feedback, view it: ada 7 / 7, ben 3 / 7; ben's browser cannot open ada's server
       nor the formgrader, and ada's name with ben's password does not log in

Needs root (real accounts) and Debian's Chromium; skips with the reason otherwise (CI runs it).
"""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import re
import shutil
import socket
import subprocess
import time
import urllib.parse
from pathlib import Path

import machine
import nbformat
import pytest

HERE = Path(__file__).resolve().parent


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_browser = _load("browser_conftest", HERE / "conftest.py")
_hub = _load("hub_conftest", HERE.parent / "hub" / "conftest.py")
ROOT, AID, COURSE = _hub.ROOT, _hub.AID, _hub.COURSE
ADA, BEN, TAG = "nxtb-ada", "nxtb-ben", "b"
UI_TIMEOUT = 120  # s for one step in a page (a spawn or a Validate on a busy machine)
ANSWERS = {
    ADA: {
        "def scaled_sum(x):": "def scaled_sum(x):\n    return lax.psum(x * 2.0, axis_name=DEVICES)",
        "def scaled_mean(x):": "def scaled_mean(x):\n    total = lax.psum(jnp.nansum(x * 2.0), axis_name=DEVICES)\n"
        "    count = lax.psum(jnp.sum(~jnp.isnan(x)), axis_name=DEVICES)\n"
        "    return (total / count).astype(x.dtype)",
        "def global_max_share(x):": "def global_max_share(x):\n    return x / lax.pmax(jnp.abs(x), axis_name=DEVICES)",
    },
    BEN: {
        "def scaled_sum(x):": "def scaled_sum(x):\n    return lax.psum(x * 2.0, axis_name=DEVICES)",
        "def global_max_share(x):": "def global_max_share(x):\n    return x / jnp.max(x)",
    },  # local, not global
}
SCORES = {ADA: "7 / 7", BEN: "3 / 7"}
ENV = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "JUPYTERHUB_USER")}
TIMES: dict[str, float] = {}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def hub(chromium):
    why = _hub.requirements()
    if why:
        pytest.skip(why)
    _hub.built_courses()
    shutil.rmtree(DIAGNOSTICS, ignore_errors=True)
    dep = _hub.new_deployment([ADA, BEN], TAG, port=_free_port())
    try:
        cached = ROOT / "hub-data" / "proxy"  # a `make hub` of this checkout has the same proxy: reuse it
        if (cached / "node_modules").is_dir() and (cached / "package-lock.json").read_bytes() == (
            ROOT / "hub" / "proxy" / "package-lock.json"
        ).read_bytes():
            shutil.copytree(cached, dep.proxy, symlinks=True)
        t0 = time.monotonic()
        _hub.server.start(dep, None, timeout=300)
        TIMES["hub up (s)"] = round(time.monotonic() - t0, 1)
        with dep.passwords_file.open() as fh:
            passwords = {row["user"]: row["password"] for row in csv.DictReader(fh)}
        yield dep, passwords
    finally:
        print("hub loop timings (s):", TIMES)
        _keep_diagnostics(dep)
        _hub.server.clean(dep)


DIAGNOSTICS = _browser.SCREENSHOTS / "hub-diagnostics"
NBGRADER_API = re.compile(r"/user/[^/]+/(assignments|courses)(/|\?|$)")
EVENTS: dict[str, list[str]] = {}


def _keep_diagnostics(dep) -> None:
    """What a failure needs to be understood, kept after the deployment is removed: the hub's log (it holds
    every single-user server's log too), each browser's console and nbgrader's API answers, and the
    exchange's and the students' course folders as `ls -lR` shows them."""
    DIAGNOSTICS.mkdir(parents=True, exist_ok=True)
    if dep.log_file.is_file():
        shutil.copyfile(dep.log_file, DIAGNOSTICS / "jupyterhub.log")
    for who, lines in EVENTS.items():
        (DIAGNOSTICS / f"browser-{who}.log").write_text("\n".join(lines) + "\n")
    listing = subprocess.run(
        ["ls", "-laR", str(dep.exchange), *[str(dep.home(s)) for s in ANSWERS]], capture_output=True, text=True
    )
    (DIAGNOSTICS / "files.txt").write_text(listing.stdout + listing.stderr)


@pytest.fixture(scope="module")
def pages(hub, chromium, tmp_path_factory):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=_browser.LAUNCH_ARGS)
        try:
            result = {}
            for who in (hub[0].instructor, ADA, BEN):  # one context each: separate cookies
                context = browser.new_context(viewport={"width": 1400, "height": 1000})
                page = context.new_page()
                page.set_default_timeout(UI_TIMEOUT * 1000)
                _record(page, EVENTS.setdefault(who, []))
                result[who] = page
            yield result
        finally:
            DIAGNOSTICS.mkdir(parents=True, exist_ok=True)
            for who, page in result.items():  # where each page stood at the end
                try:
                    page.screenshot(path=str(DIAGNOSTICS / f"last-{who}.png"))
                except Exception:  # noqa: BLE001 - a page that is gone has no screenshot; the others still do
                    pass
            browser.close()


def _record(page, lines: list[str]) -> None:
    """The page's console and errors, and every answer of nbgrader's server extensions (the Assignment List's
    /assignments and /courses), with the time since the hub came up."""
    t0 = time.monotonic()

    def stamp(text):
        lines.append(f"{time.monotonic() - t0:7.1f} {text}")

    def answered(response):
        if NBGRADER_API.search(response.url):
            try:
                body = response.text()[:4000]
            except Exception as err:  # noqa: BLE001 - the page navigated away before the body was read
                body = f"(no body: {err})"
            stamp(f"{response.request.method} {response.url} -> {response.status} {body}")

    page.on("console", lambda msg: stamp(f"console.{msg.type}: {msg.text}"))
    page.on("pageerror", lambda err: stamp(f"pageerror: {err}"))
    page.on("response", answered)


def _login(page, dep, passwords, user, course="en"):
    """Log in; a student then picks a course on the hub's home page (hub/templates/home.html), which starts
    that course's server: the English course the default one, the Chinese course the named server "zh"."""
    page.goto(f"{dep.url}/hub/login")
    page.locator("#username_input").fill(user)
    page.locator("#password_input").fill(passwords[user])
    page.locator("#login_submit").click()
    page.wait_for_url(re.compile(r"/hub/home"))
    if user != dep.instructor:
        page.locator(f"#course-{course}").click()
        page.wait_for_url(re.compile(rf"/user/{user}/{'zh/' if course == 'zh' else ''}lab"))


def _formgrader_row(page, dep):
    page.goto(f"{dep.url}/services/{COURSE}/formgrader/manage_assignments")
    row = page.locator("tr").filter(has=page.get_by_role("link", name=AID, exact=True)).first
    row.wait_for()
    return row


def _assignment_list(page, dep, user):
    """JupyterLab with a fresh layout (?reset), then nbgrader's Assignment List.

    JupyterLab takes `?reset` out of the URL only once it has saved the cleared workspace (a PUT to
    the student's server), and until then every `popstate` re-runs its router, whose reset route then
    reloads the whole page (apputils:reset-on-load, "state already resolved"). nbgrader's caret is an
    `<a href="#nbgrader-...">`: clicking it is a fragment navigation, a popstate. So a click on it
    before the reset is done reloads JupyterLab and the Assignment List is gone: the notebook link
    never appeared, whenever the student's server answered that PUT late (it queues behind nbgrader's
    synchronous list and fetch handlers). The page is used only once the reset is finished."""
    page.goto(f"{dep.url}/user/{user}/lab?reset")
    page.wait_for_url(lambda url: "reset" not in urllib.parse.urlsplit(url).query)
    page.get_by_role("menuitem", name="Nbgrader", exact=True).click()
    page.locator("#jp-mainmenu-nbgrader").get_by_text("Assignment List", exact=True).click()


def _row(page, list_id):
    return page.locator(f"#{list_id} .list_item").filter(has_text=AID).first


def _make(*args):
    proc = machine.run(
        ["make", "--no-print-directory", *args],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        quiet_s=900,
        what="a make command",
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, (
        f"make {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    )
    return proc.stdout + proc.stderr


def _timed(name):
    class T:
        def __enter__(self):
            self.t0 = time.monotonic()

        def __exit__(self, *exc):
            TIMES[name] = round(time.monotonic() - self.t0, 1)

    return T()


def _reads(user: str, path: Path) -> bool:
    proc = subprocess.run(
        [_hub.RUNUSER, "-u", user, "--", "/usr/bin/python3", "-I", "-S", "-c", "import sys; open(sys.argv[1]).read()"]
        + [str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return proc.returncode == 0


def _instructor_outputs_are_closed_to_students(dep) -> None:
    """What `make grade` and `make export` write on the hub (the class report with its misconception map, the
    similarity view, the gradebooks) is the course's: its grader account reads it, no student does."""
    grades = dep.course_dir(COURSE) / "grades"
    outputs = [grades / n for n in ("report.html", "similarity.html", "results.json", "grades.csv", "lms-canvas.csv")]
    assert [p.name for p in outputs if not p.is_file()] == []
    assert "Misconception map" in (grades / "report.html").read_text(encoding="utf-8")
    assert (grades / "lms-canvas.csv").read_text(encoding="utf-8-sig").startswith("Student,ID,SIS User ID")
    grader = dep.graders[COURSE]
    for path in outputs:
        assert _reads(grader, path), f"{grader} cannot read {path.name}"
        assert not _reads(ADA, path) and not _reads(BEN, path), f"a student reads {path.name}"


def test_release_fetch_answer_validate_submit_collect_grade_feedback(hub, pages, screenshots):
    dep, passwords = hub
    teacher = pages[dep.instructor]
    hub_vars = [
        "HUB=1",
        f"HUB_DIR={dep.hub_dir}",
        f"HUB_GROUP={dep.group}",
        f"HUB_INSTRUCTOR={dep.instructor}",
        f"ASSIGNMENT={AID}",
        "JOBS=2",
    ]

    # 1. the instructor logs in and releases the assignment in formgrader
    with _timed("instructor logs in, releases in formgrader"):
        _login(teacher, dep, passwords, dep.instructor)
        # the hub's home page links each course's formgrader for the instructor
        href = teacher.locator(f"#formgrader-{COURSE}").get_attribute("href")
        assert href.rstrip("/").endswith(f"/services/{COURSE}"), href
        _formgrader_row(teacher, dep).locator("td.release a").click()
        teacher.locator("#success-modal").get_by_text(f"Successfully released '{AID}'").wait_for()
        teacher.screenshot(path=str(screenshots / "hub_formgrader_released.png"))
    assert (dep.exchange / COURSE / "outbound" / AID / f"{AID}.ipynb").is_file()

    # 2. both students log in, fetch, answer, validate, submit
    for student, answers in ANSWERS.items():
        page = pages[student]
        with _timed(f"{student} logs in (server spawned as {student})"):
            _login(page, dep, passwords, student)
            _assignment_list(page, dep, student)
        with _timed(f"{student} fetches, answers, saves"):
            released = _row(page, "released_assignments_list")
            released.get_by_role("button", name="Fetch").click()
            fetched = _row(page, "fetched_assignments_list")
            fetched.wait_for()
            notebook = dep.home(student) / COURSE / AID / f"{AID}.ipynb"
            assert notebook.is_file() and notebook.stat().st_uid == __import__("pwd").getpwnam(student).pw_uid
            fetched.locator("a").first.click()
            fetched.get_by_role("link", name=AID, exact=True).last.click()
            for header, text in answers.items():
                cell = page.locator(".jp-NotebookPanel .jp-CodeCell").filter(has_text=header).first
                cell.locator(".cm-content").click()
                page.keyboard.press("Control+a")
                page.keyboard.insert_text(text)
            page.keyboard.press("Control+s")
            deadline = time.monotonic() + UI_TIMEOUT
            while time.monotonic() < deadline:
                saved = nbformat.read(str(notebook), as_version=4)
                if all(any(c.source.strip() == t.strip() for c in saved.cells) for t in answers.values()):
                    break
                time.sleep(0.5)
            else:
                pytest.fail(f"{student}'s answers never reached {notebook} (Ctrl-S)")
        with _timed(f"{student} validates and submits"):
            page.locator("#jp-main-dock-panel .lm-TabBar-tab").filter(
                has_text=re.compile(r"^\s*Assignments\s*$")
            ).click()
            _row(page, "fetched_assignments_list").get_by_role("button", name="Validate").click()
            dialog = page.locator(".jp-Dialog").filter(has_text="Validation Results")
            dialog.wait_for()
            failed = dialog.locator(".validation-failed").count()
            assert failed == (0 if student == ADA else 1), dialog.text_content()[:2000]
            dialog.get_by_role("button", name="Ok").click()
            _row(page, "fetched_assignments_list").get_by_role("button", name="Submit").click()
            _row(page, "submitted_assignments_list").wait_for()
        page.screenshot(path=str(screenshots / f"hub_{student}_submitted.png"))
    owners = sorted(p.owner() for p in (dep.exchange / COURSE / "inbound").iterdir())
    assert owners == [ADA, BEN], owners

    # 3. the instructor collects in formgrader, grades with make grade, returns feedback
    with _timed("instructor collects in formgrader"):
        _formgrader_row(teacher, dep).locator("td.collect a").click()
        teacher.locator("#success-modal").get_by_text(f"Successfully collected submissions of '{AID}'").wait_for()
    # formgrader as a hub service loads the same guard as `make formgrader`: Autograde is shown disabled, with
    # its reason (no error dialog), and its route runs nothing
    teacher.goto(f"{dep.url}/services/{COURSE}/formgrader/manage_submissions/{AID}")
    row = teacher.locator("tr", has=teacher.get_by_text(ADA, exact=True))
    autograde = row.locator("td.autograde button")
    autograde.wait_for(timeout=60_000)
    assert autograde.is_disabled() and "Autograde is disabled" in autograde.get_attribute("title")
    assert row.locator("td.autograde a").count() == 0, "formgrader's clickable Autograde is gone"
    assert "make grade" in teacher.locator("#namedaxes-guard-note").inner_text()
    route = f"{dep.url}/services/{COURSE}/formgrader/api/submission/{AID}/{ADA}/autograde"
    answer = teacher.evaluate(  # formgrader's own jQuery post (its XSRF set-up), as its button did
        "url => new Promise(done => $.post(url).done(t => done(t)).fail(x => done('failed ' + x.status)))", route
    )
    assert json.loads(answer)["disabled_by"] == "autograder.formgrader.guard", answer
    with _timed("make grade HUB=1"):
        out = _make("grade", *hub_vars)
    assert "owned by their graders again" in out, out[-2000:]
    with _timed("make export HUB=1 LMS=canvas"):
        _make("export", *hub_vars, "LMS=canvas")
    _instructor_outputs_are_closed_to_students(dep)
    with _timed("make return-feedback HUB=1"):
        out = _make("return-feedback", *hub_vars)
    assert "feedback returned to 2 student(s)" in out, out[-2000:]

    # 4. each student sees their own feedback, and cannot reach the other's
    for student in (ADA, BEN):
        page = pages[student]
        with _timed(f"{student} fetches and reads feedback"):
            _assignment_list(page, dep, student)
            submitted = _row(page, "submitted_assignments_list")
            submitted.get_by_text("(feedback available to fetch)").wait_for()
            submitted.get_by_role("button", name="Fetch Feedback").click()
            view = submitted.get_by_text("(view feedback)")
            view.wait_for()
            view.click()
            listing = page.locator(".jp-DirListing-item").filter(has_text=f"{AID}.html")
            listing.wait_for()
            listing.dblclick()
            banner = page.frame_locator(".jp-HTMLViewer iframe").get_by_text(re.compile(r"Score: \d+ / \d+")).first
            banner.wait_for()
            assert banner.text_content().strip().startswith(f"Score: {SCORES[student]}"), banner.text_content()
            page.screenshot(path=str(screenshots / f"hub_{student}_feedback.png"))
        mine = list((dep.home(student) / COURSE / AID / "feedback").glob(f"*/{AID}.html"))
        assert len(mine) == 1, mine
    # a student cannot reach the formgrader (only formgrade-<course> can) nor log in with a wrong password
    fg = pages[BEN].goto(f"{dep.url}/services/{COURSE}/formgrader/api/assignments")
    assert fg.status == 403, (fg.status, pages[BEN].url)
    intruder = pages[BEN].context.browser.new_context().new_page()
    intruder.goto(f"{dep.url}/hub/login")
    intruder.locator("#username_input").fill(ADA)
    intruder.locator("#password_input").fill(passwords[BEN])
    intruder.locator("#login_submit").click()
    intruder.get_by_text("Invalid username or password").wait_for()
    assert f"/user/{ADA}/" not in intruder.url
    other = pages[BEN].goto(f"{dep.url}/user/{ADA}/files/{COURSE}/{AID}/{AID}.ipynb")
    assert other.status in (403, 404) or f"/user/{BEN}/" in pages[BEN].url, (other.status, pages[BEN].url)
    assert ANSWERS[ADA]["def scaled_mean(x):"] not in pages[BEN].content()


def test_the_chinese_course_opens_a_chinese_jupyterlab(hub, pages, screenshots):
    """The hub's home page offers the Chinese course: its own server ("zh", as the same Unix user, in the same
    home) with JupyterLab's menus, the Assignment List and the Validate dialog in Chinese, and the Chinese course
    (namedaxes-zh) alone in its Assignment List. Released by `make release HUB=1 EDITION=zh`."""
    dep, passwords = hub
    zh_course = "namedaxes-zh"
    hub_vars = ["HUB=1", f"HUB_DIR={dep.hub_dir}", f"HUB_GROUP={dep.group}", f"HUB_INSTRUCTOR={dep.instructor}"]
    with _timed("make release HUB=1 EDITION=zh"):
        _make("release", *hub_vars, "EDITION=zh", f"ASSIGNMENT={AID}")
    context = pages[ADA].context.browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(UI_TIMEOUT * 1000)
    _record(page, EVENTS.setdefault(f"{ADA}-zh", []))
    with _timed(f"{ADA} logs in, picks the Chinese course (server zh spawned)"):
        _login(page, dep, passwords, ADA, course="zh")
    try:
        _chinese_course(page, dep, zh_course, screenshots)
    finally:
        DIAGNOSTICS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(DIAGNOSTICS / f"last-{ADA}-zh.png"))
        context.close()


def _chinese_course(page, dep, zh_course, screenshots):
    page.get_by_role("menuitem", name="文件", exact=True).wait_for()
    for menu in ("编辑", "运行", "内核"):
        assert page.get_by_role("menuitem", name=menu, exact=True).count() == 1, menu
    assert page.get_by_role("menuitem", name="File", exact=True).count() == 0, "the Chinese course's menus are English"
    with _timed(f"{ADA} fetches and validates in Chinese"):
        page.get_by_role("menuitem", name="Nbgrader", exact=True).click()
        page.locator("#jp-mainmenu-nbgrader").get_by_text("作业列表", exact=True).click()
        panel = page.locator("#nbgrader-assignment-list")
        panel.get_by_text("已发布的作业", exact=True).wait_for()
        released = _row(page, "released_assignments_list")
        released.get_by_role("button", name="获取").wait_for()
        assert panel.locator("#course_list_default").inner_text().strip() == zh_course
        assert [a.inner_text().strip() for a in panel.locator("#course_list a").all()] == [zh_course]
        page.screenshot(path=str(screenshots / "hub_zh_assignment_list.png"))
        released.get_by_role("button", name="获取").click()
        fetched = _row(page, "fetched_assignments_list")
        fetched.wait_for()
        notebook = dep.home(ADA) / zh_course / AID / f"{AID}.ipynb"
        assert notebook.is_file(), "fetched into the same home, under the Chinese course"
        fetched.locator("a").first.click()  # its notebooks, each with its Validate button
        fetched.get_by_role("button", name="验证").click()
        dialog = page.locator(".jp-Dialog").filter(has_text="验证结果")
        dialog.wait_for()
        assert "下面这个单元格未通过：" in dialog.inner_text(), dialog.inner_text()[:2000]
        page.screenshot(path=str(screenshots / "hub_zh_validate_dialog.png"))
        dialog.get_by_role("button", name="确认").click()
    assert f"/user/{ADA}/zh/" in page.url, page.url
    # back on the hub's home page (hub/templates/home.html): the two courses, the Chinese one running, and
    # none of JupyterHub's free-named servers; its Stop ends the Chinese server only
    page.goto(f"{dep.url}/hub/home")
    assert page.locator("#course-en").inner_text().strip() == "English course (namedaxes)"
    assert page.get_by_text("Add New Server").count() == 0
    page.locator("#stop-zh").click()
    page.locator("#stop-zh").wait_for(state="hidden")
    deadline = time.monotonic() + UI_TIMEOUT
    while time.monotonic() < deadline and any(s["name"] == "zh" and s["ready"] for s in _servers(dep, ADA)):
        time.sleep(0.5)
    assert not any(s["name"] == "zh" and s["ready"] for s in _servers(dep, ADA)), _servers(dep, ADA)


def _servers(dep, user) -> list[dict]:
    """The user's servers as the hub's database has them (the hub's own REST API needs a token; root reads its
    sqlite file, read-only)."""
    import sqlite3

    db = sqlite3.connect(f"file:{dep.state / 'jupyterhub.sqlite'}?mode=ro", uri=True)
    try:
        rows = db.execute(
            "SELECT spawners.name, spawners.server_id FROM spawners JOIN users ON spawners.user_id = users.id "
            "WHERE users.name = ?",
            (user,),
        ).fetchall()
    finally:
        db.close()
    return [{"name": name, "ready": server_id is not None} for name, server_id in rows]
