"""tools/lab.py: each edition of a workspace keeps its own JupyterLab layout, so `make lab EDITION=zh` does not
reopen the English lab's tabs (issue 48); nothing is started here (the server start is replaced)."""

from __future__ import annotations

import subprocess

import pytest

from tools import lab


def _environment(monkeypatch, tmp_path, *argv) -> dict:
    started = {}
    monkeypatch.setattr(lab.subprocess, "run", lambda cmd, **k: subprocess.CompletedProcess(cmd, 0))
    monkeypatch.setattr(lab, "_serve", lambda args, what, path, command, env, cwd: started.update(env))
    monkeypatch.chdir(tmp_path)
    lab.main(["lab", "--lab-dir", str(tmp_path / "work"), *argv])
    return started


@pytest.mark.parametrize("named", [None, "state/workspaces"])
def test_each_edition_has_its_own_jupyterlab_workspaces(monkeypatch, tmp_path, named):
    if named:
        monkeypatch.setenv("JUPYTERLAB_WORKSPACES_DIR", str(tmp_path / named))
    else:
        monkeypatch.delenv("JUPYTERLAB_WORKSPACES_DIR", raising=False)
    english = _environment(monkeypatch, tmp_path)["JUPYTERLAB_WORKSPACES_DIR"]
    chinese = _environment(monkeypatch, tmp_path, "--edition", "zh")["JUPYTERLAB_WORKSPACES_DIR"]
    base = tmp_path / named if named else tmp_path / "work" / ".jupyterlab-workspaces"
    assert (english, chinese) == (str(base / "en"), str(base / "zh"))
