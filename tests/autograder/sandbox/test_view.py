"""Attacks on the student sandbox, each with its exact outcome asserted.

The allow-list view (view.py): what a kernel sees, where it may write, no network, the sizes of /tmp and
/dev/shm.

Each test starts a small sandboxed Python (the view, identity and limits a kernel gets, through
`Sandbox.wrap`) that tries one attack and prints what happened as JSON. Limits are scaled down (MiB,
not GiB) so each attack takes seconds. Skips are per mechanism and say why (no bubblewrap, not root,
no cgroup); on such a machine the protections report must say the same (test_protections.py).
"""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path

import pytest
from sandbox_helpers import REPO, fill_code, run

from autograder.sandbox.build import KERNEL_PACKAGES


def test_view_shows_only_the_allow_list(sandbox, copies):
    w = copies()
    code, res, _, err = run(
        sandbox,
        w,
        f"""
        import errno, json, os
        def attempt(path):
            try:
                open(path).read(1)
                return "read"
            except OSError as e:
                return errno.errorcode[e.errno]
        print(json.dumps({{
            "shadow": attempt("/etc/shadow"),
            "root_home": os.path.exists("/root/.bashrc") or os.path.exists("/root/.ssh"),
            "home": os.path.exists("/home"),
            "top": sorted(os.listdir("/")),
            "repo": sorted(os.listdir({str(REPO)!r})),
            "solutions": os.path.exists({str(REPO / "solutions")!r}),
            "etc": sorted(os.listdir("/etc")),
            "passwd": open("/etc/passwd").read(),
            "sys": sorted(os.listdir("/sys")),
            "procs": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
            "fds": sorted(int(f) for f in os.listdir("/proc/self/fd")),
            "host_tmp": sorted(os.listdir("/tmp")),
        }}))
        """,
    )
    assert code == 0, err
    assert res["shadow"] == "ENOENT"
    assert not res["root_home"] and not res["home"] and not res["solutions"]
    allowed_top = {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "proc", "dev", "tmp", "sys"}
    extra = set(res["top"]) - allowed_top
    # the remaining top-level names are only the first components of allow-listed paths
    firsts = {Path(p).parts[1] for p in (sys.prefix, sys.base_prefix, REPO, w)}
    assert extra <= firsts, extra
    # of the repository, only what is exposed (the venv if it lives there, the helper package)
    expected_repo = set(KERNEL_PACKAGES) | (
        {Path(sys.prefix).relative_to(REPO).parts[0]} if Path(sys.prefix).is_relative_to(REPO) else set()
    )
    assert set(res["repo"]) == expected_repo
    assert set(res["etc"]) <= {
        "passwd",
        "group",
        "hosts",
        "hostname",
        "nsswitch.conf",
        "ld.so.cache",
        "ld.so.conf",
        "ld.so.conf.d",
        "localtime",
        "fonts",
        "alternatives",
        "mime.types",
    }
    assert "shadow" not in res["etc"] and ":x:0:0:root" in res["passwd"]
    assert res["sys"] == ["devices"]
    assert len(res["procs"]) <= 3, res["procs"]  # its own pid namespace: bwrap's init and itself
    assert res["fds"] == [0, 1, 2, 3], res["fds"]  # 3: listdir's own; no descriptor of the host leaks
    # its /tmp is its own: only the folders leading to what is bound there (e.g. its working copy)
    bound = [w, *(REPO / name for name in KERNEL_PACKAGES), Path(sys.prefix), Path(sys.base_prefix)]
    assert set(res["host_tmp"]) == {p.relative_to("/tmp").parts[0] for p in bound if p.is_relative_to("/tmp")}


def test_another_working_copy_is_invisible(sandbox, copies):
    mine, theirs = copies("mine"), copies("theirs")
    (theirs / "answer.txt").write_text("classmate's work")
    code, res, _, err = run(
        sandbox,
        mine,
        f"""
        import json, os
        print(json.dumps({{"theirs": os.path.exists({str(theirs)!r}),
                           "siblings": sorted(os.listdir({str(mine.parent)!r}))}}))
        """,
    )
    assert code == 0, err
    assert res == {"theirs": False, "siblings": ["mine"]}


