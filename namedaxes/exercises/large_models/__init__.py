"""Exercises of notebook 09 (`09_large_models`): how large models are split over devices.

Every answer is a *global* function whose last argument is its mesh (a 1-D Explicit mesh over 8, 4 or 2
devices); its array inputs arrive **already placed** on that mesh. The checks run each answer as
`jax.jit(lambda *args: fn(*args, mesh))`, and each exercise asks for something the notebook did not show
verbatim:

1. `pipeline_loss(params, x, y, mesh)`: the notebook's GPipe forward pass had one weight matrix per stage
   and returned the last stage's outputs; here each stage is an affine layer with a bias
   (`tanh(h @ w + b)`), the answer splits the batch into `MICROBATCHES` microbatches itself, and returns
   the mean squared error, whole on every device, computed where the outputs are (the last stage). Its
   gradient (`jax.grad`) must equal the sequential model's, laid out like the parameters.
2. `moe_layer(x, router, w, mesh)`: the notebook's dispatch sent tokens to their experts; here the whole
   layer: dispatch, the expert's `relu`, the combine back to the tokens' devices, the gate applied,
   and tokens over `CAPACITY` dropped (zero output).
3. `causal_ring_attention(q, k, v, mesh)`: the notebook's ring attention had no mask and its blockwise
   causal attention ran on one device; here both at once: each device's queries against the key blocks
   that travel the ring, masked by *global* positions.

What each check looks at, in order: the answer runs (JAX's errors become messages that name the fix: a
mesh of the notebook used for the `mesh` argument, say), type and dtype, shape, layout (the result's
sharding), values against NumPy (with a diagnosis of the usual mistakes, a device count read from a
notebook global among them), then how the work was done, read from the optimized per-device program
compiled as the grader compiles it (`namedaxes.judging.work_of`, `COMPILER_OPTIONS`): its collectives
(which kinds, over which axis; gathering the stages' parameters, the experts' weights or the sequence's
keys and values is refused by name), and each device's share of the work on every mesh: the largest
array it materializes and its FLOPs, each within a stated factor of the reference's (`_PIPE_WORK`,
`_MOE_WORK`, `_RING_WORK`). Where the excess has a known cause the message names it from the program's
schedule (`namedaxes.judging.collective_sends`): the whole batch sent at once (no microbatches), every
stage's `w` or every expert's weights on every device, the whole sequence's keys assembled.

Grading contract (`namedaxes.grading.programs`): `observe` exports each answer with its mesh fixed on
abstract inputs for three meshes (values compared with the reference's on the grader's own inputs, the
results' layouts, and each device's work: `Case(work=...)` with the same factors as the visible check),
exercise 1 adds its derivative along a drawn direction on 8 devices (`jax.jvp`), and each exercise a
structure case (`only_collectives`): the reference's collectives over the exercise's axis and nothing
else.

Its words (every message, hint and known mistake's hint) are data in its `text.py`.
"""

from __future__ import annotations

from namedaxes.exercises import notebook_face

notebook_face(
    __name__,
    {
        ".experts": ("moe_layer",),
        ".gpipe": ("pipeline_loss",),
        ".mistakes": ("known_mistakes",),
        ".ring_attention": ("causal_ring_attention",),
        ".running": ("CAPACITY", "MICROBATCHES", "expert_line_mesh", "sequence_line_mesh", "stage_line_mesh"),
    },
)
