"""Notebook 10's scanned and rematerialized step (`transformer.forward_scanned`, `train_step_scanned`): the
same loss and gradients as the unrolled model, with and without a `jax.checkpoint` policy; and the recorded
measurements the notebook reads (`transformer.recorded`)."""

import functools

import jax
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from namedaxes import transformer as tm
from namedaxes.transformer import BATCH, Config


@pytest.mark.parametrize("policy", [None, jax.checkpoint_policies.nothing_saveable], ids=["scan", "scan + remat"])
def test_the_scanned_loss_and_gradients_are_the_unrolled_ones(policy):
    config = Config()
    mesh = tm.layout_mesh(2, 2, 2)
    params = tm.place(tm.init_params(config), mesh)
    with jax.set_mesh(mesh):
        window = jax.device_put(tm.batches(config, 16, 1)[0], NamedSharding(mesh, P(BATCH)))
        loss, grads = jax.jit(jax.value_and_grad(tm.loss_fn))(params, window)
        scanned = functools.partial(tm.loss_scanned, policy=policy)
        loss_s, grads_s = jax.jit(jax.value_and_grad(scanned))(params, window)
    np.testing.assert_allclose(float(loss_s), float(loss), rtol=1e-6)
    for name in grads:
        assert jax.typeof(grads_s[name]).sharding.spec == jax.typeof(grads[name]).sharding.spec, name
        np.testing.assert_allclose(np.asarray(grads_s[name]), np.asarray(grads[name]), rtol=1e-5, atol=1e-6)


def test_the_recorded_steps_carry_their_provenance_and_every_figure_the_time_model_reads():
    steps = tm.recorded("steps-tpu-v5-lite")
    assert {"chip", "jax", "date", "command"} <= set(steps["provenance"])
    assert {"matmul_float32_tflops", "hbm_gbytes_per_s", "small_op_us"} <= set(steps["roofs"])
    for row in steps["rows"]:
        assert {"config", "params", "batch", "layout", "step_us", "flops", "entry_ops"} <= set(row)
        assert row["params"] == sum(int(np.prod(s)) for s in tm.shapes(Config(**row["config"])).values())
    with pytest.raises(FileNotFoundError):
        tm.recorded("no-such-record")
