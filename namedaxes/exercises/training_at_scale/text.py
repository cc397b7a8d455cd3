"""The words of notebook 10's checks as data: sentences (TEXT), hints (HINTS), known mistakes' hints (MISTAKE_HINTS)."""

from __future__ import annotations

from namedaxes.exercises import notebook_words

# ---------------------------------------------------------------- every student-facing string
TEXT = {
    "in_specs": (
        '`{name}` failed with JAX\'s error "{first}": the specs given to `jax.shard_map` are not the ones '
        "the inputs were placed with. This exercise needs no `jax.shard_map` at all: it is the compiler's half, "
        "written with shardings only (`jax.reshard`, `out_sharding=`) on the `mesh` argument."
    ),
    "explicit": (
        '`{name}` failed with JAX\'s error "{first}". On Explicit axes a matmul whose summed dimension is '
        "split differently on its two sides is refused: gather the weight's FSDP shards first "
        "(`jax.reshard`), and name the layout of a result summed over split columns (`out_sharding=`)."
    ),
    "result_type": "`{name}` should return a `jax.Array`, but it returned a `{type}` {where}.",
    "shape": "`{name}` should return shape {want} {where}, but it returned shape {got}.",
    "values": "`{name}` has the wrong values {where}: expected {want}, got {got}. {hint}",
    "where_mesh": "(mesh {mesh}, {shapes})",
    "layout": "`{name}` returns the right shape {where}, but laid out as {got}; the exercise asks for {want}.",
    "layout_replicated": "P() (replicated: the same whole array on every device)",
    "seen_nothing": "no collective at all",
    "seen_join": ", ",
    # 1. swiglu_block
    "swiglu_gathers_tensor": (
        "`{name}` returns the right values, but its compiled program on {mesh} performs {seen}: something split "
        "over '{tensor}' (the weights' tensor split, or the hidden columns computed with it) is gathered, which "
        "the Megatron split never needs. Keep `gate` and `up` split by columns and `down` by rows over "
        "MODEL_PARALLEL; gather only their FSDP shards."
    ),
    "swiglu_missing": (
        "`{name}` returns the right values, but its compiled program on {mesh} has no {want}: {seen}. {why}"
    ),
    "swiglu_no_gather_why": (
        "The weights are stored split over FSDP: gather those shards before the matmuls, with `jax.reshard` to a "
        "spec that names MODEL_PARALLEL where the weight was stored and no FSDP."
    ),
    "swiglu_no_psum_why": (
        "Each device holds some hidden columns, so its `down` matmul gives a partial sum: one psum over "
        "MODEL_PARALLEL adds them, which the compiler writes when the matmul names its result's layout "
        "(`out_sharding=P(BATCH)`)."
    ),
    "swiglu_other": (
        "`{name}` returns the right values, but its compiled program on {mesh} also performs {seen}. The "
        "exercise allows {allowed} only."
    ),
    "swiglu_shard_map": (
        "`{name}` returns the right values, but it is written per device with `jax.shard_map` (over {axes}). "
        "This exercise is the compiler's half, like the notebook's model: shardings only (`jax.reshard`, "
        "`out_sharding=`), and the compiler writes the collectives."
    ),
    "swiglu_swapped": (
        "That is `silu(x @ up) * (x @ gate)`: the activation belongs to the gate, `silu(x @ gate) * (x @ up)`."
    ),
    "swiglu_no_gate": "That is `silu(x @ up) @ down` without the gate: multiply by `x @ up` element by element.",
    "swiglu_partial": (
        "That is one device's partial sum: only its own hidden columns were multiplied by `down`. Add the "
        "partial sums over MODEL_PARALLEL."
    ),
    "swiglu_generic": "Compare with one device: `(silu(x @ gate) * (x @ up)) @ down` on the whole matrices.",
    # 2. step_costs
    "costs_type": ("`{name}` should return a dict with the keys {keys}, each a number; it returned {got} for {case}."),
    "costs_value": "`{name}` predicts {key} = {got} for {case}, but the cost model gives {want}. {hint}",
    "costs_case": "the config {config}, layout (data, fsdp, tensor) = {layout}, batch {batch}",
    "costs_no_adam": (
        "That is the parameters alone: Adam keeps two moments per parameter, stored like it, so a device "
        "holds three times its parameters' bytes."
    ),
    "costs_whole": (
        "That is the whole model's figure, not one device's: divide each array by the devices its layout "
        "splits it over (the axes of its rule in `RULES`)."
    ),
    "costs_whole_flops": (
        "That is the whole step's FLOPs on one device, not one device's share: each device computes only its "
        "`batch / (data * fsdp)` sequences, and of the matrices split over MODEL_PARALLEL only its "
        "`1 / tensor` part (the FSDP shards are gathered, so FSDP does not divide the FLOPs)."
    ),
    "costs_zero_gather": (
        "0 would mean no FSDP all-gather, but fsdp = {size} here: before its matmuls each device gathers the "
        "FSDP shards of every weight it uses, whole (its own MODEL_PARALLEL part of it)."
    ),
    "costs_zero_grad": (
        "0 would mean no gradient all-reduce, but data * fsdp = {size} here: each device all-reduces the "
        "gradients of every parameter it uses (its own MODEL_PARALLEL part of each) with the other batch shards."
    ),
    "costs_zero_tensor": (
        "0 would mean no all-reduce over MODEL_PARALLEL, but tensor = {size} here: each layer adds the partial "
        "sums of its split matrices, 4 activations of shape `(batch / (data * fsdp), seq, d_model)` per layer "
        "and step."
    ),
    "costs_axis_one": (
        "An axis of size 1 splits nothing and moves nothing: no device sends anything over it, so that "
        "collective's bytes are 0."
    ),
    "costs_tensor_ignored": (
        "Each device gathers (or reduces) only its own MODEL_PARALLEL part of a weight: divide the arrays "
        "split over MODEL_PARALLEL by the tensor size."
    ),
    "costs_global_batch": ("That counts the whole batch: each device works on batch / (data * fsdp) sequences."),
    "costs_generic": "Compare with the notebook's measurement of the same figure for its config and layouts.",
    # 3. choose_layout
    "layout_type": (
        "`{name}` should return a tuple of three ints (data, fsdp, tensor) whose product is 8; it returned "
        "{got} for {case}."
    ),
    "layout_invalid": ("`{name}` chose {got} for {case}, which this model cannot use: {why}"),
    "layout_heads": "the heads ({heads}) do not split evenly over tensor = {tensor}.",
    "layout_batch": "the batch ({batch}) does not split evenly over data * fsdp = {shards}.",
    "layout_width": "d_model ({d}) and the vocabulary ({v}) do not split evenly over fsdp = {fsdp}.",
    "layout_over_budget": (
        "`{name}` chose {got} for {case}: each device then holds {need} bytes of parameters and Adam "
        "state, over the budget of {budget}. Shard the state further (a larger fsdp or tensor size)."
    ),
    "layout_not_cheapest": (
        "`{name}` chose {got} for {case}: it fits, but it moves {moved} bytes per step and device, while "
        "{better} fits too and moves {least}. Add up the three collectives' bytes of each layout that fits."
    ),
    "layout_case": "the config {config}, batch {batch}, budget {budget} bytes",
    # exercise 4, step_time (timing.py)
    "time_type": (
        '`{name}` should return a dict of the keys {keys} (each a number of seconds) and "bound"; it '
        "returned {got} for {case}."
    ),
    "time_missing": (
        '`{name}` should give a number of seconds under each of the keys {keys}; under "{key}" it gives {got} '
        "for {case}."
    ),
    "time_bound_word": (
        "`{name}` gives the bound {got} for {case}: it should be the name of the term that bounds the step, one "
        "of {bounds}."
    ),
    "time_case": "the config {config}, layout (data, fsdp, tensor) = {layout}, batch {batch}, chip {chip}",
    "time_value": "`{name}` gives {key} = {got} s for {case}, but the time model gives {want} s. {hint}",
    "time_dispatch": (
        'dispatch is the host\'s cost of one call: `chip["seconds_per_call"]` plus `chip["seconds_per_array"]` '
        "for each array the step takes: the parameters, Adam's two moments of each and its count, and the "
        "batch, 3 · len(tm.shapes(config)) + 2."
    ),
    "time_dispatch_arrays": (
        "That leaves arrays out of the dispatch: the step takes the parameters, Adam's two moments of each and "
        "its count, and the batch, 3 · len(tm.shapes(config)) + 2 arrays, each costing `seconds_per_array`."
    ),
    "time_compute": (
        "compute is the FLOPs of one device's step (your `step_costs`' \"flops\") over the chip's "
        "`flops_per_s`; if your `step_costs` does not pass its own check yet, start there."
    ),
    "time_compute_batch": (
        "That is the whole batch's FLOPs on one device: each device computes only its own share of the batch, "
        "which your `step_costs` gives for this layout."
    ),
    "time_memory": (
        "memory is `tm.hbm_bytes(config, batch, params, layout)` over the chip's `hbm_bytes_per_s`, with "
        "`params` the parameters one device stores: its `state_bytes` / 12 (each parameter is stored with "
        "Adam's two moments, 4 bytes each)."
    ),
    "time_memory_batch": (
        "That counts the whole batch's tokens on one device: pass the layout to `tm.hbm_bytes`, which divides "
        "the batch by data · fsdp and the heads by tensor."
    ),
    "time_memory_params": (
        "That counts Adam's traffic for every parameter of the model: each device updates only the parameters "
        "it stores, its `state_bytes` / 12."
    ),
    "time_communication": (
        "communication is, for each ring, its hops times `hop_seconds` plus the bytes one device sends in one "
        "direction over the axis's bandwidth. In a ring over n devices an all-gather takes n − 1 hops and sends "
        "(n − 1)/n of its result, an all-reduce 2 (n − 1) hops and 2 (n − 1)/n: n is fsdp for the gathers, "
        "data · fsdp for the gradients, tensor for the activations. The axis's bandwidth is "
        "`link_bytes_per_s`, twice that where `wraparound` is true."
    ),
    "time_no_ring": (
        "That is the collectives' results over the link: in a ring a device sends (n − 1)/n of an all-gather's "
        "result and 2 (n − 1)/n of an all-reduce's (a reduce-scatter, then an all-gather)."
    ),
    "time_no_latency": (
        "That leaves the hops' latency out: each hop of a ring costs `hop_seconds`, n − 1 hops for an "
        "all-gather over n devices and 2 (n − 1) for an all-reduce. Small collectives are latency-bound."
    ),
    "time_wraparound": (
        "That reads `wraparound` the wrong way round: with wraparound the ring runs both ways and the axis "
        "carries twice `link_bytes_per_s`; without it, `link_bytes_per_s`."
    ),
    "time_total": (
        "The total is max(dispatch, compute + memory + communication): the device's terms run one after the "
        "other (the model overlaps nothing), and the host dispatches the next step while the device runs this one."
    ),
    "time_total_added": (
        "That adds the dispatch to the device's time: the host dispatches the next step while the device runs "
        "this one, so the step takes the longer of the two, max(dispatch, compute + memory + communication)."
    ),
    "time_total_no_communication": (
        "That leaves communication out of the device's time, as if it overlapped everything: the model "
        "overlaps nothing, so communication is added to compute and memory before the comparison with dispatch."
    ),
    "time_total_not_summed": (
        "That keeps the device's terms apart: the matmuls, the element-wise work and the collectives run one "
        "after the other, so their times add before they are compared with dispatch."
    ),
    "time_bound": (
        "`{name}` says the step is bound by {got} for {case}, but the time model says {want}: the terms are "
        "{terms}, and the device's time, compute + memory + communication, is {device} s. The bound is "
        "dispatch where it is longer than the device's time, else the largest of the device's three terms."
    ),
}

