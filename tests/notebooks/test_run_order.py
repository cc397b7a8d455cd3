"""A test cell run before the notebook's import cell, or after a kernel restart, says what to run first.

The course's own kernel (jupyter/data's `python3`, as `make lab` and the hub start it: the
notebook's path in `JPY_SESSION_NAME`, its folder as the working directory) runs the student
notebook's first test cell with nothing run before, then the cells above it, then again after a
restart: each time the cell fails (an error, so nbgrader and nbval still see a failure) with the
course's words in the notebook's language instead of a bare `NameError: name 'q' is not defined`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import nbformat
import pytest
from jupyter_client.manager import start_new_kernel

from courseinfo.course import LANGUAGES
from namedaxes import i18n
from namedaxes.checking import TEXT
from namedaxes.checking.rendering import render_failure

ROOT = Path(__file__).resolve().parents[2]
AID = "02_scaled_sum"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _words(key: str, lang: str, **fields) -> str:
    """The message as the kernel renders it (wrapped lines, ANSI off) in `lang`."""
    i18n.set_language(lang)
    try:
        return "\n".join(ANSI.sub("", ln) for ln in render_failure(TEXT[key].format(**fields)))
    finally:
        i18n.set_language(None)


def _run(kc, code: str) -> tuple[str, str]:
    """(status, what the error output shows, ANSI off)."""
    errors: list[str] = []

    def hook(msg):
        if msg["msg_type"] == "error":
            errors.append(ANSI.sub("", "\n".join(msg["content"]["traceback"])))

    reply = kc.execute_interactive(code, output_hook=hook, timeout=120)
    return reply["content"]["status"], "\n".join(errors)


@pytest.mark.parametrize("edition", LANGUAGES)
def test_a_test_cell_run_out_of_order_or_after_a_restart_says_what_to_run_first(edition, monkeypatch):
    path = ROOT / "notebooks" / (f"zh/{AID}.ipynb" if edition == "zh" else f"{AID}.ipynb")
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    first_test = next(i for i, c in enumerate(code) if (c.metadata.get("nbgrader") or {}).get("grade"))
    answer = code[first_test - 1].source
    assert "raise NotImplementedError()" in answer, "the cell above the first test cell is its answer cell"
    monkeypatch.setenv("JUPYTER_PATH", str(ROOT / "jupyter" / "data"))  # the kernel spec `make lab` uses
    env = {k: v for k, v in os.environ.items() if k != i18n.ENV}
    env["JPY_SESSION_NAME"] = str(path)  # what jupyter_server tells a notebook's kernel
    km, kc = start_new_kernel(kernel_name="python3", env=env, cwd=str(path.parent))
    try:
        test_cell = code[first_test].source
        status, shown = _run(kc, test_cell)  # nothing run yet: a fresh kernel, or Run on one cell
        assert status == "error", "the cell still fails: nbgrader and nbval see it"
        assert shown == _words("q_not_defined", edition), shown
        for cell in code[:first_test]:  # the cells above, as Run All Above does (the answer stays a stub)
            status, shown = _run(kc, cell.source)
            assert status == "ok", shown
        status, shown = _run(kc, test_cell)
        assert status == "error", "the answer is still a stub"
        assert shown != _words("q_not_defined", edition) and "`scaled_sum`" in shown, shown  # the check's words
        km.restart_kernel(now=True)
        kc.wait_for_ready(timeout=60)
        status, shown = _run(kc, test_cell)  # after a restart the kernel has forgotten everything
        assert status == "error"
        assert shown == _words("q_not_defined", edition), shown
        status, shown = _run(kc, "x = jnp.arange(3)")
        assert status == "error"
        assert shown == _words("run_cells_above", edition, name="jnp"), shown
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
