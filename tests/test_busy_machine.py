"""tests/helpers/machine.py: the tests' wall-clock limits follow how busy the machine is (issue 61), and a limit
that runs out says the machine was too busy in one sentence."""

from __future__ import annotations

import os
import sys

import machine
import pytest


def test_a_limit_is_the_quiet_figure_times_the_load_per_core(monkeypatch):
    monkeypatch.setattr(machine, "_cores", lambda: 2)
    monkeypatch.setattr(os, "getloadavg", lambda: (16.0, 0.0, 0.0))
    assert machine.limit(900) == 7200  # the 77-submission class at load 16 on 2 cores
    monkeypatch.setattr(os, "getloadavg", lambda: (0.5, 0.0, 0.0))
    assert machine.limit(900) == 900  # a quiet machine: the quiet figure


def test_a_command_past_its_limit_says_the_machine_is_too_busy(monkeypatch):
    monkeypatch.setattr(machine, "busy_factor", lambda: 1.0)
    with pytest.raises(pytest.fail.Exception) as failed:
        machine.run([sys.executable, "-c", "import time; time.sleep(30)"], quiet_s=0.5, what="sleeping")
    assert str(failed.value).startswith("the machine is too busy for this test: sleeping ran past 0 s (0 s on a quiet")


def test_the_readme_says_what_make_test_costs_and_names_make_test_fast():
    from pathlib import Path

    text = " ".join((Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8").split())
    assert "`make test` takes about 25 minutes on 2 quiet cores (CI: 1516 s), about 40 beside two CPU-bound" in text
    assert "`.venv-site`, `.venv-newest` and Debian packages (root/sudo)" in text
    assert "`make test-fast`" in text
