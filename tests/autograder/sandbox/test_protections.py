"""Attacks on the student sandbox, each with its exact outcome asserted.

The protections report (protections.py): what is in force on this machine, what is missing and why.

Each test starts a small sandboxed Python (the view, identity and limits a kernel gets, through
`Sandbox.wrap`) that tries one attack and prints what happened as JSON. Limits are scaled down (MiB,
not GiB) so each attack takes seconds. Skips are per mechanism and say why (no bubblewrap, not root,
no cgroup); on such a machine the protections report must say the same (test_protections.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

import pytest
from sandbox_helpers import REPO

from autograder.sandbox import workcopy
from autograder.sandbox.cgroups import CgroupSupport
from autograder.sandbox.launch import Sandbox
from autograder.sandbox.protections import as_json, summary_lines


def test_protections_report_on_this_machine(sandbox):
    report = {p.key: p for p in sandbox.protections()}
    assert list(report) == [
        "allow_list_view",
        "dedicated_uid",
        "network_off",
        "private_tmp",
        "memory_cgroup",
        "process_limit",
        "disk_quota",
        "cpu_time",
        "no_new_namespaces",
        "syscall_filter",
    ]
    assert report["allow_list_view"].available and report["network_off"].available
    assert report["no_new_namespaces"].available == (os.uname().machine in ("x86_64", "aarch64"))
    from autograder.sandbox.seccomp import kernel_filter

    bpf, why = kernel_filter()
    assert report["syscall_filter"].available == (not why)
    if why:  # said loudly, with the way to get it
        assert "apt-get install libseccomp2" in report["syscall_filter"].detail, report["syscall_filter"].detail
    else:
        assert "Docker's default profile" in report["syscall_filter"].detail and len(bpf) % 8 == 0
    assert report["memory_cgroup"].available == bool(sandbox.cgroups.memory)
    assert report["disk_quota"].available == sandbox.quota
    rows = as_json(sandbox.protections())
    assert rows[0] == {
        "key": "allow_list_view",
        "title": report["allow_list_view"].title,
        "available": True,
        "detail": report["allow_list_view"].detail,
    }
    assert json.loads(json.dumps(rows)) == rows


def test_protections_report_names_what_is_missing(tmp_path):
    """Without bubblewrap, cgroups or root, the report says so, and why (what make grade prints)."""
    sb = Sandbox(
        isolate=False,
        cgroups=CgroupSupport(
            why={
                "memory": "cgroup v2: the memory controller is not available in /sys/fs/cgroup/x (not delegated)",
                "pids": "no cgroup hierarchy offers the pids controller",
            }
        ),
    )
    sb.why = {
        "allow_list_view": "bubblewrap (bwrap) is not installed",
        "disk_quota": "the grader is not root",
        "memory_cgroup": sb.cgroups.why["memory"],
        "pids_cgroup": sb.cgroups.why["pids"],
    }
    report = {p.key: p for p in sb.protections()}
    assert [k for k, p in report.items() if p.available] == ["cpu_time"]
    assert report["allow_list_view"].detail.startswith("bubblewrap (bwrap) is not installed")
    assert "not delegated" in report["memory_cgroup"].detail and "RLIMIT_DATA" in report["memory_cgroup"].detail
    assert "no process limit" in report["process_limit"].detail
    assert "RLIMIT_FSIZE" in report["disk_quota"].detail
    lines = summary_lines(sb.protections())
    assert lines[0].startswith("protections: 1 of 10 in force; MISSING: allow-list view of the file system")
    assert len(lines) == 10
    assert report["syscall_filter"].detail.startswith("no sandbox, so no seccomp filter")


NON_ROOT_GRADER = """
import json, subprocess, sys
sys.path.insert(0, {repo!r})
from pathlib import Path
from autograder.sandbox.launch import Sandbox
sb = Sandbox(python=sys.executable).setup({base!r})
w = Path({base!r}) / "w"
sb.prepare_workdir(w)
code = "import json, os; print(json.dumps([os.getuid(), os.path.exists('/etc/shadow'), os.path.exists({repo!r})]))"
launch = sb.wrap(w, [sys.executable, "-c", code], label="k")
out = subprocess.run(launch.argv, pass_fds=launch.pass_fds, env=sb.env(w, w / "observe"), capture_output=True,
                     text=True)
print(json.dumps({{"available": {{p.key: p.available for p in sb.protections()}}, "inside": json.loads(out.stdout),
                  "details": {{p.key: p.detail for p in sb.protections()}}}}))
"""


def test_a_grader_that_is_not_root_still_isolates_and_says_what_is_missing():
    """The fallback: no dedicated uid, cgroups or quota without root; the view still works (user namespace)."""
    system_python = Path("/usr/bin/python3")
    if os.geteuid() != 0 or not system_python.exists():
        pytest.skip("needs root (to become another user) and a system Python (stdlib only is enough)")
    as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    if subprocess.run(as_nobody + ["test", "-r", str(REPO / "autograder" / "sandbox" / "launch.py")]).returncode != 0:
        pytest.skip("the repository is not readable by another user here")
    base = Path(tempfile.mkdtemp(prefix="agr-nonroot-"))  # not under pytest's 0700 folder
    try:
        os.chown(base, 65534, 65534)
        proc = subprocess.run(
            as_nobody + [str(system_python), "-c", NON_ROOT_GRADER.format(repo=str(REPO), base=str(base))],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=base,
        )
    finally:
        assert workcopy.remove_tree(base)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout.splitlines()[-1])
    assert res["available"] == {
        "allow_list_view": True,
        "dedicated_uid": False,
        "network_off": True,
        "private_tmp": True,
        "memory_cgroup": False,
        "process_limit": False,
        "disk_quota": False,
        "cpu_time": True,
        "no_new_namespaces": True,
        "syscall_filter": True,
    }, res["details"]
    assert res["inside"] == [1000, False, False]  # uid 1000 in its namespace; no shadow, no repository
    assert "the grader is not root" in res["details"]["dedicated_uid"]
    assert "the grader is not root" in res["details"]["disk_quota"]
    assert "Permission denied" in res["details"]["memory_cgroup"] and "RLIMIT_DATA" in res["details"]["memory_cgroup"]
