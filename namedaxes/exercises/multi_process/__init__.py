"""Exercises of notebook 06 (`06_multi_process`): global arrays across two JAX processes.

The notebook's cluster is `namedaxes.multiprocess.get_cluster()`: 2 worker
processes with 4 simulated CPU devices each, 8 devices in all. Every worker
runs the same program: a 1-D mesh over all 8 devices (`line_mesh`), global
`jax.Array`s built from each process's own rows with
`jax.make_array_from_process_local_data`, `jax.shard_map` over that mesh, and
results read back with `jax.experimental.multihost_utils.process_allgather`.

- `local_rows(global_batch)` runs once per process: this process's share of a
  batch (an array or a dict of arrays) whose leading axis splits evenly over
  the processes. Process `i` of `p` owns the `i`-th of `p` equal blocks of rows
  (`B // p` rows each, not necessarily one row per device).
- `global_metrics(errors, mesh)`: `errors` is a global array whose rows are
  split over DEVICES of `mesh`; return `{"total", "mean", "per_process"}`
  (sum and mean of every entry, and one total per process), every value
  replicated (`out_specs=P()`), computed with `jax.shard_map` and collectives.
- `masked_step(params, batch, mesh)`: one SGD step of the course's model
  (`namedaxes.model`) on the *real* rows of a global batch whose rows are split
  over DATA_PARALLEL, `batch["mask"]` (bool) marking them: each process pads
  its share to the same length, so devices hold different numbers of real rows.

How the checks run an answer (visible): first in this kernel, on meshes of 4
and 8 of its devices while `jax.process_index()` / `process_count()` /
`local_device_count()` answer as process 0 of a smaller cluster (`AsProcess`,
e.g. 2 processes x 2 devices), so a hard-coded device or process count fails
at once; then in both worker processes on the mesh spanning them. Each check
compares with NumPy (float64) and, on a mismatch, names the plausible mistake
whose numbers it matches (a hard-coded 8, `jax.local_device_count()` where
the mesh's size belongs, padding rows counted, ...).

Grading (hidden tests, `namedaxes.grading.programs`): each answer is exported
traced as process 0 (or i) of clusters of 2 x 2, 2 x 4 and 4 x 2 devices
(`Case(..., context=...)`), on meshes of 4 and 8 devices; the grader draws the
inputs, compares outputs with the reference's, and reads communication from
the compiled program. The exported program is the one every process of such a
cluster compiles (SPMD: the same program, the processes only feed it).

Its words (every message, hint and known mistake's hint) are data in its `text.py`.
"""

from __future__ import annotations

from namedaxes.exercises import notebook_face

notebook_face(
    __name__,
    {
        "namedaxes.meshes": ("line_mesh",),
        ".metrics": ("global_metrics",),
        ".mistakes": ("known_mistakes",),
        ".rows": ("local_rows",),
        ".running": ("GRADE_IDS", "LEARNING_RATE", "LOCAL_DEVICES", "NUM_PROCESSES", "read_back", "to_global"),
        ".step": ("masked_step",),
    },
)
