"""A kernel's working copy: its own size- and file-count-limited file system, and a safe removal.

Threat model: the student kernel may write anything into its working copy
(the only writable place of the host it sees): fill the disk its classmates'
working copies share, create 100k files, build a folder tree thousands of
levels deep, plant symlinks to host files, or make folders unreadable — and
then the grader, running as root, creates files there (the connection file of
a replay kernel) and removes the tree afterwards.

- Quota: when the grader is root, each working copy is its own tmpfs mount
  (`size=`, `nr_inodes=`, `nosuid,nodev,noexec`, `mode=0700`, owned by the
  kernel's dedicated uid), made in the grader's mount namespace so the grader
  still reaches the kernel's IPC sockets and observation files. Writing past
  the size or the file count fails with ENOSPC inside that working copy only;
  its pages are charged to the memory cgroup of the kernel that wrote them.
  `full()` tells afterwards whether it was full (row status `disk`).
- Fallback (grader not root, or tmpfs cannot be mounted): a plain directory
  (mode 0700) on the host's disk; only RLIMIT_FSIZE (the size of one file)
  bounds it. The protections report says so.
- The root of a mount outlives the files in it, and the kernel owns a working
  copy's root: before a slot's next kernel (run/zygote.py) `mounts.reset_root`
  gives it a fresh mount's state back. A plain kernel's /tmp and /dev/shm, where
  the grader is root, are mounts beside its working copy (`mounts.scratch_of`),
  removed with it (`remove_with_scratch`).
- The grader touches the copy only through file descriptors opened with
  O_NOFOLLOW relative to the working copy (`make_dirs`, `hand_over`), never
  through a path the student could have replaced by a symlink.
- Removal (`remove`, `remove_tree`): a quota mount is detached
  (umount2 MNT_DETACH) — one system call, whatever the student left inside; a
  plain directory is removed iteratively with one open directory at a time
  (no recursion limit, no file-descriptor exhaustion on deep trees), without
  following symlinks or crossing into other file systems, fixing permissions of
  folders the student made unreadable. Neither ever raises.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from ..limits import WORKCOPY_BYTES, WORKCOPY_FILES
from ..records import Status
from .cgroups import LimitHit, limit_message
from .mounts import MS_NODEV, MS_NOEXEC, MS_NOSUID, is_quota_mount, mount_tmpfs, scratch_of, unmount, work_root

__all__ = [
    "Quota",
    "remove_with_scratch",
    "probe_quota",
    "make_workcopy",
    "make_dirs",
    "hand_over",
    "full",
    "remove",
    "remove_at",
    "remove_tree",
]


@dataclass(frozen=True)
class Quota:
    """Size and file count of one working copy."""

    bytes: int = WORKCOPY_BYTES
    files: int = WORKCOPY_FILES


def _mount_tmpfs(path: str, quota: Quota, uid: int, gid: int) -> None:
    opts = f"size={quota.bytes},nr_inodes={quota.files},{work_root(uid, gid).options}"
    mount_tmpfs(path, opts, MS_NOSUID | MS_NODEV | MS_NOEXEC)


def probe_quota(base: Path, uid: int, gid: int) -> str:
    """'' if a quota working copy can be made below `base`, else why not."""
    if os.geteuid() != 0:
        return "the grader is not root, so it cannot mount a size-limited file system per working copy"
    probe = Path(base) / f".agr-quota-probe-{os.getpid()}"
    try:
        probe.mkdir(parents=True, exist_ok=True)
        _mount_tmpfs(str(probe), Quota(1 << 20, 16), uid, gid)
    except OSError as err:
        try:
            probe.rmdir()
        except OSError:
            pass
        return f"cannot mount a tmpfs for a working copy here ({err.strerror or err})"
    unmount(str(probe))
    try:
        probe.rmdir()
    except OSError:
        pass
    return ""


def make_workcopy(path: Path, quota: Quota | None, uid: int, gid: int) -> None:
    """Make `path` a working copy owned by uid:gid (mode 0700); with `quota`, its own tmpfs.

    Idempotent: a path that already is a quota mount (a replay kernel in the same
    working copy) is left as it is. Files the grader put there before (a prebuilt
    matplotlib cache) are moved into the new mount.
    """
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise OSError(errno.ENOTDIR, f"the working copy {path} is not a directory")
    if quota is not None and not is_quota_mount(path):
        below = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            _mount_tmpfs(str(path), quota, uid, gid)
            top = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
            try:
                _copy_tree(below, top, uid, gid, depth=0)
            finally:
                os.close(top)
            _clear(below)
        finally:
            os.close(below)
        return
    if quota is None:
        if os.geteuid() == 0 and (st.st_uid, st.st_gid) != (uid, gid):
            _chown_tree(path, uid, gid)
        os.chmod(path, 0o700)


def seed(src: Path, dst: Path, uid: int, gid: int) -> None:
    """Copy the grader's seed files from the folder `src` into the existing folder `dst`, owned by uid:gid."""
    s = os.open(src, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        d = os.open(dst, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            _copy_tree(s, d, uid, gid, depth=0)
        finally:
            os.close(d)
    finally:
        os.close(s)


def _copy_tree(src: int, dst: int, uid: int, gid: int, depth: int) -> None:
    """Copy the grader's own seed files (regular files and folders, no links) from fd to fd."""
    if depth > 16:
        return
    for entry in os.scandir(src):
        st = entry.stat(follow_symlinks=False)
        if stat.S_ISDIR(st.st_mode):
            os.mkdir(entry.name, 0o700, dir_fd=dst)
            os.chown(entry.name, uid, gid, dir_fd=dst, follow_symlinks=False)
            s = os.open(entry.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=src)
            d = os.open(entry.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dst)
            try:
                _copy_tree(s, d, uid, gid, depth + 1)
            finally:
                os.close(s)
                os.close(d)
        elif stat.S_ISREG(st.st_mode):
            s = os.open(entry.name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=src)
            d = os.open(entry.name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=dst)
            try:
                while chunk := os.read(s, 1 << 20):
                    os.write(d, chunk)
                os.fchown(d, uid, gid)
            finally:
                os.close(s)
                os.close(d)


def _chown_tree(path: Path, uid: int, gid: int) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        os.fchown(fd, uid, gid)
        for entry in os.scandir(fd):
            os.chown(entry.name, uid, gid, dir_fd=fd, follow_symlinks=False)
            if entry.is_dir(follow_symlinks=False):
                _chown_tree(path / entry.name, uid, gid)
    finally:
        os.close(fd)


def make_dirs(path: Path, names: tuple[str, ...], owner: tuple[int, int] | None) -> None:
    """Create plain sub-folders of the working copy (replacing a planted symlink or file)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        for name in names:
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                st = None
            if st is not None and not stat.S_ISDIR(st.st_mode):
                os.unlink(name, dir_fd=fd)
                st = None
            if st is None:
                os.mkdir(name, 0o700, dir_fd=fd)
            if owner is not None:
                os.chown(name, *owner, dir_fd=fd, follow_symlinks=False)
    finally:
        os.close(fd)


def hand_over(path: Path, owner: tuple[int, int] | None) -> None:
    """Give a file the grader wrote into the working copy to the kernel's user (never via a symlink)."""
    if owner is not None:
        os.chown(path, *owner, follow_symlinks=False)


def full(path: Path, quota: Quota | None) -> LimitHit | None:
    """A `disk` verdict if the quota working copy at `path` is (nearly) out of space or files."""
    if quota is None or not is_quota_mount(path):
        return None
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    free = st.f_bavail * st.f_frsize
    if free < min(1 << 20, quota.bytes // 50) or st.f_favail < 8:
        size = f"{quota.bytes / 2**20:g} MiB, at most {quota.files} files"
        return LimitHit(Status.DISK, limit_message(Status.DISK, size))
    return None


# ---------------------------------------------------------------- removal
def remove(path: Path) -> bool:
    """Remove one working copy; never raises, never follows a link. True if it is gone."""
    try:
        path = Path(path)
        if os.path.ismount(path):
            unmount(str(path))
        return _rmtree(str(path))
    except Exception:  # noqa: BLE001 - clean-up must not fail the grader
        return False


def remove_with_scratch(path: Path) -> bool:
    """Remove a plain kernel's working copy and its /tmp and /dev/shm mounts (`scratch_of`): grader paths."""
    return all([remove(p) for p in (Path(path), *scratch_of(path))])


def empty(path: Path, keep: frozenset[str] = frozenset()) -> bool:
    """Remove everything inside the folder `path`, kept itself; never raises, never follows a link.

    `keep`: folders below `path` that stay (relative paths, see `folders`), emptied of all but the kept
    folders below them (the mount points bubblewrap made inside a zygote's /tmp, see run/zygote.py)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        return _clear_but(fd, keep, "", 0)
    except Exception:  # noqa: BLE001 - clean-up must not fail the grader
        return False
    finally:
        os.close(fd)


def folders(path: Path, limit: int = 256) -> frozenset[str]:
    """The folders below `path` (relative paths; links not followed), at most `limit` of them."""
    found: set[str] = set()
    todo = [""]
    while todo and len(found) < limit:
        rel = todo.pop()
        for e in os.scandir(os.path.join(path, rel) if rel else path):
            if e.is_dir(follow_symlinks=False) and len(found) < limit:
                found.add(rel + e.name)
                todo.append(rel + e.name + "/")
    return frozenset(found)


def _clear_but(fd: int, keep: frozenset[str], prefix: str, depth: int) -> bool:
    ok = True
    for e in list(os.scandir(fd)):
        rel = prefix + e.name
        if rel not in keep or depth > 64 or not e.is_dir(follow_symlinks=False):
            ok = _rmtree_at(fd, e.name) and ok
            continue
        sub = _open_dir(e.name, fd)
        try:
            ok = _clear_but(sub, keep, rel + "/", depth + 1) and ok
        finally:
            os.close(sub)
    return ok


def remove_at(dir_fd: int, name: str) -> bool:
    """Remove the entry `name` of the open folder `dir_fd` (a link is unlinked, never followed)."""
    try:
        return _rmtree_at(dir_fd, name)
    except Exception:  # noqa: BLE001 - clean-up must not fail the grader
        return False


def remove_tree(root: Path) -> bool:
    """Remove a folder of working copies: detach every mount below it first, then the files."""
    try:
        real = os.path.realpath(root)
        points = []
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            fields = line.split(" - ")[0].split()
            if len(fields) > 4:
                p = fields[4].replace("\\040", " ")
                if p == real or p.startswith(real + "/"):
                    points.append(p)
        for p in sorted(points, key=len, reverse=True):
            unmount(p)
        return _rmtree(real)
    except Exception:  # noqa: BLE001 - clean-up must not fail the grader
        return False


def _rmtree(top: str) -> bool:
    """Remove the folder (or file) `top`: iterative, symlink-safe, one directory open at a time."""
    top = os.path.abspath(top)
    try:  # the folder holding `top` is the grader's (or /proc/self/fd/N): only `top` itself is not followed
        parent = os.open(os.path.dirname(top) or "/", os.O_RDONLY | os.O_DIRECTORY)
    except FileNotFoundError:
        return True
    try:
        return _rmtree_at(parent, os.path.basename(top))
    finally:
        os.close(parent)


def _clear(fd: int) -> bool:
    """Remove everything inside the open folder `fd` (kept itself)."""
    return _clear_but(fd, frozenset(), "", 0)


def _rmtree_at(parent_fd: int, top: str) -> bool:
    try:
        st = os.stat(top, dir_fd=parent_fd, follow_symlinks=False)
    except FileNotFoundError:
        return True
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(top, dir_fd=parent_fd)
        return True
    dev = st.st_dev
    cur = _open_dir(top, parent_fd)
    # one entry per level down: (name in its parent, inode, sub-folders still to remove)
    levels = [("", os.fstat(cur).st_ino, _empty_files(cur, dev))]
    try:
        while True:
            name, ino, pending = levels[-1]
            if pending:
                sub, sub_ino = pending.pop()
                child = _open_dir(sub, cur)
                if os.fstat(child).st_ino != sub_ino:  # replaced under us: stop rather than guess
                    os.close(child)
                    return False
                os.close(cur)
                cur = child
                levels.append((sub, sub_ino, _empty_files(cur, dev)))
                continue
            if len(levels) == 1:
                break
            levels.pop()
            parent = os.open("..", _DIR_FLAGS, dir_fd=cur)
            os.close(cur)
            cur = parent
            if os.fstat(cur).st_ino != levels[-1][1]:
                return False
            os.rmdir(name, dir_fd=cur)
    except OSError:
        return False
    finally:
        os.close(cur)
    try:
        os.rmdir(top, dir_fd=parent_fd)
    except OSError:
        return False
    return True


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW


def _open_dir(name: str, dir_fd: int | None) -> int:
    """Open a folder without following links; make it usable if the student locked it (mode 000)."""
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except PermissionError:
        os.chmod(name, 0o700, dir_fd=dir_fd)
        fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    if os.fstat(fd).st_mode & 0o700 != 0o700:
        try:
            os.fchmod(fd, 0o700)
        except OSError:
            pass
    return fd


def _empty_files(fd: int, dev: int) -> list[tuple[str, int]]:
    """Unlink every non-folder in the open folder `fd`; return its sub-folders on the same device."""
    subs = []
    for e in os.scandir(fd):
        try:
            est = e.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISDIR(est.st_mode):
            if est.st_dev == dev:
                subs.append((e.name, est.st_ino))
            else:  # another file system below: detach, then remove
                unmount(f"/proc/self/fd/{fd}/{e.name}")
                est = os.stat(e.name, dir_fd=fd, follow_symlinks=False)
                if est.st_dev == dev:  # never descend into a file system still mounted
                    subs.append((e.name, est.st_ino))
        else:
            try:
                os.unlink(e.name, dir_fd=fd)
            except FileNotFoundError:
                pass
    return subs
