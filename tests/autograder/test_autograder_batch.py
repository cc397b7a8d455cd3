"""The batch always finishes (issue 8): time budgets, Ctrl-C, grades.csv and report.html always written.

Each test grades its own tiny class with `python -m autograder grade` (the
references come from the shared fixture class's cache), so the budgets and
signals here do not touch the shared class.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat

import autograder_specs as specs
from autograder_harness import read_csv

SLOW_CELLS = ["import time\ntime.sleep(4)"] * 5          # 20 s of sleeping, right after the set-up cell


def _notebook(assignment: str, tamper=()) -> bytes:
    source = nbformat.read(specs.REPO / "solutions" / f"{assignment}.ipynb", as_version=4)
    return specs.notebook_for(specs.Spec("x", "ok", assignment=assignment, tamper=tuple(tamper)), source, {})


def _first_code_cell_id(assignment: str) -> str:
    nb = specs.release_notebook(assignment)
    for cell in nb.cells:
        if cell.cell_type == "code" and specs.nb_meta(cell).get("grade_id"):
            return specs.nb_meta(cell)["grade_id"]
    raise AssertionError("no graded code cell")


def _grade(graded_class, sub: Path, out: Path, tmp: Path, *extra: str) -> subprocess.Popen:
    tmp.mkdir(exist_ok=True)
    cmd = [sys.executable, "-m", "autograder", "grade", "--course", str(graded_class.course), "--submissions",
           str(sub), "--out", str(out), "--cache", str(graded_class.cache), "-j", "2", *extra]
    return subprocess.Popen(cmd, cwd=specs.REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "TMPDIR": str(tmp)})


def test_notebook_and_submission_budgets_stop_many_slow_cells(graded_class, tmp_path):
    sub = tmp_path / "class"
    (sub / "slowpoke").mkdir(parents=True)
    for aid in (specs.A01, specs.A02):
        slow = specs.add_cells_after(_first_code_cell_id(aid), SLOW_CELLS)
        (sub / "slowpoke" / f"{aid}.ipynb").write_bytes(_notebook(aid, [slow]))
    proc = _grade(graded_class, sub, tmp_path / "out", tmp_path / "tmp", "--timeout", "6",
                  "--notebook-budget", "12", "--submission-budget", "18")
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr[-3000:]
    rows = {r["assignment"]: r for r in read_csv(tmp_path / "out" / "grades.csv")}
    a01, a02 = rows[specs.A01], rows[specs.A02]
    assert a01["status"] == "timeout" and float(a01["score"]) == 0, a01
    assert re.search(r"the notebook's time budget of 12 s", a01["reason"]), a01
    assert a02["status"] == "timeout" and float(a02["score"]) == 0, a02
    assert re.search(r"what was left of this submission's time budget of 18 s \(6 s\)", a02["reason"]), a02
    # each notebook holds 20 s of sleep; its worker time is bounded by its budget (+ interrupt grace, clean-up)
    seconds = {t["assignment"]: t["seconds"] for t in json.loads((tmp_path / "out" / "timings.json").read_text())}
    assert seconds[specs.A01] < 12 + 15 and seconds[specs.A02] < 6 + 15, seconds
    assert (tmp_path / "out" / "report.html").exists()


def _procs_under(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmd = fh.read().decode(errors="replace")
            with open(f"/proc/{entry}/stat") as fh:
                if fh.read().split(") ")[-1][0] == "Z":
                    continue
        except OSError:
            continue
        if marker in cmd:
            found.append(int(entry))
    return found


def test_ctrl_c_stops_the_batch_within_seconds_with_no_kernel_left(graded_class, tmp_path):
    sub = tmp_path / "class"
    for student in ("sleeper_a", "sleeper_b"):
        (sub / student).mkdir(parents=True)
        slow = specs.add_cells_after(_first_code_cell_id(specs.A02), ["import time\ntime.sleep(600)"])
        (sub / student / f"{specs.A02}.ipynb").write_bytes(_notebook(specs.A02, [slow]))
    tmp = tmp_path / "tmp"
    proc = _grade(graded_class, sub, tmp_path / "out", tmp, "--timeout", "900", "--assignment", specs.A02)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and len([p for p in _procs_under(str(tmp)) if p != proc.pid]) < 2:
        time.sleep(0.5)
    kernels = [p for p in _procs_under(str(tmp)) if p != proc.pid]
    assert kernels, "no kernel started"
    time.sleep(3)                                            # let the kernels get into the sleeping cell
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    took = time.monotonic() - t0
    assert proc.returncode == 130 and "interrupted" in stderr, stderr[-2000:]
    assert took < 10, f"Ctrl-C took {took:.1f} s"
    deadline = time.monotonic() + 5
    while _procs_under(str(tmp)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _procs_under(str(tmp)) == [], "processes outlived the batch"
    assert not (tmp_path / "out" / "grades.csv").exists()      # a partial class never replaces a whole one
