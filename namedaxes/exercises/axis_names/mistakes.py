"""The grader's side of the checks' diagnoses: each exercise's known mistakes, on one graded case's inputs."""

from __future__ import annotations

import numpy as np

from .centering import center_mistakes
from .last_device import last_mistakes
from .weighted import weighted_mistakes

_MISTAKES = {"rank_weighted_sum": weighted_mistakes, "last_device_value": last_mistakes, "center": center_mistakes}


def known_mistakes(exercise: str, case: str, inputs: list) -> list[tuple]:
    """The known mistakes' results `(values, key, fields)` on one graded case's inputs (`x`, the k devices'
    or examples' rows, whatever the case): what the grader's judge compares a wrong program's values with,
    on its hidden inputs, to name the mistake as the check names it (`autograder/judge/mistakes.py`)."""
    return _MISTAKES[exercise](np.asarray(inputs[0], np.float64))
