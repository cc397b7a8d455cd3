"""Attacks on the student sandbox, each with its exact outcome asserted.

Who a kernel runs as (identity.py): a dedicated uid without privileges, host permissions, no user namespaces.

Each test starts a small sandboxed Python (the view, identity and limits a kernel gets, through
`Sandbox.wrap`) that tries one attack and prints what happened as JSON. Limits are scaled down (MiB,
not GiB) so each attack takes seconds. Skips are per mechanism and say why (no bubblewrap, not root,
no cgroup); on such a machine the protections report must say the same (test_protections.py).
"""

from __future__ import annotations

import dataclasses
import os

import pytest
from sandbox_helpers import need, run


def test_kernel_runs_as_the_dedicated_uid_without_privileges(sandbox, copies):
    need(sandbox, "dedicated")
    w = copies()
    code, res, _, err = run(
        sandbox,
        w,
        """
        import json, os
        status = dict(l.split(":\\t", 1) for l in open("/proc/self/status").read().splitlines() if ":\\t" in l)
        open("mine.txt", "w").write("x")
        print(json.dumps({"uid": os.getuid(), "euid": os.geteuid(), "gid": os.getgid(), "groups": os.getgroups(),
                          "caps": [status[k].strip() for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")],
                          "nnp": status["NoNewPrivs"].strip()}))
        """,
    )
    assert code == 0, err
    assert res["uid"] == res["euid"] == sandbox.uid and res["gid"] == sandbox.gid
    assert res["groups"] in ([], [sandbox.gid])
    assert res["caps"] == ["0000000000000000"] * 5 and res["nnp"] == "1"
    st = (w / "mine.txt").stat()
    assert (st.st_uid, st.st_gid) == (sandbox.uid, sandbox.gid)  # a real, different host uid
    top = w.stat()
    assert (top.st_uid, top.st_mode & 0o777) == (sandbox.uid, 0o700)  # the working copy is its own


def test_host_file_permissions_protect_too(sandbox, copies, tmp_path):
    """A root-only file bound into the view by mistake is still unreadable: the uid is not root's."""
    need(sandbox, "dedicated")
    secret_dir = tmp_path / "exposed-by-mistake"
    secret_dir.mkdir()
    (secret_dir / "key").write_text("secret")
    os.chmod(secret_dir / "key", 0o600)
    sb = dataclasses.replace(sandbox, exposed=sandbox.exposed + [str(secret_dir)])
    w = copies(sb=sb)
    code, res, _, err = run(
        sb,
        w,
        f"""
        import errno, json
        try:
            open({str(secret_dir / "key")!r}).read(); r = "read"
        except OSError as e:
            r = errno.errorcode[e.errno]
        print(json.dumps(r))
        """,
    )
    assert code == 0, err
    assert res == "EACCES"


def test_kernel_cannot_create_user_namespaces(sandbox, copies):
    """No way to more kernel attack surface: unshare(CLONE_NEWUSER) is refused; threads still work."""
    report = {p.key: p for p in sandbox.protections()}
    if not report["no_new_namespaces"].available:
        pytest.skip(report["no_new_namespaces"].detail)
    w = copies()
    code, res, _, err = run(
        sandbox,
        w,
        """
        import ctypes, errno, json, subprocess, threading
        libc = ctypes.CDLL(None, use_errno=True)
        r = libc.unshare(0x10000000)
        unshare = errno.errorcode.get(ctypes.get_errno()) if r != 0 else "created"
        seen = []
        t = threading.Thread(target=lambda: seen.append("thread")); t.start(); t.join()
        tool = subprocess.run(["unshare", "--user", "true"], capture_output=True).returncode
        print(json.dumps({"unshare": unshare, "thread": seen, "unshare_tool": tool}))
        """,
    )
    assert code == 0, err
    assert res == {"unshare": "EPERM", "thread": ["thread"], "unshare_tool": 1}
