"""The lock that keeps two grading runs from computing one assignment's reference at once.

Two runs at once: the reference observations and the XLA cache of an assignment are computed
under an exclusive lock (`fcntl.flock` on `CACHE/<assignment>.lock`); a second run waits for it,
then finds them cached (pool.run_all). Closing the file releases the lock, so a run that dies
holds nothing.
"""

from __future__ import annotations

import fcntl
import sys
from pathlib import Path

__all__ = ["ReferenceLock"]


class ReferenceLock:
    """An exclusive lock on one assignment's reference cache (CACHE/<assignment>.lock), across runs."""

    def __init__(self, cache: Path, assignment: str):
        cache.mkdir(parents=True, exist_ok=True)
        self.path = cache / f"{assignment}.lock"
        self.fh = None

    def acquire(self, quiet: bool = True) -> None:
        self.fh = open(self.path, "a")  # noqa: SIM115 - held (and locked) until release()
        try:
            fcntl.flock(self.fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if not quiet:
                sys.stderr.write(f"waiting for another grading run to finish the reference of {self.path.stem} ...\n")
            fcntl.flock(self.fh, fcntl.LOCK_EX)

    def release(self) -> None:
        if self.fh is not None:
            self.fh.close()  # closing the file releases the lock
            self.fh = None
