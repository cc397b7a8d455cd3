"""Exercises of notebook 07 (`07_collectives`): all_gather, psum_scatter, ppermute, all_to_all.

Every answer is a *global* function whose last argument is its mesh, e.g.
`ring_all_reduce(x, mesh)`; its array inputs arrive **already placed** on the
mesh, so the answer's own work is the `jax.shard_map` and its collectives. The
checks build meshes with `jax.make_mesh` (Explicit axes) over the first 8, 4 and
2 devices and run each answer through `_program(fn, mesh)`: `jax.jit` of the
answer with the mesh closed over, a function of arrays only.

What each check looks at, in order: the answer runs (its crashes become
actionable messages: `explained_here`), type and dtype (`expect_array`), shape,
values against a NumPy reference, then the communication it performs, read
from its jaxpr (`collectives`; `axis_index` and `pvary`/`pcast` move no data
and do not count). Each exercise names the collective it is about, and its
check rejects a right-valued answer without it (e.g. a `psum` where a
`psum_scatter` is asked for), saying why.

Grading contract (issue 9, `namedaxes.grading.programs`). `observe` records no
values: it exports each graded program, the answer with its mesh fixed
(`_bound`), on abstract inputs (`jax.ShapeDtypeStruct` with the hidden shape,
float32 and the placement the exercise states), for meshes of 8, 4 and 2
devices. The clean grader process draws the inputs, runs the programs, compares
their outputs with the reference's, and reads the communication from the
optimized HLO. One extra case per cell, `collectives` (`values=False`), makes it
require the reference's collectives by kind and axis, so the collective an
exercise is about cannot be swapped for another that computes the same values.

Its words (every message, hint and known mistake's hint) are data in its `text.py`.
"""

from __future__ import annotations

from namedaxes.exercises import notebook_face

notebook_face(
    __name__,
    {
        ".fsdp": ("LEARNING_RATE", "fsdp_step"),
        ".median": ("median_centered",),
        ".mistakes": ("known_mistakes",),
        ".ring": ("ring_all_reduce",),
        ".scatter": ("COLUMNS", "ROWS", "sum_scatter_columns"),
    },
)
