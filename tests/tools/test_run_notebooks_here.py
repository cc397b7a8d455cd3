"""tools.run_notebooks_here: each notebook's code cells in a fresh process, the first failure and its cell
recorded (how the course's one-chip TPU run, namedaxes/recorded/notebooks-tpu-v5e-1.json, was made)."""

from __future__ import annotations

import json

import nbformat

from tools import run_notebooks_here


def _notebook(path, *sources):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# title")] + [nbformat.v4.new_code_cell(s) for s in sources]
    nbformat.write(nb, path)
    return path


def test_a_notebook_that_runs_is_ok_with_its_device_line(tmp_path):
    path = _notebook(tmp_path / "01_ok.ipynb", "x = 2", "print('namedaxes: 8 devices (cpu)')\nassert x == 2")
    row = run_notebooks_here.run_one(path, tmp_path)
    assert row["result"] == "ok" and row["devices"] == "namedaxes: 8 devices (cpu)"
    assert "failed_cell" not in row


def test_the_first_failing_cell_and_its_error_are_recorded_and_later_cells_do_not_run(tmp_path):
    marker = tmp_path / "ran"
    path = _notebook(
        tmp_path / "02_bad.ipynb",
        "x = 1",
        "import socket\nraise OSError(97, 'no sockets')",
        f"open({str(marker)!r}, 'w')",
    )
    row = run_notebooks_here.run_one(path, tmp_path)
    assert row["result"] == "failed" and row["failed_cell"] == 2  # the notebook's cell index (markdown counted)
    assert row["error"].startswith("OSError: [Errno 97]")
    assert not marker.exists()


def test_the_recorded_one_chip_run_lists_both_editions():
    record = json.loads((run_notebooks_here.REPO / "namedaxes" / "recorded" / "notebooks-tpu-v5e-1.json").read_text())
    assert record["provenance"]["accelerator"].startswith("tpu | TPU v5")
    for edition in ("en", "zh"):
        failed = {r["notebook"] for r in record[edition] if r["result"] != "ok"}
        assert failed == {"06_multi_process.ipynb"}  # the machine refuses sockets; 06 starts a cluster
