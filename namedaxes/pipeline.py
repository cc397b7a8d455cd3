"""Notebook 10's transformer in pipeline stages: notebook 09's GPipe schedule on a real model.

The design. The mesh has four Explicit axes, (STAGES, DATA_PARALLEL, FSDP, MODEL_PARALLEL). The stacked
layer parameters (`STAGED`: one leading dimension per layer) are stored split over STAGES along that
dimension, `layers / stages` consecutive layers per stage, and otherwise as `transformer.RULES` says; the
embeddings and the head are stored as `RULES` says on every stage.

The loss, `loss_fn(params, window)`, in four steps:

1. the embeddings of the whole batch, outside the pipeline, where the tokens are (P(BATCH), every stage);
2. the batch split into `microbatches` (microbatch i: rows i, i + m, ..., so each data group keeps its
   share of every microbatch);
3. `jax.shard_map`, manual over STAGES and DATA_PARALLEL (`axis_names=`): a device sees its stage's layers
   and its data group's share of each microbatch, while FSDP and MODEL_PARALLEL stay Explicit, so the very
   same `transformer.block` runs inside with its FSDP gathers and tensor all-reduces (`batch=FSDP`: the
   batch axis left to name). In it, `gpipe` runs notebook 09's schedule as one `lax.fori_loop` of
   m + k - 1 steps (k stages, m microbatches): stage 0 takes microbatch t, every stage applies its layers,
   the last stage keeps the microbatch that leaves it (t - (k - 1)), and `lax.ppermute` hands the
   activations on to the next stage. After the loop the last stage computes the loss of all it kept (the
   head once, not in every step: the loop's body stays one block of layers, which also compiles faster).
   Every device runs the same program (SPMD), so a stage also computes in the steps where its result is
   not used (the bubble), and every stage computes a loss: `jnp.where` keeps the last stage's;
4. that loss, summed over STAGES and DATA_PARALLEL (`lax.psum` of a scalar) and averaged over the groups.

Why DATA_PARALLEL is manual too: with only STAGES manual, jax 0.10 gathers the batch-split activations the
loop saves for its backward pass over the data axes (correct values, every group's activations on every
device); jax 0.12 keeps them split. Manual over both, the program moves the same bytes on both lines.

Microbatches of equal size make the mean of their means the batch's mean, so the loss (and, through
`jax.grad`, the gradients) equal the unpipelined model's up to float rounding. `jax.grad` runs the
schedule backwards (the transpose of a `ppermute` is the `ppermute` the other way); the gradients of what
every device receives whole (the stage's layers over DATA_PARALLEL, the head over both axes) are summed
by `shard_map`'s transpose. The optimizer is the transformer's (`transformer.OPTIMIZER`): element by
element, each shard updated where it is stored.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax import lax
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from .axes import DATA_PARALLEL, FSDP, MODEL_PARALLEL, STAGES
from .transformer import OPTIMIZER, RULES, block, cross_entropy, embed, logits_of

__all__ = [
    "MICROBATCHES",
    "STAGED",
    "STAGE_RULES",
    "stage_mesh",
    "place",
    "gpipe",
    "loss_fn",
    "train_step",
    "schedule",
    "bubble",
]

MICROBATCHES = 4  # the batch is split into this many microbatches
STAGED = ("norm1", "qkv", "out", "norm2", "up", "down")  # the stacked layers: split over STAGES
HEAD = ("final_norm", "unembed")  # what the last stage needs besides its layers
STAGE_RULES = {  # RULES, with the layers' leading dimension split over STAGES
    name: P(STAGES, *spec[1:]) if name in STAGED else spec for name, spec in RULES.items()
}


def stage_mesh(stages: int, data: int, fsdp: int, tensor: int):
    """A mesh (STAGES, DATA_PARALLEL, FSDP, MODEL_PARALLEL) of Explicit axes over the first devices."""
    shape = (stages, data, fsdp, tensor)
    return jax.make_mesh(
        shape,
        (STAGES, DATA_PARALLEL, FSDP, MODEL_PARALLEL),
        axis_types=(AxisType.Explicit,) * 4,
        devices=jax.devices()[: math.prod(shape)],
    )


def place(tree: dict, mesh) -> dict:
    """Parameters stored on `mesh` as `STAGE_RULES` says: each stage holds its layers."""
    return {name: jax.device_put(a, NamedSharding(mesh, STAGE_RULES[name])) for name, a in tree.items()}


def gpipe(params: dict, micro, targets):
    """One device's part (inside `shard_map`, manual over STAGES and DATA_PARALLEL): its stage's layers applied
    to its share of the microbatches `micro` (m, b, seq, d_model) as they pass; the mean loss of what leaves
    the last stage against `targets` (m, b, seq), the same on every device."""
    k, stage, m = lax.axis_size(STAGES), lax.axis_index(STAGES), micro.shape[0]
    # a data group's share, split over FSDP as the layers' results are
    micro, targets = jax.reshard(micro, P(None, FSDP)), jax.reshard(targets, P(None, FSDP))

    def step(t, carry):
        state, outputs = carry
        state = jnp.where(stage == 0, micro[jnp.minimum(t, m - 1)], state)  # stage 0 takes microbatch t
        for layer in range(params["qkv"].shape[0]):  # this stage's layers
            state = block(params, layer, state, batch=FSDP)
        leaving = jnp.maximum(t - (k - 1), 0)  # what leaves the last stage (before step k - 1: slot 0, rewritten)
        outputs = lax.dynamic_update_index_in_dim(outputs, state, leaving, 0)
        return lax.ppermute(state, STAGES, [(s, s + 1) for s in range(k - 1)]), outputs

    start = lax.pcast((jnp.zeros_like(micro[0]), jnp.zeros_like(micro)), STAGES, to="varying")  # as in notebook 09
    _, outputs = lax.fori_loop(0, m + k - 1, step, start)
    loss = jnp.where(stage == k - 1, cross_entropy(logits_of(params, outputs), targets), 0.0)  # the last stage's
    return lax.psum(loss, (STAGES, DATA_PARALLEL)) / lax.axis_size(DATA_PARALLEL)


def _split(x, microbatches: int):
    """(batch, ...) -> (microbatches, batch / microbatches, ...): microbatch i holds rows i, i + m, ..., so
    each data group keeps its share of every microbatch."""
    split = x.reshape(x.shape[0] // microbatches, microbatches, *x.shape[1:])
    return jnp.moveaxis(split, 1, 0)


def loss_fn(params: dict, window, microbatches: int = MICROBATCHES):
    """`transformer.loss_fn`, its layers run as a GPipe pipeline over STAGES (the current mesh's)."""
    micro = _split(embed(params, window[:, :-1]), microbatches)
    targets = _split(window[:, 1:], microbatches)
    local = {name: params[name] for name in STAGED + HEAD}
    specs = {name: P(STAGES) if name in STAGED else P() for name in local}
    split = P(None, DATA_PARALLEL)  # each data group its share of every microbatch
    pipeline = jax.shard_map(gpipe, in_specs=(specs, split, split), out_specs=P(), axis_names={STAGES, DATA_PARALLEL})
    return pipeline(local, micro, targets)


def train_step(params, state, window):
    """`transformer.train_step` with the pipelined loss: (params, state, loss)."""
    loss, grads = jax.value_and_grad(loss_fn)(params, window)
    updates, state = OPTIMIZER.update(grads, state, params)
    return optax.apply_updates(params, updates), state, loss


def schedule(stages: int, microbatches: int) -> np.ndarray:
    """GPipe's forward schedule, (stages, microbatches + stages - 1): the microbatch each stage works on in
    each step, -1 where it is idle."""
    grid = np.arange(microbatches + stages - 1)[None, :] - np.arange(stages)[:, None]
    return np.where((grid >= 0) & (grid < microbatches), grid, -1)


def bubble(stages: int, microbatches: int) -> float:
    """The idle share of the stage-steps: (k - 1) / (m + k - 1)."""
    return (stages - 1) / (microbatches + stages - 1)
