"""The grader's side of the checks' diagnoses: each exercise's known mistakes, on one graded case's inputs."""

from __future__ import annotations

from .max_share import share_mistakes
from .mean import mean_mistakes, padded_slots
from .totals import sum_mistakes


def known_mistakes(exercise: str, case: str, inputs: list) -> list[tuple]:
    """The known mistakes' results `(values, key, fields)` on one graded case's inputs (`x`, the k devices'
    values; for `scaled_mean`, `x` and each device's count of values `n`, padded as the graded program pads
    them): what the grader's judge compares a wrong program's values with, on its hidden inputs, to name the
    mistake as the check names it (`autograder/judge/mistakes.py`)."""
    del case  # every case of these exercises is the same function of its inputs
    if exercise == "scaled_sum":
        return sum_mistakes(inputs[0])
    if exercise == "scaled_mean":
        return mean_mistakes(padded_slots(*inputs))
    if exercise == "global_max_share":
        return share_mistakes(inputs[0])
    return []
