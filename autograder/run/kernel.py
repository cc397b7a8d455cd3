"""One sandboxed IPython kernel, driven cell by cell over ZeroMQ IPC sockets.

The grader talks to the kernel itself (no nbclient): it needs to tell three
endings apart — a cell that finished, a cell that ran past its timeout and was
interrupted, and a kernel that died or cannot be interrupted (a loop inside
compiled XLA code) and had to be killed — and to cap what a kernel may send.
Nothing the kernel sends decides a score.

Threat model for the grader's side of the sockets: the kernel may send a flood
of huge messages to exhaust the grader's memory. Every client socket is made
with `zmq.MAXMSGSIZE` (`MAX_MESSAGE_BYTES`) and a small receive high-water mark
(`RCV_HWM` messages), so libzmq refuses an oversized frame before Python ever
buffers it, and drops the connection that sent it (the sockets: kernel_sockets.py).
A socket monitor sees that disconnect; the cell then ends with status `oversized`
and the kernel is replaced (a dropped IOPub connection would not come back). A kernel that dies
drops its connections too: when its process ends within `DEATH_GRACE` of the
disconnect, the cell ends with status `died` instead. What is kept of a
cell's output is capped (`cell_outputs.py`: `MAX_OUTPUT_CHARS`, `MAX_OUTPUTS`), and the executor
passes a per-notebook cap on top (`max_chars`). Known gap: a multipart message
of many frames, each under the cap, is still assembled whole by libzmq.

Every kernel started or killed is announced to `on_kernel_start` /
`on_kernel_gone` (the worker forwards the pid to the main process, which kills
the kernels of a hung worker by process group).
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import time
from pathlib import Path
from queue import Empty

from jupyter_client.connect import write_connection_file

from ..limits import DEATH_GRACE, INTERRUPT_GRACE, KERNEL_LOG_TAIL_BYTES, MAX_OUTPUT_CHARS
from ..sandbox.launch import KERNEL_APP_ARGS, Sandbox
from .cell_outputs import CellOutputs, CellRun
from .kernel_sockets import KernelSockets

__all__ = ["Kernel", "KernelStartError", "kill_all"]

_LIVE: set = set()  # kernels of this process that may still run (for kill_all)
CPU_SECONDS = [0.0]  # CPU used by this process's killed kernels (their cgroups' cpu.stat), for timings


def kill_all() -> None:
    """Kill every kernel this process started and has not killed yet (on shutdown)."""
    for kernel in list(_LIVE):
        kernel.kill()


on_kernel_start = None  # callable(pid) or None: a kernel process was started
on_kernel_gone = None  # callable(pid) or None: it was killed and reaped
_PR_SET_PDEATHSIG = 1


def with_parent_death(preexec):
    """preexec_fn: the kernel gets SIGKILL if the worker that started it dies, then `preexec`."""
    libc = ctypes.CDLL(None, use_errno=True)

    def run():
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if preexec is not None:
            preexec()

    return run


def _write_connection_file(path: Path, ip: str) -> dict:
    """Write the connection file into the working copy, never through a link the student planted.

    (jupyter_client's writer unlinks and then opens the path, following a link
    created in between; here the file is created O_EXCL | O_NOFOLLOW relative
    to a descriptor of the working copy, itself opened O_NOFOLLOW.)"""
    import json
    import tempfile

    with tempfile.TemporaryDirectory(prefix="agr-conn-") as private:
        _, info = write_connection_file(os.path.join(private, "c.json"), transport="ipc", ip=ip)
    info = dict(info)
    data = json.dumps({k: (v.decode() if isinstance(v, bytes) else v) for k, v in info.items()}, indent=1)
    dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        try:
            os.unlink(path.name, dir_fd=dir_fd)
        except FileNotFoundError:
            pass
        fd = os.open(
            path.name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd
        )
        with os.fdopen(fd, "w") as fh:
            fh.write(data)
    finally:
        os.close(dir_fd)
    return info


def announce_start(pid: int) -> None:
    """Tell the worker's hook that a process of a kernel's (or a zygote's) sandbox started."""
    _announce(on_kernel_start, pid)


def announce_gone(pid: int) -> None:
    _announce(on_kernel_gone, pid)


def _announce(hook, pid: int) -> None:
    if hook is not None:
        try:
            hook(pid)
        except Exception:  # noqa: BLE001 - telling the main process is best effort
            pass


class KernelStartError(RuntimeError):
    """The kernel process did not come up (the message says why)."""


class Kernel:
    """A kernel process in its own working copy `workdir` (sandboxed by `sandbox`)."""

    def __init__(
        self,
        workdir: Path,
        sandbox: Sandbox,
        label: str = "k0",
        log_dir: Path | None = None,
        zygote=None,
    ):
        self.workdir = Path(workdir)
        self.sandbox = sandbox
        self.label = label
        self.log_path = Path(log_dir or self.workdir.parent) / f"{self.workdir.name}-{label}.log"
        self.proc: subprocess.Popen | None = None
        self.sockets: KernelSockets | None = None
        self.started_at = 0.0
        self._ready = False
        self.cgroup = None
        self.zygote = zygote  # a run.zygote.Zygote whose slot is `workdir`: the kernel is forked there

    @property
    def observe_dir(self) -> Path:
        return self.workdir / "observe"

    # ------------------------------------------------------------ life cycle
    def start(self) -> Kernel:
        """Start the kernel process: forked by `zygote` (its slot's working copy is `workdir`), or launched."""
        if self.zygote is None:
            # its own working copy (a quota mount owned by the kernel's user where possible), see sandbox/launch.py
            self.sandbox.prepare_workdir(self.workdir)
        conn = self.workdir / f"{self.label}.json"
        info = _write_connection_file(conn, ip=str(self.workdir / self.label))
        self.sandbox.hand_over(conn)  # the kernel's user may write it
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - the kernel's log, open while it lives; kill() closes it
        self.started_at = time.monotonic()
        _LIVE.add(self)
        try:
            if self.zygote is not None:
                self.cgroup = self.sandbox.new_cgroup(self.label)
                if self.cgroup is None:
                    raise KernelStartError("a forked kernel needs its own cgroup")
                self.proc = self.zygote.fork([*KERNEL_APP_ARGS, "-f", str(conn)], self._log, self.cgroup)
            else:
                self.proc = self._launch(conn)
        except BaseException:
            self.kill()
            raise
        _announce(on_kernel_start, self.proc.pid)
        self.sockets = KernelSockets(info)
        return self

    def _launch(self, conn: Path) -> subprocess.Popen:
        launch = self.sandbox.launch(self.workdir, conn, self.label)
        self.cgroup = launch.cgroup  # removed (and its verdict kept) by kill()
        env = self.sandbox.env(self.workdir, self.observe_dir)
        try:
            return subprocess.Popen(
                launch.argv,
                env=env,
                cwd=self.workdir,
                pass_fds=launch.pass_fds,
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=with_parent_death(self.sandbox.preexec()),
            )
        finally:
            launch.close_fds()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _exits_within(self, seconds: float) -> bool:
        """True if the kernel's process has ended or ends within `seconds` (it is reaped either way)."""
        if self.proc is None:
            return True
        try:
            self.proc.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            return False
        return True

    def log_tail(self, n: int = KERNEL_LOG_TAIL_BYTES) -> str:
        """The last `n` bytes of the kernel's log, one line (the kernel writes the log: it may be huge)."""
        try:
            if not self._log.closed:  # closed once the kernel is killed
                self._log.flush()
            with open(self.log_path, "rb") as fh:
                fh.seek(max(0, os.fstat(fh.fileno()).st_size - n))
                data = fh.read(n).decode(errors="replace")
        except OSError:
            return ""
        return " ".join(data.split())

    def wait_ready(self, timeout: float = 60.0) -> float:
        """Block until the kernel answers; returns the seconds since start."""
        if self._ready:
            return 0.0
        assert self.sockets is not None
        deadline = time.monotonic() + timeout
        while not self.sockets.answered():
            if not self.alive():
                raise KernelStartError(
                    f"the kernel exited while starting (exit code {self.proc.returncode}): {self.log_tail()}"
                )
            if time.monotonic() > deadline:
                raise KernelStartError(f"the kernel did not answer within {timeout:.0f} s: {self.log_tail()}")
        self.sockets.flush_iopub()  # start-up chatter
        self._ready = True
        return time.monotonic() - self.started_at

    def interrupt(self) -> None:
        if self.sockets is not None:
            self.sockets.interrupt()
        if not self.sandbox.isolate and self.alive():
            try:
                os.killpg(self.proc.pid, signal.SIGINT)
            except OSError:
                pass

    def kill(self) -> None:
        """Kill the kernel at once (and, in the sandbox, everything it started)."""
        _LIVE.discard(self)
        if self.cgroup is not None and not self.cgroup.removed:
            try:
                CPU_SECONDS[0] += self.cgroup.cpu_seconds()  # before its processes are gone
            except Exception:  # noqa: BLE001 - timings only
                pass
        if self.sockets is not None:
            self.sockets.close()
            self.sockets = None
        if self.proc is not None:
            if self.proc.poll() is None:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except OSError:
                    self.proc.kill()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            else:
                _announce(on_kernel_gone, self.proc.pid)
        if self.cgroup is not None:  # kills any straggler, keeps the verdict
            self.cgroup.remove()
        try:
            self._log.close()
        except Exception:  # noqa: BLE001
            pass

    def post_mortem(self):
        """The limit this kernel ran into (a cgroups.LimitHit: memory, processes, disk), or None."""
        hit = self.cgroup.post_mortem() if self.cgroup is not None else None
        return hit or self.sandbox.disk_full(self.workdir)

    # ------------------------------------------------------------ running code
    def execute(
        self,
        code: str,
        timeout: float,
        store_history: bool = True,
        max_chars: int = MAX_OUTPUT_CHARS,
        user_expressions: dict | None = None,
    ) -> CellRun:
        """Run `code`; keep at most `max_chars` characters of its output (and MAX_OUTPUT_CHARS).
        `user_expressions` (trusted) are evaluated by the kernel right after `code`, only if it succeeded;
        their values are not read."""
        assert self.sockets is not None
        sockets = self.sockets
        t0 = time.monotonic()
        msg_id = sockets.client.execute(
            code,
            silent=False,
            store_history=store_history,
            allow_stdin=False,
            stop_on_error=False,
            user_expressions=user_expressions or {},
        )
        outputs = CellOutputs(max_chars)
        run = CellRun(status="ok")
        deadline = t0 + timeout
        interrupted = False
        while True:
            now = time.monotonic()
            if now >= deadline:
                if not interrupted:
                    self.interrupt()
                    interrupted = True
                    deadline = now + min(INTERRUPT_GRACE, max(timeout, 1.0))
                    continue
                self.kill()
                run.status = "hung"
                break
            if sockets.dropped():  # IOPub is gone: the kernel died, or libzmq refused an oversized message
                if self._exits_within(DEATH_GRACE):  # a dying kernel drops its sockets too: that is a death
                    run.status = "died"
                    break
                self.kill()
                run.status = "oversized"
                break
            try:
                msg = sockets.client.iopub_channel.get_msg(timeout=min(0.5, deadline - now))
            except Empty:
                if not self.alive():
                    run.status = "died"
                    break
                continue
            except Exception:  # noqa: BLE001 - a garbled message: ignore it
                continue
            if (msg.get("parent_header") or {}).get("msg_id") != msg_id:
                continue
            kind = msg.get("msg_type")
            content = msg.get("content") or {}
            if kind == "status" and content.get("execution_state") == "idle":
                break
            if kind == "execute_input":
                run.execution_count = content.get("execution_count")
                continue
            if kind == "error":
                run.ename = str(content.get("ename", ""))[:200]
                run.evalue = str(content.get("evalue", ""))[:4000]
                run.status = "error"
            if kind == "execute_result":
                run.execution_count = content.get("execution_count", run.execution_count)
            outputs.add(msg)
        if run.status in ("ok", "error") and interrupted:
            run.status = "timeout"
        if run.status in ("ok", "error", "timeout"):
            sockets.drain_reply(msg_id, run, self.alive)
        run.outputs = outputs.items
        run.output_chars = outputs.chars
        run.truncated = outputs.truncated
        run.seconds = time.monotonic() - t0
        return run
