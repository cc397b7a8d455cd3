"""Attack fixtures of the zygote (autograder/run/zygote.py): a kernel forked in a worker's slot is as
isolated as a launched one, leaves nothing to the slot's next kernel, cannot reach the zygote, and a
kernel that stops or kills its zygote costs the next kernel nothing (it starts the plain way, and a
fresh zygote serves the kernels after it)."""

from __future__ import annotations

import json
import os
import signal
import sys
import textwrap
from pathlib import Path

import pytest
from sandbox_helpers import REPO, MiB, need

from autograder.run.kernel import Kernel
from autograder.run.worker import Config, Worker
from autograder.run.zygote import Zygote, ZygoteError
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
        exposed=[sys.prefix, sys.base_prefix, str(REPO / "namedaxes"), str(shown)],
        memory_bytes=512 * MiB,
        disk_bytes=16 * MiB,
        tmp_bytes=16 * MiB,
        shm_bytes=16 * MiB,
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
    cfg = Config({}, sandbox, 30.0, tmp_path / "work", tmp_path, False, None, zygote=True)
    (tmp_path / "work").mkdir()
    worker = Worker(0, cfg)
    try:
        worker.prestart()
        assert worker.zygote is not None
        spoilt = worker.zygote
        first = worker.take_kernel()
        assert first.zygote is spoilt
        first.wait_ready()
        first.execute(f"import os, signal; os.kill(os.getppid(), signal.{signal_name})", timeout=20)
        first.kill()
        worker.release(first.workdir)
        second = worker.take_kernel()  # that slot is closed: a plain kernel, and a fresh zygote for what follows
        try:
            assert second.zygote is None and worker.zygote is not spoilt and not spoilt.alive()
            second.wait_ready()
            assert run_json(second, "import json; print(json.dumps({'answer': 6 * 7}))") == {"answer": 42}
        finally:
            second.kill()
            worker.release(second.workdir)
        third = worker.take_kernel()
        try:
            assert third.zygote is worker.zygote is not None
            third.wait_ready()
            assert run_json(third, "import json; print(json.dumps({'answer': 6 * 7}))") == {"answer": 42}
        finally:
            third.kill()
            worker.release(third.workdir)
    finally:
        worker.close()
    assert not (tmp_path / "work" / "z0").exists()


def test_a_fork_request_to_a_dead_zygote_is_an_error_not_a_hang(zygote, sandbox, tmp_path):
    os.kill(zygote.host_pid, signal.SIGKILL)
    zygote.proc.wait(timeout=10)
    with pytest.raises(ZygoteError):
        Kernel(zygote.workdir, sandbox, label="k0", log_dir=tmp_path, zygote=zygote).start()


def test_a_zygote_whose_imports_start_a_jax_backend_refuses_to_fork(sandbox, tmp_path):
    """A backend's threads do not survive a fork, and the notebook's set-up cell must choose the device count."""
    with pytest.raises(ZygoteError, match="started a JAX backend"):
        Zygote(sandbox, tmp_path / "z0", tmp_path, modules=("jax", "namedaxes.exercises.collectives")).start()
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
