"""The student's view, for real: `make lab`, notebook 02 in Chromium, Run All, read the page.

Starts the real `make lab` (PORT, LAB_TOKEN and a temporary workspace LAB_DIR on
the command line, nothing else changed) with its state folders (runtime,
workspaces, user settings) in a temporary folder and autosave off: `make lab`
seeds the workspace from notebooks/, and neither is written. Then checks what a student sees after
Run > Run All Cells: the course kernel is preselected, the device set-up reports 8 devices, every unanswered
exercise's check shows its message, and no other cell fails. Meanwhile the
Validate button's server side (nbgrader's validate_assignment extension, as
`make lab` loads it) is asked about the same notebook. The server is shut down
through its API, and no process it started may survive.
"""

from __future__ import annotations

import json
import re
import shutil
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import nbformat

ROOT = Path(__file__).resolve().parents[2]
AID = "02_scaled_sum"
NOTEBOOK = ROOT / "notebooks" / f"{AID}.ipynb"
RUN_TIMEOUT = 90  # s for Run All (the notebook itself takes a few seconds)

CELLS_JS = """() => [...document.querySelectorAll('.jp-NotebookPanel .jp-Notebook .jp-Cell')].map(c => ({
    code: c.classList.contains('jp-CodeCell'),
    ran: /\\[\\d+\\]/.test((c.querySelector('.jp-InputPrompt') || {}).textContent || ''),
    traceback: [...c.querySelectorAll('.jp-OutputArea-output')].some(
        o => o.textContent.includes('Traceback (most recent call last)') || o.textContent.trim().startsWith('✗ ')),
}))"""

# Run All is over when no code cell is queued or running ("[*]:") and the last code cell has run ("[n]:"):
# between two cells no prompt shows "*" for a moment, so "none running" alone can be seen too early.
RUN_ALL_OVER_JS = """() => {
    const p = [...document.querySelectorAll('.jp-NotebookPanel .jp-CodeCell .jp-InputPrompt')]
        .map(e => e.textContent);
    return p.length > 0 && /\\[\\d+\\]/.test(p[p.length - 1]) && !p.some(t => t.includes('*'));
}"""


