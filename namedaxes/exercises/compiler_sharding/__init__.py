"""Exercises of notebook 08 (`08_compiler_sharding`): the compiler's half of named axes.

Every answer is a *global* function whose last argument is its mesh; its array
inputs arrive **already placed** on that mesh. The checks run each answer as
`jax.jit(lambda *args: fn(*args, mesh))` (`namedaxes.meshes.program`) on meshes of 8, 4 and 2
devices, and each exercise asks for something the notebook did not show verbatim:

1. `one_all_reduce_mlp(x, w1, w2, mesh)` (Auto mesh, inputs replicated): choose
   shardings (`with_sharding_constraint`, or `jax.jit`'s `in_shardings`) so that
   each device computes 1/k of the hidden layer and the compiled program has
   exactly one all-reduce and no other collective; no collective written by hand. One device's FLOPs
   (the compiled per-device program's cost analysis) are at most 1.5x the reference's: computing the
   whole hidden layer everywhere and splitting it afterwards is refused.
   The notebook shows one matmul and its communication; the layout goal for two
   layers is the student's to find.
2. `feature_correlation(x, mesh)` (Explicit 2-D mesh): the one-device correlation
   matrix, which explicit mode rejects in up to three places (a matmul whose
   contracting dimension is sharded, an outer product that would use one mesh
   axis twice, a diagonal gather); fixed with `out_sharding=` and `jax.reshard`,
   result laid out P(MODEL_PARALLEL, None). The examples stay split: the largest array one device
   materializes (the compiled per-device program's) is at most 1.5x the reference's, so gathering x
   whole and resharding the one-device result is refused.
3. `collective_matmul_rows(x, w, mesh)`: the collective matmul for the *other*
   operand: x's rows travel the ring (not w's), each step computes a different
   block of the result's rows and places it (nothing is added up); built from
   `lax.ppermute` only, no `all_gather`.

What each check looks at, in order: the answer runs (explicit mode's sharding
errors become messages that name the fix), type and dtype, shape, layout (the
result's sharding), values against NumPy, then the communication: the compiled
program's collectives (exercise 1, read from `compiled.as_text()`) or the
jaxpr's (exercise 3).

Grading contract (`namedaxes.grading.programs`). `observe` records no values: it
exports each answer with its mesh fixed on abstract inputs (shapes, float32 and
the placement the exercise states) for three meshes. The clean grader process
draws the inputs, runs the programs, compares outputs with the reference's and
reads the communication from the optimized HLO. Exercise 1 adds a structure case
(`only_collectives`): the all-reduce over MODEL_PARALLEL and nothing else.
Exercise 2's programs end in an identity `shard_map` whose `in_specs` are the
asked layout: on an Explicit mesh JAX refuses to trace it when the result is laid
out otherwise, so a wrong layout records no program. Exercise 3 adds a structure
case (`only_collectives`): `ppermute` over MODEL_PARALLEL and nothing else.

Its words (every message, hint and known mistake's hint) are data in its `text.py`.
"""

from __future__ import annotations

from namedaxes.exercises import notebook_face

notebook_face(
    __name__,
    {
        ".collective_matmul": ("collective_matmul_rows",),
        ".correlation": ("feature_correlation",),
        ".mistakes": ("known_mistakes",),
        ".mlp": ("one_all_reduce_mlp",),
        ".running": (
            "HLO_COLLECTIVES",
            "auto_line_mesh",
            "count_collectives",
            "explicit_grid_mesh",
            "explicit_line_mesh",
        ),
    },
)
