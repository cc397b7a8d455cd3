"""Attack fixtures of the zygote (autograder/run/zygote.py): a kernel forked in a worker's slot is as
isolated as a launched one, leaves nothing to the slot's next kernel, cannot reach the zygote, and a
kernel that stops or kills its zygote costs the next kernel nothing (it starts the plain way, and a
fresh zygote serves the kernels after it)."""

from __future__ import annotations

import errno
import json
import os
import signal
import sys
import textwrap
from pathlib import Path

import pytest
from sandbox_helpers import FLOOD, REPO, MiB, need

from autograder.run import zygote as zygote_module
from autograder.run.kernel import Kernel
from autograder.run.worker import Worker, WorkerConfig
from autograder.run.zygote import Zygote, ZygoteError
from autograder.sandbox.build import KERNEL_PACKAGES
from autograder.sandbox.launch import Sandbox


@pytest.fixture(scope="module")
def shown(tmp_path_factory) -> Path:
    """A read-only folder of the view below /tmp where the machine's temporary folder is there (as the
    grader's XLA cache is in `make bench-grade`): bubblewrap makes its mount point inside the slot's /tmp."""
    folder = tmp_path_factory.mktemp("shown")
    (folder / "entry").write_text("compiled program")
    folder.chmod(0o755)
    return folder


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory, shown) -> Sandbox:
    sb = Sandbox(
        python=sys.executable,
        exposed=[sys.prefix, sys.base_prefix, *(str(REPO / name) for name in KERNEL_PACKAGES), str(shown)],
        memory_bytes=512 * MiB,
        disk_bytes=16 * MiB,
        tmp_bytes=16 * MiB,
        shm_bytes=16 * MiB,
        max_files=2000,
        tmp_files=2000,
        shm_files=2000,
        cpu_seconds=120,
    ).setup(tmp_path_factory.mktemp("zygote-base"))
    if sb.fork_why():
        pytest.skip(f"no zygote on this machine: {sb.fork_why()}")
    need(sb, "dedicated", "memory", "pids", "quota")
    return sb


@pytest.fixture
def zygote(sandbox, tmp_path):
    z = Zygote(sandbox, tmp_path / "z0", tmp_path).start()
    yield z
    z.close()
    assert not (tmp_path / "z0").exists(), "the slot (and its mounts) outlived the zygote"


def run_json(kernel: Kernel, code: str) -> dict:
    """Run `code` in the kernel; it prints one JSON line last, which is returned."""
    run = kernel.execute(textwrap.dedent(code), timeout=60)
    assert run.status == "ok", (run.ename, run.evalue)
    text = "".join(o.get("text", "") for o in run.outputs if o.get("name") == "stdout")
    return json.loads(text.strip().splitlines()[-1])


def forked(z: Zygote, sandbox: Sandbox, tmp_path: Path, label: str = "k0") -> Kernel:
    z.reset(None)
    kernel = Kernel(z.workdir, sandbox, label=label, log_dir=tmp_path, zygote=z).start()
    kernel.wait_ready()
    return kernel


def test_a_forked_kernel_runs_in_its_own_cgroup_as_the_dedicated_user(zygote, sandbox, tmp_path):
    kernel = forked(zygote, sandbox, tmp_path)
    try:
        seen = run_json(
            kernel,
            """
            import json, os, namedaxes
            namedaxes.setup_devices(8)
            import jax
            total = int(jax.jit(lambda x: x.sum())(jax.numpy.ones(4)))
            print(json.dumps({"uid": os.getuid(), "cwd": os.getcwd(), "home": os.environ["HOME"],
                              "devices": len(jax.devices()), "sum": total}))
            """,
        )
        assert kernel.proc.pid in kernel.cgroup.pids()
        assert zygote.host_pid not in kernel.cgroup.pids()  # moved in for the fork only
    finally:
        kernel.kill()
    assert seen == {
        "uid": sandbox.uid,
        "cwd": str(zygote.workdir.resolve()),
        "home": str(zygote.workdir),
        "devices": 8,
        "sum": 4,
    }
    assert kernel.proc.returncode == -9  # the zygote reported its end


LISTING = """
import json, os, socket, subprocess, sys
def listing(folder):
    out = []
    for root, dirs, files in os.walk(folder):
        out += [os.path.relpath(os.path.join(root, n), folder) for n in dirs + files]
        # not into a mount of the view (the working copy is listed apart; the Python environment, when the
        # checkout lies below /tmp, is read-only and has thousands of files): what a kernel leaves is elsewhere
        dirs[:] = [d for d in dirs if not os.path.ismount(os.path.join(root, d))]
    return sorted(out)
"""

