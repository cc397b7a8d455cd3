"""nbgrader's hand-in loop, for real: two students in two `make lab`s, one instructor, one exchange.

One temporary course (a copy of build/course: source, release and gradebook of notebook 02) and
one temporary exchange; the repository's own build/course, build/exchange and notebooks/ are not
touched. Two real `make lab STUDENT=... LAB_DIR=... EXCHANGE=...` servers (alice, bob) on their
own ports and workspaces, in Chromium; the instructor uses the make targets from docs/instructors.md:

    make roster, make release      -> both students: Assignment List shows the course, Fetch
    alice: types an answer into the notebook and saves, Validate (Assignment List), Submit
    bob:   Submit unanswered
    make collect, make grade (course mode: the sandboxed grader), make return-feedback
    alice: Fetch Feedback, view feedback -> the feedback page says "Score: 3 / 7"

and formgrader's data (nbgrader's API, what its pages show) has the roster's names and the same
scores. The servers are module-scoped and stopped through their API; no process may survive.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import machine
import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
# this folder's conftest.py by path: the name `conftest` is shared with tests/conftest.py
_spec = importlib.util.spec_from_file_location("browser_conftest", Path(__file__).with_name("conftest.py"))
_browser = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_browser)
LAUNCH_ARGS, MakeServer = _browser.LAUNCH_ARGS, _browser.MakeServer
AID = "02_scaled_sum"
COURSE_ID = "namedaxes"
ANSWER = "def scaled_sum(x):\n    return lax.psum(x * 2.0, DEVICES)\n"
UI_TIMEOUT = 60  # s for one step in the page (Validate runs the notebook)
ENV = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "JUPYTERHUB_USER")}
TIMES: dict[str, float] = {}


def _port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _make(*args: str) -> str:
    proc = machine.run(
        ["make", "--no-print-directory", *args],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        quiet_s=300,
        what="a make command",
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, f"make {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout + proc.stderr


class _Timer:
    def __init__(self, name: str):
        self.name = name

    def __enter__(self):
        self.t0 = time.monotonic()

    def __exit__(self, *exc):
        TIMES[self.name] = round(time.monotonic() - self.t0, 1)


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> dict:
    """A private course (notebook 02 only) and exchange, with a two-student roster."""
    built = ROOT / "build" / "course"
    if not (built / "release" / AID / f"{AID}.ipynb").is_file():  # lays out build/course (and checks drift)
        subprocess.run([sys.executable, "-m", "tools.generate_notebooks", "--check"], cwd=ROOT, capture_output=True)
    assert (built / "release" / AID).is_dir(), "tools.generate_notebooks did not lay out build/course"
    root = tmp_path_factory.mktemp("handin")
    course = root / "course"
    for sub in ("source", "release"):
        shutil.copytree(built / sub / AID, course / sub / AID)
    shutil.copyfile(built / "nbgrader_config.py", course / "nbgrader_config.py")
    shutil.copyfile(built / "gradebook.db", course / "gradebook.db")
    roster = root / "roster.csv"
    roster.write_text(
        "id,first_name,last_name,email\nalice,Alice,Liddell,alice@example.org\nbob,Bob,Marley,\n", encoding="utf-8"
    )
    make_vars = [f"COURSE={course}", f"EXCHANGE={root / 'exchange'}"]
    return {"root": root, "course": course, "exchange": root / "exchange", "roster": roster, "vars": make_vars}


@pytest.fixture(scope="module")
def labs(course, chromium):
    """alice's and bob's `make lab`, started side by side; shut down (and checked) at the end."""
    servers = {
        sid: MakeServer(
            "lab",
            _port(),
            os.urandom(16).hex(),
            course["root"] / f"state-{sid}",
            {"STUDENT": sid, "LAB_DIR": course["root"] / f"work-{sid}", "EXCHANGE": course["exchange"]},
        )
        for sid in ("alice", "bob")
    }
    errors = []

    def start(server):
        try:
            server.start()
        except BaseException as err:  # noqa: BLE001 - pytest.fail inside a thread: report it below
            errors.append(f"{err}")

    t0 = time.monotonic()
    threads = [threading.Thread(target=start, args=(s,)) for s in servers.values()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    TIMES["two labs answered"] = round(time.monotonic() - t0, 1)
    try:
        assert not errors, errors
        yield servers
    finally:
        problems = {sid: s.stop() for sid, s in servers.items()}
    assert not any(problems.values()), problems


@pytest.fixture(scope="module")
def pages(labs, chromium, course):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(course["root"] / "chromium-profile"),
            executable_path=chromium,
            headless=True,
            args=LAUNCH_ARGS,
            viewport={"width": 1400, "height": 1000},
            device_scale_factor=1,
        )
        try:
            result = {}
            for sid in labs:
                page = context.new_page()
                page.set_default_timeout(UI_TIMEOUT * 1000)
                result[sid] = page
            yield result
        finally:
            context.close()


def _assignment_list(page, server):
    page.goto(f"{server.url}/lab?reset&token={server.token}")
    page.get_by_role("menuitem", name="Nbgrader", exact=True).click()
    page.locator("#jp-mainmenu-nbgrader").get_by_text("Assignment List", exact=True).click()
    return page


def _row(page, list_id: str):
    return page.locator(f"#{list_id} .list_item").filter(has_text=AID).first


def test_release_fetch_work_validate_submit_grade_feedback(course, labs, pages, screenshots):
    try:
        _loop(course, labs, pages, screenshots)
    finally:
        print("hand-in loop timings (s):", TIMES)


def _loop(course, labs, pages, screenshots):
    t_all = time.monotonic()
    checkpoints_before = (ROOT / "notebooks" / ".ipynb_checkpoints").exists()
    with _Timer("make roster release"):
        out = _make("roster", "release", f"ROSTER={course['roster']}", f"ASSIGNMENT={AID}", *course["vars"])
        assert "2 student(s)" in out and f"{AID}: released" in out, out

    # both students: the Assignment List shows the course and the release; Fetch
    with _Timer("both open the Assignment List and fetch"):
        for sid, page in pages.items():
            _assignment_list(page, labs[sid])
            released = _row(page, "released_assignments_list")
            released.wait_for()
            course_shown = page.locator("#course_list_default").text_content().strip()
            assert course_shown == COURSE_ID, f"the Assignment List shows the course {course_shown!r}"
            released.get_by_role("button", name="Fetch").click()
            _row(page, "fetched_assignments_list").wait_for()
            fetched = course["root"] / f"work-{sid}" / AID / f"{AID}.ipynb"
            assert fetched.is_file(), f"Fetch did not put the notebook into {sid}'s workspace"
        pages["alice"].screenshot(path=str(screenshots / "handin_fetched.png"))

    # alice opens the notebook from the Assignment List, types an answer to exercise 1, saves
    alice, alice_nb = pages["alice"], course["root"] / "work-alice" / AID / f"{AID}.ipynb"
    with _Timer("alice opens, answers and saves"):
        fetched = _row(alice, "fetched_assignments_list")
        fetched.locator("a").first.click()  # expand: one line per notebook
        fetched.get_by_role("link", name=AID, exact=True).last.click()
        answer = alice.locator(".jp-NotebookPanel .jp-CodeCell").filter(has_text="def scaled_sum(x):").first
        answer.locator(".cm-content").click()
        alice.keyboard.press("Control+a")
        alice.keyboard.insert_text(ANSWER.rstrip("\n"))
        alice.keyboard.press("Control+s")
        deadline = time.monotonic() + UI_TIMEOUT
        while time.monotonic() < deadline:
            nb = nbformat.read(str(alice_nb), as_version=4)
            cell = next(
                c for c in nb.cells if (c.metadata.get("nbgrader") or {}).get("grade_id") == "scaled_sum_answer"
            )
            if "lax.psum(x * 2.0, DEVICES)" in cell.source:
                break
            time.sleep(0.3)
        else:
            pytest.fail("the typed answer never reached the notebook file (Ctrl-S)")
        assert cell.source.strip() == ANSWER.strip()

    # alice: back to the Assignment List; Validate (exercise 1 passes, 2 and 3 do not), then Submit
    release_nb = nbformat.read(str(course["course"] / "release" / AID / f"{AID}.ipynb"), as_version=4)
    docstrings = {
        (c.metadata.get("nbgrader") or {}).get("grade_id"): c.source.splitlines()[0].strip('"` ')
        for c in release_nb.cells
        if (c.metadata.get("nbgrader") or {}).get("grade")
    }
    with _Timer("alice validates"):
        alice.locator("#jp-main-dock-panel .lm-TabBar-tab").filter(has_text=re.compile(r"^\s*Assignments\s*$")).click()
        fetched = _row(alice, "fetched_assignments_list")
        fetched.get_by_role("button", name="Validate").click()
        dialog = alice.locator(".jp-Dialog").filter(has_text="Validation Results")
        dialog.wait_for()
        text = dialog.text_content()
        alice.screenshot(path=str(screenshots / "handin_validate.png"))
        assert dialog.locator(".validation-failed").count() == 1, text[:2000]
        for gid in ("scaled_mean_value", "global_max_share_value"):
            assert docstrings[gid][:40] in text, f"{gid} should fail Validate:\n{text[:2000]}"
        for gid in ("scaled_sum_total", "scaled_sum_uses_psum"):
            assert docstrings[gid][:40] not in text, f"{gid} is answered, yet Validate lists it:\n{text[:2000]}"
        dialog.get_by_role("button", name="Ok").click()
    with _Timer("both submit"):
        for page in pages.values():
            _row(page, "fetched_assignments_list").get_by_role("button", name="Submit").click()
            _row(page, "submitted_assignments_list").wait_for()
        inbound = sorted(p.name.split("+")[0] for p in (course["exchange"] / COURSE_ID / "inbound").iterdir())
        assert inbound == ["alice", "bob"], inbound

    # the instructor: collect, grade (course mode, sandboxed), return feedback
    with _Timer("make collect grade return-feedback"):
        out = _make("collect", "grade", "return-feedback", f"ASSIGNMENT={AID}", "JOBS=2", *course["vars"])
    assert "2 new or newer hand-in(s) (alice, bob)" in out, out
    assert "feedback returned to 2 student(s) (alice, bob)" in out, out
    grades = (course["course"] / "grades" / "grades.csv").read_text().splitlines()
    scores = {line.split(",")[0]: line.split(",")[2] for line in grades[1:] if f",{AID}," in line}
    assert scores == {"alice": "3", "bob": "0"}, grades

    # formgrader's view (nbgrader's API behind its pages): names from the roster, the same scores, graded
    api = _formgrader_api(course)
    by_id = {s["id"]: s for s in api.get_students()}
    assert (by_id["alice"]["first_name"], by_id["alice"]["last_name"]) == ("Alice", "Liddell")
    subs = {s["student"]: s for s in api.get_submissions(AID)}
    assert {k: (v["score"], v["autograded"]) for k, v in subs.items()} == {"alice": (3.0, True), "bob": (0.0, True)}

    # alice fetches her feedback in the Assignment List and reads it
    with _Timer("alice fetches and opens feedback"):
        alice.locator("#refresh_assignments_list").click()
        submitted = _row(alice, "submitted_assignments_list")
        submitted.get_by_text("(feedback available to fetch)").wait_for()
        submitted.get_by_role("button", name="Fetch Feedback").click()
        view = submitted.get_by_text("(view feedback)")
        view.wait_for()
        view.click()
        listing = alice.locator(".jp-DirListing-item").filter(has_text=f"{AID}.html")
        listing.wait_for()
        listing.dblclick()
        frame = alice.frame_locator(".jp-HTMLViewer iframe")
        banner = frame.get_by_text(re.compile(r"Score: \d+ / \d+")).first
        banner.wait_for()
        assert banner.text_content().strip().startswith("Score: 3 / 7"), banner.text_content()
        alice.screenshot(path=str(screenshots / "handin_feedback.png"))
    fetched_feedback = list((course["root"] / "work-alice" / AID / "feedback").glob(f"*/{AID}.html"))
    assert len(fetched_feedback) == 1

    # everything the students did stayed in their workspaces (git-ignored), nothing in the repository
    # (git status itself is no witness here: other work may change the checkout meanwhile)
    assert not (ROOT / AID).exists(), "a fetch landed in the repository, not in the workspace"
    assert (ROOT / "notebooks" / ".ipynb_checkpoints").exists() == checkpoints_before
    for sid in labs:
        work = course["root"] / f"work-{sid}"
        assert (work / ".nbgrader_cache" / COURSE_ID).is_dir(), f"{sid}'s submission cache is in the workspace"
    TIMES["whole loop (servers up)"] = round(time.monotonic() - t_all, 1)


def _formgrader_api(course):
    from tools import handin

    return handin._api(course["course"], course["exchange"])
