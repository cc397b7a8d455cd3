"""The words of notebook 07's checks as data: sentences (TEXT), hints (HINTS), known mistakes' hints (MISTAKE_HINTS)."""

from __future__ import annotations

from namedaxes.exercises import notebook_words

# ---------------------------------------------------------------- every student-facing string
TEXT = {
    # crashes, any exercise
    "empty_assertion": (
        "`{name}` stopped with an empty AssertionError from inside JAX. On this JAX that is what a "
        "collective inside `jax.shard_map` raises when its axis name is not an axis of the mesh, e.g. a "
        "typo such as 'device'. Use the course's constants (`DEVICES`, `DATA_PARALLEL`).{axes}"
    ),
    "unbound": (
        "`{name}` calls a collective over '{axis}' where no mesh axis of that name is bound (JAX says: "
        '"{first}"). Collectives work inside the function you give `jax.shard_map`, over the axis '
        "names of its `mesh`.{axes}"
    ),
    "varying_output": (
        "`{name}` failed with JAX's error \"{first}\": an output's `out_specs` says it is the same on "
        "every device (`P()`), but JAX types it as varying over the mesh axis. The results of "
        "`all_gather`, `psum_scatter` and `ppermute` are always typed varying, even where their values "
        "agree (section 2). Give that output an `out_specs` that names the mesh axis."
    ),
    "not_divisible": (
        '`{name}` failed with JAX\'s error "{first}": `psum_scatter(..., tiled=True)` cuts the '
        "scattered dimension into one chunk per device, so that dimension must be divisible by the "
        "number of devices. Check which dimension `scatter_dimension` names.{extra}"
    ),
    "not_shard_count": (
        '`{name}` failed with JAX\'s error "{first}": without `tiled=True`, `psum_scatter` needs the '
        "scattered dimension to be exactly as long as the number of devices. With `tiled=True` it cuts "
        "a longer dimension into equal chunks."
    ),
    "negative_scatter_dimension": (
        "`{name}` failed while JAX compiled a `psum_scatter`: on this JAX its `scatter_dimension` must be "
        "a non-negative dimension number (counting from 0); -1 is not accepted. Write the dimension's "
        "number."
    ),
    "not_a_permutation": (
        '`{name}` failed with JAX\'s error "{first}": in `lax.ppermute(x, axis, perm)` every device may '
        "appear at most once as a source and at most once as a destination (section 4). For a ring, "
        "pair each device i with exactly one neighbour."
    ),
    "bad_device_index": (
        "`{name}` failed with an IndexError from inside `lax.ppermute`: a pair in `perm` names a device "
        "index that the mesh does not have. The mesh passed to your function has {k} devices, numbered "
        "0 to {last}: wrap around with `% k`, and take k from the `mesh` argument."
    ),
    "in_specs": (
        '`{name}` failed with JAX\'s error "{first}". The inputs are already placed on the mesh: give '
        "`jax.shard_map` the same specs they were placed with, and use the `mesh` argument."
    ),
    "out_specs_too_long": (
        '`{name}` failed with JAX\'s error "{first}": `out_specs` names more dimensions than the result '
        "has. Without `tiled=True`, `psum_scatter` removes the scattered dimension (and `all_gather` adds "
        "a new one); with `tiled=True` the result keeps the input's dimensions."
    ),
    "global_sharding": (
        '`{name}` failed with JAX\'s error "{first}": outside `jax.shard_map`, JAX refuses this operation '
        "on an array split over the mesh. Do the per-device work inside the function you give "
        "`jax.shard_map`, where each device sees its own block, and let a collective bring in what it "
        "needs from the others."
    ),
    "not_gathered": (
        "`{name}` failed with JAX's error \"{first}\": inside `shard_map`, `w` is one device's shard "
        "(shape ({shard},) here, of {d} entries in all), too short to multiply with the batch. "
        "Gather the full parameters with `lax.all_gather` before using them."
    ),
    # results, any exercise
    "result_type": "`{name}` should return a `jax.Array`, but it returned a `{type}`{where}.",
    "shape": "`{name}` should return shape {want}{where}, but it returned shape {got}.{hint}",
    "values": "`{name}` has the wrong values{where}: expected {want}, got {got}. {hint}",
    "right_values_no_collective": ("`{name}` returns the right values, but over '{axis}' it performs {seen}. {why}"),
    "no_collective_at_all": "no collective at all",
    "where_mesh": " (mesh of {k} devices, {what})",
    "what_blocks": "x of shape {shape}, blocks of {rows} x {cols}",
    "what_ring": "blocks of {n}, x = {x}",
    "what_fsdp": "{features} parameters, {n} examples",
    "mesh_axes": " This mesh has the axes {axes}.",
    "seen_join": ", ",
    # 1. median_centered
    "median_whole_vector": (
        " That is the whole matrix: each device returned all {n} centred rows, and `out_specs` put the "
        "{k} copies side by side. Each device should return only its own rows, centred."
    ),
    "median_local": (
        "Each device subtracted the column medians of its own rows. A column's median needs the whole "
        "column on every device: gather the blocks first."
    ),
    "median_all_values": (
        "That subtracts one median, that of all of x, from every element: each column has its own median."
    ),
    "median_mean": "That is x minus its column means; the exercise asks for the medians.",
    "median_mean_of_medians": (
        "That is x minus the mean of the devices' own column medians (with 2 rows a device, a median and "
        "a mean agree; the mesh of {k} devices, {rows} rows each, tells them apart). A column's median needs "
        "the whole column: gather the blocks, then take `jnp.median` of all of them."
    ),
    "median_sign": "That is median - x: subtract the median from x, not the other way round.",
    "median_generic": (
        "The result does not change when `x` does: if you wrote numbers by hand, compute them "
        "instead: the check uses several meshes and shapes."
    ),
    "median_other": (
        "That is not x minus the medians of its columns. Gather the blocks with "
        "`lax.all_gather(..., tiled=True)`, take `jnp.median` of every column, and subtract them "
        "from the device's own rows."
    ),
    "median_why": (
        "The column medians need every row on every device: gather the blocks with `lax.all_gather` "
        "over DEVICES inside `jax.shard_map`."
    ),
    "median_layout_hint": (
        "Each device centres its own rows and returns them: `out_specs=P(DEVICES)`, so that the result is "
        "split over DEVICES like x. Centring every row on every device and returning the whole matrix "
        "repeats the others' work."
    ),
    "median_all_rows": (
        "`{name}` returns the right values, split over DEVICES, but one device does {ratio}× the reference's "
        "arithmetic on numbers ({got} against {want} additions, subtractions and multiplications; read from the "
        "compiled per-device program on a mesh of {k} devices, x of shape {shape}, where at most {factor}× is "
        "allowed): every device centres every row, then keeps its own. Each device centres its own rows: "
        "subtract the column medians from the device's own block, not from the gathered matrix."
    ),
    # 2. sum_scatter_columns
    "scatter_rows_hint": (
        " Here each device's block has {rows} rows, which cannot be cut into {k} equal chunks; the "
        "exercise splits the columns."
    ),
    "scatter_copies": (
        " That is the whole total on every device, side by side: a psum_scatter result differs per "
        "device, and its `out_specs` must say along which dimension the devices' chunks go."
    ),
    "scatter_row_chunks": (
        " That is what you get when the column chunks are put together along dimension 0: the "
        "scattered dimension is 1, so `out_specs` must name DEVICES for dimension 1."
    ),
    "scatter_not_normalized": (
        "That is the total itself: each of its columns must still be divided by its length (the square root "
        "of the sum of its {rows} squared entries, over axis 0). After the psum_scatter a device holds whole "
        "columns, so that needs no communication."
    ),
    "scatter_normalized_first": (
        "Each device's block was normalized before the blocks were added: the columns of the *total* must "
        "have length 1. Add first (psum_scatter), then normalize."
    ),
    "scatter_row_lengths": (
        "Those rows have length 1 within each device's columns: a column's length is taken over its {rows} "
        "rows (axis 0), not over the columns a device holds."
    ),
    "scatter_block": "Those are the devices' own blocks, not added up: the blocks of all devices must be added.",
    "scatter_generic": (
        "Compare with the sum of the devices' blocks, each column divided by its length, column chunk by column chunk."
    ),
    "scatter_why": (
        "Use `lax.psum_scatter` over DEVICES: each device receives only its own columns of the total "
        "and moves half the bytes of a psum (section 3)."
    ),
    "scatter_whole": (
        "`{name}` returns the right columns with the right collective, but one device's largest array is "
        "{ratio}× the reference's on {k} devices ({got} bytes against {want}, read from the compiled per-device "
        "program; at most {factor}× is allowed): every device holds all of the column sums, so the scatter "
        "did the work of a psum. Scatter your own block as it is: each device then receives only its "
        "columns of the total."
    ),
    # 3. ring_all_reduce
    "ring_one_copy": (
        " That is one copy of the total. ppermute's result is typed varying, so the result keeps one "
        "block per device, as `lax.psum` with `out_specs=P(DEVICES)` returns it."
    ),
    "ring_counts": (
        "`{name}` does not add every block exactly once. Fed block j = 10**j on device j (mesh of "
        "{devices} devices), each device should end with one copy of every block ({ones}), but "
        "{report}. {hint}"
    ),
    "ring_right_on": (
        "`{name}` is right on a mesh of {good} devices but wrong on {k}: the number of steps must "
        "come from the `mesh` argument, not be written as a number."
    ),
    "ring_counts_device": "device {i} added {counts}",
    "ring_and_more": " (and {more} more)",
    "ring_missing": (
        "Every device added only {m} of the {k} blocks: after s steps a device has seen s + 1 blocks, "
        "so it takes k - 1 steps, with k from the mesh."
    ),
    "ring_own_twice": (
        "The own block is counted twice: after k - 1 steps the block a device receives next would be "
        "its own again. Stop one step earlier."
    ),
    "ring_uneven": (
        "Devices end with different sums. A device that is no destination in `perm` receives zeros: "
        "the ring needs the wrap-around pair (k - 1, 0) as well."
    ),
    "ring_uniform": (
        "Every block is added {times} times: that is {times} rounds of the ring. With k from the `mesh` "
        "argument, k - 1 steps add every block exactly once."
    ),
    "ring_repeated": (
        "Some blocks are counted more than once: forward the block you received in the previous step, "
        "not your running total, and add each received block once."
    ),
    "ring_generic": "Compare your steps with a psum over DEVICES on paper for 4 devices.",
    "ring_divided": (
        "Every device holds the total divided by {divisor}: an all-reduce adds every block once and "
        "divides by nothing (a mean would be `lax.pmean`, not this exercise)."
    ),
    "ring_why": (
        "The point is to build it from neighbour-to-neighbour sends: use `lax.ppermute` over DEVICES, step by step."
    ),
    "ring_forbidden": (
        "`{name}` returns the right values, but it uses {seen}. Build the all-reduce from `lax.ppermute` "
        "only: no psum, all_gather, psum_scatter or all_to_all."
    ),
    # 4. fsdp_step
    "fsdp_whole_w": (
        " That is the whole updated w on every device, side by side. Each device should return only "
        "its own shard, updated with its shard of the gradient."
    ),
    "fsdp_update": ("`{name}` returned w = {got}{where}, but one SGD step on the whole batch gives w = {want}. {hint}"),
    "fsdp_k_times": (
        "Your step is {k} times too large: `psum_scatter` adds the {k} devices' gradients, and the "
        "full-batch gradient is their mean. Divide by the number of devices (or differentiate the "
        "`pmean` of the loss)."
    ),
    "fsdp_k_small": (
        "Your step is {k} times too small: the gradients were divided by the number of devices twice (the "
        "`pmean` of the loss, or a mean already, and a division by {k} after `psum_scatter`). Divide once."
    ),
    "fsdp_unchanged": "w did not change: subtract LEARNING_RATE * gradient from your shard.",
    "fsdp_sign": "The step goes the wrong way: subtract the gradient, do not add it.",
    "fsdp_local": (
        "That is a step on each device's own examples only: the devices' gradients must be combined "
        "(reduce-scattered) before the update."
    ),
    "fsdp_generic": "Compare with `sgd_step(w, batch)` on one device, shard by shard.",
    "fsdp_whole_batch": (
        "`{name}` returns the right step with the right collectives, but one device computes {ratio}× the "
        "reference's FLOPs on {k} devices ({got} against {want}, read from the compiled per-device program; "
        "at most {factor}× is allowed): every device computes the gradient of the whole batch. The batch "
        "stays split: each device takes `jax.grad` on its own examples only, and `lax.psum_scatter` adds "
        "the devices' gradients."
    ),
    "fsdp_why_gather": (
        "Gather the parameters before use with `lax.all_gather` over DATA_PARALLEL: that is what "
        "lets each device store only its shard."
    ),
    "fsdp_why_scatter": (
        "Reduce-scatter the gradients with `lax.psum_scatter` over DATA_PARALLEL: each device needs "
        "only its own shard's gradient, and a psum would send every device all of them."
    ),
}

