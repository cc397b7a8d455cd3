"""The words of notebook 09's checks as data: sentences (TEXT), hints (HINTS), known mistakes' hints (MISTAKE_HINTS)."""

from __future__ import annotations

from namedaxes.exercises import notebook_words

# ---------------------------------------------------------------- every student-facing string
TEXT = {
    # crashes, any exercise
    "in_specs": (
        '`{name}` failed with JAX\'s error "{first}". The inputs are already placed: give `jax.shard_map` '
        "the specs they were placed with (the exercise states them), and use the `mesh` argument."
    ),
    "varying_output": (
        '`{name}` failed with JAX\'s error "{first}": an `out_specs` says a result is the same on every '
        "device, but JAX types it as varying over the mesh axis. Make it the same everywhere with a "
        "collective, or name the axis in that `out_specs`."
    ),
    "ring_size": (
        '`{name}` failed with JAX\'s error "{first}": the pairs of a `ppermute` name more devices than the '
        "mesh has. The check runs your function on meshes of 8, 4 and 2 devices: read the number of devices "
        "from the mesh (`mesh.shape[...]`), not from a global of the notebook."
    ),
    "carry_varying": (
        "`{name}` failed with JAX's error \"{first}\": a loop's carry starts the same on every device (a "
        "`jnp.zeros`, say) but comes out of the body varying over the mesh axis. Cast the initial carry first: "
        "`lax.pcast(init, (axis,), to='varying')`."
    ),
    "mesh_global": (
        '`{name}` failed with JAX\'s error "{first}": its `jax.shard_map` runs on another mesh than the one its '
        "inputs are placed on. Use the `mesh` argument (the check calls your function with meshes of 8, 4 and 2 "
        "devices), not a mesh of the notebook such as `{mesh_global}`."
    ),
    "global_count": (
        "It gives the right values on {right} devices but not on {k}: does it take the number of devices from "
        "a global of the notebook such as `{glob}` (= {right})? Read it from the `mesh` argument: "
        "`mesh.shape[{axis}]`."
    ),
    "unbound": (
        "`{name}` calls a collective over '{axis}', but no `jax.shard_map` binds that axis there (JAX says: "
        '"{first}"). Collectives run inside the function you give `jax.shard_map`, over its mesh\'s axes.'
    ),
    # results, any exercise
    "result_type": "`{name}` should return a `jax.Array`, but it returned a `{type}` {where}.",
    "shape": "`{name}` should return shape {want} {where}, but it returned shape {got}.",
    "values": "`{name}` has the wrong values {where}: expected {want}, got {got}. {hint}",
    "values_row": (
        "`{name}` has the wrong values {where}: row {row} (the first that differs) should be {want}, but it is "
        "{got}. {hint}"
    ),
    "where_mesh": "(mesh {mesh}, {shapes})",
    "layout": "`{name}` returns the right shape {where}, but laid out as {got}; the exercise asks for {want}.",
    "layout_replicated": "P() (replicated: the same whole array on every device)",
    "seen_nothing": "no collective at all",
    "seen_join": ", ",
    "other_collectives": (
        "`{name}` returns the right values, but its compiled program on {mesh} also performs {seen}. The "
        "exercise allows {allowed} only."
    ),
    "no_collective": (
        "`{name}` returns the right values, but its compiled program on {mesh} has no {want}: {seen}. {why}"
    ),
    "work_largest": (
        "`{name}` returns the right values, but on {mesh} one device materializes an array of {got} bytes: "
        "{ratio}× the reference's largest ({want} bytes, read from the compiled per-device program; the "
        "exercise allows {factor}×). {why}"
    ),
    "work_flops": (
        "`{name}` returns the right values, but on {mesh} one device computes {ratio}× the reference's FLOPs "
        "({got} against {want}, read from the compiled per-device program; the exercise allows {factor}×). {why}"
    ),
    "work_sent": (
        "`{name}` returns the right values, but on {mesh} one device receives {got} bytes through its "
        "collectives in one call: {ratio}× the reference's {want} (each collective counted as often as it runs, "
        "read from the compiled per-device program; the exercise allows {factor}×). {why}"
    ),
    # 1. pipeline_loss
    "pipe_whole_model": (
        "`{name}` returns the right values, but its compiled program on {mesh} performs {seen}: the stages' "
        "parameters are gathered, so every device holds the whole model. Each device should hold only its "
        "stage's `w` and `b` (as placed, `P(STAGES)`) and pass activations on with `lax.ppermute`."
    ),
    "pipe_gathers_activations": (
        "`{name}` returns the right values, but its compiled program on {mesh} performs {seen}: every stage "
        "collects the activations of every other stage. Pass a microbatch's activations to the next stage "
        "only, with `lax.ppermute`, compute the loss where the outputs are (the last stage), and make it the "
        "same on every device with one `lax.psum`."
    ),
    "pipe_holds_w": (
        "Every device holds all of `w` ({whole} bytes): the whole model on every device. Each device should "
        "keep only its stage's `w` and `b` (as placed, `P(STAGES)`) and pass activations on with `lax.ppermute`."
    ),
    "pipe_large": (
        "Each device should hold its stage's parameters and the activations of one microbatch at a time (the "
        "outputs of every microbatch, the size of the batch, at most)."
    ),
    "pipe_no_microbatches": (
        "Its ppermutes each send {sent} bytes, the whole batch's activations ({runs} of them): without "
        "microbatches the stages work one after another, and each device idles (k - 1)/k of the time. Split "
        "the batch into MICROBATCHES and send one microbatch at a time: GPipe's schedule runs m + k - 2 = "
        "{want_runs} ppermutes of {want_sent} bytes each."
    ),
    "pipe_flops": "In each step a device should apply only its own stage, to one microbatch.",
    "pipe_targets": (
        "The outputs were compared with another microbatch's targets: in step t the last stage finishes "
        "microbatch t - (k - 1), the k - 1 stages before it delay it, so its targets are `ys[t - (k - 1)]`."
    ),
    "pipe_no_ppermute_why": "The activations should travel from stage to stage with `lax.ppermute`.",
    "pipe_short": (
        "That is the loss without the last microbatch(es): with k stages and m microbatches the schedule "
        "takes m + k - 1 steps before the last microbatch leaves the last stage."
    ),
    "pipe_sum": "That is the sum of the squared errors; the mean divides by every entry of `y`.",
    "pipe_generic": (
        "Compare with the sequential model: `h = tanh(h @ w[s] + b[s])` for s = 0 .. k - 1, then the mean of (h - y)²."
    ),
    "pipe_grad_values": (
        "`{name}` returns the right loss, but its gradient (`jax.grad` with respect to `params`) differs from "
        "the sequential model's {where}: expected {want}, got {got}. A value that `jax.grad` cannot see "
        "through (a `lax.stop_gradient`, a value computed outside) breaks the backward pass."
    ),
    # 2. moe_layer
    "moe_gathers": (
        "`{name}` returns the right values, but its compiled program on {mesh} performs {seen}: a device "
        "gathers what should stay split (every expert's weights, or every device's tokens). Each device "
        "keeps its one expert and its own tokens; tokens travel to their expert and back with "
        "`lax.all_to_all`."
    ),
    "moe_no_all_to_all_why": "Tokens should travel to their expert's device and back with `lax.all_to_all`.",
    "moe_no_capacity": (
        "These are the outputs without dropping: every token was kept. An expert takes at most CAPACITY "
        "tokens from each device (the first ones, in order); the others get output 0."
    ),
    "moe_no_gate": (
        "The experts' outputs are right but not scaled: multiply each by its token's gate (its router probability)."
    ),
    "moe_global_capacity": (
        "The capacity was counted over all tokens; here it is per device: each device sends an expert at "
        "most CAPACITY of its own tokens."
    ),
    "moe_holds_w": (
        "Its all_to_all brings every device all of `w` ({whole} bytes): the experts' weights travel and the "
        "tokens stay. Keep each expert's weights on its device; send the tokens to their expert and back with "
        "`lax.all_to_all`."
    ),
    "moe_tokens_everywhere": (
        "Its all_to_all brings every device the tokens of every device ({whole} bytes): the tokens travel, but "
        "each one to every expert, not only to its own. Route first: send each expert only the tokens it takes "
        "(at most CAPACITY of each device), and its outputs back with the same `lax.all_to_all`."
    ),
    "moe_large": (
        "Every device holds or computes every expert's part. Keep each expert on its device and send it only "
        "the tokens it takes (at most CAPACITY of each device)."
    ),
    "moe_flops": "Each expert should apply its weights only to the tokens it takes (at most CAPACITY of each device).",
    "moe_generic": (
        "Compare with the dense layer: `y[t] = gate[t] * relu(x[t] @ w[expert[t]])` for the tokens kept, 0 for "
        "the dropped ones."
    ),
    # 3. causal_ring_attention
    "ring_gathers": (
        "`{name}` returns the right values, but its compiled program on {mesh} performs {seen}: a device "
        "assembles the whole sequence's keys and values. Keep them split; pass the blocks around the ring "
        "with `lax.ppermute`, one block at a time."
    ),
    "ring_no_ppermute_why": "The key and value blocks should travel the ring with `lax.ppermute`.",
    "ring_no_mask": (
        "That is attention without the causal mask: a query at position p may only see keys at positions <= p."
    ),
    "ring_local_mask": (
        "That is a mask by positions inside each block: every block was masked as if it were the device's "
        "own. Compare *global* positions: block j's keys start at j * block, and at ring step s the device "
        "holds another device's block."
    ),
    "ring_per_block": (
        "Each block's softmax was normalized on its own and the results added: the softmax is over all "
        "keys. Keep a running maximum and sum (online softmax) and divide once, at the end."
    ),
    "ring_short": (
        "The last query block misses a key block: the ring is one step short. After k - 1 sends every device "
        "has seen all k blocks (its own at step 0)."
    ),
    "ring_holds_all": (
        "Every device assembles the whole sequence's keys or values ({whole} bytes each): fold each block into "
        "the online softmax as it passes, and keep none of the blocks already seen."
    ),
    "ring_holds_queries": (
        "The queries travel the ring, but every device holds an array the size of the whole sequence's ({whole} "
        "bytes): the queries, or the partial results, of every block. Let each query block carry its own running "
        "maximum, sum and output, fold the device's keys and values into them as it passes, and keep nothing of "
        "the blocks already seen."
    ),
    "ring_large": "A device should hold one block of keys and values, and one block of scores, at a time.",
    "ring_flops": "Each device should score its queries against each block of keys once.",
    "ring_direction": (
        "The blocks travel the ring the other way from the one the mask assumes: with the pairs (i, i - 1), at "
        "step s device i holds block (i + s) mod k, not (i - s) mod k. Send to the next device, "
        "`(i, (i + 1) % k)`, or compute the block's positions from the way you send."
    ),
    "ring_strict_mask": (
        "That is a strict mask (key < query): a query also sees its own position (key <= query). With the strict "
        "mask the first query of each block sees no key of the device's own block, its running maximum stays "
        "-inf, and exp(-inf - (-inf)) is NaN."
    ),
    "ring_nan": (
        "Some rows are NaN: a block whose scores were all masked met a running maximum still at -inf, and "
        "exp(-inf - (-inf)) is NaN. Start from the device's own block (step 0: its diagonal is never masked), "
        "or guard the update where the maximum is -inf."
    ),
    "ring_generic": "Compare with causal attention on one device: softmax(q k^T / sqrt(h), masked to keys <= query) v.",
}

