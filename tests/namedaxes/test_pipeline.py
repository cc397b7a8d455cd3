"""Notebook 10's pipelined transformer (`namedaxes.pipeline`): its loss and gradients are the unpipelined
model's, each stage holds only its layers, and activations travel between stages by `ppermute` alone."""

import jax
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from namedaxes import DATA_PARALLEL, STAGES
from namedaxes import pipeline as pp
from namedaxes import transformer as tm
from namedaxes.judging import work_of
from namedaxes.transformer import BATCH, Config


def _one_device(config, window):
    mesh = tm.layout_mesh(1, 1, 1)
    params = tm.place(tm.init_params(config), mesh)
    with jax.set_mesh(mesh):
        return jax.jit(jax.value_and_grad(tm.loss_fn))(params, jax.device_put(window, NamedSharding(mesh, P(BATCH))))


@pytest.mark.parametrize(
    "layout, layers",
    [((4, 2, 1, 1), 4), ((2, 1, 2, 2), 4)],  # 2 stages x 4 data: the training test below
    ids=["4 stages x 2 data", "2 stages of 2 layers x fsdp x tensor"],
)
def test_the_pipelined_loss_and_gradients_are_the_unpipelined_ones(layout, layers):
    config = Config(layers=layers)
    window = tm.batches(config, 16, 1, seed=5)[0]
    want_loss, want_grads = _one_device(config, window)
    mesh = pp.stage_mesh(*layout)
    params = pp.place(tm.init_params(config), mesh)
    with jax.set_mesh(mesh):
        placed = jax.device_put(window, NamedSharding(mesh, P(BATCH)))
        loss, grads = jax.jit(jax.value_and_grad(pp.loss_fn))(params, placed)
    np.testing.assert_allclose(float(loss), float(want_loss), rtol=1e-5)
    for name, grad in grads.items():
        np.testing.assert_allclose(grad, want_grads[name], rtol=1e-4, atol=1e-6, err_msg=name)
        assert grad.sharding.is_equivalent_to(NamedSharding(mesh, pp.STAGE_RULES[name]), grad.ndim), name
    shard = params["qkv"].addressable_shards[0]
    assert shard.data.shape[0] == layers // layout[0]  # a device holds its stage's layers only


def _train(mesh, place, step, windows):
    """The compiled training step on `mesh` and the losses and parameters after it ran on `windows`."""
    params, losses = place(tm.init_params(Config()), mesh), []
    with jax.set_mesh(mesh):
        state = jax.jit(tm.OPTIMIZER.init)(params)
        compiled = jax.jit(step).lower(params, state, jax.device_put(windows[0], NamedSharding(mesh, P(BATCH))))
        compiled = compiled.compile()
    for w in windows:
        params, state, loss = compiled(params, state, jax.device_put(w, NamedSharding(mesh, P(BATCH))))
        losses.append(float(loss))
    return compiled, losses, params


def test_the_pipelined_training_is_the_one_device_training_and_moves_only_activations_and_gradients():
    """Three Adam steps: the same losses and parameters as on one device. Stage to stage, the compiled step
    moves one microbatch's activations per `ppermute`; over the data axis, the gradients' all-reduce. Nothing
    is gathered: no device holds another stage's layers or another group's batch."""
    config, windows = Config(), tm.batches(Config(), 16, 3, seed=3)
    _, want_losses, want_params = _train(tm.layout_mesh(1, 1, 1), tm.place, tm.train_step, windows)
    mesh = pp.stage_mesh(2, 4, 1, 1)
    compiled, losses, params = _train(mesh, pp.place, pp.train_step, windows)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5)
    # Adam divides each gradient by its running root mean square: where a gradient is near 0, the sums' other
    # order (float rounding) moves the update by a visible share of a step (lr = 3e-3); 1e-4 is 3 % of one
    for name in tm.RULES:
        np.testing.assert_allclose(params[name], want_params[name], rtol=1e-4, atol=1e-4, err_msg=name)
    moved = dict(work_of(compiled, mesh.axis_names, tuple(mesh.shape.values()), mesh.size).moved)
    assert set(moved) == {f"ppermute over '{STAGES}'", f"psum over '{DATA_PARALLEL}'", f"psum over '{STAGES}'"}
    activation = 4 * (16 // 4 // pp.MICROBATCHES) * config.seq * config.d_model  # float32, one microbatch
    # the loop's body holds one ppermute forward and its transpose backward (the HLO counts each once; the
    # loop runs them in each of its m + k - 1 steps)
    assert moved[f"ppermute over '{STAGES}'"] == 2 * activation


@pytest.mark.parametrize("stages, microbatches", [(2, 4), (4, 8), (3, 1)])
def test_the_bubble_is_the_idle_share_of_the_schedule(stages, microbatches):
    grid = pp.schedule(stages, microbatches)
    assert grid.shape == (stages, microbatches + stages - 1)
    assert all(sorted(row[row >= 0]) == list(range(microbatches)) for row in grid)  # each stage sees each once
    assert np.isclose((grid < 0).mean(), pp.bubble(stages, microbatches))