HINTS = {
    "choose_layout": [
        "Sections 3 and 4 compared the layouts' communication and memory. What must a layout satisfy "
        "before its communication matters, and what do you compare among those that do?",
        "Loop over `LAYOUTS` (every (data, fsdp, tensor) of 8 devices). Skip those the model cannot use (heads, "
        "batch, d_model and vocabulary must divide) and those whose state_bytes exceed the budget.",
        "Among the rest, keep the layout whose gather, gradient and tensor bytes add up to the least; "
        "your `step_costs` gives them.",
    ],
    "step_costs": [
        "Section 3 read five figures from the compiled step. For each, which arrays does it count, and by which "
        "axes of the layout is each of them divided on one device?",
        "An array's bytes on one device: 4 × its size / the sizes of the axes named in its rule (`RULES`). "
        "The state is the parameters and Adam's two moments. An FSDP gather brings a device its MODEL_PARALLEL "
        "part of each weight split over FSDP, whole; the gradient all-reduce moves that part of every parameter.",
        "Over MODEL_PARALLEL each layer all-reduces 4 activations of (batch / (data · fsdp), seq, d_model): two "
        "forward (attention's out, the MLP's down), two backward (their inputs' gradients). FLOPs: 3 × (2 × "
        "tokens × the matmul weights one device uses + attention's 4 × layers × tokens × seq × d_model / tensor). "
        "An axis of size 1 moves nothing.",
    ],
    "swiglu_block": [
        "Section 2's MLP had `up` and `down`; a SwiGLU block has one more matrix before `down`. Which "
        "dimension of `gate` may stay split over MODEL_PARALLEL so that `silu(x @ gate) * (x @ up)` needs "
        "no communication?",
        "Gather only the FSDP shards: `jax.reshard` each weight to a spec that names MODEL_PARALLEL where it "
        "was stored and no FSDP (columns for `gate` and `up`, rows for `down`). Then `x @ gate` and `x @ up` "
        "are split by columns, as section 2's `GATHERED` rules split `up`.",
        "The `down` matmul sums over the split columns, and on Explicit axes JAX asks you to name its result's "
        "layout (`out_sharding=` of `jnp.einsum` or `jnp.matmul`): the layout the exercise wants makes the "
        "compiler add the partial sums with one psum over MODEL_PARALLEL.",
    ],
    "step_time": [
        "Section 4 gave a step's time in four terms. Which figure of your `step_costs` (or of `tm.hbm_bytes`) "
        "does each term divide, and by which roof of `chip`? Then how do the four terms make the total?",
        "dispatch: seconds_per_call + seconds_per_array × (3 · len(tm.shapes(config)) + 2). compute: flops / "
        "flops_per_s. memory: `tm.hbm_bytes(config, batch, state_bytes // 12, layout)` / hbm_bytes_per_s. "
        "communication: (fsdp − 1) + 2 (data · fsdp − 1) + 2 (tensor − 1) hops × hop_seconds, plus the bytes "
        "sent in one direction, (fsdp − 1)/fsdp of the gathers + 2 (n − 1)/n of the gradients (n = data · fsdp) "
        "+ 2 (tensor − 1)/tensor of the activations, over link_bytes_per_s (twice that with wraparound).",
        'total = max(dispatch, compute + memory + communication). bound: "dispatch" where it is longer than '
        'compute + memory + communication; else whichever of "compute", "memory" and "communication" is longest.',
    ],
}
MISTAKE_HINTS = {
    "step_costs": {
        "costs_no_adam": 2,
        "costs_whole": 2,
        "costs_whole_flops": 3,
        "costs_tensor_ignored": 2,
        "costs_global_batch": 3,
    },
    "step_time": {
        "time_dispatch_arrays": 2,
        "time_compute_batch": 2,
        "time_memory_batch": 2,
        "time_memory_params": 2,
        "time_no_ring": 2,
        "time_no_latency": 2,
        "time_wraparound": 2,
        "time_total_added": 3,
        "time_total_no_communication": 3,
        "time_total_not_summed": 3,
    },
}
TEXT, say = notebook_words(TEXT, HINTS, MISTAKE_HINTS)  # checked; each lookup in the kernel's language
