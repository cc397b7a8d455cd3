"""Roster -> Unix accounts (hub/accounts.py): bad ids are refused by line, and no roster takes over
an account that exists already (the hub would start that account's server for a student)."""

from __future__ import annotations

import os
import pwd
import re
import tempfile
from pathlib import Path

import pytest

from hub import accounts
from hub.deployment import Deployment

ROOT = Path(__file__).resolve().parents[2]


def _roster(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "roster.csv"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "sid, reason",
    [
        ("Alice", "lower-case"),
        ("1bob", "starting with a letter"),
        ("a" * 33, "at most 32"),
        ("al ice", "lower-case"),
        ("", "lower-case"),
        ("bob+x", "lower-case"),
    ],
)
def test_an_id_that_cannot_be_a_unix_name_is_refused_with_its_line(tmp_path, sid, reason):
    path = _roster(tmp_path, f"id,first_name,last_name,email\nok,,,\n{sid},,,\n")
    with pytest.raises(accounts.AccountError, match=rf"line 3: student id {re.escape(repr(sid))}.*{reason}"):
        accounts.read_roster(path)


def test_a_duplicate_id_and_a_missing_header_are_refused(tmp_path):
    with pytest.raises(accounts.AccountError, match=r"line 3: student id 'ada' appears twice"):
        accounts.read_roster(_roster(tmp_path, "id,first_name\nada,A\nada,B\n"))
    with pytest.raises(accounts.AccountError, match=r"first line must name the columns id,first_name"):
        accounts.read_roster(_roster(tmp_path, "ada,A\n"))


def test_the_sample_roster_is_valid():
    assert accounts.read_roster(ROOT / "hub" / "students.csv") == ["alice", "bob"]


@pytest.mark.skipif(os.geteuid() != 0, reason="creating accounts needs root (CI runs as root)")
@pytest.mark.parametrize("existing", ["root", "daemon", "nobody"])
def test_a_roster_never_takes_over_an_existing_account(existing):
    pwd.getpwnam(existing)
    hub_dir = Path(tempfile.mkdtemp(prefix="namedaxes-hub-acct-", dir="/tmp"))
    dep = Deployment(hub_dir=hub_dir, group="nxtacct", instructor="nxtacct-teacher")
    roster = hub_dir / "roster.csv"
    roster.write_text(f"id,first_name,last_name,email\nnxtacct-new,,,\n{existing},,,\n")
    with pytest.raises(accounts.AccountError, match=rf"account\(s\) {existing} already exist .* never takes over"):
        accounts.sync(dep, roster)
    with pytest.raises(KeyError):  # refused before anything was made
        pwd.getpwnam("nxtacct-new")
    assert dep.accounts().created == []
    import shutil

    shutil.rmtree(hub_dir)


def test_without_root_it_says_what_it_needs(monkeypatch, tmp_path):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(accounts.AccountError, match=r"needs root \(useradd, chpasswd\)"):
        accounts.sync(Deployment(hub_dir=tmp_path), None)


def test_the_start_here_note_is_written_once_and_never_through_a_link(tmp_path):
    """root writes it into a fresh home: O_EXCL and O_NOFOLLOW, so neither a file nor a link already there is
    written over or followed (a student cannot aim it at another file)."""
    home = tmp_path / "home"
    home.mkdir()
    accounts._write_start_here(home, os.getuid(), os.getgid())
    note = home / accounts.START_HERE
    assert note.read_text(encoding="utf-8") == accounts.START_HERE_TEXT
    note.write_text("the student's own words")
    accounts._write_start_here(home, os.getuid(), os.getgid())
    assert note.read_text() == "the student's own words", "written once: never over the student's file"
    other = tmp_path / "home2"
    other.mkdir()
    target = tmp_path / "secret"
    target.write_text("root's")
    (other / accounts.START_HERE).symlink_to(target)
    accounts._write_start_here(other, os.getuid(), os.getgid())
    assert target.read_text() == "root's", "a link is not followed"
