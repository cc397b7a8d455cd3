"""The words of notebook 11's checks as data: sentences (TEXT), hints (HINTS), known mistakes' hints (MISTAKE_HINTS)."""

from __future__ import annotations

from namedaxes.exercises import notebook_words

TEXT = {
    "result_tuple": "`{name}` should return {want}; it returned {got}.",
    "dtype": ("`{name}` returns {what} as {got}: {why}"),
    "dtype_master": "mixed precision keeps the master weights in float32 (bf16 would round Adam's small updates away).",
    "dtype_state": "Adam's moments stay in float32: they are sums of many small gradients.",
    "dtype_loss": "report the loss in float32.",
    "mixed_fp32_dots": (
        "`{name}` returns float32 results, but {count} of its {total} matmuls multiply float32 arrays: cast "
        "the parameters to bfloat16 before the forward pass (`a.astype(jnp.bfloat16)`), so that every matmul "
        "runs in bf16."
    ),
    "mixed_other_dtype": (
        "`{name}` multiplies {dtype} arrays: the exercise asks for bfloat16 (bf16: float32's exponent, 7 stored "
        "bits of mantissa), which needs no loss scaling."
    ),
    "mixed_logits_bf16": (
        "`{name}` computes the loss's softmax on bf16 logits: cast the logits to float32 before "
        "`tm.cross_entropy` (`logits.astype(jnp.float32)`). The log-softmax sums exponentials over the whole "
        "vocabulary, and bf16's 7 stored mantissa bits (a relative error up to 2⁻⁸ ≈ 0.39 %) would round "
        "that sum and the loss; the matmuls stay bf16."
    ),
    "mixed_values": (
        "`{name}` has the wrong values (mesh {mesh}): {what} differs from the mixed-precision reference by up to "
        "{diff} (allowed: rtol 1e-3, atol 1e-5). {hint}"
    ),
    "mixed_hint": (
        "Compute the loss of the bf16 copy, take its gradient with respect to the float32 parameters "
        "(the cast's gradient casts back), and let Adam update the float32 parameters and state."
    ),
    # 2. zero_specs
    "specs_type": (
        "`zero_specs({stage})` should return a dict with the keys 'params', 'grads' and 'opt_state', each a "
        "`PartitionSpec`; it returned {got}."
    ),
    "specs_value": (
        "`zero_specs({stage})['{key}']` is {got}: each array is either whole on every device, `P()`, or split "
        "by rows over ZERO, `P(ZERO)`."
    ),
    "specs_stored": (
        "`zero_specs({stage})` stores {key} {got} on each device, but ZeRO stage {stage} stores them {want}. {why}"
    ),
    "stored_whole": "whole",
    "stored_split": "split (1/{n} of the rows)",
    "why_opt_state": (
        "Every stage splits the optimizer state: Adam's two moments are 8 of the 12 bytes a parameter "
        "costs, the first thing worth splitting."
    ),
    "why_grads_1": (
        "Stage 1 keeps the gradients whole: each device adds up its microbatches' gradients whole, and one "
        "reduce-scatter after the last gives it the sum of the rows it updates."
    ),
    "why_grads_2": (
        "From stage 2 on the gradients are split too: each microbatch's gradient is reduce-scattered in the "
        "backward pass as soon as it is made, so a device adds up only the rows it updates."
    ),
    "why_params_12": "Stages 1 and 2 keep the parameters whole: the updated rows are all-gathered after the update.",
    "why_params_3": (
        "Stage 3 stores the parameters split as well, and gathers each layer's where the layer uses them, in the "
        "forward pass and again in the backward pass."
    ),
    "specs_collectives": (
        "`zero_specs({stage})` gives a step that performs {seen}; ZeRO stage {stage} performs {want}."
    ),
    # 3. accumulate_grads
    "acc_type": (
        "`{name}` should return a dict of gradients with the keys {keys}, each a `jax.Array`; it returned {got}."
    ),
    "acc_values": (
        "`{name}` has the wrong values for m = {m}: `{key}` should be the mean gradient over the microbatches, "
        "{want}, but it is {got}. {hint}"
    ),
    "acc_sum_hint": "That is the sum over the microbatches: divide by m.",
    "acc_generic": "Compare with `zr.accumulate_naive` on the same inputs.",
    "acc_layout": (
        "`{name}` returns `{key}` laid out as {got} for m = {m}: the mean gradient should be whole on every "
        "device (`P()`), reduced once at the end."
    ),
    "acc_count": (
        "`{name}` returns the right mean gradient, but for m = {m} its program reduces {count} gradients' worth "
        "over ZERO ({moved:,} bytes of reduced results on each device, read from the types of its values, each "
        "counted as often as it runs; a gradient is {grad:,}): each gradient comes back whole, so each is reduced "
        "as it is made, however a compiler later merges the all-reduces. Leave each microbatch's gradient "
        "unreduced, add them, and reduce once."
    ),
    "acc_in_loop": (
        "`{name}` returns the right mean gradient, but its program reduces inside a loop's body "
        "(`lax.scan` or `lax.fori_loop`): once per microbatch, {count} gradients' worth for m = {m}, read from the "
        "types of its values. Accumulate the unreduced gradients in the loop and reduce once after it."
    ),
    "acc_one_batch": (
        "`{name}` returns the right mean gradient with one reduction, but one device materializes an array of "
        "{got} bytes, {ratio}× the reference's largest ({want} bytes: one microbatch's hidden activations; read "
        "from the compiled per-device program for m = {m} microbatches of {batch} examples, d = {d}, hidden = "
        "{hidden}, where at most {factor}× is allowed): the microbatches are run as one batch, and every "
        "microbatch's activations are held at once. Take one microbatch's gradient at a time and add them."
    ),
    "acc_shard_map": (
        "`{name}` returns the right mean gradient, but it is written per device with `jax.shard_map` (over {axes}). "
        "This exercise is the Explicit-axes half: mark the parameters `P(reduced={{ZERO}})` with `jax.reshard` and "
        "reduce the sum with `jax.reshard(total, P())`; the compiler writes the all-reduce."
    ),
    "acc_in_loop_run": (
        "`{name}` returns the right mean gradient, but its program reduces inside a loop's body: once per "
        "microbatch, {count} gradients' worth for m = {m}, read from the types of its values, the loop counted by "
        "running it on this check's inputs (only its data decide how often it runs). Accumulate the unreduced "
        "gradients in the loop and reduce once after it."
    ),
    "acc_loop_unknown": (
        "`{name}` returns the right mean gradient, but for m = {m} its program reduces over ZERO inside a loop "
        "whose runs only its data decide, and running it to count them failed, so how much it reduces is unknown. "
        "Accumulate the unreduced gradients in the loop and reduce once after it."
    ),
    "acc_no_reduction": (
        "`{name}` returns the right values, but its program reduces nothing over ZERO for m = {m}: no gradient "
        "is reduced, and no value of it is typed unreduced and then resharded whole."
    ),
}