LEAVE = (
    LISTING
    + """
before = {"tmp": listing("/tmp"), "shm": listing("/dev/shm")}
for folder in ("/tmp", "/dev/shm", os.getcwd(), os.path.expanduser("~/.ipython")):
    with open(os.path.join(folder, "left-behind"), "w") as fh:
        fh.write("for the next student")
os.makedirs("/tmp/locked/inner")
open("/tmp/locked/inner/f", "w").close()
os.chmod("/tmp/locked/inner", 0)
os.chmod("/tmp/locked", 0)
os.symlink("/etc/passwd", "/tmp/link")
daemon = subprocess.Popen(
    [sys.executable, "-c", "import socket, time; s = socket.socket(socket.AF_UNIX); s.bind(bytes([0]) + b'agr-leak');"
     " s.listen(); time.sleep(600)"],
    start_new_session=True)
print(json.dumps({"daemon": daemon.pid, "before": before}))
"""
)

LOOK = (
    LISTING
    + """
try:
    os.kill(DAEMON, 0)
    daemon = "alive"
except ProcessLookupError:
    daemon = "gone"
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(bytes([0]) + b"agr-leak")
    leak = "connected"
except OSError as err:
    leak = type(err).__name__
print(json.dumps({"tmp": listing("/tmp"), "shm": listing("/dev/shm"), "work": listing(os.getcwd()),
                  "daemon": daemon, "abstract_socket": leak, "shown": open(SHOWN).read()}))
"""
)


def test_nothing_a_kernel_leaves_reaches_the_next_kernel_of_its_slot(zygote, sandbox, tmp_path, shown):
    """Files in /tmp, /dev/shm and the working copy (locked folders, links), a daemon in its own session
    and the abstract socket it holds: the next kernel of the slot meets none of them."""
    first = forked(zygote, sandbox, tmp_path, "k0")
    try:
        left = run_json(first, LEAVE)
    finally:
        first.kill()
    daemon, before = left["daemon"], left["before"]
    second = forked(zygote, sandbox, tmp_path, "k1")
    try:
        seen = run_json(second, LOOK.replace("DAEMON", str(daemon)).replace("SHOWN", repr(str(shown / "entry"))))
    finally:
        second.kill()
    # the view as the first kernel found it: only the folders bubblewrap made for its mount points (the
    # working copy, the Python environment when they lie below /tmp), which stay mounted and visible
    assert {"tmp": seen["tmp"], "shm": seen["shm"]} == before
    work = zygote.workdir.resolve()
    if work.parts[1] == "tmp":
        assert str(work.relative_to("/tmp")) in before["tmp"]
    assert [p for p in seen["work"] if p.endswith("left-behind")] == []  # its own start-up files only
    assert "observe" in seen["work"]  # the grader made the working copy again
    assert seen["shown"] == "compiled program"  # the view's mounts below /tmp survive the emptying
    assert seen["daemon"] == "gone"
    assert seen["abstract_socket"] == "ConnectionRefusedError"
    assert Path("/etc/passwd").exists()  # the planted link was removed, not followed


def test_the_zygote_is_out_of_its_kernels_reach(zygote, sandbox, tmp_path):
    """The kernel's parent is the zygote: its memory, descriptors and environment are closed to the kernel."""
    kernel = forked(zygote, sandbox, tmp_path)
    try:
        seen = run_json(
            kernel,
            """
            import json, os
            parent, out = os.getppid(), {}
            for what in ("mem", "environ", "fd", "maps"):
                path = f"/proc/{parent}/{what}"
                try:
                    os.listdir(path) if what == "fd" else open(path, "rb").read(1)
                    out[what] = "read"
                except OSError as err:
                    out[what] = type(err).__name__
            print(json.dumps(out))
            """,
        )
    finally:
        kernel.kill()
    assert seen == {
        "mem": "PermissionError",
        "environ": "PermissionError",
        "fd": "PermissionError",
        "maps": "PermissionError",
    }