def test_make_lab_runs_notebook_02_in_chromium(browser, make_server, screenshots, tmp_path):
    original = NOTEBOOK.read_bytes()
    nb = nbformat.reads(original.decode(), as_version=4)
    must_raise = [i for i, c in enumerate(nb.cells) if "raises-exception" in c.metadata.get("tags", [])]
    tests = [c.source.strip() for c in nb.cells if (c.metadata.get("nbgrader") or {}).get("grade")]
    check_line = next(ln for ln in tests[0].splitlines() if ".check(" in ln)
    checkpoints = NOTEBOOK.parent / ".ipynb_checkpoints"
    had_checkpoints = checkpoints.exists()
    validation: dict = {}
    t0 = time.monotonic()
    try:
        work = tmp_path / "work"  # the student's workspace, seeded from notebooks/ by `make lab`
        server = make_server("lab", LAB_DIR=str(work))
        assert (work / NOTEBOOK.name).read_bytes() == original, "make lab seeds the workspace with the release"
        started = time.monotonic() - t0
        assert server.request("/formgrader")[0] == 404, "formgrader is for instructors: off in `make lab`"
        server.url_last("/lab/tree/01_axis_names.ipynb")  # a first start opens notebook 01, not the Launcher

        def validate():  # what the Validate button asks the server (the button saves first; we must not)
            try:
                validation["status"], body = server.request(
                    "/assignments/validate", {"path": NOTEBOOK.name}, timeout=RUN_TIMEOUT
                )
                validation["body"] = json.loads(body)
            except Exception as err:  # noqa: BLE001 - reported by the assertion below
                validation["error"] = repr(err)

        page = browser.new_page()
        page.set_default_timeout(RUN_TIMEOUT * 1000)
        outside = []  # works offline: the page asks nothing of any other host
        page.on(
            "request",
            lambda r: (
                None
                if urlsplit(r.url).scheme in ("data", "blob") or urlsplit(r.url).hostname in ("127.0.0.1", "localhost")
                else outside.append(r.url)
            ),
        )
        page.goto(f"{server.url}/lab/tree/{NOTEBOOK.name}?reset&token={server.token}")
        page.locator(".jp-NotebookPanel .jp-CodeCell").first.wait_for()
        kernel = page.locator("#jp-main-statusbar").get_by_text("Python 3 (ipykernel) | Idle")
        kernel.wait_for()  # the course kernel, preselected and started: no kernel dialog
        assert page.locator(".jp-NotebookPanel-toolbar").get_by_text("Validate", exact=True).count() == 1, (
            "nbgrader's Validate button is missing from the notebook toolbar"
        )
        checker = threading.Thread(target=validate, daemon=True)
        checker.start()

        page.get_by_role("menuitem", name="Nbgrader", exact=True).click()
        menu = page.locator("#jp-mainmenu-nbgrader")
        assert menu.get_by_text("Assignment List", exact=True).count() == 1
        assert menu.get_by_text("Formgrader").count() == 0 and menu.get_by_text("Course List").count() == 0
        page.keyboard.press("Escape")

        page.get_by_role("menuitem", name="Run", exact=True).click()
        page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
        try:
            page.wait_for_function(RUN_ALL_OVER_JS)
        except Exception:  # noqa: BLE001 - Run All stopped early: the assertion below names the cells
            pass
        kernel.wait_for()
        ran = time.monotonic() - t0 - started

        cells = page.evaluate(CELLS_JS)
        assert len(cells) == len(nb.cells), f"the page shows {len(cells)} cells, the notebook has {len(nb.cells)}"
        not_run = [i for i, c in enumerate(cells) if c["code"] and not c["ran"]]
        assert not not_run, f"Run All stopped early: cells {not_run} did not run (an untagged cell failed?)"
        raised = [i for i, c in enumerate(cells) if c["traceback"]]
        assert raised == must_raise, (
            f"cells {raised} show a traceback; exactly the cells that use unanswered exercises ({must_raise}) should"
        )

        setup = page.locator(".jp-CodeCell").filter(has_text="setup_devices()").first
        assert "namedaxes: 8 devices" in setup.locator(".jp-OutputArea-output").first.text_content()
        setup.evaluate("e => e.scrollIntoView({block: 'center'})")
        page.wait_for_timeout(300)
        page.screenshot(path=str(screenshots / "lab_02_setup_8_devices.png"))

        check_out = page.locator(".jp-CodeCell").filter(has_text=check_line).first.locator(".jp-OutputArea-output").last
        text = check_out.text_content()
        assert text.strip().startswith("✗ `") and "is not written yet" in text and "Traceback" not in text, text[-800:]
        check_out.evaluate("e => e.scrollIntoView({block: 'end'})")
        page.wait_for_timeout(300)
        page.screenshot(path=str(screenshots / "lab_02_unanswered_check.png"))

        checker.join(timeout=RUN_TIMEOUT)
        assert validation.get("status") == 200, validation
        result = validation["body"]
        assert result["success"] is True, result
        failed = result["value"].get("failed", [])
        assert [f["source"] for f in failed] == tests, "Validate lists every test cell as failing"
        assert all("is not written yet" in f["raw_error"] for f in failed)
        assert not outside, f"JupyterLab fetched from outside this machine: {outside[:5]}"
        assert (work / NOTEBOOK.name).read_bytes() == original, "nor (autosave off) the workspace copy"

        # nbgrader's own parts stay English here (the Chinese copy is loaded by EDITION=zh only): the Assignment
        # List, and the dialog of the Validate button (which saves the workspace's copy first: checked above)
        page.get_by_role("menuitem", name="Nbgrader", exact=True).click()
        menu.get_by_text("Assignment List", exact=True).click()
        panel = page.locator("#nbgrader-assignment-list")
        panel.get_by_text("Released assignments", exact=True).wait_for()
        assert "已发布的作业" not in panel.inner_text()
        page.locator("#jp-main-dock-panel .lm-TabBar-tab").filter(has_text=NOTEBOOK.name).click()
        page.locator(".jp-NotebookPanel-toolbar .validate-button").click()
        dialog = page.locator(".jp-Dialog").filter(has_text="Validation Results")
        dialog.wait_for()
        assert "The following cell failed:" in dialog.inner_text(), dialog.inner_text()[:2000]
        dialog.get_by_role("button", name="Ok").click()
        page.close()
        problems = server.stop()
        assert not problems, f"{problems}\n{server.log()}"
        assert server.proc.returncode == 0, f"`make lab` exited with {server.proc.returncode}:\n{server.log()}"
        print(
            f"make lab answered after {started:.1f} s; page + Run All + Validate {ran:.1f} s; "
            f"all with shutdown {time.monotonic() - t0:.1f} s"
        )
    finally:
        if not had_checkpoints:
            shutil.rmtree(checkpoints, ignore_errors=True)
    assert NOTEBOOK.read_bytes() == original, "the browser session must not modify the release"


