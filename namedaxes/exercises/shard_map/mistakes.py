"""The grader's side of the checks' diagnoses: each exercise's known mistakes, on one graded case's inputs."""

from __future__ import annotations

import re

from .migration import migration_mistakes
from .replicas import replica_mistakes
from .scaled import scaled_mistakes
from .training import step_mistakes


def known_mistakes(exercise: str, case: str, inputs: list) -> list[tuple]:
    """The known mistakes' results `(values, key, fields)` on one graded case's inputs (its arguments' leaves in
    order; the case's name says its mesh: `out_k8_16x3`, `out_2x4_4x8`, `out_k8_d3`, `k8_n64`): what the
    grader's judge compares a wrong program's values with, on its hidden inputs, to name the mistake as the
    check names it (`autograder/judge/mistakes.py`). The weighted steps' results are their outputs `['w']` and
    `['b']`; the migration's, its total `[0]`."""
    if exercise == "sharded_scaled_sum" and (k := re.fullmatch(r"out_k(\d+)_\d+x\d+", case)):
        return scaled_mistakes(inputs[0], int(k[1]))
    if exercise == "replica_totals" and (grid := re.fullmatch(r"out_(\d+)x(\d+)_\d+x\d+", case)):
        return replica_mistakes(inputs[0], (int(grid[1]), int(grid[2])))
    if exercise == "weighted_total_shard_map" and (k := re.fullmatch(r"out_k(\d+)_d\d+", case)):
        return [({"[0]": v}, key, f) for v, key, f in migration_mistakes(*inputs, int(k[1]))]
    if exercise in ("dp_train_step", "jit_train_step") and (k := re.fullmatch(r"k(\d+)_n\d+", case)):
        b, w, weight, x, y = inputs
        found = step_mistakes({"w": w, "b": b}, {"x": x, "y": y, "weight": weight}, int(k[1]))
        return [({"['w']": v["w"], "['b']": v["b"]}, key, f) for v, key, f in found]
    return []
