"""The grader's side of the checks' diagnoses: each exercise's known mistakes, on one graded case's inputs."""

from __future__ import annotations

import re

from .collective_matmul import cm_mistakes
from .correlation import corr_mistakes
from .mlp import mlp_mistakes


def known_mistakes(exercise: str, case: str, inputs: list) -> list[tuple]:
    """The known mistakes' results `(values, key, fields)` on one graded case's inputs (its arguments' leaves in
    order: `x` of `feature_correlation`, `x, w1, w2` of `one_all_reduce_mlp`, `x, w` of
    `collective_matmul_rows` on the `k<k>` devices its case names): what the grader's judge compares a wrong
    program's values with, on its hidden inputs, to name the mistake as the check names it
    (`autograder/judge/mistakes.py`)."""
    if exercise == "feature_correlation":
        return corr_mistakes(inputs[0])
    if exercise == "one_all_reduce_mlp" and re.fullmatch(r"k\d+", case):
        return mlp_mistakes(*inputs)
    if exercise == "collective_matmul_rows" and (k := re.fullmatch(r"k(\d+)", case)):
        return cm_mistakes(*inputs, int(k[1]))
    return []
