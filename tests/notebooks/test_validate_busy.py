"""nbgrader's Validate on a busy machine (issue 61): its per-cell limit follows the machine's load
(courseinfo/validate_limit.py, set by jupyter/nbgrader_config.py at each press), and a limit that still runs
out says in one sentence that the machine is busy and how long the cell took, never a bare traceback.

The busy case runs Validate as its button does (the config files `make lab` puts on JUPYTER_CONFIG_PATH,
read by nbgrader's own loader) on notebook 02 solved, while one CPU-burning process per core (at least 2)
runs; the burners stop by themselves after BURN_S even if the test is killed."""

from __future__ import annotations

import multiprocessing
import os
import re
import signal
import sys
import time
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook
from nbgrader.apps import NbGrader
from nbgrader.validator import Validator

from courseinfo.validate_limit import cell_timeout

ROOT = Path(__file__).resolve().parents[2]
ANSI = re.compile(r"\x1b\[[0-9;]*m")
BURN_S = 300.0  # the burners' own end, should the test never stop them


@pytest.fixture(autouse=True)
def lab_like_environment(monkeypatch):
    monkeypatch.setenv("JUPYTER_PATH", str(ROOT / "jupyter" / "data"))
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", os.pathsep.join(str(ROOT / "jupyter" / d) for d in ("", "nbgrader")))
    monkeypatch.delenv("NAMEDAXES_OBSERVE_DIR", raising=False)


def _lab_config():
    """The config Validate's server extension loads at each press (nbgrader's own loader, `make lab`'s paths)."""
    from jupyter_core.paths import jupyter_config_path
    from traitlets.config import Config

    full = Config()
    for config, _ in NbGrader._load_config_files("nbgrader_config", path=jupyter_config_path(), log=None):
        full.merge(config)
    return full


@pytest.mark.parametrize(("load", "cores", "seconds"), [(0.1, 2, 60), (2.0, 2, 60), (7.0, 2, 210), (16.0, 2, 480)])
def test_validates_cell_limit_follows_the_machines_load(load, cores, seconds):
    assert cell_timeout(load, cores) == seconds


def test_make_labs_config_gives_validate_the_machines_limit(monkeypatch):
    monkeypatch.setattr(os, "getloadavg", lambda: (16.0, 0.0, 0.0))
    cores = len(os.sched_getaffinity(0))
    assert _lab_config().Execute.timeout == cell_timeout(16.0, cores) >= 60


def _burn(until: float) -> None:
    while time.monotonic() < until:
        pass


def test_validate_passes_a_right_notebook_on_a_busy_machine(tmp_path):
    from tests.notebooks.test_validate import _solved_release

    path = tmp_path / "02_scaled_sum.ipynb"
    nbformat.write(_solved_release("02_scaled_sum"), path)
    ctx = multiprocessing.get_context("spawn")
    until = time.monotonic() + BURN_S
    burners = [ctx.Process(target=_burn, args=(until,), daemon=True) for _ in range(max(2, os.cpu_count() or 1))]
    for p in burners:
        p.start()
    time.sleep(2)  # the load average starts to show them
    t0 = time.monotonic()
    try:
        config = _lab_config()
        result = Validator(config=config).validate(str(path))
        alive = all(p.is_alive() for p in burners)
    finally:
        for p in burners:
            os.kill(p.pid, signal.SIGKILL)
            p.join(5)
    seconds = time.monotonic() - t0
    sys.stderr.write(
        f"\nValidate of notebook 02 beside {len(burners)} burners: {seconds:.1f} s, "
        f"cell limit {config.Execute.timeout} s\n"
    )
    assert alive, "the burners stopped before Validate ended: the machine was not kept busy"
    assert result == {}, result


def test_a_cell_past_validates_limit_says_the_machine_is_busy_in_one_sentence(tmp_path):
    """The limit made tiny (2 s) and a graded cell that sleeps 20 s: the dialog's error is the one sentence."""
    nb = new_notebook(cells=[new_code_cell("import time\ntime.sleep(20)")])
    nb.cells[0].metadata["nbgrader"] = {
        "grade": True,
        "grade_id": "slow",
        "locked": True,
        "points": 1,
        "schema_version": 3,
        "solution": False,
    }
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = tmp_path / "slow.ipynb"
    nbformat.write(nb, path)
    config = _lab_config()
    config.Execute.timeout = 2
    failed = Validator(config=config).validate(str(path))["failed"]
    text = " ".join(ANSI.sub("", failed[0]["raw_error"]).split())
    match = re.fullmatch(
        r"✗ The machine is busy; the cell took (\d+) s, longer than Validate allows it on this machine now, so "
        r"press Validate again when the machine is quieter \(your answer was not judged wrong\)\.",
        text,
    )
    assert match and 2 <= int(match.group(1)) < 20, text
