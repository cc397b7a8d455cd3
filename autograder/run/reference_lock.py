"""The lock that keeps two grading runs from computing one assignment's reference at once.

Two runs at once: the reference observations and the XLA cache of an assignment are computed
under an exclusive lock (`fcntl.flock` on `CACHE/<assignment>.lock`); a second run waits for it,
then finds them cached (pool.run_all). Closing the file releases the lock, so a run that dies
holds nothing. The holder writes who it is into the lock file (process id, user, since when), so a run
that waits says whose run it waits for and how long that has run.
"""

from __future__ import annotations

import fcntl
import getpass
import os
import sys
import time
from pathlib import Path

__all__ = ["ReferenceLock"]


class ReferenceLock:
    """An exclusive lock on one assignment's reference cache (CACHE/<assignment>.lock), across runs."""

    def __init__(self, cache: Path, assignment: str):
        cache.mkdir(parents=True, exist_ok=True)
        self.path = cache / f"{assignment}.lock"
        self.fh = None

    def acquire(self, quiet: bool = True) -> None:
        self.fh = open(self.path, "a+")  # noqa: SIM115 - held (and locked) until release()
        try:
            fcntl.flock(self.fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if not quiet:
                sys.stderr.write(f"waiting for {self.holder()} to finish the reference of {self.path.stem} ...\n")
            fcntl.flock(self.fh, fcntl.LOCK_EX)
        self.fh.seek(0)
        self.fh.truncate()
        self.fh.write(f"{os.getpid()} {_user()} {time.time():.0f}\n")
        self.fh.flush()

    def holder(self) -> str:
        """Whose grading run holds the lock and for how long, as its lock file says ("another grading run"
        when it says nothing readable: a run of an older grader)."""
        try:
            pid, user, since = self.path.read_text(encoding="utf-8", errors="replace").split()[:3]
            minutes = max(0.0, time.time() - float(since)) / 60
        except (OSError, ValueError):
            return "another grading run"
        return f"another grading run (process {int(pid)} of {user[:32]!r}, running for {minutes:.0f} min)"

    def release(self) -> None:
        if self.fh is not None:
            self.fh.close()  # closing the file releases the lock
            self.fh = None


def _user() -> str:
    try:
        return getpass.getuser().replace(" ", "_") or "?"
    except (KeyError, OSError):
        return str(os.getuid())
