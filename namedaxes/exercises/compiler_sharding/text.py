"""The words of notebook 08's checks as data: sentences (TEXT), hints (HINTS), known mistakes' hints (MISTAKE_HINTS)."""

from __future__ import annotations

from namedaxes.exercises import notebook_words

# ---------------------------------------------------------------- every student-facing string
TEXT = {
    # crashes, any exercise
    "contracting": (
        'Explicit mode rejects a matrix product in `{name}`: JAX says "{first}". Both operands are split '
        "along the dimension the product sums over, so JAX cannot tell which layout you want for the "
        "result. Name it: `jnp.matmul(a, b, out_sharding=NamedSharding(mesh, P(...)))` (the `@` operator "
        "takes no `out_sharding`)."
    ),
    "illegal": (
        'Explicit mode rejects an operation in `{name}`: JAX says "{first}". The result would be split '
        "along one mesh axis in two of its dimensions, which no layout can do. Reshard one operand first "
        "(`jax.reshard(v, NamedSharding(mesh, P(...)))`), so that the mesh axis appears once."
    ),
    "gather": (
        'Explicit mode rejects an indexing step in `{name}` (JAX says "{first}"): picking entries out of a '
        "split array (`jnp.diagonal`, fancy indexing) has no unambiguous layout. Compute the same numbers "
        "another way, or reshard the array first."
    ),
    "sharding_other": (
        'Explicit mode rejects a step of `{name}`: JAX says "{first}". Give that operation its result\'s '
        "layout (`out_sharding=`), or reshard an operand with `jax.reshard` first."
    ),
    "spec_without_mesh": (
        '`{name}` failed with JAX\'s error "{first}": a bare `P(...)` needs `jax.set_mesh`, and the check '
        "calls your function under `jax.jit`. Write `NamedSharding(mesh, P(...))` with the `mesh` argument."
    ),
    "jit_sharding_mismatch": (
        '`{name}` failed with JAX\'s error "{first}": a `jax.jit` with `in_shardings` was called on arrays '
        "placed otherwise. Inside a traced function, `jax.lax.with_sharding_constraint` states a layout "
        "without that conflict."
    ),
    "mesh_elsewhere": (
        '`{name}` failed with JAX\'s error "{first}": a sharding in your function names a mesh other than '
        "the `mesh` argument (one made in another cell, say). The check calls your function with meshes of "
        "8, 4 and 2 devices: build every `NamedSharding` with the `mesh` argument."
    ),
    "ring_size": (
        "`{name}` failed with JAX's error \"{first}\": the ring's pairs name more devices than the mesh has. "
        "The check runs your function on meshes of 8, 4 and 2 devices: read the number of devices from the "
        "mesh (`mesh.shape[MODEL_PARALLEL]`), not from a global such as the notebook's `k`."
    ),
    "reshard_auto": (
        '`{name}` failed with JAX\'s error "{first}": `jax.reshard` works on a mesh of Explicit axes, and '
        "this exercise's mesh is Auto. On an Auto mesh, state a layout with "
        "`jax.lax.with_sharding_constraint(v, NamedSharding(mesh, P(...)))`."
    ),
    "set_mesh_in_jit": (
        '`{name}` failed with JAX\'s error "{first}": the check calls your function under `jax.jit`, where '
        "`jax.set_mesh` cannot be used. Name the mesh in each sharding instead: `NamedSharding(mesh, P(...))` "
        "with the `mesh` argument."
    ),
    "unbound": (
        "`{name}` calls a collective over '{axis}', but no `jax.shard_map` binds that axis there (JAX says: "
        '"{first}"). Collectives run inside the function you give `jax.shard_map`, over its mesh\'s axes.'
    ),
    "in_specs": (
        '`{name}` failed with JAX\'s error "{first}". The inputs are already placed: give `jax.shard_map` '
        "the specs they were placed with, and use the `mesh` argument."
    ),
    "varying_output": (
        '`{name}` failed with JAX\'s error "{first}": an `out_specs` says a result is the same on every '
        "device, but JAX types it as varying over the mesh axis. Name the axis in that `out_specs`."
    ),
    # results, any exercise
    "result_type": "`{name}` should return a `jax.Array`, but it returned a `{type}` {where}.",
    "shape": "`{name}` should return shape {want} {where}, but it returned shape {got}.{hint}",
    "values": "`{name}` has the wrong values {where}: expected {want}, got {got}. {hint}",
    "where_mesh": "(mesh {mesh}, {what})",
    "what_shapes": "{shapes}",
    "layout": ("`{name}` returns the right shape {where}, but laid out as {got}; the exercise asks for {want}. {hint}"),
    "layout_replicated": "P() (replicated: the same whole array on every device)",
    "seen_nothing": "no collective at all",
    "seen_item": "{count} x {op}",
    "seen_join": ", ",
    "seen_primitive": "{primitive} over {axes}",
    # 1. one_all_reduce_mlp
    "mlp_not_replicated": (
        "Every device should hold the whole result: say so with `out_shardings` or a last "
        "`with_sharding_constraint` to `P()`."
    ),
    "mlp_wrote_collectives": (
        "`{name}` writes its own collectives ({seen}). In this exercise the compiler does the communication: "
        "no `shard_map`, only shardings."
    ),
    "mlp_no_communication": (
        "`{name}` returns the right values, but its compiled program has no collective: every device "
        "computed the whole MLP. Split the work: give the hidden activation (or the weights) a layout that "
        "names MODEL_PARALLEL."
    ),
    "mlp_gathers": (
        "`{name}` returns the right values, but its compiled program has {seen}. An all-gather means a "
        "device assembled a whole array from split pieces, e.g. a hidden layer split by examples (rows) or "
        "a result split over MODEL_PARALLEL. Split the hidden layer along its features (columns), so that "
        "the second matmul only needs partial sums added, and ask for the result whole."
    ),
    "mlp_wrong_count": (
        "`{name}` returns the right values, but its compiled program has {seen}; the goal is exactly one "
        "all-reduce and no other collective."
    ),
    "mlp_whole_hidden": (
        "`{name}` returns the right values with one all-reduce, but one device computes {ratio}× the "
        "reference's FLOPs on {mesh} ({got} against {want}, read from the compiled per-device program; "
        "at most {factor}× is allowed): every device computes the whole hidden layer and splits it "
        "afterwards. Each device should compute only its 1/{k} share of `relu(x @ w1)`: split the hidden "
        "layer where it is made (or `w1`'s columns), not after it."
    ),
    "mlp_relu_order": "That is `relu(x @ w1 @ w2)`: the ReLU belongs between the two matmuls.",
    "mlp_no_relu": "That is `x @ w1 @ w2` without the ReLU on the hidden layer.",
    "mlp_relu_twice": (
        "That is `relu(relu(x @ w1) @ w2)`: the output is clipped at zero too. The ReLU belongs to the "
        "hidden layer only."
    ),
    "mlp_generic": "Compare with `jax.nn.relu(x @ w1) @ w2` on one device.",
    # 2. feature_correlation
    "corr_layout_hint": "Name it in the last matmul's `out_sharding`, or reshard the result.",
    "corr_covariance": (
        "That is the covariance matrix: divide entry (i, j) by the standard deviations of features i and j."
    ),
    "corr_not_centred": "Subtract each feature's mean (over the examples, axis 0) before the product.",
    "corr_scaled": (
        "Every entry is {ratio} times the correlation (its diagonal should be 1): the covariance and the "
        "variances are divided by different counts (n - 1 for one, n for the other, say). Divide both by "
        "the same number."
    ),
    "corr_generic": "Compare with `np.corrcoef(x, rowvar=False)` on one device.",
    "corr_gathers": (
        "`{name}` returns the right values laid out as asked, but one device of mesh {mesh} materializes an array of "
        "{got} bytes, {ratio}× the largest of the reference's ({want} bytes; read from the compiled per-device "
        "program, where at most {factor}× is allowed): it gathers all the examples, or the whole matrix, on "
        "every device and lays the result out afterwards. Keep the examples split: give "
        "`centred.T @ centred` its layout with `jnp.matmul(..., out_sharding=NamedSharding(mesh, P(...)))`, "
        "so that each device multiplies only its own examples and the partial products are added."
    ),
    # 3. collective_matmul_rows
    "cm_layout_hint": "The result's columns are split like w's: `out_specs=P(None, MODEL_PARALLEL)`.",
    "cm_one_block": (
        " That is one block of rows. Here x's rows are split, so each step computes a *different* block of "
        "the result's rows: place it at its rows (e.g. `lax.dynamic_update_slice_in_dim`); nothing is "
        "added up."
    ),
    "cm_rows_elsewhere": (
        "The right blocks of rows, in the wrong places: after s steps along the ring i -> i + 1, device i "
        "holds the x block of device (i - s) mod k."
    ),
    "cm_added": (
        "The blocks were added up. In section 5 x's columns (the dimension the product sums over) were "
        "split, so the partial products add up; here each step's product is its own block of rows."
    ),
    "cm_generic": "Compare with `x @ w` on one device, block of rows by block of rows.",
    "cm_missing_blocks": (
        "{missing} of the {k} blocks of rows in each device's columns are still zero: a device multiplies "
        "k x blocks, the one it holds at the start and the k - 1 it receives, so k products and k - 1 sends."
    ),
    "cm_compiled_collectives": (
        "`{name}` returns the right values, but its compiled program on {mesh} also performs {seen} (read "
        "from the optimized program, as the grader reads it: the compiler inserted it, e.g. to gather an "
        "operand or to lay out a result split otherwise). The exercise allows `lax.ppermute` over "
        "MODEL_PARALLEL only: x's blocks travel, w stays, and the result comes out with its columns split like w's."
    ),
    "cm_not_interleaved": (
        "`{name}` returns the right values with `lax.ppermute` only, but its compiled program on {mesh} runs "
        "{got} of its matmuls before the last `ppermute` where the reference runs {want} (read from the "
        "optimized program's schedule): the x blocks travel first and the products come after. Multiply "
        "the block a device holds, then pass it on: each step's partial matmul between two sends."
    ),
    "cm_w_travels": (
        "`{name}` returns the right values with `lax.ppermute` only, but its compiled program on {mesh} runs "
        "{got} of its matmuls before the last `ppermute` where the reference runs {want} (read from the "
        "optimized program's schedule): its ppermutes carry w's blocks, or products made from them, and the "
        "blocks of w travel before the products are made. Here w stays and x's blocks travel: multiply the x "
        "block a device holds by its own w block, place the product at that x block's rows, then pass the x "
        "block on, each step's partial matmul between two sends."
    ),
    "cm_gathers": (
        "`{name}` returns the right values, but it uses {seen}: that is the all-gather version. Move the x "
        "blocks with `lax.ppermute` around the ring instead, multiplying the block a device holds while "
        "the next one travels."
    ),
    "cm_no_ppermute": (
        "`{name}` returns the right values, but it performs {seen} over '{axis}'. Build it from "
        "`lax.ppermute` steps inside `jax.shard_map`."
    ),
    "cm_whole_product": (
        "`{name}` returns the right values, but one device of its compiled program on {mesh} computes {got} "
        "FLOPs, {ratio}× the reference's {want} (read from the optimized per-device program, each instruction as "
        "often as it runs; at most {factor}× is allowed): each device computes more than its own columns of the "
        "product, as a ring of w's blocks inside the ring of x's does. Keep w's block where it is: each device "
        "multiplies the x blocks that reach it by its own w block, k partial matmuls in all."
    ),
}

