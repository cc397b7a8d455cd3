"""Kernels forked from a zygote: one pre-imported Python per worker, in that worker's slot sandbox.

Why: a student kernel spends about 1.6 s of CPU before it runs a cell (Python, numpy, JAX,
matplotlib, the course package, IPython), a third of grading's CPU on a 2-core machine. A zygote
pays that once per worker: it is started in the slot's sandbox exactly as a kernel is (bubblewrap
view, dedicated uid, seccomp allow-list, rlimits; sandbox/launch.py), imports what a kernel imports
(`ZYGOTE_MODULES`, never initialising a JAX backend) and then forks one kernel per notebook
(zygote_main.py is its side). A forked kernel starts in about 0.2 s of CPU.

Threat model. Everything a kernel could do to a classmate through the zygote, and what stops it:
- *Concurrent kernels* never share a zygote: one slot per worker, one kernel at a time in it; two
  workers' slots are two sandboxes (own pid, network, IPC, UTS namespaces, own files).
- *The next kernel of the same slot* (the one channel a slot adds). Before a new task's kernel is
  forked, the grader kills the previous kernel's whole cgroup and waits for it to be empty (no
  process, so no socket, lock or abstract socket survives), then empties the slot's three tmpfs
  mounts — the working copy, /tmp and /dev/shm — from the host, never following a link
  (`workcopy.empty`), and gives each mount's root, the one inode that outlives the emptying, the
  owner, mode, times and extended attributes of a fresh mount (`mounts.reset_root`, checked: a
  default ACL or a `user.*` attribute a kernel hung on its working copy's root reaches nobody). Each
  mount has an inode cap, so emptying it costs at most a fixed, small time whatever a kernel left.
  Setting extended attributes (and so ACLs) is refused anyway (syscalls.py), as are System V IPC
  and POSIX message queues, which would outlive a kernel in the slot's IPC namespace; keyrings too.
- *The zygote itself*: it runs no student code. It is not dumpable, so its children cannot open its
  /proc/PID/mem, environ or descriptors (ptrace and process_vm_* are refused by seccomp too). A child
  closes every descriptor but its log before the kernel starts, so it cannot send the zygote
  requests. A kernel may still signal the zygote (same uid): that ends the slot's sandbox, the
  fork request for the next task fails, and the worker starts kernels the plain way from then on
  (tests/autograder/run/test_zygote.py proves each of these).
- *Limits*: every kernel has its own cgroup, exactly as a plain one. The zygote is moved into the
  kernel's group for the fork only, so the child is born there (memory already charged stays with the
  zygote's own group); the rlimits are inherited, and RLIMIT_CPU counts from the child's birth.

The grader learns a child's host pid from the SCM_CREDENTIALS of the first message the child sends,
which the kernel translates out of the slot's pid namespace; the zygote reports each child's end.
Slots exist only where `Sandbox.fork_why()` is empty (root, quota mounts, memory and pids cgroups).
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import struct
import subprocess
import time
from pathlib import Path

from ..limits import FORK_TIMEOUT, UNREPORTED_GRACE, ZYGOTE_MESSAGE_BYTES
from ..sandbox import mounts, workcopy
from ..sandbox.launch import WORK_SUBDIRS, ZYGOTE_MODULES, Sandbox
from . import kernel as kernel_mod
from .kernel import with_parent_death

__all__ = ["Zygote", "ZygoteError", "ForkedProcess"]

_CODE = (Path(__file__).with_name("zygote_main.py")).read_text(encoding="utf-8")
_CRED = struct.Struct("3i")  # struct ucred: pid, uid, gid


def _state(pid: int) -> bytes:
    """The process's state letter from /proc/PID/stat (R, S, T, Z, ...); b"" once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return b""


class ZygoteError(RuntimeError):
    """The zygote cannot fork (it is gone, stopped or confused): start kernels the plain way."""


