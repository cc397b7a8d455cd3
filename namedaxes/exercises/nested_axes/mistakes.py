"""The grader's side of the checks' diagnoses: each exercise's known mistakes, on one graded case's inputs."""

from __future__ import annotations

import re

import numpy as np

from .normalize import row_normalize_mistakes
from .numbers import numbers_mistakes
from .sums import neither_mistakes
from .tp_dp import tp_case_grid, tp_mistakes


def known_mistakes(exercise: str, case: str, inputs: list) -> list[tuple]:
    """The known mistakes' results `(values, key, fields)` on one graded case's inputs (its arguments' leaves in
    order: `x` on the grid, of shape (*grid, ...); `x` of `row_normalize` on the mesh its case names, `2x4_k3`;
    `w, x, y` of `tp_dp_step` on the mesh its case names, `2x4`, the work case's 2 x 4): what the grader's
    judge compares a wrong program's values with, on its hidden inputs, to name the mistake as the check names
    it (`autograder/judge/mistakes.py`). The parts of `grid_sums` and `device_numbers` are their outputs `[k]`."""
    if exercise == "grid_sums":
        return [({"[2]": v}, key, f) for v, key, f in neither_mistakes(inputs[0])]
    if exercise == "device_numbers":
        parts = numbers_mistakes(np.shape(inputs[0])[:2])
        return [({f"[{k}]": v}, key, f) for k, part in enumerate(parts) for v, key, f in part]
    mesh = re.fullmatch(r"(\d+)x(\d+)_k(\d+)", case)
    if exercise == "row_normalize" and mesh:
        return row_normalize_mistakes(inputs[0], (int(mesh[1]), int(mesh[2])), int(mesh[3]))
    if exercise == "tp_dp_step" and (grid := tp_case_grid(case)):
        w, x, y = inputs
        return tp_mistakes(w, {"x": x, "y": y}, grid)
    return []