@pytest.mark.parametrize("signal_name", ["SIGKILL", "SIGSTOP"])
def test_a_kernel_that_kills_or_stops_its_zygote_costs_the_next_kernel_nothing(sandbox, tmp_path, signal_name):
    cfg = WorkerConfig({}, sandbox, 30.0, tmp_path / "work", tmp_path, False, None, zygote=True)
    (tmp_path / "work").mkdir()
    worker = Worker(0, cfg)
    try:
        worker.kernels.prestart()
        assert worker.kernels.zygote is not None
        spoilt = worker.kernels.zygote
        first = worker.kernels.take_kernel()
        assert first.zygote is spoilt
        first.wait_ready()
        first.execute(f"import os, signal; os.kill(os.getppid(), signal.{signal_name})", timeout=20)
        first.kill()
        worker.kernels.release(first.workdir)
        second = worker.kernels.take_kernel()  # that slot is closed: a plain kernel, a fresh zygote for what follows
        try:
            assert second.zygote is None and worker.kernels.zygote is not spoilt and not spoilt.alive()
            second.wait_ready()
            assert run_json(second, "import json; print(json.dumps({'answer': 6 * 7}))") == {"answer": 42}
        finally:
            second.kill()
            worker.kernels.release(second.workdir)
        third = worker.kernels.take_kernel()
        try:
            assert third.zygote is worker.kernels.zygote is not None
            third.wait_ready()
            assert run_json(third, "import json; print(json.dumps({'answer': 6 * 7}))") == {"answer": 42}
        finally:
            third.kill()
            worker.kernels.release(third.workdir)
    finally:
        worker.kernels.close()
    assert not (tmp_path / "work" / "z0").exists()


def test_a_fork_request_to_a_dead_zygote_is_an_error_not_a_hang(zygote, sandbox, tmp_path):
    os.kill(zygote.host_pid, signal.SIGKILL)
    zygote.proc.wait(timeout=10)
    with pytest.raises(ZygoteError):
        Kernel(zygote.workdir, sandbox, label="k0", log_dir=tmp_path, zygote=zygote).start()


def test_a_zygote_whose_imports_start_a_jax_backend_refuses_to_fork(sandbox, tmp_path, monkeypatch):
    """A backend's threads do not survive a fork, and the notebook's set-up cell must choose the device count.
    No module of the course starts one when imported (each notebook's set-up cell does), so the zygote's own
    code is made to start one before it reports: what an import that did would leave."""
    monkeypatch.setattr(zygote_module, "_CODE", zygote_module._CODE + "\nimport jax\njax.devices()\n")
    zygote = Zygote(sandbox, tmp_path / "z0", tmp_path, modules=("jax",))
    try:
        with pytest.raises(ZygoteError, match="started a JAX backend"):
            zygote.start()
    finally:
        zygote.close()  # had it started after all, its slot would stay mounted
    assert not (tmp_path / "z0").exists()


def test_a_slot_whose_zygote_died_keeps_nothing_for_the_next_zygote(sandbox, tmp_path):
    """A zygote killed without its clean-up leaves its slot mounted: the next zygote on that slot empties it
    before it starts, so a folder a kernel made in /tmp is neither kept as part of the view nor seen."""
    first = Zygote(sandbox, tmp_path / "z0", tmp_path).start()
    second = None
    try:
        kernel = forked(first, sandbox, tmp_path)
        try:
            run_json(kernel, "import json, os; os.makedirs('/tmp/planted/inner'); print(json.dumps({}))")
        finally:
            kernel.kill()
        os.killpg(first.proc.pid, signal.SIGKILL)
        first.proc.wait(timeout=10)
        second = Zygote(sandbox, tmp_path / "z0", tmp_path).start()
        assert not [p for p in second._made[0] if p.startswith("planted")]
        kernel = forked(second, sandbox, tmp_path, "k1")
        try:
            seen = run_json(kernel, "import json, os; print(json.dumps({'planted': os.path.exists('/tmp/planted')}))")
        finally:
            kernel.kill()
        assert seen == {"planted": False}
    finally:
        if second is not None:
            second.close()
        first.close()


# A default ACL `u::r-x` on the working copy's root (every folder made there afterwards, the grader's
# `observe/` and `.ipython` too, would be read-only for the kernel), a `user.*` note for the next kernel,
# the root's mode and times: set through the system calls themselves (ctypes), since the allow-list
# refuses the calls Python's os.setxattr makes, and tried on every inode the kernel may change.
MARK_ROOT = """
import ctypes, errno, json, os, struct
libc = ctypes.CDLL(None, use_errno=True)
def acl(*entries):  # the kernel's xattr form of a POSIX ACL: version 2, then (tag, perm, id) entries
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", t, p, 0xFFFFFFFF) for t, p in entries)
READ_ONLY = acl((0x01, 5), (0x04, 0), (0x20, 0))  # USER_OBJ r-x, GROUP_OBJ ---, OTHER ---
def setx(path, name, value):
    ctypes.set_errno(0)
    r = libc.setxattr(path.encode(), name.encode(), value, ctypes.c_size_t(len(value)), 0)
    return "ok" if r == 0 else errno.errorcode[ctypes.get_errno()]
root = os.getcwd()
out = {}
for where in (root, "/tmp", "/dev/shm"):
    out[where] = {"acl": setx(where, "system.posix_acl_default", READ_ONLY),
                  "note": setx(where, "user.note", b"for the next student")}
os.chmod(root, 0o500)
os.utime(root, (86400, 86400))
print(json.dumps(out))
"""