LANGUAGE_CELL = """import os
try:
    from namedaxes.i18n import language
    print("namedaxes language:", language())
except ImportError:
    print("namedaxes language: no i18n module;", os.environ.get("JPY_SESSION_NAME"), "in", os.getcwd())"""
ZH_NOTEBOOK = ROOT / "notebooks" / "zh" / f"{AID}.ipynb"


def _literal_part(template: str) -> str:
    """The longest piece of a message template without placeholders (what every message of it shows)."""
    import re

    return max(re.split(r"\{[^{}]*\}", template), key=len).strip()


def test_make_lab_serves_the_chinese_edition_in_work_zh(browser, make_server, screenshots, tmp_path):
    """One `make lab`, the Chinese notebook in work/zh/: its kernel speaks Chinese (namedaxes.i18n's
    detection, from the notebook JupyterLab started it for), and a failing check says so in Chinese
    once the catalog translates checking.py's TEXT."""
    import importlib.util

    if ZH_NOTEBOOK.is_file():
        nb = nbformat.read(str(ZH_NOTEBOOK), as_version=4)
    else:  # until the generator writes notebooks/zh: the release marked "zh"
        nb = nbformat.read(str(NOTEBOOK), as_version=4)
        nb.metadata["namedaxes"] = {"language": "zh"}
    nb.cells.append(nbformat.v4.new_code_cell(LANGUAGE_CELL))
    work = tmp_path / "work"
    (work / "zh").mkdir(parents=True)
    mine = work / "zh" / NOTEBOOK.name
    nbformat.write(nb, str(mine))
    before = mine.read_bytes()
    server = make_server("lab", LAB_DIR=str(work))
    assert (work / NOTEBOOK.name).read_bytes() == NOTEBOOK.read_bytes(), "the English edition is seeded too"
    assert mine.read_bytes() == before, "make lab never writes over the student's notebook"
    page = browser.new_page()
    page.set_default_timeout(RUN_TIMEOUT * 1000)
    page.goto(f"{server.url}/lab/tree/zh/{NOTEBOOK.name}?reset&token={server.token}")
    page.locator(".jp-NotebookPanel .jp-CodeCell").first.wait_for()
    kernel = page.locator("#jp-main-statusbar").get_by_text("Python 3 (ipykernel) | Idle")
    kernel.wait_for()
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
    try:
        page.wait_for_function(RUN_ALL_OVER_JS)
    except Exception:  # noqa: BLE001 - the assertions below say what is missing
        pass
    kernel.wait_for()
    said = (
        page.locator(".jp-CodeCell")
        .filter(has_text="namedaxes language")
        .last.locator(".jp-OutputArea-output")
        .last.text_content()
    )
    tests = [c.source for c in nb.cells if (c.metadata.get("nbgrader") or {}).get("grade")]
    check_line = next(ln for ln in tests[0].splitlines() if ".check(" in ln)
    check_out = page.locator(".jp-CodeCell").filter(has_text=check_line).first.locator(".jp-OutputArea-output").last
    check_text = check_out.text_content()
    check_out.evaluate("e => e.scrollIntoView({block: 'end'})")
    page.wait_for_timeout(300)
    page.screenshot(path=str(screenshots / "lab_02_zh_unanswered_check.png"))
    page.close()
    problems = server.stop()
    assert not problems, f"{problems}\n{server.log()}"
    if importlib.util.find_spec("namedaxes.i18n") is None:
        # the kernel knows which notebook it serves (what the detection will read); then skip, saying why
        assert f"zh/{NOTEBOOK.name}" in said and str(work / "zh") in said, said
        import pytest

        pytest.skip("namedaxes.i18n (the runtime of the Chinese edition) is not in the package yet")
    assert "namedaxes language: zh" in said, said
    assert check_text.strip().startswith("✗ "), check_text[-800:]
    from namedaxes import checking, i18n

    previous = i18n.language()
    try:
        i18n.set_language("zh")
        translated = i18n.gettext(checking.TEXT["not_written_yet"])
    finally:
        i18n.set_language(previous)
    if translated != checking.TEXT["not_written_yet"]:  # compared without whitespace: messages wrap

        def squeeze(t: str) -> str:
            return "".join(t.split())

        assert squeeze(_literal_part(translated)) in squeeze(check_text), check_text[-800:]
        assert squeeze(_literal_part(checking.TEXT["not_written_yet"])) not in squeeze(check_text), check_text[-800:]