HINTS = {
    "fsdp_step": [
        "Three collectives' worth of thinking, two collectives in the code: what must a device have "
        "before it can evaluate `loss_fn` on its examples, and which part of the gradient does it need "
        "afterwards to update its own shard?",
        "Inside `jax.shard_map(..., in_specs=(P(DATA_PARALLEL), P(DATA_PARALLEL)))`: gather the shards "
        "into the full w (tiled), take `jax.grad(loss_fn)` on the local examples, reduce-scatter that "
        "gradient (tiled) so each device keeps its shard's part, and update the shard.",
        "psum_scatter adds the devices' gradients; one SGD step on the whole batch uses their mean. "
        "The new shard is still different on every device: `out_specs=P(DATA_PARALLEL)`.",
    ],
    "median_centered": [
        "A median cannot be assembled from per-device partial results the way a sum can. Which values "
        "does the median of one column depend on, and where do they live when the rows are split?",
        "Give every device every row (section 2's collective, tiled, so that the blocks stack back into "
        "the matrix), then take one median per column and subtract it from the device's own rows: "
        "which `axis` of `jnp.median` is 'per column'?",
        "`block - jnp.median(lax.all_gather(block, DEVICES, tiled=True), axis=0)` inside "
        "`jax.shard_map(..., in_specs=P(DEVICES), out_specs=P(DEVICES))`: the result differs from device "
        "to device, and all_gather's output is typed varying anyway.",
    ],
    "ring_all_reduce": [
        "One `ppermute` moves every device's block one place round the ring. How many such moves "
        "until every device has seen every other device's block once?",
        "Keep two values per device: the running total, and the block that is travelling. Each step, "
        "pass the travelling block on to the next device and add what arrives to the total. The "
        "number of steps comes from the `mesh` argument (`mesh.shape[DEVICES]`), so a Python loop works.",
        "Every device ends with the same values, but ppermute's output is typed varying: keep one "
        "block per device with `out_specs=P(DEVICES)`, as `psum_in_one` is mapped in the exercise text.",
    ],
    "sum_scatter_columns": [
        "Section 3 scattered dimension 0 of a vector. Here the rows cannot be cut into one chunk per "
        "device (3 rows, up to 8 devices), but the 8 columns can: which argument of `psum_scatter` "
        "picks the dimension?",
        "With `tiled=True` and the column dimension scattered, each device keeps a block of shape "
        "(3, 8 / k): the sum over devices of its columns only. Those columns are whole (all 3 rows), so "
        "each one's length needs nothing from another device.",
        "Divide the scattered block by `jnp.sqrt(jnp.sum(block ** 2, axis=0))`. `out_specs` names, for each "
        "dimension of the result, the mesh axis that splits it: dimension 0 is whole and dimension 1 is "
        "split over DEVICES.",
    ],
}
MISTAKE_HINTS = {
    "fsdp_step": {"fsdp_k_times": 3, "fsdp_k_small": 3, "fsdp_unchanged": 2, "fsdp_sign": 2, "fsdp_local": 1},
    "median_centered": {
        "median_local": 1,
        "median_all_values": 2,
        "median_mean": 2,
        "median_mean_of_medians": 1,
        "median_sign": 3,
    },
    "ring_all_reduce": {"ring_divided": 2, "ring_missing": 1, "ring_own_twice": 1, "ring_uniform": 2},
    "sum_scatter_columns": {
        "scatter_not_normalized": 3,
        "scatter_normalized_first": 2,
        "scatter_row_lengths": 3,
        "scatter_block": 2,
    },
}
TEXT, say = notebook_words(TEXT, HINTS, MISTAKE_HINTS)  # checked; each lookup in the kernel's language
