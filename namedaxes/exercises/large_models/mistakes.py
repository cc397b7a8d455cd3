"""The grader's side of the checks' diagnoses: each exercise's known mistakes, on one graded case's inputs."""

from __future__ import annotations

import re

import numpy as np

from .experts import moe_wrongs
from .gpipe import pipe_wrongs
from .ring_attention import ring_wrongs


def known_mistakes(exercise: str, case: str, inputs: list) -> list[tuple]:
    """The known mistakes' results `(values, key, fields)` on one graded case's inputs (its arguments' leaves in
    order: `b, w, x, y` for `pipeline_loss`, `x, router, w` for `moe_layer`, `q, k, v` for the ring; case `k8`
    is 8 devices): what the grader's judge compares a wrong program's values with, on its hidden inputs, to
    name the mistake as the check names it (`autograder/judge/mistakes.py`). The derivative case has none."""
    if not re.fullmatch(r"k\d+", case):
        return []
    k, leaves = int(case[1:]), [np.asarray(a, np.float64) for a in inputs]
    if exercise == "pipeline_loss":
        b, w, x, y = leaves
        return pipe_wrongs({"w": w, "b": b}, x, y)
    if exercise == "moe_layer":
        return moe_wrongs(*leaves, k)
    if exercise == "causal_ring_attention":
        return ring_wrongs(*leaves, k)
    return []
