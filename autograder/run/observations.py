"""A kernel's observation folder, touched only from the grader's side: emptied and read, never followed.

The kernel's code is hostile and may keep threads running between cells, so it may plant anything in
its observation folder at any moment: links to files elsewhere, folders, fifos, huge files. So the
folder is only ever opened with O_NOFOLLOW (a symlink planted in its place finds nothing and deletes
nothing elsewhere), entries in it are removed without following links (workcopy.remove through
/proc/self/fd), and files are read with O_NOFOLLOW and O_NONBLOCK, regular files only, size-capped
(MAX_OBSERVATION_BYTES). When to empty it and what to log is the executor's (run/executor.py).
"""

from __future__ import annotations

import os
import stat

from ..limits import MAX_LOGGED_NAMES, MAX_OBSERVATION_BYTES
from ..sandbox import workcopy

__all__ = ["clear_all_observations", "harvest_observations", "logged_names", "ARRAYS_SUFFIX", "VALUES_SUFFIX"]

ARRAYS_SUFFIX = ".npz"  # namedaxes.grading.ARRAYS_SUFFIX
VALUES_SUFFIX = ".json"  # namedaxes.grading.VALUES_SUFFIX


def _open_observe(observe_dir) -> int | None:
    try:
        return os.open(observe_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return None  # not a real folder: harvesting finds nothing either


def clear_all_observations(observe_dir) -> list[str]:
    """Empty the observation folder (never following a link); the names that were there."""
    dir_fd = _open_observe(observe_dir)
    if dir_fd is None:
        return []
    try:
        names = sorted(os.listdir(dir_fd))
        for name in names:
            try:
                st = os.lstat(name, dir_fd=dir_fd)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                workcopy.remove(f"/proc/self/fd/{dir_fd}/{name}")
            else:
                try:
                    os.unlink(name, dir_fd=dir_fd)
                except OSError:
                    pass
        return names
    except OSError:
        return []
    finally:
        os.close(dir_fd)


def logged_names(names: list[str]) -> str:
    """Names found in the folder, for the run's log: ascii() each, at most MAX_LOGGED_NAMES of them."""
    shown = ", ".join(ascii(n) for n in names[:MAX_LOGGED_NAMES])
    return shown + (f" and {len(names) - MAX_LOGGED_NAMES} more" if len(names) > MAX_LOGGED_NAMES else "")


def _read_nofollow(dir_fd: int, name: str) -> bytes | None:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_OBSERVATION_BYTES:
            return None
        chunks, left = [], MAX_OBSERVATION_BYTES + 1
        while left > 0:
            chunk = os.read(fd, min(left, 2**20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        return data if len(data) <= MAX_OBSERVATION_BYTES else None
    finally:
        os.close(fd)


def harvest_observations(observe_dir, grade_id: str) -> tuple[bytes | None, bytes | None] | None:
    """The bytes of <grade_id>.npz / .json, read without following links; None if nothing."""
    try:
        dir_fd = os.open(observe_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        npz = _read_nofollow(dir_fd, grade_id + ARRAYS_SUFFIX)
        values = _read_nofollow(dir_fd, grade_id + VALUES_SUFFIX)
    finally:
        os.close(dir_fd)
    if npz is None and values is None:
        return None
    return npz, values
