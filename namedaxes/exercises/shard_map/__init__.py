"""Exercises of notebook 05 (`05_shard_map`): the named-axis ideas with `jax.shard_map`.

Every answer is a *global* function that takes its mesh as an argument, e.g.
`sharded_scaled_sum(x, mesh)`. The checks build meshes with `jax.make_mesh`
(Explicit axis types, the default on this JAX) over the first k devices and
run each answer under `jax.jit` with the mesh static, so that a `shard_map`
written without `jit` is still compiled once instead of run op by op.

The exercises ask for what the notebook has not shown verbatim:

1. `sharded_scaled_sum(x, mesh)`: notebook 02's `scaled_sum` per column of a matrix whose rows
   are split over DEVICES (padded with zero rows when they do not divide by the devices): a block reduced
   along one axis only, and a replicated vector result.
2. `replica_totals(x, mesh)`: each row's total, on a 2-D mesh: a local sum over a block's columns, then a
   psum over the *other* axis than section 3's, and the out_specs of a result of lower rank.
3. `dp_train_step(params, batch, mesh)`: one SGD step on a batch whose examples carry
   weights (`batch['weight']`; 0 marks padding, so the devices hold unequal numbers
   of real examples). The step is the weighted mean over *unequal* shards, written
   per device: each device's sums, combined by a psum over DATA_PARALLEL. A plain
   `pmean` of the local losses or gradients weighs every device equally and is
   wrong; gathering the whole batch onto every device (`all_gather`) computes the
   right numbers but is not data parallelism, and is refused (visible check and
   the hidden structure case, `only_collectives`).
4. `jit_train_step(params, batch, mesh)`: the same weighted step as one global
   function under `jax.jit` on sharded inputs: no `shard_map`, no collective
   written; the compiler inserts the all-reduce.
5. `weighted_total_shard_map(w, x, mesh)`: migrate a `pmap` that maps over axis 1 on the way in and on the
   way out (`out_axes=(None, 1)`: the total once, the weighted columns stacked along axis 1)
   (`in_axes=(None, 1)`), a translation the notebook's table does not spell out.

Expected values come from NumPy and from the course's reference model,
`namedaxes.model` (the weighted step is `model.sgd_step_np` on the batch with
each example repeated `weight` times: the visible checks use whole-number
weights), never from a model restated here.

Grading contract: `observe` records no values; it exports each answer with its
mesh fixed (`_bound`) on abstract inputs for meshes of 8, 4 and 2 devices; the
clean grader draws the inputs (uniform in [0.25, 4) for the weighted steps, so no
device's weights sum to zero), compares outputs with the reference program's,
and reads the communication from the optimized HLO. `dp_train_step` adds a
structure case (`values=False, only_collectives=True`): the reference's psum
(all-reduce) over DATA_PARALLEL and no other collective.

Its words (every message, hint and known mistake's hint) are data in its `text.py`.
"""

from __future__ import annotations

from namedaxes.exercises import notebook_face

notebook_face(
    __name__,
    {
        "namedaxes.meshes": ("grid_mesh", "line_mesh"),
        ".migration": ("weighted_total_shard_map",),
        ".mistakes": ("known_mistakes",),
        ".replicas": ("replica_totals",),
        ".running": ("LEARNING_RATE", "loss_fn", "sgd_step", "weighted_total"),
        ".scaled": ("sharded_scaled_sum",),
        ".training": ("dp_train_step", "jit_train_step"),
    },
)
