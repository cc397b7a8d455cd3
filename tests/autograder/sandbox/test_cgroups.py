"""Attacks on the student sandbox, each with its exact outcome asserted.

The kernel's cgroup (cgroups.py): memory counting shared memory too, the pids limit, removal that kills
stragglers and keeps the verdict, sweeping dead graders' groups, detecting v1 and v2 layouts.

Each test starts a small sandboxed Python (the view, identity and limits a kernel gets, through
`Sandbox.wrap`) that tries one attack and prints what happened as JSON. Limits are scaled down (MiB,
not GiB) so each attack takes seconds. Skips are per mechanism and say why (no bubblewrap, not root,
no cgroup); on such a machine the protections report must say the same (test_protections.py).
"""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

import machine
import pytest
from sandbox_helpers import FORK_BOMB, SHM_FILE, MiB, finish, need, start

from autograder.publish.words import say
from autograder.sandbox import cgroups
from autograder.sandbox.cgroups import detect

SHARED_MMAP = """
    import mmap, sys
    m = mmap.mmap(-1, 1024 * 2**20, flags=mmap.MAP_SHARED)
    for i in range(0, len(m), 4096):
        m[i] = 1
    print('"survived"')
    """
CLASSMATE = """
    import json, os, time
    time.sleep(1.5)                          # runs while the attacker is being killed
    data = bytearray(64 * 2**20)             # a modest, honest allocation
    pids = []
    for _ in range(20):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        pids.append(pid)
    for p in pids:
        os.waitpid(p, 0)
    open("mine.bin", "wb").write(b"y" * 4 * 2**20)
    print(json.dumps("fine"))
    """


@pytest.mark.parametrize("attack", [SHARED_MMAP, SHM_FILE], ids=["mmap_shared", "dev_shm_file"])
def test_shared_memory_counts_against_the_memory_limit(sandbox, copies, attack):
    need(sandbox, "memory")
    sb = dataclasses.replace(sandbox, shm_bytes=2048 * MiB, memory_bytes=128 * MiB)  # /dev/shm bigger than memory
    attacker, classmate = copies("attacker", sb), copies("classmate", sb)
    a = start(sb, attacker, attack, label="attacker")
    c = start(sb, classmate, CLASSMATE, label="classmate")
    code, res, verdict, err = finish(*a)
    assert res is None and code in (-9, 137), (code, res, err)  # SIGKILL by the cgroup's OOM killer
    assert verdict is not None and verdict.status == "memory" and "128 MiB" in say(verdict.reason, "en")
    ccode, cres, cverdict, cerr = finish(*c)
    assert (ccode, cres, cverdict) == (0, "fine", None), cerr


def test_fork_bomb_stops_at_the_pids_limit(sandbox, copies):
    need(sandbox, "pids")
    attacker, classmate = copies("attacker"), copies("classmate")
    a = start(sandbox, attacker, FORK_BOMB, label="attacker")
    c = start(sandbox, classmate, CLASSMATE, label="classmate")
    code, res, verdict, err = finish(*a)
    assert code == 0, err
    assert res[0] == "EAGAIN" and 200 <= res[1] < sandbox.pids_max, res
    assert verdict is not None and verdict.status == "processes" and str(sandbox.pids_max) in say(verdict.reason, "en")
    ccode, cres, cverdict, cerr = finish(*c)
    assert (ccode, cres, cverdict) == (0, "fine", None), cerr


def test_cgroup_removal_kills_stragglers_and_keeps_the_verdict(sandbox, copies):
    need(sandbox, "pids")
    w = copies()
    proc, launch = start(
        sandbox,
        w,
        """
        import os, time
        for _ in range(300):
            try:
                if os.fork() == 0:
                    time.sleep(60); os._exit(0)
            except OSError:
                break
        print("forked", flush=True)
        time.sleep(60)
        """,
    )
    assert proc.stdout.readline().strip() == b"forked"
    group = launch.cgroup
    dirs = {p for _, p in group.groups.values()}
    assert len(group.pids()) > 100
    t0 = time.monotonic()
    assert group.remove()
    assert time.monotonic() - t0 < machine.limit(5)
    assert not any(d.exists() for d in dirs)
    assert group.post_mortem().status == "processes"
    proc.wait(timeout=10)


def test_sweep_removes_groups_of_dead_graders_only(sandbox):
    need(sandbox, "pids")
    parent = sandbox.cgroups.pids.parent
    dead = next(p for p in range(4_000_000, 4_100_000) if not os.path.exists(f"/proc/{p}"))
    stale, live = parent / f"agr-{dead}-1-k0", parent / f"agr-{os.getpid()}-999-k0"
    stale.mkdir()
    live.mkdir()
    try:
        assert cgroups.sweep_stale(sandbox.cgroups) >= 1
        assert not stale.exists() and live.exists()
    finally:
        for d in (stale, live):
            if d.exists():
                d.rmdir()


def _fake_proc(tmp_path: Path, mountinfo: str, cgroup: str) -> Path:
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "mountinfo").write_text(mountinfo)
    (proc / "cgroup").write_text(cgroup)
    return proc


def test_detect_reads_v1_and_v2_layouts(tmp_path):
    fs = tmp_path / "cg"
    (fs / "memory" / "grader").mkdir(parents=True)
    (fs / "unified" / "user.slice").mkdir(parents=True)
    (fs / "unified" / "user.slice" / "cgroup.controllers").write_text("cpu io\n")
    mountinfo = (
        f"30 25 0:26 / {fs}/memory rw,relatime shared:9 - cgroup cgroup rw,memory\n"
        f"31 25 0:27 / {fs}/unified rw,relatime shared:10 - cgroup2 cgroup2 rw\n"
    )
    proc = _fake_proc(tmp_path, mountinfo, "4:memory:/grader\n0::/user.slice\n")
    got = detect(root=fs, proc=proc)
    # a plain folder is not cgroupfs: the child group lacks the limit file, and that is what is said
    assert got.memory is None and "memory.limit_in_bytes" in got.why["memory"]
    assert (
        got.pids is None
        and got.why["pids"]
        == f"cgroup v2: the pids controller is not available in {fs}/unified/user.slice (not delegated)"
    )
    assert not [p for p in (fs / "memory" / "grader").iterdir()]  # the probe group was removed


def test_detect_without_any_cgroup_mount(tmp_path):
    got = detect(proc=_fake_proc(tmp_path, "22 1 0:5 / /proc rw - proc proc rw\n", ""))
    assert got.memory is None and got.pids is None and "no cgroup file system is mounted" in got.why["memory"]


def test_detect_on_this_machine_matches_the_sandbox(sandbox):
    got = detect()
    assert (got.memory is None) == (sandbox.cgroups.memory is None)
    assert (got.pids is None) == (sandbox.cgroups.pids is None)
    assert cgroups.sweep_stale(got) >= 0
