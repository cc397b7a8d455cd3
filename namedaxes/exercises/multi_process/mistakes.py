"""The grader's side of the checks' diagnoses: each exercise's known mistakes, on one graded case's inputs."""

from __future__ import annotations

import re

from .metrics import metric_mistakes
from .step import step_mistakes


def known_mistakes(exercise: str, case: str, inputs: list) -> list[tuple]:
    """The known mistakes' results `(values, key, fields)` on one graded case's inputs (its arguments' leaves in
    order: `errors` of `global_metrics`; `b, w` of `params` and `mask, x, y` of the batch of `masked_step`; the
    case's name says its processes and devices per process, `2x4_...`): what the grader's judge compares a
    wrong program's values with, on its hidden inputs, to name the mistake as the check names it
    (`autograder/judge/mistakes.py`). The metrics are the outputs `['total']`, `['mean']`, `['per_process']`;
    the step's, its new `['w']` and `['b']`."""
    cluster = re.fullmatch(r"(\d+)x(\d+)_rows\d+(?:_cols\d+)?", case)
    if cluster is None:
        return []
    p, k = int(cluster[1]), int(cluster[1]) * int(cluster[2])
    if exercise == "global_metrics":
        found = metric_mistakes(inputs[0], k, p)
        return [({f"['{key}']": v}, mistake, f) for key, listed in found.items() for v, mistake, f in listed]
    if exercise == "masked_step":
        b, w, mask, x, y = inputs
        found = step_mistakes({"w": w, "b": b}, {"x": x, "y": y, "mask": mask}, k, p)
        return [({"['w']": v["w"], "['b']": v["b"]}, key, f) for v, key, f in found]
    return []