def test_make_lab_edition_zh_opens_a_chinese_jupyterlab(browser, make_server, screenshots, tmp_path):
    """`make lab EDITION=zh`: JupyterLab's own menus in Chinese (the zh-CN language pack, selected by
    jupyter/zh/labconfig), among them the Run menu's entry that the course's run-order message names."""
    work = tmp_path / "work"
    server = make_server("lab", LAB_DIR=str(work), EDITION="zh")
    status, body = server.request("/lab/api/translations/zh_CN")
    assert status == 200 and json.loads(body)["data"], "the zh-CN language pack is installed and served"
    page = browser.new_page()
    page.set_default_timeout(RUN_TIMEOUT * 1000)
    page.goto(f"{server.url}/lab/tree/{NOTEBOOK.name}?reset&token={server.token}")
    page.locator(".jp-NotebookPanel .jp-CodeCell").first.wait_for()
    # the kernel's status in Chinese too; and a kernel still starting would hold up the server's shutdown
    page.locator("#jp-main-statusbar").get_by_text("Python 3 (ipykernel) | 空闲").wait_for()
    menubar = page.locator("#jp-menu-panel, .jp-MenuBar").first
    for menu in ("文件", "编辑", "运行", "内核"):
        assert menubar.get_by_text(menu, exact=True).count() >= 1, f"no {menu} menu: {menubar.inner_text()}"
    assert menubar.get_by_text("File", exact=True).count() == 0, "the menus are still English"
    page.get_by_role("menuitem", name="运行", exact=True).click()
    entry = page.get_by_role("menuitem", name="运行选中单元格上方的所有单元格")
    entry.wait_for()
    page.screenshot(path=str(screenshots / "lab_zh_menus.png"))
    page.keyboard.press("Escape")

    # nbgrader's extension in Chinese too (tools/nbgrader_zh.py): the Validate button, its dialog, the Assignment List
    validate = page.locator(".jp-NotebookPanel-toolbar .validate-button")
    assert validate.inner_text().strip() == "验证", validate.inner_text()
    validate.click()  # saves the workspace's copy first, then validates it
    dialog = page.locator(".jp-Dialog").filter(has_text="验证结果")
    dialog.wait_for()
    body = dialog.inner_text()
    assert "下面这个单元格未通过：" in body and "The following cell" not in body, body[:2000]
    assert "还没有编写" in body, "the failing checks speak Chinese inside the dialog too"
    page.screenshot(path=str(screenshots / "lab_zh_validate_dialog.png"))
    dialog.get_by_role("button", name="确认").click()
    page.get_by_role("menuitem", name="Nbgrader", exact=True).click()
    page.locator("#jp-mainmenu-nbgrader").get_by_text("作业列表", exact=True).click()
    panel = page.locator("#nbgrader-assignment-list")
    panel.get_by_text("已发布的作业", exact=True).wait_for()
    for text in ("已下载的作业", "已提交的作业", "这门课程已发布、已下载和已提交的作业："):
        assert panel.get_by_text(text, exact=True).count() == 1, panel.inner_text()
    page.locator("#jp-main-dock-panel .lm-TabBar-tab").filter(has_text=re.compile(r"^\s*作业\s*$")).wait_for()
    assert "Released assignments" not in panel.inner_text()
    page.wait_for_timeout(300)
    page.screenshot(path=str(screenshots / "lab_zh_assignment_list.png"))
    page.close()
    problems = server.stop()
    assert not problems, f"{problems}\n{server.log()}"
