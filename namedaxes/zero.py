"""Notebook 11's training steps: ZeRO's three stages as shardings, and gradients accumulated unreduced.

ZeRO (Rajbhandari et al., 2020) splits a data-parallel step's state over the data axis in three stages:
stage 1 the optimizer's state, stage 2 the gradients as well, stage 3 the parameters too. Each stage is
three `PartitionSpec`s over one mesh axis (`ZERO`, here FSDP): `{"params": ..., "grads": ..., "opt_state":
...}`, each `P()` (every device holds the whole array) or `P(ZERO)` (rows split). `zero_step(specs)` is the
step those specs describe, written per device with `jax.shard_map` so that each collective is the one the
stage needs. Each device's share of the batch runs as `MICROBATCHES` microbatches whose gradients the step
adds up before its one update, as a step too large for memory does; that is where stage 2 differs from stage 1:

- stage 0 adds up each device's whole gradient and all-reduces it once (`lax.psum`);
- stage 1 adds up whole gradients too, then reduce-scatters the sum once (`lax.psum_scatter`): each device
  gets the summed rows its optimizer state updates, with half an all-reduce's bytes;
- stage 2 reduce-scatters each microbatch's gradient in the backward pass as soon as it is made (a custom
  VJP), and adds up rows: the whole gradient never outlives its microbatch;
- stage 3 gathers each layer's parameters where the layer uses them (`lax.all_gather`), and again in the
  backward pass (remat: matmul results kept, gathered weights not); a gather's gradient is a reduce-scatter;
- Adam (Optax) updates the parameters where its state lives: a device whose state is split updates its rows,
  and updated rows are gathered again where the parameters are stored whole.

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
from jax.ad_checkpoint import checkpoint_name
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
    "MICROBATCHES",
    "zero_step",
    "state_specs",
    "place",
    "accumulate_naive",
]

ZERO = FSDP  # the one mesh axis ZeRO splits over: the batch's, and the state's
STAGE_SPECS_DP = {"params": P(), "grads": P(), "opt_state": P()}  # plain data parallelism: nothing split
OPTIMIZER = optax.adam(1e-2)
MICROBATCHES = 2  # each device's share of the batch, in microbatches: where stage 2's gradients differ from 1's


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


def _held(rows, whole):
    """`whole` in the forward pass; in the backward pass its gradient reduce-scattered over ZERO to the
    gradient of this device's `rows` (stage 2: each gradient reduced as the backward pass makes it)."""
    return whole


def _held_fwd(rows, whole):
    return whole, None


def _held_bwd(_, ct):
    return lax.psum_scatter(ct, ZERO, scatter_dimension=0, tiled=True), None


_held = jax.custom_vjp(_held)
_held.defvjp(_held_fwd, _held_bwd)

GATHERED = "zero_gathered"  # the name of a stage-3 layer's gathered parameter: never saved for the backward pass


def _gathered(rows):
    """A parameter gathered where a layer uses it, named so that remat gathers it again in the backward pass."""
    return checkpoint_name(lax.all_gather(rows, ZERO, axis=0, tiled=True), GATHERED)


def _one_grad(loss, params, layout: tuple, n: int):
    """`(x, y) -> (loss, gradient)` of one microbatch, the gradient this device's own sum where the step keeps
    gradients whole, already reduce-scattered to this device's rows where it splits them."""
    p_split, g_split, _ = layout
    if p_split and g_split:  # stage 3: each layer's parameters gathered when used, in both passes, never kept
        keep = jax.checkpoint_policies.dots_with_no_batch_dims_saveable  # matmul results kept; gathers redone
        per_layer = jax.checkpoint(lambda rows, x, y: loss(jax.tree.map(_gathered, rows), x, y), policy=keep)
        return lambda x, y: jax.value_and_grad(per_layer)(params, x, y)  # a gather's gradient: a reduce-scatter
    whole = jax.tree.map(lambda a: _to(a, p_split, False, n), params)
    if g_split:  # stage 2: each gradient reduce-scattered in the backward pass, as soon as it is made
        rows = jax.tree.map(lambda a: _to(a, p_split, True, n), params)
        held = lambda r, x, y: loss(jax.tree.map(_held, r, whole), x, y)  # noqa: E731
        return lambda x, y: jax.value_and_grad(held)(rows, x, y)
    return lambda x, y: jax.value_and_grad(loss)(whole, x, y)  # stages 0 and 1: this device's own gradient


def _grads(loss, params, x, y, layout: tuple, n: int, m: int):
    """(this device's mean loss, the mean gradient over ZERO and `m` microbatches): rows where the step splits
    the gradients or the optimizer state, else whole. `layout`: whether parameters, gradients and optimizer
    state are split. Whole gradients are added up whole over the microbatches and reduced once, after the last
    (all-reduced, or reduce-scattered to the optimizer state's rows); split ones are reduce-scattered in each
    microbatch's backward pass and added up as rows."""
    _, g_split, s_split = layout
    one = _one_grad(loss, params, layout, n)
    xs, ys = (a.reshape(m, a.shape[0] // m, *a.shape[1:]) for a in (x, y))
    value, grads = one(xs[0], ys[0])
    for k in range(1, m):
        more, more_grads = one(xs[k], ys[k])
        value, grads = value + more, jax.tree.map(jnp.add, grads, more_grads)
    if not g_split and s_split:  # stage 1: the whole gradient reduce-scattered to the optimizer state's rows
        grads = jax.tree.map(lambda g: lax.psum_scatter(g, ZERO, scatter_dimension=0, tiled=True), grads)
    elif not g_split:  # stage 0: all-reduced
        grads = jax.tree.map(lambda g: lax.psum(g, ZERO), grads)
    return value / m, jax.tree.map(lambda g: g / (n * m), grads)


def zero_step(specs: dict, mesh, loss=mlp_loss, optimizer=OPTIMIZER, microbatches: int = MICROBATCHES):
    """The data-parallel Adam step whose parameters, gradients and optimizer state are laid out as `specs`
    over ZERO: `step(params, state, x, y) -> (params, state, loss)`, the batch split over ZERO, each device's
    share in `microbatches` whose gradients the step adds up before its one update."""
    n = mesh.shape[ZERO]
    layout = tuple(_split(specs[k]) for k in ("params", "grads", "opt_state"))
    p_split, g_split, s_split = layout

    def local(params, state, x, y):
        value, grads = _grads(loss, params, x, y, layout, n, microbatches)
        grads = jax.tree.map(lambda g: _to(g, g_split or s_split, s_split, n), grads)
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
