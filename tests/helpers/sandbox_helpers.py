"""Helpers of the sandbox's attack tests (tests/autograder/sandbox/): run a small sandboxed Python, read
the JSON line it prints, skip a test where a mechanism is missing (and say which)."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest

from autograder.sandbox.launch import Sandbox

REPO = Path(__file__).resolve().parents[2]
MiB = 2**20


def need(sb: Sandbox, *what: str) -> None:
    reasons = {
        "dedicated": (sb.dedicated, "kernels cannot run as a dedicated uid here: " + sb.why.get("dedicated_uid", "")),
        "memory": (sb.cgroups and sb.cgroups.memory, "no memory cgroup: " + sb.why.get("memory_cgroup", "")),
        "pids": (sb.cgroups and sb.cgroups.pids, "no pids cgroup: " + sb.why.get("pids_cgroup", "")),
        "quota": (sb.quota, "no quota working copies: " + sb.why.get("disk_quota", "")),
    }
    for w in what:
        ok, why = reasons[w]
        if not ok:
            pytest.skip(why)


def workdir(tmp_path: Path, sb: Sandbox, name: str = "w") -> Path:
    w = tmp_path / name
    sb.prepare_workdir(w)
    return w


def start(sb: Sandbox, work: Path, code: str, label: str = "t"):
    """Start `code` in the sandbox (in its own cgroup); returns (Popen, Launch)."""
    return popen(sb, work, sb.wrap(work, [sb.python, "-c", textwrap.dedent(code)], label=label))


def popen(sb: Sandbox, work: Path, launch):
    """Start a ready `launch` of the sandbox as a kernel is started (its fds closed here); returns (Popen, Launch)."""
    try:
        proc = subprocess.Popen(
            launch.argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            pass_fds=launch.pass_fds,
            env=sb.env(work, work / "observe"),
            start_new_session=True,
            preexec_fn=sb.preexec(),
        )
    finally:
        launch.close_fds()
    return proc, launch


def finish(proc, launch, timeout: float = 60):
    """(exit code, last stdout line as JSON or None, verdict) after the command ended; cgroup removed."""
    out, err = proc.communicate(timeout=timeout)
    verdict = None
    if launch.cgroup is not None:
        assert launch.cgroup.remove(), "the kernel's cgroup was left behind"
        verdict = launch.cgroup.post_mortem()
    lines = out.decode().strip().splitlines()
    try:
        result = json.loads(lines[-1]) if lines else None
    except ValueError:
        result = None
    return proc.returncode, result, verdict, err.decode()


def run(sb: Sandbox, work: Path, code: str, timeout: float = 60):
    return finish(*start(sb, work, code), timeout=timeout)


def fill_code(path: str) -> str:
    """Kernel code: write `path` MiB by MiB (at most 64); print [errno name or "no limit", MiB written]."""
    return f"""
        import errno, json
        n = 0
        try:
            with open({path!r}, "wb") as f:
                for _ in range(64):
                    f.write(b"x" * 2**20); f.flush(); n += 1
            r = "no limit"
        except OSError as e:
            r = errno.errorcode[e.errno]
        print(json.dumps([r, n]))
        """


# Student code (issue 33's inode flood): `flood(folders)` fills each folder (made if missing) with empty
# files until the file system refuses one, and returns [files made, the refusal's errno name] for each.
FLOOD = """
import errno, os
def flood(folders, limit=5_000_000):
    made = []
    for folder in folders:
        os.makedirs(folder, exist_ok=True)
        n, why = 0, ""
        try:
            while n < limit:
                os.close(os.open(f"{folder}/{n}", os.O_CREAT | os.O_WRONLY, 0o600))
                n += 1
        except OSError as err:
            why = errno.errorcode[err.errno]
        made.append([n, why])
    return made
"""

SHM_FILE = """
    with open("/dev/shm/big", "wb") as f:
        for _ in range(1024):
            f.write(b"x" * 2**20)
    print('"survived"')
    """


FORK_BOMB = """
    import errno, json, os, time
    n, why = 0, "none"
    kids = []
    for _ in range(2000):
        try:
            pid = os.fork()
        except OSError as e:
            why = errno.errorcode[e.errno]
            break
        if pid == 0:
            time.sleep(30)
            os._exit(0)
        kids.append(pid); n += 1
    for k in kids:
        os.kill(k, 9)
    print(json.dumps([why, n]))
    """
