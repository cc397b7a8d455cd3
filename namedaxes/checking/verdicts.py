"""What the checks of a kernel have said so far: every `Exercise` by module, and its last verdict.

`progress()` reads these; `Exercise.check` writes them. Module state lives in mutated containers,
never rebound (the autograder's guard restores module globals between cells).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .exercise import Exercise

__all__ = ["Verdict", "PASSED", "FAILED", "NOT_ATTEMPTED"]

PASSED, FAILED, NOT_ATTEMPTED = "passed", "failed", "not_attempted"


@dataclass(frozen=True)
class Verdict:
    """The last check of one `Exercise`: `status` (PASSED, FAILED: wrong or crashed, NOT_ATTEMPTED: still
    the stub), the message it showed (`why`, empty when it passed) and the answer it checked."""

    status: str
    why: str = ""
    answer: tuple = ()


_REGISTRY: dict[str, dict[tuple, Exercise]] = {}  # exercise module -> its Exercise objects, in order
_RESULTS: dict[tuple, Verdict] = {}  # Exercise._key -> its last verdict
