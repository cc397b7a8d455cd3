"""The tmpfs mounts a kernel writes to: mounting them with their caps, what their roots must be before
each kernel, and where a plain kernel's own /tmp and /dev/shm go.

Threat model: a mount's root is the one inode a kernel can change that outlives what is inside it
(which the grader empties or detaches). A kernel owns its working copy's root: it may chmod it, set
its times, and (where the system-call filter is missing) hang a default ACL on it, which every
folder made there later inherits, the grader's too, or a `user.*` note for the next kernel.
`reset_root` gives a root a fresh mount's owner, mode, times and no extended attributes, and checks
(run/zygote.py, between two kernels of a slot). Every mount here has an inode cap as well as a byte
cap, which bounds what emptying it costs. Only root may mount (`probe_quota` in workcopy.py says so).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import stat
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "MS_NOSUID",
    "MS_NODEV",
    "MS_NOEXEC",
    "Root",
    "SCRATCH_ROOT",
    "work_root",
    "mount_tmpfs",
    "mount_scratch",
    "reset_root",
    "unmount",
    "is_quota_mount",
    "scratch_of",
]

MS_NOSUID, MS_NODEV, MS_NOEXEC = 2, 4, 8
MNT_DETACH = 2
_libc = None


def _c():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    return _libc


@dataclass(frozen=True)
class Root:
    """What the root folder of a mount a kernel writes to must be before each kernel: a fresh mount's."""

    mode: int
    uid: int
    gid: int

    @property
    def options(self) -> str:
        return f"mode={self.mode:o},uid={self.uid},gid={self.gid}"


SCRATCH_ROOT = Root(0o1777, 0, 0)  # a slot's /tmp and /dev/shm: the root's, writable by all, sticky


def work_root(uid: int, gid: int) -> Root:
    """A working copy's root: the kernel's own, for it alone."""
    return Root(0o700, uid, gid)


def mount_tmpfs(path: str, opts: str, flags: int) -> None:
    """Mount a fresh tmpfs with `opts` on the folder `path`; raises OSError."""
    if _c().mount(b"tmpfs", os.fsencode(path), b"tmpfs", flags, opts.encode()) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"mounting a tmpfs on {path}: {os.strerror(e)}")


def mount_scratch(path: Path, size_bytes: int, files: int) -> None:
    """Make `path` a fresh tmpfs of mode 1777 with at most `size_bytes` and `files` inodes (a slot's /tmp
    or /dev/shm, see run/zygote.py): the inode cap also bounds the time it takes to empty it."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    if is_quota_mount(path):
        return
    mount_tmpfs(str(path), f"size={size_bytes},nr_inodes={files},{SCRATCH_ROOT.options}", MS_NOSUID | MS_NODEV)


def reset_root(path: Path, root: Root) -> bool:
    """Give the folder `path` (a mount's root, which outlives the files in it) back the owner, mode,
    extended attributes (POSIX ACLs included: they are `system.posix_acl_*` attributes) and times of a
    fresh mount, then check that it has them. Never follows a link; never raises; False if it could not.

    A kernel owns its working copy's root: it may chmod it, set a default ACL on it (inherited by every
    folder the grader makes there afterwards), hang `user.*` attributes on it or set its times, and a
    slot's next kernel would meet all of that (run/zygote.py)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        for name in os.listxattr(fd):
            os.removexattr(fd, name)
        os.fchown(fd, root.uid, root.gid)
        os.fchmod(fd, root.mode)
        os.utime(fd)  # now, as a fresh mount's
        st = os.fstat(fd)
        return (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid) == (root.mode, root.uid, root.gid) and not (
            os.listxattr(fd)
        )
    except OSError:
        return False
    finally:
        os.close(fd)


def unmount(path: str) -> bool:
    """Detach the mount on `path` (and every mount below it), whatever is inside: one system call."""
    return _c().umount2(os.fsencode(path), MNT_DETACH) == 0


def is_quota_mount(path: Path) -> bool:
    """Is `path` a tmpfs mount point (the working copy has its own quota)?"""
    try:
        if not os.path.ismount(path):
            return False
        return os.statvfs(path).f_files > 0 and _fstype(path) == "tmpfs"
    except OSError:
        return False


def _fstype(path: Path) -> str:
    real = os.path.realpath(path)
    try:
        text = Path("/proc/self/mountinfo").read_text()
    except OSError:
        return ""
    kind = ""
    for line in text.splitlines():  # the last mount on a point is the visible one
        pre, _, post = line.partition(" - ")
        fields = pre.split()
        if len(fields) > 4 and fields[4].replace("\\040", " ") == real:
            kind = post.split()[0] if post else ""
    return kind


def scratch_of(path: Path) -> tuple[Path, Path]:
    """Where a plain kernel's own /tmp and /dev/shm are mounted: beside its working copy `path`, in the
    grader's folder (never inside the working copy, where the kernel could plant a link)."""
    path = Path(path)
    return path.with_name(path.name + ".tmp"), path.with_name(path.name + ".shm")
