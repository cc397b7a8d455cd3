"""The grader's side of the checks' diagnoses: each exercise's known mistakes, on one graded case's inputs."""

from __future__ import annotations

import re

import numpy as np

from .fsdp import fsdp_mistakes
from .median import median_mistakes
from .ring import ring_mistakes
from .scatter import COLUMNS, ROWS, scatter_mistakes


def known_mistakes(exercise: str, case: str, inputs: list) -> list[tuple]:
    """The known mistakes' results `(values, key, fields)` on one graded case's inputs (its arguments' leaves in
    order: `x`, or `w, x, y` for `fsdp_step`; the case's name says its devices, `k<k>...`): what the grader's
    judge compares a wrong program's values with, on its hidden inputs, to name the mistake as the check names
    it (`autograder/judge/mistakes.py`)."""
    devices = re.fullmatch(r"k(\d+)(_.*)?", case)
    if devices is None:
        return []
    k = int(devices[1])
    if exercise == "median_centered":
        return median_mistakes(inputs[0], k)
    if exercise == "sum_scatter_columns":
        return scatter_mistakes(np.asarray(inputs[0], np.float64).reshape(k, ROWS, COLUMNS))
    if exercise == "ring_all_reduce":
        return ring_mistakes(inputs[0], k)
    if exercise == "fsdp_step":
        w, x, y = inputs
        return fsdp_mistakes(w, {"x": x, "y": y}, k)
    return []
