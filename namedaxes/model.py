"""The course's one reference model: a line `w * x + b`, fitted by mean squared error with plain SGD.

Notebooks 04, 05 and 06 train it, and their checks compare answers with it. It is
defined here once, in JAX (`loss`, `gradients`, `sgd_step`, for demonstrations and
reference programs) and in NumPy float64 (`loss_np`, `gradients_np`, `sgd_step_np`,
for exact expected values in checks, independent of float32 rounding).

Parameters are a dict `{'w': scalar, 'b': scalar}`; a batch is a dict
`{'x': ..., 'y': ...}` whose leading axis is the examples. `line_batch` makes the
notebooks' data: `n` normalized points on `y = 2x + 0.5`.

A demonstration cell uses these functions, never a student's answer, so it runs
(and draws its picture) while the exercises are still unanswered.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

__all__ = [
    "LEARNING_RATE",
    "PARAM_NAMES",
    "TRUE_W",
    "TRUE_B",
    "predict",
    "loss",
    "gradients",
    "sgd_step",
    "loss_np",
    "gradients_np",
    "sgd_step_np",
    "line_batch",
]

LEARNING_RATE = 0.01
PARAM_NAMES = ("w", "b")
TRUE_W, TRUE_B = 2.0, 0.5


def predict(params, x):
    return params["w"] * x + params["b"]


def loss(params, batch):
    """Mean squared error of `predict` against `batch['y']`, averaged over the examples: shape ()."""
    return jnp.mean((predict(params, batch["x"]) - batch["y"]) ** 2)


gradients = jax.grad(loss)
gradients.__doc__ = "d loss / d params: a dict shaped like `params`."


def sgd_step(params, batch, learning_rate: float = LEARNING_RATE):
    """One plain SGD step on one device, on the whole `batch`."""
    grads = gradients(params, batch)
    return jax.tree.map(lambda p, g: p - learning_rate * g, params, grads)


# ---------------------------------------------------------------- the same model in NumPy float64
def _error_np(params, batch) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(batch["x"], float)
    return x, np.asarray(params["w"], float) * x + np.asarray(params["b"], float) - np.asarray(batch["y"], float)


def loss_np(params, batch) -> float:
    return float(np.mean(_error_np(params, batch)[1] ** 2))


def gradients_np(params, batch) -> dict:
    x, err = _error_np(params, batch)
    return {"w": float(np.mean(2 * err * x)), "b": float(np.mean(2 * err))}


def sgd_step_np(params, batch, learning_rate: float = LEARNING_RATE) -> dict:
    g = gradients_np(params, batch)
    return {k: params[k] - learning_rate * g[k] for k in PARAM_NAMES}


# ---------------------------------------------------------------- the notebooks' data
def line_batch(n: int = 64, seed: int = 0) -> dict:
    """`n` points on `y = 2x + 0.5`, `x` normalized (mean 0, standard deviation 1), float32."""
    x = jax.random.normal(jax.random.key(seed), (n,))
    x = (x - x.mean()) / x.std()
    return {"x": x, "y": TRUE_W * x + TRUE_B}
