"""Exercises of notebook 03 (nested axes): checks, hints and observations.

Two named axes share the 8 devices as a 2 x 4 grid: `DATA_SHARDS` (outer,
rows) and `MODEL_REPLICAS` (inner, columns). In the notebook's data-parallel x
tensor-parallel step, device (i, j) holds data shard i and model shard j: the
devices of a row share their data and hold *different* shards of the weights,
the devices of a column hold *copies* (replicas) of the same weight shard and
different data. The constant keeps the seed's name `model_replicas`; the
notebook says what it means.

- `grid_sums` and `device_numbers` are *per-device* functions, checked in the
  pmap-over-vmap form `jax.pmap(jax.vmap(fn, axis_name=MODEL_REPLICAS),
  axis_name=DATA_SHARDS)` on inputs of shape (rows, columns, ...), and graded
  with the same function run once per device of real grids (`shard_map`).
- `row_normalize(x, mesh)` and `tp_dp_step(w, batch, mesh)` are global
  functions that use `jax.shard_map` over a 2-D mesh (Auto axis types, so plain
  arrays go in). Their checks and observations run on several mesh shapes
  (2 x 4 and 4 x 2 at least), so a hard-coded device count cannot pass. The
  checks run them under `jax.jit` with the mesh closed over, as the grader's
  exported programs do (an eager `shard_map` costs seconds per call here).

Checks go type -> shape/dtype -> value -> structure, and when a value is wrong
they say which plausible mistake (a reduction over the other axis, a `pmean`
for a `psum`, an unaveraged or over-counted gradient) it matches.

Grading contract (`namedaxes.grading.programs`): `observe` records no values;
it exports each graded program on abstract inputs and the grader draws the
inputs, runs the programs and compares them with the reference's; the
communication is read from the compiled program. `tp_dp_step` adds a
`values=False` case so that its psums (partial products over MODEL_REPLICAS,
gradients over DATA_SHARDS) cannot be swapped for gathering the whole model.

One judge (issue 16): after their values, the visible checks of `row_normalize` and
`tp_dp_step` judge the answer's exported program on their own inputs with the grader's
steps (`checking.examined`, i.e. `namedaxes.judging`): communication read from the
optimized HLO and counted only when it reaches the result, each per-device region's
inputs split at least as the exercise's specs split them (`region_difference`), and the
result left where the exercise's lives (`placed_layout`). So an answer that hands every
device all of w, or whole rows, or adds a collective multiplied by zero, fails both.

Its words (every message, hint and known mistake's hint) are data in its `text.py`.
"""

from __future__ import annotations

from namedaxes.exercises import notebook_face

notebook_face(
    __name__,
    {
        "namedaxes.model": ("LEARNING_RATE",),
        ".mistakes": ("known_mistakes",),
        ".normalize": ("row_normalize",),
        ".numbers": ("device_numbers",),
        ".running": ("auto_grid_mesh", "grid_map"),
        ".sums": ("grid_sums",),
        ".tp_dp": ("EXAMPLES", "FEATURES", "tp_dp_step", "tp_dp_step_np"),
    },
)
