"""The batch always finishes (issue 8): time budgets, Ctrl-C, grades.csv and report.html always written.

Each test grades its own tiny class with `python -m autograder grade` (with the
reference cache the shared fixture class uses, keyed by content), so the
budgets and signals here do not touch the shared class and need not wait for it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import autograder_specs as specs
import machine
import nbformat
import pytest
from autograder_harness import read_csv, start_grading

from autograder.course.classroom import grade_command, make_course

SLOW_CELLS = ["import time\ntime.sleep(4)"] * 5  # 20 s of sleeping, right after the set-up cell
CACHE = specs.REPO / "build" / "autograder" / "references"


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    return make_course(tmp_path_factory.mktemp("batch") / "course", (specs.A01, specs.A02))


def _notebook(assignment: str, tamper=()) -> bytes:
    source = nbformat.read(specs.REPO / "solutions" / f"{assignment}.ipynb", as_version=4)
    return specs.notebook_for(specs.Spec("x", "ok", assignment=assignment, tamper=tuple(tamper)), source, {})


def _first_code_cell_id(assignment: str) -> str:
    nb = specs.release_notebook(assignment)
    for cell in nb.cells:
        if cell.cell_type == "code" and specs.nb_meta(cell).get("grade_id"):
            return specs.nb_meta(cell)["grade_id"]
    raise AssertionError("no graded code cell")


def _grade(course, sub: Path, out: Path, tmp: Path, *extra: str) -> subprocess.Popen:
    return start_grading(grade_command(course, *extra, submissions=sub, out=out, cache=CACHE), tmp)


def test_notebook_and_submission_budgets_stop_many_slow_cells(course, tmp_path):
    sub = tmp_path / "class"
    (sub / "slowpoke").mkdir(parents=True)
    for aid in (specs.A01, specs.A02):
        slow = specs.add_cells_after(_first_code_cell_id(aid), SLOW_CELLS)
        (sub / "slowpoke" / f"{aid}.ipynb").write_bytes(_notebook(aid, [slow]))
    proc = _grade(
        course,
        sub,
        tmp_path / "out",
        tmp_path / "tmp",
        "--timeout",
        "6",
        "--notebook-budget",
        "12",
        "--submission-budget",
        "18",
        "--timeout-multiple",
        "0",  # these exact limits: not more where the reference needs more on this machine (run/time_limits.py)
    )
    stdout, stderr = machine.communicate(
        proc, quiet_s=300, what="the command of notebook and submission budgets stop many slow cells"
    )
    assert proc.returncode == 0, stderr[-3000:]
    rows = {r["assignment"]: r for r in read_csv(tmp_path / "out" / "grades.csv")}
    # the pool picks which of the two goes first (run/order.py): that one gets the notebook budget, the
    # other what is left of the submission's
    first = [a for a, r in rows.items() if re.search(r"the notebook's time budget of 12 s", r["reason"])]
    assert len(first) == 1, rows
    (then,) = set(rows) - set(first)
    a_first, a_then = rows[first[0]], rows[then]
    assert a_first["status"] == "timeout" and float(a_first["score"]) == 0, a_first
    assert a_then["status"] == "timeout" and float(a_then["score"]) == 0, a_then
    assert re.search(r"what was left of this submission's time budget of 18 s \(6 s\)", a_then["reason"]), a_then
    # each notebook holds 20 s of sleep; its worker time is bounded by its budget (+ interrupt grace, clean-up)
    seconds = {t["assignment"]: t["seconds"] for t in json.loads((tmp_path / "out" / "timings.json").read_text())}
    assert seconds[first[0]] < 12 + 15 and seconds[then] < 6 + 15, seconds
    assert (tmp_path / "out" / "report.html").exists()


def test_a_submission_budget_is_charged_with_the_time_notebooks_took(course, tmp_path):
    """Budgets of notebooks still to run are not booked ahead: a submission budget as large as one
    notebook's still grades every quick notebook of the student (it was 'not run: timeout')."""
    sub = tmp_path / "class"
    (sub / "steady").mkdir(parents=True)
    for aid in (specs.A01, specs.A02):
        (sub / "steady" / f"{aid}.ipynb").write_bytes(_notebook(aid))
    proc = _grade(
        course, sub, tmp_path / "out", tmp_path / "tmp", "--notebook-budget", "120", "--submission-budget", "120"
    )
    stdout, stderr = machine.communicate(
        proc, quiet_s=300, what="the command of a submission budget is charged with the time notebooks took"
    )
    assert proc.returncode == 0, stderr[-3000:]
    rows = {r["assignment"]: r for r in read_csv(tmp_path / "out" / "grades.csv")}
    for aid in (specs.A01, specs.A02):
        assert rows[aid]["status"] == "ok" and rows[aid]["score"] == rows[aid]["max_score"], rows[aid]


def _processes() -> dict[tuple[int, str], tuple[int, str]]:
    """(pid, start time) -> (parent pid, command line) of every live process."""
    procs = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(") ", 1)[1].split()
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmd = fh.read().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError):
            continue
        if fields[0] != "Z":
            procs[(int(entry), fields[19])] = (int(fields[1]), cmd)
    return procs


def _descendants(root: int) -> dict[tuple[int, str], str]:
    procs = _processes()
    found, frontier = {}, {root}
    while frontier:
        new = {key for key, (ppid, _) in procs.items() if ppid in frontier and key not in found}
        found.update({key: procs[key][1] for key in new})
        frontier = {pid for pid, _ in new}
    return found


def _still_alive(keys) -> list:
    live = _processes()
    return [k for k in keys if k in live]


def test_ctrl_c_stops_the_batch_within_seconds_with_no_kernel_left(course, tmp_path):
    sub = tmp_path / "class"
    for student in ("sleeper_a", "sleeper_b"):
        (sub / student).mkdir(parents=True)
        slow = specs.add_cells_after(_first_code_cell_id(specs.A02), ["import time\ntime.sleep(600)"])
        (sub / student / f"{specs.A02}.ipynb").write_bytes(_notebook(specs.A02, [slow]))
    tmp = tmp_path / "tmp"
    proc = _grade(course, sub, tmp_path / "out", tmp, "--timeout", "900", "--assignment", specs.A02)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and sum("ipykernel" in cmd for cmd in _descendants(proc.pid).values()) < 2:
        time.sleep(0.5)
    time.sleep(8)  # let the kernels get into the sleeping cell
    family = _descendants(proc.pid)  # workers, sandboxes, kernels
    assert sum("ipykernel" in cmd for cmd in family.values()) >= 2, family
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    took = time.monotonic() - t0
    assert proc.returncode == 130 and "interrupted" in stderr, stderr[-2000:]
    assert took < 10, f"Ctrl-C took {took:.1f} s"
    deadline = time.monotonic() + 5
    while _still_alive(family) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _still_alive(family) == [], {k: family[k] for k in _still_alive(family)}
    assert not (tmp_path / "out" / "grades.csv").exists()  # a partial class never replaces a whole one
