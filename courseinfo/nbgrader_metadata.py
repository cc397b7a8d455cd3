"""nbgrader's cell metadata, read in one place: is a cell an answer, a test, locked; its grade id, points.

Every reader of a notebook's `metadata.nbgrader` (the notebook generator, the translation tool, the
workspace tool, the website, the grader) asks `nbgrader_cell(cell)` instead of re-deriving it, so the
rules are written once (as nbgrader's own `nbgrader/utils.py`: `is_grade`, `is_solution`, `is_locked`).

Threat model: the grader reads submitted notebooks, whose metadata a student can write. So nothing
here trusts a type: a cell or metadata that is not a mapping reads as no metadata; a flag counts only
when it is `True` itself (not "true", not 1); a grade id only when it is a non-empty string; points
only when they are a finite number (or a string of one). Nothing is ever raised for bad metadata.
Trusted sources (our own notebooks) read exactly as before.

This module imports nothing of the course (no JAX), so the website's build and the grader's trusted
process may import it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["NbgraderCell", "nbgrader_cell", "nbgrader_dict"]


def nbgrader_dict(cell) -> dict:
    """The cell's `metadata.nbgrader` as it is written ({} when absent or not a mapping): for code that
    copies or edits the metadata itself (checksums). To ask what a cell is, use `nbgrader_cell`."""
    meta = cell.get("metadata") if isinstance(cell, Mapping) else None
    meta = meta.get("nbgrader") if isinstance(meta, Mapping) else None
    return meta if isinstance(meta, dict) else {}


def _points(value) -> float:
    if isinstance(value, bool):
        return 0.0
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return 0.0
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    return 0.0


@dataclass(frozen=True)
class NbgraderCell:
    """What nbgrader's metadata says a cell is (all False / None / 0 for a cell without it)."""

    grade_id: str | None = None
    solution: bool = False  # an answer cell: the student writes it
    grade: bool = False  # a graded cell: a test (or a manually graded answer)
    locked_flag: bool = False  # `locked` as written
    points: float = 0.0
    task: bool = False
    checksum: str | None = None

    @property
    def is_test(self) -> bool:
        """An autograded test cell: graded, and not an answer."""
        return self.grade and not self.solution

    @property
    def locked(self) -> bool:
        """nbgrader's rule: an answer cell is never locked, a graded cell always is, others when marked."""
        return not self.solution and (self.grade or self.locked_flag)


def nbgrader_cell(cell) -> NbgraderCell:
    """`cell`'s nbgrader metadata as a record (see the module docstring for what counts)."""
    meta = nbgrader_dict(cell)
    if not meta:
        return NbgraderCell()
    gid, checksum = meta.get("grade_id"), meta.get("checksum")
    return NbgraderCell(
        grade_id=gid if isinstance(gid, str) and gid else None,
        solution=meta.get("solution") is True,
        grade=meta.get("grade") is True,
        locked_flag=meta.get("locked") is True,
        points=_points(meta.get("points", 0)),
        task=meta.get("task") is True,
        checksum=checksum if isinstance(checksum, str) else None,
    )
