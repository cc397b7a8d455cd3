"""Notebook 11's training steps: ZeRO's three stages as shardings, and gradients accumulated unreduced.

ZeRO (Rajbhandari et al., 2020) splits a data-parallel step's state over the data axis in three stages:
stage 1 the optimizer's state, stage 2 the gradients as well, stage 3 the parameters too. Each stage is
three `PartitionSpec`s over one mesh axis (`ZERO`, here FSDP): `{"params": ..., "grads": ..., "opt_state":
...}`, each `P()` (every device holds the whole array) or `P(ZERO)` (rows split). `zero_step(specs)` is the
step those specs describe, written per device with `jax.shard_map` so that each collective is the one the
stage needs:

- parameters stored split are gathered before the forward pass (`lax.all_gather`);
- each device's gradient (of its share of the batch) is local until it is reduced: summed whole
  (`lax.psum`, an all-reduce) where gradients are kept whole, or summed and split at once
  (`lax.psum_scatter`, a reduce-scatter, half an all-reduce's bytes) where they are kept split;
- Adam (Optax) updates the parameters where its state lives: a device whose state is split updates its rows;
- updated rows are gathered again where the parameters are stored whole.

On the CPU backend the same step on Explicit axes (gradients of a gathered weight resharded to the split
layout, or left unreduced and resharded) compiles to an all-reduce and a slice, never a reduce-scatter;
`lax.psum_scatter` under `shard_map` states it.

The model is small and fast to compile: a two-layer MLP regression (`mlp_loss`), its parameters a dict of
two matrices whose rows split over the devices. Gradient accumulation (`accumulate_naive`) uses it too.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax import lax
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from .axes import FSDP

__all__ = [
    "ZERO",
    "STAGE_SPECS_DP",
    "OPTIMIZER",
    "zero_mesh",
    "mlp_params",
    "mlp_loss",
    "regression_data",
    "zero_step",
    "state_specs",
    "place",
    "accumulate_naive",
]

ZERO = FSDP  # the one mesh axis ZeRO splits over: the batch's, and the state's
STAGE_SPECS_DP = {"params": P(), "grads": P(), "opt_state": P()}  # plain data parallelism: nothing split
OPTIMIZER = optax.adam(1e-2)


def zero_mesh(n: int = 8):
    """A mesh of one Explicit axis ZERO over the first `n` devices."""
    return jax.make_mesh((n,), (ZERO,), axis_types=(AxisType.Explicit,), devices=jax.devices()[:n])


def mlp_params(d: int = 32, hidden: int = 64, seed: int = 0) -> dict[str, np.ndarray]:
    """Host (NumPy float32) parameters of the MLP: `w1` (d, hidden), `w2` (hidden, d)."""
    r = np.random.default_rng(seed)
    return {
        "w1": (r.normal(size=(d, hidden)) / np.sqrt(d)).astype(np.float32),
        "w2": (r.normal(size=(hidden, d)) / np.sqrt(hidden)).astype(np.float32),
    }


def mlp_loss(params: dict, x, y):
    """Mean squared error of the MLP `tanh(x @ w1) @ w2` against `y`."""
    return jnp.mean((jnp.tanh(x @ params["w1"]) @ params["w2"] - y) ** 2)


def regression_data(shape: tuple, d: int = 32, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Inputs and targets of `shape` + (d,): targets from a fixed random MLP, plus noise."""
    r = np.random.default_rng(seed)
    x = r.normal(size=(*shape, d)).astype(np.float32)
    teacher = mlp_params(d, 2 * d, seed=seed + 100)
    y = np.tanh(x @ teacher["w1"]) @ teacher["w2"] + 0.1 * r.normal(size=(*shape, d))
    return x, y.astype(np.float32)


def _split(spec) -> bool:
    return any(e is not None for e in spec)


def _rows(a, n: int):
    """This device's rows of `a` (a whole array on every device) over ZERO's `n` devices."""
    size = a.shape[0] // n
    return lax.dynamic_slice_in_dim(a, lax.axis_index(ZERO) * size, size, axis=0)


def _to(a, was_split: bool, split: bool, n: int):
    """`a` from one layout to another inside the step: rows gathered (all-gather) or taken (no
    communication)."""
    if was_split == split:
        return a
    return _rows(a, n) if split else lax.all_gather(a, ZERO, axis=0, tiled=True)


def state_specs(state, spec) -> object:
    """The specs of an Adam state: its step count whole, each moment as `spec`."""
    return jax.tree.map(lambda a: P() if np.ndim(a) == 0 else spec, state)


def zero_step(specs: dict, mesh, loss=mlp_loss, optimizer=OPTIMIZER):
    """The data-parallel Adam step whose parameters, gradients and optimizer state are laid out as `specs`
    over ZERO: `step(params, state, x, y) -> (params, state, loss)`, the batch split over ZERO."""
    n = mesh.shape[ZERO]
    p_split, g_split, s_split = (_split(specs[k]) for k in ("params", "grads", "opt_state"))

    def local(params, state, x, y):
        whole = jax.tree.map(lambda a: _to(a, p_split, False, n), params)
        value, grads = jax.value_and_grad(loss)(whole, x, y)  # this device's gradient, of its share of the batch
        if g_split:
            grads = jax.tree.map(lambda g: lax.psum_scatter(g, ZERO, scatter_dimension=0, tiled=True) / n, grads)
        else:
            grads = jax.tree.map(lambda g: lax.psum(g, ZERO) / n, grads)
        grads = jax.tree.map(lambda g: _to(g, g_split, s_split, n), grads)
        mine = jax.tree.map(lambda a: _to(a, p_split, s_split, n), params)
        updates, state = optimizer.update(grads, state, mine)
        mine = optax.apply_updates(mine, updates)
        return jax.tree.map(lambda a: _to(a, s_split, p_split, n), mine), state, lax.psum(value, ZERO) / n

    def step(params, state, x, y):
        specs_in = (
            jax.tree.map(lambda _: specs["params"], params),
            state_specs(state, specs["opt_state"]),
            P(ZERO),
            P(ZERO),
        )
        out_specs = (specs_in[0], specs_in[1], P())
        # check_vma=False: gradients stay this device's own until the step reduces them, and an all-gather's
        # result may be returned as replicated (JAX's replication check types it as varying)
        sharded = jax.shard_map(local, mesh=mesh, in_specs=specs_in, out_specs=out_specs, check_vma=False)
        return sharded(params, state, x, y)

    return step


def place(params: dict, mesh, specs: dict, optimizer=OPTIMIZER) -> tuple:
    """Parameters and a fresh Adam state placed on `mesh` as `specs` says."""
    stored = {k: jax.device_put(v, NamedSharding(mesh, specs["params"])) for k, v in params.items()}
    state = optimizer.init({k: jnp.asarray(v) for k, v in params.items()})
    state = jax.tree.map(
        lambda a, s: jax.device_put(a, NamedSharding(mesh, s)), state, state_specs(state, specs["opt_state"])
    )
    return stored, state


def accumulate_naive(w: dict, xs, ys):
    """The mean gradient of `mlp_loss` over `m` microbatches (xs, ys: (m, batch, d), the batch split over
    ZERO), each microbatch's gradient reduced as it is made: m reductions of the whole gradient."""
    summed = None
    for k in range(xs.shape[0]):
        one = jax.grad(mlp_loss)(w, xs[k], ys[k])
        summed = one if summed is None else jax.tree.map(jnp.add, summed, one)
    return jax.tree.map(lambda g: g / xs.shape[0], summed)
