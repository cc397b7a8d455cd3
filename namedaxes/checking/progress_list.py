"""The notebook's progress: which exercises pass, are wrong, are not started, changed since their check,
were not checked yet, or (in a kernel the grader runs) are left to the grader's judge (`q.progress()` in
each notebook, made by `progress_of(__name__)`)."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable

from . import notebook
from .registry import FAILED, JUDGED, NOT_ATTEMPTED, LastCheck, exercises, last
from .rendering import BOLD, GREEN, RED, color
from .text import TEXT

__all__ = ["progress", "progress_of", "progress_rows"]


def _changed_since_check(answer: tuple, namespace: dict | None) -> bool:
    """Some checked function has been redefined (under its own name) since its check ran."""
    if namespace is None:
        return False
    for obj in answer:
        name = getattr(obj, "__name__", None)
        if callable(obj) and name in namespace and namespace[name] is not obj:
            return True
    return False


def _in_notebook_order(module: str, found: list) -> list:
    """`found` (exercises of `module`) in the order of the notebook's face, its `__all__`: a notebook's package
    imports its exercise modules in whatever order, so the order they registered in is not the notebook's."""
    face = list(getattr(sys.modules.get(module), "__all__", ()))
    return sorted(found, key=lambda ex: face.index(ex.name) if ex.name in face else len(face))


def progress_rows(module: str) -> list[tuple[str, str, str]]:
    """(exercise name, status, detail) for each exercise of `module`, in notebook order.

    Status: "passed" (every check of it passed), "failed" (wrong or crashed; detail: the first message),
    "not_attempted" (still the stub, or not defined yet; detail: the message), "changed" (redefined
    since its check ran), "unchecked" (some check never ran), "judged" (while grading: it exports, and the
    grader's judge decides it).
    """
    namespace = notebook.user_namespace()
    groups: dict[str, list[LastCheck | None]] = {}
    for ex in _in_notebook_order(module, exercises(module)):
        groups.setdefault(ex.name, []).append(last(ex))
    rows = []
    for name, results in groups.items():
        failed = [r for r in results if r and r.status == FAILED]
        not_attempted = [r for r in results if r and r.status == NOT_ATTEMPTED]
        if failed:
            rows.append((name, "failed", failed[0].why))
        elif not_attempted:
            rows.append((name, "not_attempted", not_attempted[0].why))
        elif any(r is None for r in results):
            rows.append((name, "unchecked", ""))
        elif any(r.status == JUDGED for r in results):
            rows.append((name, "judged", ""))
        elif any(_changed_since_check(r.answer, namespace) for r in results):
            rows.append((name, "changed", ""))
        else:
            rows.append((name, "passed", ""))
    return rows


def _short(text: str, width: int = 90) -> str:
    """The gist of a check's message for the progress list: up to its first ': ' or '. '."""
    first = re.split(r": |\. |\n|：|。", text.strip(), maxsplit=1)[0].rstrip(".")
    return first if len(first) <= width else first[: width - 1] + "…"


def progress(module: str) -> None:
    """Print which exercises of the notebook (exercise module `module`) pass their visible checks."""
    rows = progress_rows(module)
    passed = sum(status == "passed" for _, status, _ in rows)
    judged = sum(status == "judged" for _, status, _ in rows)
    if judged:
        title = TEXT["progress_title_judged"].format(judged=judged, total=len(rows))
    else:
        title = TEXT["progress_title"].format(passed=passed, total=len(rows))
    lines = [color(BOLD, title)]
    for name, status, why in rows:
        if status == "passed":
            lines.append(color(GREEN, "  " + TEXT["progress_pass"].format(name=name)))
        elif status == "failed":
            lines.append(color(RED, "  " + TEXT["progress_fail"].format(name=name, why=_short(why))))
        elif status == "not_attempted":
            lines.append("  " + TEXT["progress_not_attempted"].format(name=name))
        elif status == "changed":
            lines.append("  " + TEXT["progress_changed"].format(name=name))
        elif status == "judged":
            lines.append("  " + TEXT["progress_judged"].format(name=name))
        else:
            lines.append("  " + TEXT["progress_unchecked"].format(name=name))
    if rows and passed == len(rows):
        lines.append(TEXT["progress_done"])
    print("\n".join(lines))


def progress_of(module: str) -> Callable[[], None]:
    """`q.progress()` for an exercise module: `progress = progress_of(__name__)`."""

    def module_progress() -> None:
        """Which exercises of this notebook pass their visible checks (run their test cells first)."""
        progress(module)

    return module_progress