def test_writes_outside_the_working_copy_fail(sandbox, copies):
    w = copies()
    code, res, _, err = run(
        sandbox,
        w,
        f"""
        import errno, json, os
        def attempt(path):
            try:
                with open(path, "w") as f:
                    f.write("x")
                return "written"
            except OSError as e:
                return errno.errorcode[e.errno]
        print(json.dumps({{"usr": attempt("/usr/planted"), "venv": attempt({sys.prefix!r} + "/planted"),
                           "pkg": attempt({str(REPO / "namedaxes" / "planted.py")!r}),
                           "passwd": attempt("/etc/passwd"), "root": attempt("/planted"),
                           "tmp": attempt("/tmp/agr-private-tmp-probe"), "work": attempt("inside.txt")}}))
        """,
    )
    assert code == 0, err
    assert res["usr"] == res["venv"] == res["pkg"] == "EROFS"
    assert res["passwd"] in ("EROFS", "EACCES") and res["root"] in ("EACCES", "EROFS")
    assert res["tmp"] == "written" and res["work"] == "written"
    assert not Path("/tmp/agr-private-tmp-probe").exists()  # its /tmp is private
    assert not (REPO / "namedaxes" / "planted.py").exists()
    assert (w / "inside.txt").read_text() == "x"


def test_network_is_off(sandbox, copies):
    w = copies()
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abstract.bind(f"\0agr-test-{os.getpid()}")
    abstract.listen(1)
    try:
        code, res, _, err = run(
            sandbox,
            w,
            f"""
            import errno, json, socket
            def attempt(family, addr):
                s = socket.socket(family, socket.SOCK_STREAM)
                s.settimeout(5)
                try:
                    s.connect(addr)
                    return "connected"
                except OSError as e:
                    return errno.errorcode.get(e.errno, str(e))
            print(json.dumps({{"outside": attempt(socket.AF_INET, ("192.0.2.1", 80)),
                               "host_loopback": attempt(socket.AF_INET, ("127.0.0.1", {server.getsockname()[1]})),
                               "host_abstract": attempt(socket.AF_UNIX, "\\0agr-test-{os.getpid()}")}}))
            """,
        )
    finally:
        server.close()
        abstract.close()
    assert code == 0, err
    assert res == {"outside": "ENETUNREACH", "host_loopback": "ECONNREFUSED", "host_abstract": "ECONNREFUSED"}


@pytest.mark.parametrize("where", ["/tmp", "/dev/shm"])
def test_tmp_and_shm_are_size_limited(sandbox, copies, where):
    w = copies()
    code, res, verdict, err = run(sandbox, w, fill_code(f"{where}/fill"))
    assert code == 0, err
    assert res[0] == "ENOSPC" and 14 <= res[1] <= 16, res  # 16 MiB and not a byte more
    assert verdict is None


def test_a_graded_kernel_finds_no_reference_program(sandbox, copies):
    """Issue 58: every reference program's optimized HLO (with its `op_name`s: the solution's method) was in
    namedaxes/recorded/, which graded kernels read. The attacker searches every file it can read under the
    course packages bound into it (decompressing) and tries both places the records were and are: it finds
    none. Control: the measurements the notebooks read (namedaxes/recorded/compile-*.json) stay readable."""
    from reference_programs import SEARCH, marks

    w = copies()
    old, new = REPO / "namedaxes" / "recorded", REPO / "solutions" / "recorded"
    probe = f"""
        import json, os, subprocess, sys
        tried = {{p: os.path.exists(p) for p in ({str(old / "references-hlo-cpu.json.xz")!r},
                                                 {str(new / "references-hlo-cpu.json.xz")!r}, {str(new)!r})}}
        roots = {[str(REPO / name) for name in KERNEL_PACKAGES]!r}
        search = subprocess.run([sys.executable, "-c", {SEARCH!r}, {json.dumps(marks())!r}, *roots],
                                capture_output=True, text=True)
        control = open({str(old / "compile-v5e-2x4.json")!r}).read(20)
        print(json.dumps({{"tried": tried, "search": json.loads(search.stdout), "control": control}}))
    """
    code, res, _, err = run(sandbox, w, probe, timeout=120)
    assert code == 0, err
    assert res["tried"] == dict.fromkeys(res["tried"], False)
    assert res["search"]["found"] == [] and res["search"]["files"] > 50
    assert res["control"].startswith("{")