HINTS = {
    "accumulate_grads": [
        "`zr.accumulate_naive` reduces each microbatch's gradient as soon as it is made: m reductions. Where "
        "does JAX put that reduction, and how do you tell it to wait?",
        "The gradient of a replicated parameter is reduced because the parameter is replicated. Mark the "
        "parameters `reduced` over ZERO (`jax.reshard(w, P(reduced={ZERO}))`): their gradients come back "
        "`unreduced`, one partial sum per device, with no communication.",
        "Add the m unreduced gradients (the first one starts the sum), then `jax.reshard(total, P())`: one "
        "all-reduce. Divide by m.",
    ],
    "mixed_train_step": [
        "Which arrays must stay float32 (the ones the step returns), and which can be bfloat16 (the ones the "
        "forward and backward passes multiply)?",
        "Inside the loss, cast a bf16 copy of every parameter (`jax.tree.map` with `.astype`), run `tm.forward` on "
        "the copy, and cast the logits to float32 before `tm.cross_entropy`.",
        "Differentiate that loss with respect to the float32 `params` (`jax.value_and_grad`): the cast's gradient "
        "is float32. The rest is `tm.train_step`'s: Adam's update of the float32 parameters and state.",
    ],
    "zero_specs": [
        "Start from plain data parallelism, `zr.STAGE_SPECS_DP`: everything whole. Each stage splits one more "
        "of the three.",
        "In which order? The optimizer state is the largest (two moments per parameter), then the gradients, "
        "then the parameters, which the forward pass needs whole.",
        "From some stage s on, a key is split, before it whole: `P(ZERO) if stage >= s else P()`. Hint 2's order "
        "gives each key its s; the optimizer state's is 1.",
    ],
}
MISTAKE_HINTS = {
    "mixed_train_step": {"mixed_fp32_dots": 2, "mixed_other_dtype": 2},
    "accumulate_grads": {"acc_sum_hint": 3},
}
TEXT, say = notebook_words(TEXT, HINTS, MISTAKE_HINTS)  # checked; each lookup in the kernel's language
