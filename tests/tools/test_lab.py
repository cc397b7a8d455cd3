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


@pytest.mark.parametrize("relative", [False, True])
def test_the_students_compile_cache_lives_outside_the_course_folder(monkeypatch, tmp_path, relative):
    """Issue 61: JAX's cache was `work/.jax-cache`, relative, so each kernel (it runs in the notebook's folder)
    made a `work` folder beside the notebook, shown in the file browser and handed in by Submit. Now it is
    absolute, under the user's cache directory, mode 0700, and nothing appears in the workspace."""
    import os
    import stat
    from pathlib import Path

    monkeypatch.setenv("XDG_CACHE_HOME", "cache" if relative else str(tmp_path / "cache"))
    env = _environment(monkeypatch, tmp_path, "--student", "ann")
    folder = Path(env["JAX_COMPILATION_CACHE_DIR"])
    assert folder.is_absolute() and folder.parent == tmp_path / "cache" / "namedaxes-jax"
    assert folder.name.startswith("work-") and stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(folder.parent.stat().st_mode) == 0o700
    assert not any(p.name in (".jax-cache", "work") for p in (tmp_path / "work").rglob("*"))
    other = _environment(monkeypatch, tmp_path / "work")  # another workspace's cache is another folder
    assert other["JAX_COMPILATION_CACHE_DIR"] != str(folder) and os.path.isdir(other["JAX_COMPILATION_CACHE_DIR"])


def test_a_labs_first_start_opens_notebook_01_not_the_stock_launcher(tmp_path):
    opened, layouts = tmp_path / "work", tmp_path / "work" / ".jupyterlab-workspaces" / "en"
    opened.mkdir()
    assert lab.first_page(opened, layouts) == "/lab"  # a class's folder: no 01 in it (the Assignment List)
    (opened / lab.FIRST_NOTEBOOK).write_text("{}")
    assert lab.first_page(opened, layouts) == "/lab/tree/01_axis_names.ipynb"
    layouts.mkdir(parents=True)
    (layouts / "default-37a8.jupyterlab-workspace").write_text("{}")  # the lab as the student left it
    assert lab.first_page(opened, layouts) == "/lab"


def test_no_list_of_skipped_language_servers_comes_before_the_url():
    """jupyter_lsp searched for about 20 language servers and listed the missing ones after the server's
    start-up lines; the lab's and formgrader's configs turn the search off."""
    from traitlets.config import Config

    from tools import serve

    for folder in (lab.JUPYTER, lab.JUPYTER / "formgrader"):
        c = Config()
        exec((folder / "jupyter_server_config.py").read_text(), {"get_config": lambda c=c: c})
        assert c.LanguageServerManager.autodetect is False, folder
    assert serve.LATE_LINES == ()