HINTS = {
    "moe_layer": [
        "Section 2's `dispatch_to_experts` brought each expert its tokens. What does the expert send back, "
        "to whom, and which collective undoes an `all_to_all`?",
        "Inside `jax.shard_map` (in_specs `P(EXPERTS)`, `P()`, `P(EXPERTS)`): route with `route(x, router, k, "
        "CAPACITY)`, send `einsum('tec,td->ecd', dispatch, x)` with `lax.all_to_all(..., EXPERTS, 0, 0, "
        "tiled=True)` and apply `relu(received @ w[0])`.",
        "Send the expert's outputs back with the same `all_to_all`, then `einsum('tec,ecd->td', dispatch, "
        "back) * gate[:, None]`: a dropped token's row of `dispatch` is all zeros, so its output is 0.",
    ],
    "pipeline_loss": [
        "Start from section 1's `gpipe_forward`: what changes when a stage adds its bias, when the schedule "
        "starts from the whole batch `x`, and when the answer is a loss rather than the last stage's outputs?",
        "Inside `jax.shard_map` (in_specs `P(STAGES)` for both parameters, `P()` for x and y) split x and y "
        "into MICROBATCHES with `reshape`. In step t (t = 0 .. m + k - 2) stage 0 takes microbatch t, "
        "every stage applies `tanh(state @ w + b)`, and the last stage holds microbatch t - (k - 1).",
        "Add up only the last stage's squared errors (`jnp.where` on `lax.axis_index(STAGES)`); one collective "
        "over STAGES then makes the loss the same on every device, as `out_specs=P()` asks, and dividing by "
        "`y.size` makes it a mean. `jax.grad` needs nothing more.",
    ],
    "causal_ring_attention": [
        "Section 3 showed the ring without a mask, and the causal mask on one device. At ring step s, which "
        "device's key block does device i hold, and at which global positions do its keys sit?",
        "With the ring i -> i + 1, in step s device i holds block j = (i - s) mod k. Its queries sit at "
        "i * block + arange(block), the keys at j * block + arange(block); mask scores where key > query "
        "with -inf before the online-softmax update.",
        "Step 0 is the device's own block, whose diagonal is never masked, so the running maximum is finite "
        "from then on: later blocks that are all masked add exp(-inf) = 0. Divide by the running sum once, "
        "after the k steps.",
    ],
}
MISTAKE_HINTS = {
    "moe_layer": {"moe_no_capacity": 2, "moe_no_gate": 3, "moe_global_capacity": 2},
    "pipeline_loss": {"pipe_short": 2, "pipe_targets": 2, "pipe_sum": 3},
    "causal_ring_attention": {
        "ring_no_mask": 2,
        "ring_direction": 2,
        "ring_local_mask": 2,
        "ring_per_block": 3,
        "ring_short": 3,
        "ring_strict_mask": 2,
    },
}
TEXT, say = notebook_words(TEXT, HINTS, MISTAKE_HINTS)  # checked; each lookup in the kernel's language