class ForkedProcess:
    """The part of `subprocess.Popen` that `Kernel` uses, for a child of the zygote (host pid `pid`)."""

    def __init__(self, zygote: Zygote, pid: int, inner: int):
        self.zygote = zygote
        self.pid = pid
        self.inner = inner  # its pid inside the slot
        self.returncode: int | None = None
        self._ended_at = 0.0  # when it was first seen ended but not reported

    def poll(self) -> int | None:
        if self.returncode is None:
            self.zygote.pump(0.0)
        if self.returncode is None and self._unreaped():
            self.returncode = -signal.SIGKILL  # it ended and the zygote (stopped, say) does not report it
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            left = 0.5 if deadline is None else deadline - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(f"kernel {self.pid}", timeout or 0)
            self.zygote.pump(min(left, 0.1))
        return self.returncode

    def _unreaped(self) -> bool:
        """True once the process has been gone (or a zombie) for longer than its zygote needs to report it."""
        if _state(self.pid) not in (b"", b"Z", b"X"):
            self._ended_at = 0.0
            return False
        now = time.monotonic()
        if not self._ended_at:
            self._ended_at = now
        return now - self._ended_at > UNREPORTED_GRACE

    def kill(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass


class Zygote:
    """One slot: its folder `root` (work/, tmp/, shm/: tmpfs mounts) and the zygote running in it."""

    def __init__(self, sandbox: Sandbox, root: Path, log_dir: Path, modules: tuple[str, ...] = ZYGOTE_MODULES):
        self.sandbox = sandbox
        self.root = Path(root)
        self.log_path = Path(log_dir) / f"{self.root.name}-zygote.log"
        self.modules = modules
        self.proc: subprocess.Popen | None = None
        self.cgroup = None
        self.host_pid = 0
        self.sock: socket.socket | None = None
        self.children: dict[int, ForkedProcess] = {}  # inner pid -> child not yet reported ended
        self._made: tuple[frozenset[str], ...] = (frozenset(), frozenset())  # see start()
        self._ended_early: dict[int, int] = {}  # inner pid -> exit code reported before fork() returned

    @property
    def workdir(self) -> Path:
        return self.root / "work"

    def _scratch(self) -> tuple[str, str]:
        return str(self.root / "tmp"), str(self.root / "shm")

    # ------------------------------------------------------------ life cycle
    def start(self, timeout: float = 90.0) -> Zygote:
        """Mount the slot, start the zygote, wait until it has imported everything; raises ZygoteError."""
        try:
            self.sandbox.prepare_workdir(self.workdir)
            tmp, shm = self._scratch()
            mounts.mount_scratch(Path(tmp), self.sandbox.tmp_bytes, self.sandbox.tmp_files)
            mounts.mount_scratch(Path(shm), self.sandbox.shm_bytes, self.sandbox.shm_files)
            self._empty()  # a slot left mounted by a closed zygote: only what bubblewrap makes may be kept
            mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            mine.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
            self.sock = mine
            code = f"{_CODE}\nmain({theirs.fileno()}, {list(self.modules)!r})\n"
            launch = self.sandbox.wrap(
                self.workdir, [self.sandbox.python, "-c", code], label="zygote", scratch=(tmp, shm)
            )
            self.cgroup = launch.cgroup
            try:
                with open(self.log_path, "wb") as log:
                    self.proc = subprocess.Popen(
                        launch.argv,
                        env=self.sandbox.env(self.workdir, self.workdir / "observe"),
                        cwd=self.workdir,
                        pass_fds=(*launch.pass_fds, theirs.fileno()),
                        stdin=subprocess.DEVNULL,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                        preexec_fn=with_parent_death(self.sandbox.preexec()),
                    )
            finally:
                launch.close_fds()
                theirs.close()
            msg, pid = self._receive(time.monotonic() + timeout)
            if msg.get("ready") is not True or pid <= 0:
                raise ZygoteError(f"the zygote said {msg!r} instead of being ready")
            self.host_pid = pid
            kernel_mod.announce_start(self.proc.pid)  # the main process kills it with a hung worker
            # the mount points bubblewrap made inside the slot's /tmp and /dev/shm (the working copy, the
            # Python environment, caches below /tmp): the view itself, kept when the slot is emptied
            self._made = tuple(workcopy.folders(Path(p)) for p in self._scratch())
            return self
        except (OSError, ZygoteError) as err:
            self.close()
            raise ZygoteError(f"the zygote did not start: {err}") from err

    def alive(self) -> bool:
        """Running and able to answer: a zygote a kernel stopped (SIGSTOP) counts as gone."""
        if self.proc is None or self.proc.poll() is not None or self.sock is None:
            return False
        return _state(self.host_pid) not in (b"", b"T", b"t", b"Z", b"X")

    def close(self) -> None:
        """Kill the zygote with its slot's sandbox (and any kernel in it); unmount and remove the slot."""
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            else:
                kernel_mod.announce_gone(self.proc.pid)
        for child in self.children.values():
            child.kill()
            if child.returncode is None:
                child.returncode = -signal.SIGKILL
        self.children.clear()
        if self.cgroup is not None:
            self.cgroup.remove()
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        workcopy.remove_tree(self.root)

    # ------------------------------------------------------------ messages
    def _receive(self, deadline: float) -> tuple[dict, int]:
        """The next message from the slot (and its sender's host pid); raises ZygoteError when none comes."""
        while True:
            left = deadline - time.monotonic()
            if self.sock is None or left <= 0:
                raise ZygoteError("no answer from the zygote in time")
            ready, _, _ = select.select([self.sock], [], [], left)
            if not ready:
                continue
            try:
                data, ancillary, _, _ = self.sock.recvmsg(ZYGOTE_MESSAGE_BYTES, socket.CMSG_SPACE(_CRED.size))
            except OSError as err:
                raise ZygoteError(f"the zygote's socket failed: {err}") from err
            if not data:
                self.sock.close()
                self.sock = None
                for child in self.children.values():  # the slot's pid namespace is gone with it
                    if child.returncode is None:
                        child.returncode = -signal.SIGKILL
                self.children.clear()
                raise ZygoteError("the zygote is gone")
            pid = 0
            for level, kind, value in ancillary:
                if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS and len(value) >= _CRED.size:
                    pid = _CRED.unpack(value[: _CRED.size])[0]
            try:
                msg = json.loads(data)
            except ValueError:
                continue
            if isinstance(msg, dict) and not self._ended(msg):
                return msg, pid

    def _ended(self, msg: dict) -> bool:
        """Handle an end-of-child report (True), else leave the message to the caller (False)."""
        inner, code = msg.get("exit"), msg.get("code")
        if not isinstance(inner, int) or not isinstance(code, int):
            return False
        child = self.children.pop(inner, None)
        if child is not None:
            child.returncode = code
        else:
            self._ended_early[inner] = code
        return True

    def pump(self, timeout: float) -> None:
        """Take in end-of-child reports for up to `timeout` seconds (the zygote's death ends every child)."""
        try:
            self._receive(time.monotonic() + max(timeout, 0.0))
        except ZygoteError:
            pass

    # ------------------------------------------------------------ kernels
    def reset(self, mpl_cache: Path | None) -> None:
        """Make the slot as a fresh sandbox would be: no process of an earlier kernel, nothing in its files."""
        for child in list(self.children.values()):
            child.kill()
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired as err:
                raise ZygoteError("an earlier kernel of this slot does not end") from err
        self._empty()
        if mpl_cache is not None:
            workcopy.seed(mpl_cache, self.workdir / ".matplotlib", *self.sandbox.owner_ids())

    def _empty(self) -> None:
        """Empty the slot's three mounts, keeping the folders bubblewrap made (`_made`); give each mount's
        root the owner, mode, times and (no) extended attributes of a fresh mount, checked; make the
        working copy's sub-folders again. The inode caps of the mounts bound what emptying costs."""
        work_root = mounts.work_root(*self.sandbox.owner_ids())
        roots = (work_root, mounts.SCRATCH_ROOT, mounts.SCRATCH_ROOT)
        folders = (self.workdir, *map(Path, self._scratch()))
        for folder, keep, root in zip(folders, (frozenset(), *self._made), roots):
            if not workcopy.empty(folder, keep):
                raise ZygoteError(f"cannot empty the slot's {folder.name}")
            if not mounts.reset_root(folder, root):
                raise ZygoteError(f"cannot give the slot's {folder.name} a fresh mount's owner, mode and attributes")
        workcopy.make_dirs(self.workdir, WORK_SUBDIRS, self.sandbox.owner)

    def fork(self, argv: list[str], log, cgroup) -> ForkedProcess:
        """A kernel process (IPKernelApp with `argv`, output to the open file `log`) born in `cgroup`."""
        if not self.alive():
            raise ZygoteError("the zygote is not running")
        cgroup.move_in(self.host_pid)
        try:
            socket.send_fds(self.sock, [json.dumps({"argv": list(argv)}).encode()], [log.fileno()])
            deadline = time.monotonic() + FORK_TIMEOUT
            inner = host = 0
            while not (inner and host):
                msg, pid = self._receive(deadline)
                if "error" in msg:
                    raise ZygoteError(f"the zygote could not fork: {str(msg['error'])[:300]}")
                if isinstance(msg.get("forked"), int):
                    inner = msg["forked"]
                elif msg.get("child") is True and pid > 0:
                    host = pid
        except OSError as err:
            raise ZygoteError(f"the zygote's socket failed: {err}") from err
        finally:
            try:
                self.cgroup.move_in(self.host_pid)
            except OSError:
                pass
        child = ForkedProcess(self, host, inner)
        if inner in self._ended_early:
            child.returncode = self._ended_early.pop(inner)
        else:
            self.children[inner] = child
        return child
