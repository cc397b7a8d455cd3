"""Exercises 1 and 2: `loss_fn` and `compute_gradients`, per device."""

from __future__ import annotations

from collections.abc import Callable

import jax
import numpy as np

from namedaxes.checking import fail, mistake_sentence, same_values

from .running import (
    PARAM_NAMES,
    exercise,
    expect_param_dict,
    expect_scalar,
    local_programs,
    ref_grads,
    ref_loss,
    run_answer,
)
from .text import pair, say


# ---------------------------------------------------------------- exercise 1: loss_fn
def _visible_loss_cases():
    x = np.array([0.0, 1.0, 2.0])
    yield {"w": 2.0, "b": 0.5}, {"x": x, "y": 2 * x + 0.5}  # perfect fit: loss 0
    yield {"w": 1.0, "b": 0.0}, {"x": x, "y": 2 * x + 0.5}  # errors -0.5, -1.5, -2.5
    x2 = np.array([[-1.0], [0.5], [1.5], [3.0]])  # a trailing feature axis
    yield {"w": -0.5, "b": 1.0}, {"x": x2, "y": np.array([[0.0], [2.0], [1.0], [-1.0]])}


def loss_mistakes(params, batch) -> list[tuple]:
    """The usual mistakes' losses on one device's `batch`: the sum of the squared errors, the mean absolute
    error, the mean error (either sign), the root of the mean squared error, half of it (the check's
    diagnoses, and the grader's)."""
    x, y = np.asarray(batch["x"], float), np.asarray(batch["y"], float)
    err = float(params["w"]) * x + float(params["b"]) - y
    want = float(np.mean(err**2))
    return [
        (np.sum(err**2), "loss_sum", {}),
        (np.mean(np.abs(err)), "loss_abs", {}),
        (np.mean(err), "loss_mean_error", {}),
        (-np.mean(err), "loss_mean_error", {}),
        (np.sqrt(want), "loss_root", {}),
        (want / 2, "loss_half", {}),
    ]


def _diagnose_loss(params, batch, got: float) -> str:
    return mistake_sentence(say, got, loss_mistakes(params, batch), 1e-4, otherwise=say("loss_other"))


def _check_loss_fn(fn: Callable) -> None:
    name = "loss_fn"
    for p, b in _visible_loss_cases():
        out = run_answer(name, fn, p, b, local=True)
        where = say("loss_where", params=p, shape=np.shape(b["x"]))
        if isinstance(out, jax.Array) and out.shape != ():
            fail(say("loss_not_scalar", where=where, got=tuple(out.shape)))
        expect_scalar(say("the_loss"), out)
        want = ref_loss(p, b)
        if not same_values(out, want, dtype=float):
            fail(
                say(
                    "loss_value",
                    where=where,
                    want=f"{want:.6g}",
                    got=f"{float(out):.6g}",
                    hint=_diagnose_loss(p, b, float(out)),
                )
            )


loss_fn = exercise("loss_fn", _check_loss_fn, observe=local_programs)


# ---------------------------------------------------------------- exercise 2: compute_gradients
def _check_compute_gradients(fn: Callable) -> None:
    name = "compute_gradients"
    compiled = jax.jit(fn)  # one compilation per shape instead of op-by-op dispatch: same results, faster
    for p, b in _visible_loss_cases():
        out = run_answer(name, compiled, p, b, local=True)
        hint = ""
        if isinstance(out, tuple) and len(out) == 2 and isinstance(out[1], dict):
            hint = say("grads_value_and_grad")
        expect_param_dict(name, out, say("the_gradients"), hint=hint)
        want = ref_grads(p, b)
        got = {k: float(out[k]) for k in PARAM_NAMES}
        if not all(same_values(got[k], want[k], dtype=float) for k in PARAM_NAMES):
            fail(say("grads_value", params=p, shape=np.shape(b["x"]), want=pair(want), got=pair(got)))


compute_gradients = exercise("compute_gradients", _check_compute_gradients, observe=local_programs)
