"""The reference model: the JAX and NumPy float64 versions agree, and SGD on the notebooks' data converges."""

import jax
import numpy as np
import pytest

from namedaxes import model


@pytest.fixture
def batch():
    return model.line_batch(64, seed=0)


def test_line_batch_is_normalized_and_on_the_line(batch):
    x, y = np.asarray(batch["x"]), np.asarray(batch["y"])
    assert x.shape == y.shape == (64,) and x.dtype == np.float32
    assert abs(x.mean()) < 1e-5 and abs(x.std() - 1) < 1e-5
    np.testing.assert_allclose(y, 2.0 * x + 0.5, rtol=1e-6)


def test_jax_and_numpy_versions_agree(batch):
    params = {"w": np.float32(1.0), "b": np.float32(0.0)}
    assert np.isclose(float(model.loss(params, batch)), model.loss_np(params, batch), rtol=1e-5)
    grads, grads_np = model.gradients(params, batch), model.gradients_np(params, batch)
    for k in model.PARAM_NAMES:
        assert np.isclose(float(grads[k]), grads_np[k], rtol=1e-5, atol=1e-6)
    step, step_np = model.sgd_step(params, batch), model.sgd_step_np(params, batch)
    for k in model.PARAM_NAMES:
        assert np.isclose(float(step[k]), step_np[k], rtol=1e-6, atol=1e-7)
    assert np.isclose(step_np["w"], 1.0 - model.LEARNING_RATE * grads_np["w"])


def test_sgd_at_the_learning_rate_reaches_the_line(batch):
    params = {"w": np.float32(1.0), "b": np.float32(0.0)}
    run = jax.jit(lambda p: jax.lax.fori_loop(0, 400, lambda _, q: model.sgd_step(q, batch), p))
    final = run(params)
    np.testing.assert_allclose([final["w"], final["b"]], [model.TRUE_W, model.TRUE_B], atol=1e-3)
