"""Attacks on the student sandbox, each with its exact outcome asserted.

Working copies (workcopy.py): disk and file-count quotas, removal that follows no link and leaves no mount.

Each test starts a small sandboxed Python (the view, identity and limits a kernel gets, through
`Sandbox.wrap`) that tries one attack and prints what happened as JSON. Limits are scaled down (MiB,
not GiB) so each attack takes seconds. Skips are per mechanism and say why (no bubblewrap, not root,
no cgroup); on such a machine the protections report must say the same (test_protections.py).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest
from sandbox_helpers import MiB, fill_code, need, run

from autograder.publish.words import say
from autograder.sandbox import mounts, workcopy


def test_disk_quota_of_the_working_copy(sandbox, copies):
    need(sandbox, "quota")
    attacker, classmate = copies("attacker"), copies("classmate")
    code, res, _, err = run(sandbox, attacker, fill_code("fill.bin"))
    assert code == 0, err
    assert res[0] == "ENOSPC" and 12 <= res[1] <= 16, res
    hit = sandbox.disk_full(attacker)
    assert hit is not None and hit.status == "disk" and "16 MiB" in say(hit.reason, "en")
    (classmate / "answer.bin").write_bytes(b"y" * 8 * MiB)  # classmates' space is their own
    assert sandbox.disk_full(classmate) is None
    assert mounts.is_quota_mount(attacker) and workcopy.remove(attacker) and not attacker.exists()


def test_file_count_quota_of_the_working_copy(sandbox, copies):
    need(sandbox, "quota")
    w = copies()
    code, res, _, err = run(
        sandbox,
        w,
        """
        import errno, json, os
        os.mkdir("many")
        n, r = 0, "no limit"
        for i in range(100_000):
            try:
                open(f"many/{i}", "w").close(); n += 1
            except OSError as e:
                r = errno.errorcode[e.errno]
                break
        print(json.dumps([r, n]))
        """,
    )
    assert code == 0, err
    assert res[0] == "ENOSPC" and 900 <= res[1] < 1000, res
    hit = sandbox.disk_full(w)
    assert hit is not None and hit.status == "disk" and "1000 files" in say(hit.reason, "en")


def test_removal_survives_a_hostile_tree(tmp_path):
    """Symlinks out, a deep tree, a locked folder: removed without touching anything outside."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    w = tmp_path / "w"
    w.mkdir()
    (w / "link").symlink_to(outside)
    (w / "file-link").symlink_to(outside / "keep.txt")
    deep = os.open(w, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(1100):  # deeper than the recursion limit and PATH_MAX
        os.mkdir("level-09", dir_fd=deep)
        nxt = os.open("level-09", os.O_RDONLY | os.O_DIRECTORY, dir_fd=deep)
        os.close(deep)
        deep = nxt
    os.symlink(str(outside), "up", dir_fd=deep)
    os.close(deep)
    (w / "locked").mkdir()
    (w / "locked" / "inner").write_text("x")
    os.chmod(w / "locked", 0)
    assert workcopy.remove(w)
    assert not os.path.lexists(w)
    assert (outside / "keep.txt").read_text() == "keep"


def test_removal_through_an_open_folder(tmp_path):
    """The executor empties the observation folder through its descriptor: links inside stay unfollowed."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    observe = tmp_path / "observe"
    (observe / "sub" / "deeper").mkdir(parents=True)
    (observe / "sub" / "link").symlink_to(outside)
    (observe / "dirlink").symlink_to(outside)
    fd = os.open(observe, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert workcopy.remove(f"/proc/self/fd/{fd}/sub")
        assert workcopy.remove_at(fd, "dirlink")
    finally:
        os.close(fd)
    assert os.listdir(observe) == [] and (outside / "keep.txt").read_text() == "keep"


def test_remove_tree_detaches_leftover_quota_mounts(sandbox, tmp_path):
    need(sandbox, "quota")
    root = tmp_path / "work-root"
    for name in ("a", "b"):
        sandbox.prepare_workdir(root / name)
        (root / name / "x").write_text("x")
    assert mounts.is_quota_mount(root / "a")
    assert workcopy.remove_tree(root)
    assert not root.exists()
    assert str(root) not in Path("/proc/self/mountinfo").read_text()


def test_no_working_copy_is_mounted_once_the_run_removed_its_folder(sandbox, tmp_path):
    """A worker still starting a kernel after the run cleaned up must not leave a mount behind."""
    need(sandbox, "quota")
    root = tmp_path / "run"
    sb = dataclasses.replace(sandbox).setup(root)
    sb.prepare_workdir(root / "w0-1")
    assert workcopy.remove_tree(root)
    (root / "w0-2").mkdir(parents=True)  # what a late worker does
    with pytest.raises(OSError, match="is over"):
        sb.prepare_workdir(root / "w0-2")
    assert str(root) not in Path("/proc/self/mountinfo").read_text()
