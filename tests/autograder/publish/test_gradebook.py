"""publish/gradebook.py: a new gradebook is stamped with nbgrader's schema head, read in-process."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys

import nbgrader.api

from autograder.publish.gradebook import alembic_head, write_gradebook


def test_alembic_head_is_what_nbgrader_itself_reads():
    """nbgrader's own reading runs `alembic heads` (from this venv's bin/) in a subprocess."""
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}
    theirs = subprocess.run(
        [sys.executable, "-c", "from nbgrader.api import get_alembic_version as g; print(g())"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert theirs and alembic_head() == theirs


def test_a_new_gradebook_gets_the_head_without_a_subprocess(tmp_path, monkeypatch):
    def no_subprocess(*args, **kwargs):
        raise AssertionError(f"a subprocess was started: {args}")

    monkeypatch.setattr(subprocess, "check_output", no_subprocess)
    monkeypatch.setattr(nbgrader.api.sp, "check_output", no_subprocess)
    before = nbgrader.api.get_alembic_version
    db = tmp_path / "gradebook.db"
    assert write_gradebook(f"sqlite:///{db}", {}, []) == 0
    assert nbgrader.api.get_alembic_version is before  # put back
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT version_num FROM alembic_version").fetchall() == [(alembic_head(),)]
