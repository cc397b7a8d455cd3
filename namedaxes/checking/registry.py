"""What the checks of a kernel have said so far: every `Exercise` by module, and its last check.

`progress()` reads these; `Exercise.check` writes them. Module state lives in mutated containers,
never rebound (the autograder's guard restores module globals between cells).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "LastCheck",
    "PASSED",
    "FAILED",
    "NOT_ATTEMPTED",
    "JUDGED",
    "Registered",
    "register",
    "record_check",
    "exercises",
    "last",
]

PASSED, FAILED, NOT_ATTEMPTED = "passed", "failed", "not_attempted"
JUDGED = "judged"  # while grading: the answer exports, and the grader's judge decides the rest


@dataclass(frozen=True)
class LastCheck:
    """The last check of one `Exercise`: `status` (PASSED, FAILED: wrong or crashed, NOT_ATTEMPTED: still
    the stub, JUDGED: exported while grading, the grader judges it), the message it showed (`why`, empty
    when it passed) and the answer it checked."""

    status: str
    why: str = ""
    answer: tuple = ()


class Registered(Protocol):
    """What the registry needs of an exercise: its name, its module and the key of what it is."""

    name: str
    module: str
    key: tuple


_REGISTRY: dict[str, dict[tuple, Registered]] = {}  # exercise module -> its exercises, in order
_RESULTS: dict[tuple, LastCheck] = {}  # an exercise's key -> its last check


def register(exercise: Registered) -> None:
    """Add `exercise` to its module's list (a re-imported module's exercise replaces the one it was)."""
    _REGISTRY.setdefault(exercise.module, {})[exercise.key] = exercise


def record_check(exercise: Registered, check: LastCheck) -> None:
    """What the last check of `exercise` said."""
    _RESULTS[exercise.key] = check


def exercises(module: str | None = None) -> list[Registered]:
    """The exercises of `module` in notebook order (None: of every module)."""
    chosen = [_REGISTRY.get(module, {})] if module is not None else list(_REGISTRY.values())
    return [ex for by_key in chosen for ex in by_key.values()]


def last(exercise: Registered) -> LastCheck | None:
    """The last check of `exercise` (None: never checked)."""
    return _RESULTS.get(exercise.key)