LOOK_ROOT = """
import json, os, stat
root = os.getcwd()
made = os.path.join(root, "observe", "made-by-me")
os.mkdir(made)
open(os.path.join(made, "file"), "w").write("written")
out = {}
for where in (root, "/tmp", "/dev/shm"):
    st = os.stat(where)
    out[where] = {"mode": oct(stat.S_IMODE(st.st_mode)), "uid": st.st_uid, "xattrs": sorted(os.listxattr(where)),
                  "mtime_is_old": st.st_mtime < 10 * 86400}
print(json.dumps(out))
"""


def test_a_kernel_that_marks_its_slots_roots_leaves_the_next_kernel_a_fresh_slot(zygote, sandbox, tmp_path):
    """Issue 33: a default ACL and a `user.*` attribute on the working copy's root are refused
    (EOPNOTSUPP, as a file system without them answers); the root's mode and times, which the kernel may
    set, are a fresh mount's again for the next kernel, which can write where the grader made folders."""
    first = forked(zygote, sandbox, tmp_path, "k0")
    try:
        marked = run_json(first, MARK_ROOT)
    finally:
        first.kill()
    work = str(zygote.workdir.resolve())
    unsupported = errno.errorcode[errno.EOPNOTSUPP]  # (ENOTSUP: the same number on Linux)
    # the working copy's root is the kernel's own; /tmp and /dev/shm are root's, sticky
    refused = {"acl": unsupported, "note": unsupported}
    assert marked == {work: refused, "/tmp": refused, "/dev/shm": refused}
    second = forked(zygote, sandbox, tmp_path, "k1")
    try:
        seen = run_json(second, LOOK_ROOT)
    finally:
        second.kill()
    fresh = {"xattrs": [], "mtime_is_old": False}
    assert seen == {
        work: {"mode": "0o700", "uid": sandbox.uid, **fresh},
        "/tmp": {"mode": "0o1777", "uid": 0, **fresh},
        "/dev/shm": {"mode": "0o1777", "uid": 0, **fresh},
    }


def test_an_acl_or_attribute_set_past_the_filter_is_undone_before_the_next_kernel(zygote, sandbox, tmp_path):
    """The second wall: had a kernel set them (here the grader does, as root, on the root's behalf), the
    slot's reset removes the default ACL and the `user.*` note and restores mode 0700, so the next
    kernel's own folders are writable and its cells run as in a fresh slot."""
    first = forked(zygote, sandbox, tmp_path, "k0")
    first.kill()
    root = zygote.workdir
    acl = bytes.fromhex("02000000") + b"".join(
        t.to_bytes(2, "little") + p.to_bytes(2, "little") + b"\xff\xff\xff\xff"
        for t, p in ((0x01, 5), (0x04, 0), (0x20, 0))
    )
    os.setxattr(root, "system.posix_acl_default", acl)
    os.setxattr(root, "user.note", b"for the next student")
    os.chmod(root, 0o500)
    second = forked(zygote, sandbox, tmp_path, "k1")
    try:
        seen = run_json(second, LOOK_ROOT)
    finally:
        second.kill()
    work = str(root.resolve())
    assert seen[work] == {"mode": "0o700", "uid": sandbox.uid, "xattrs": [], "mtime_is_old": False}
    assert os.listxattr(root) == []


def test_an_inode_flood_stops_at_each_mounts_cap_and_the_next_kernel_starts_clean(zygote, sandbox, tmp_path):
    """Issue 33: millions of empty files are not possible: each writable mount of the slot has an inode
    cap (ENOSPC past it), so emptying the slot unlinks a bounded number of files; the next kernel finds
    none of them."""
    first = forked(zygote, sandbox, tmp_path, "k0")
    try:
        made = run_json(first, FLOOD + "import json\nprint(json.dumps(flood(['/tmp/f', '/dev/shm/f', 'f'])))")
    finally:
        first.kill()
    caps = (sandbox.tmp_files, sandbox.shm_files, sandbox.max_files)
    for (count, stopped), cap in zip(made, caps, strict=True):
        assert stopped == "ENOSPC" and 0 < count < cap, (made, caps)
    second = forked(zygote, sandbox, tmp_path, "k1")
    try:
        seen = run_json(
            second,
            "import json, os; print(json.dumps([os.path.exists(p + '/f') for p in ('/tmp', '/dev/shm', os.getcwd())]))",
        )
    finally:
        second.kill()
    assert seen == [False, False, False]
