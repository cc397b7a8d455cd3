"""Exercises of notebook 11 (`11_step_anatomy`): what a training step holds and moves.

1. `mixed_train_step(params, state, window)`: notebook 10's transformer step with its matmuls in bfloat16
   and its master weights and Adam state in float32 (mixed precision). Judged on the output dtypes, on
   the dtypes of the matmuls the program asks for (the lowered program: the CPU backend computes a bf16
   matmul in float32 internally, a TPU in bf16) and on values within a stated tolerance (rtol 1e-3,
   atol 1e-5) of the reference mixed step: a float32 step differs from it by bf16's rounding of every
   gradient, far more than the tolerance.
2. `zero_specs(stage)`: ZeRO's stages 1, 2 and 3 as three `PartitionSpec`s (parameters, gradients,
   optimizer state) over ZERO. `namedaxes.zero.zero_step` builds the step the specs describe; the check
   and the grader judge that step: each device's stored bytes (input layouts, peak memory within 1.25x
   of the reference's) and its collectives (only the reference's kinds: a reduce-scatter of the
   gradients from stage 2 on).
3. `accumulate_grads(params, xs, ys)`: the mean gradient of `namedaxes.zero.mlp_loss` over m
   microbatches, the batch split over ZERO, with one reduction whatever m is (gradients left unreduced:
   `P(reduced=...)` / `P(unreduced=...)`, or `lax.pcast(..., to='varying')` and one `psum` under
   `shard_map`). The check and the grader count the reductions alike, from the exported program's types
   (`Work.reduced_bytes`: the same on every backend, where XLA on a TPU merges a loop's m all-reduces into
   one; a loop's body counted as often as it runs, so a reduction inside a `lax.scan` counts m times), within
   1.5x of one gradient's; they judge values (the sum for the mean named), the largest array one device holds
   (one microbatch's activations, not m) and, in the grader, peak memory (within 1.5x of the reference's).

Grading contract (`namedaxes.grading.programs`): every observation is exported programs, judged outside
the kernel on the grader's own inputs.
"""

from __future__ import annotations

from namedaxes.exercises import notebook_face

notebook_face(
    __name__,
    {
        ".accumulation": ("accumulate_grads",),
        ".mistakes": ("known_mistakes", "program_mistakes"),
        ".mixed": ("CHECK_CONFIG", "dot_dtypes", "mixed_train_step"),
        ".running": ("SPEC_KEYS", "STAGES"),
        ".zero_state": ("zero_specs",),
    },
)
