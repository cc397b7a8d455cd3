"""The grader's side of the checks' diagnoses: each exercise's known mistakes, on one graded case's inputs."""

from __future__ import annotations

import re

import numpy as np

from .losses import loss_mistakes
from .running import PARAM_NAMES
from .train_loop import train_mistakes
from .update import step_loss_mistakes, step_mistakes


def _per_device(mistakes_of, params: dict, batch: dict) -> list[tuple]:
    """`mistakes_of(params, one device's batch)` for each of the k devices of `batch` (leading axis), each
    mistake's values stacked in a vector of k, as `pmap` returns one result per device."""
    rows = [mistakes_of(params, {n: v[i] for n, v in batch.items()}) for i in range(len(batch["x"]))]
    return [(np.array([row[j][0] for row in rows]), key, fields) for j, (_, key, fields) in enumerate(rows[0])]


def _params_at(prefix: str, values: dict, k: int | None) -> dict:
    """New parameters `{'w', 'b'}` as the outputs they are (`<prefix>['w']`), one copy per device when `k`."""
    return {f"{prefix}['{n}']": values[n] if k is None else np.full(k, values[n]) for n in PARAM_NAMES}


def known_mistakes(exercise: str, case: str, inputs: list) -> list[tuple]:
    """The known mistakes' results `(values, key, fields)` on one graded case's inputs (its arguments' leaves in
    order: `b, w` of `params`, then `x, y` of the batch, k devices' shards in case `k<k>`, one device's in
    `local`): what the grader's judge compares a wrong program's values with, on its hidden inputs, to name
    the mistake as the check names it (`autograder/judge/mistakes.py`). A step's results are its outputs
    `[0]['w']`, `[0]['b']` (the new parameters) and `[1]` (the loss)."""
    b, w, x, y = (np.asarray(a, np.float64) for a in inputs)
    params, batch = {"w": float(w), "b": float(b)}, {"x": x, "y": y}
    if exercise == "loss_fn":
        return loss_mistakes(params, batch) if case == "local" else _per_device(loss_mistakes, params, batch)
    k = len(x)
    if exercise == "parallel_update_step":
        new = [(_params_at("[0]", v, k), key, fields) for v, key, fields in step_mistakes(params, batch)]
        return new + [({"[1]": np.full(k, v)}, key, fields) for v, key, fields in step_loss_mistakes(params, batch)]
    steps = re.fullmatch(r"k\d+_steps(\d+)", case)
    if exercise == "train" and steps:
        return [(_params_at("[0]", v, None), key, f) for v, key, f in train_mistakes(params, batch, int(steps[1]))]
    return []