HINTS = {
    "collective_matmul_rows": [
        "Device i holds rows block i of x and column block i of w. Which blocks of the result can it "
        "compute with the x block it holds now, and which x block will it hold after one step of the ring?",
        "In step s (s = 0 .. k - 1) device i holds the x block of device j = (i - s) mod k, and "
        "`x_block @ w_block` is rows block j of its columns of the result. Start from zeros of shape "
        "(k * rows, columns) and place each product with `lax.dynamic_update_slice_in_dim(out, part, j * "
        "rows, axis=0)`.",
        "Pass the x block on with `lax.ppermute(x_block, MODEL_PARALLEL, perm=[(i, (i + 1) % k) ...])` "
        "after each product except the last (k - 1 sends). The result's columns stay split: "
        "`out_specs=P(None, MODEL_PARALLEL)`.",
    ],
    "feature_correlation": [
        "Run `jax.jit(feature_correlation_one_device)(x_grid)` and read the first error: which operation "
        "does explicit mode refuse, and which of section 3's two fixes answers that kind of refusal?",
        "The product `centred.T @ centred` sums over the examples, which both operands split over "
        "DATA_PARALLEL: write it with `jnp.matmul` and an `out_sharding=` that names the layout the "
        "exercise asks for, on the `mesh` argument. `jnp.diagonal` of a split matrix is refused too, but "
        "the variances need no matrix: each is the mean of a centred column squared.",
        "`jnp.outer(std, std)` would split both of its dimensions over MODEL_PARALLEL. Divide twice "
        "instead: by `std[:, None]` (rows, split like the result's) and by a copy of `std` resharded to "
        "`P()` (whole on every device), indexed `[None, :]`.",
    ],
    "one_all_reduce_mlp": [
        "Section 2 showed which layouts of `x @ w` need no communication and which need an all-reduce. "
        "If the first matmul is to need none, which dimension of `relu(x @ w1)` can be split? And what "
        "does that make the second matmul need?",
        "Split the hidden activation along its features: `jax.lax.with_sharding_constraint(h, "
        "NamedSharding(mesh, P(None, MODEL_PARALLEL)))`. Each device then needs only its columns of `w1` "
        "and its rows of `w2`, and the second product is a sum of partial products: one all-reduce.",
        "Ask for the replicated result at the end (`with_sharding_constraint(y, NamedSharding(mesh, P()))`) "
        "and print `count_collectives(jax.jit(...).lower(x, w1, w2).compile().as_text())` to see what "
        "the compiler chose. Splitting h by rows instead makes it gather.",
    ],
}
MISTAKE_HINTS = {
    "collective_matmul_rows": {"cm_added": 2},
    "feature_correlation": {"corr_covariance": 2, "corr_not_centred": 2},
    "one_all_reduce_mlp": {"mlp_relu_order": 1, "mlp_no_relu": 1, "mlp_relu_twice": 1},
}
TEXT, say = notebook_words(TEXT, HINTS, MISTAKE_HINTS)  # checked; each lookup in the kernel's language
