"""The words of notebook 03's checks as data: sentences (TEXT), hints (HINTS), known mistakes' hints (MISTAKE_HINTS)."""

from __future__ import annotations

from namedaxes.exercises import notebook_words

# ---------------------------------------------------------------- every student-facing string
TEXT = {
    # where a check ran
    "grid_words": "a {rows} x {cols} grid ('{d}' x '{m}')",
    "on_grid": "on {grid}",
    "on_mesh": "on {grid}, x of shape {shape}",
    "on_mesh_step": "on {grid}, w of {features} entries, {examples} examples",
    "the_check_runs": "The check, which runs `{name}` {where},",
    # crashes
    "nested_pmap": (
        '`{name}` failed {where}: "{first}". Nested `jax.pmap` does not work on this JAX; use '
        "collectives over the names the grid already binds."
    ),
    "shard_map_specs": ('`{name}` failed {where} with JAX\'s error "ValueError: {first}". {fix}'),
    "fix_row_normalize": (
        "Split x with `in_specs=P(DATA_SHARDS, MODEL_REPLICAS)`, put the blocks back with the "
        "same `out_specs`, and use the `mesh` argument (its axis types are Auto, so a plain "
        "array can go in)."
    ),
    "fix_tp_dp_step": (
        "Give `jax.shard_map` one spec per argument, in order (w, x, y): "
        "`P(MODEL_REPLICAS)`, `P(DATA_SHARDS, MODEL_REPLICAS)`, `P(DATA_SHARDS)`, the "
        "`out_specs` of the new w `P(MODEL_REPLICAS)`, and use the `mesh` argument."
    ),
    "still_varying": (
        '`{name}` failed {where} with JAX\'s error "{first}": the new w you return still '
        "differs from one data shard to the next, while `out_specs=P(MODEL_REPLICAS)` says the "
        "two copies of a model shard are equal. The copies of a shard must take the same step: "
        "combine the data shards' gradients over the data axis before the update."
    ),
    "block_shapes": (
        '`{name}` failed {where} with JAX\'s error "{first}". Inside `jax.shard_map` each '
        "device sees only its blocks: its examples' columns x_block of shape {x_block} and its "
        "part of w of shape {w_block}. Multiply those two blocks."
    ),
    # result types and shapes
    "not_a_tuple": "`{name}(x)` should return a tuple of {n} {what}, but it returns {got}.",
    "tuple_of": "a {kind} of length {n}",
    "single_array": "a single array (all devices together: shape {shape})",
    "a_type": "a `{type}`",
    "three_arrays": "arrays ({parts})",
    "two_scalars": "int32 scalars (row-major number, column-major number)",
    "not_jax_array": "`{label}` should be a `jax.Array`, but it is a `{type}`: {value}",
    "per_device_shape": (
        "On each device, `{label}` should have shape {want}, but it has shape {got} (all devices "
        "together: {got_all}, expected {want_all})."
    ),
    "dtype": "`{label}` should have dtype {want}, but it has dtype {got}.",
    "global_shape": "`{label}` should return an array of shape {want}, but it returns shape {got} ({where}). {hint}",
    "values": "`{label}` has the wrong values {where}: expected {want}, got {got}. {hint}",
    # 1. grid_sums
    "part_same_data": "the sum over the devices that hold the same data shard as this one",
    "part_same_model": "the sum over the devices that hold the same model shard as this one",
    "part_neither": (
        "the sum over the devices that hold neither the same data shard nor the same model shard as this one"
    ),
    "parts_list": "same data shard, same model shard, neither",
    "seen_sum": "the sum over {axes}",
    "seen_mean": "the mean over {axes}",
    "seen_nothing": "x itself (nothing was reduced)",
    "axes_one": "'{axis}'",
    "axes_both": "both axes",
    "group_row": (
        "the devices of this device's row: they differ only in their position along "
        "'{m}', so they hold the same data shard and different model shards"
    ),
    "group_column": (
        "the devices of this device's column: they differ only in their position along "
        "'{d}', so they hold the same model shard and different data shards"
    ),
    "group_all": "every device of the grid",
    "group_neither": (
        "the devices outside this device's row and its column: they differ from it along both '{d}' and '{m}'"
    ),
    "grid_sums_seen": (
        "`{label}` should be {want}, but {where} its values are {seen}, which combines {group}. {advice}"
    ),
    "advice_part": "Which devices share what you need, and along which axis do they differ?",
    "advice_mean": "A mean divides by the number of devices: this part asks for a sum.",
    "grid_sums_generic": "Expected {want}: each device adds up x over {group}.",
    "grid_sums_unreduced": "`{label}` should be {want}, but {where} it is x itself: nothing was reduced.",
    "grid_sums_structure": "Use a collective over `{constant}` as well.",
    "grid_sums_neither_all": (
        "That is the sum over every device of the grid: leave out this device's row and its column (subtract "
        "their sums; x itself is in both, so add it back once)."
    ),
    "grid_sums_neither_twice": (
        "This device's own x was subtracted twice, once with its row and once with its column: add it back once."
    ),
    # 2. device_numbers
    "number_row_major": "the row-major number (rows one after the other: row * row length + column)",
    "number_column_major": "the column-major number (columns one after the other: column * column length + row)",
    "numbers_part": "Part {k} is {what}. {diagnosis}",
    "numbers_swapped_row": "These are the numbers of the other order: the row-major ones.",
    "numbers_swapped_column": "These are the numbers of the other order: the column-major ones.",
    "numbers_hard_coded": (
        "They are right on a 2 x 4 grid only: the length of a row or a column was written as a "
        "number. The checks use grids of other shapes; ask the named axes."
    ),
    "numbers_wrong_length_row": (
        "They multiply by the length of the wrong axis: in the row-major order, a whole row comes before this "
        "device's own row, and a row is as long as '{axis}'."
    ),
    "numbers_wrong_length_column": (
        "They multiply by the length of the wrong axis: in the column-major order, a whole column comes before "
        "this device's own column, and a column is as long as '{axis}'."
    ),
    "numbers_one_axis": "That is the position along '{axis}' only; the number needs both positions.",
    "numbers_one_based": (
        "Each number is 1 too large: devices are numbered from 0, as `lax.axis_index` counts, so the "
        "first device of the order is number 0."
    ),
    "numbers_generic": "Count, for a device of the grid, how many devices come before it in that order.",
    # 3. row_normalize
    "row_normalize_shape_hint": (
        "Use `out_specs=P(DATA_SHARDS, MODEL_REPLICAS)` so the blocks are put back where they came from."
    ),
    "row_normalize_expected": "Expected each row of x divided by that row's sum. {diagnosis}",
    "rn_elementwise_column": (
        "It divides by the sum over '{d}' (down each column, across data shards); a row "
        "lives on one data shard, spread over '{m}'."
    ),
    "rn_local_block": (
        "It divides by each device's own part of the row: those partial sums still have to be added up across '{m}'."
    ),
    "rn_elementwise_row": (
        "It sums over '{m}' element by element, but a row also has several entries on each "
        "device: add up the block's own part of the row first, then combine the devices' "
        "partial sums."
    ),
    "rn_whole_array": "It divides by the sum over both axes (the whole array), not by each row's sum.",
    "rn_partials_wrong_axis": (
        "It adds up the partial row sums over '{d}': the devices of a column, which hold "
        "other rows of x (other data shards). Every entry is divided by a mix of "
        "different rows. The devices that share a row differ in their position along "
        "'{m}': combine over that axis."
    ),
    "rn_partials_mean": (
        "It averages the partial row sums with `lax.pmean` over '{m}': that is the row's sum "
        "divided by the {n} devices of a row, so every entry comes out {n} times too large. "
        "The row's sum is the total of the partial sums: `lax.psum`."
    ),
    "rn_partials_mean_wrong_axis": (
        "It averages the partial row sums over '{d}' (the devices of a column, which "
        "hold other rows of x), and a mean, not a sum. Add them up over '{m}', the "
        "axis along which the devices of one row differ."
    ),
    "rn_partials_mean_both": (
        "It averages the partial row sums over both axes: that mixes the rows (across "
        "'{d}') and divides by the number of devices. Add them up over '{m}' only."
    ),
    "rn_no_collective": (
        "`{name}` should add up partial row sums across '{m}' with a collective inside "
        "`jax.shard_map`, but it performs {seen}. The values are right, but the point is that "
        "each device only holds its own block: use `jax.shard_map` and a collective over "
        "MODEL_REPLICAS."
    ),
    "no_collective_at_all": "no collective at all",
    # 4. tp_dp_step
    "tp_shape_hint": (
        "Return only the new w, one entry per feature: its shards stay split over MODEL_REPLICAS "
        "(`out_specs=P(MODEL_REPLICAS)`)."
    ),
    "tp_update": ("`{name}` returned w = {got} {where}, but one SGD step on the whole batch gives w = {want}. {hint}"),
    "tp_data_sum": (
        "Your step is {k} times too large, {k} being the number of data shards: the gradients of the "
        "data shards were added, not averaged. (Under `jax.shard_map`, `jax.grad` with respect to "
        "a w that is the same on every data shard already adds them up itself: use the gradient "
        "formula of the exercise, or differentiate the mean of the losses over the data axis.)"
    ),
    "tp_model_sum": (
        "Your step is {k} times too large, {k} being the number of model shards. `jax.grad` "
        "through a psum with `check_vma=False` counts the prediction once per device of the "
        "row; use the gradient formula of the exercise, with the default `check_vma`."
    ),
    "tp_data_small": (
        "Your step is {k} times too small, {k} being the number of data shards: the data shards' gradients "
        "were averaged twice (a `lax.pmean` and a division by their number as well). Average them once."
    ),
    "tp_predictions_averaged": (
        "That step predicts with the *mean* of a row's partial products (`lax.pmean` over MODEL_REPLICAS): "
        "a prediction `x @ w` is their *sum*, each device's `x_shard @ w_shard` added with `lax.psum`."
    ),
    "tp_right_on": (
        "It is right on {good} but not on this mesh, which has another shape: look for a number "
        "of devices written as a number (dividing by 2, say), and take it from the mesh or let a "
        "collective that averages count the devices."
    ),
    "tp_unchanged": "w did not change: subtract LEARNING_RATE times the gradient from your shard of w.",
    "tp_sign": "The step goes the wrong way: subtract the gradient, do not add it.",
    "tp_partial_products": (
        "Each device predicted with its own partial product only: an example's prediction "
        "is the sum of the partial products of all devices of its row (each holds other "
        "features). Combine them before computing the error."
    ),
    "tp_mixed_shards": (
        "The gradients were averaged over the model axis as well: that mixes the gradients of "
        "different model shards (different entries of w). Only the copies of one shard, "
        "across the data shards, may be averaged."
    ),
    "tp_local_examples": (
        "That is a step on the first data shard's examples only: the data shards' gradients "
        "must be averaged before the update."
    ),
    "tp_generic": "Compare with `tp_dp_step_np(w, batch)`, the same step in NumPy on one device.",
    "tp_needs_psum_model": (
        "`{name}` returns the right values, but over '{m}' it performs {seen}. The point of "
        "tensor parallelism is that no device ever holds all of w: each computes a partial "
        "product with its own shard, and a `lax.psum` over MODEL_REPLICAS adds the partial "
        "products of a row."
    ),
    "tp_gathers": (
        "`{name}` returns the right values, but over '{m}' it performs {seen} and no `lax.psum`. "
        "Gathering blocks (of w, of x or of the partial products) hands every device of a row all of "
        "its partners' blocks; tensor parallelism keeps each device on its own shard of w and adds "
        "the partial products of a row with one `lax.psum` over MODEL_REPLICAS."
    ),
    "tp_holds_w": (
        "`{name}` returns the right values with the right collectives, but one device materializes an "
        "array of {got} bytes, {ratio}× the largest of the reference's ({want} bytes; read from the "
        "compiled per-device program with w of {features} entries and {examples} examples on a 2 x 4 grid, "
        "where at most {factor}× is allowed): a device gathers all of w (or another whole array). No device "
        "may hold all of w: each keeps its own shard and the partial predictions of a row are added with "
        "`lax.psum` over MODEL_REPLICAS."
    ),
    "tp_needs_data": (
        "`{name}` returns the right values, but over '{d}' it performs {seen}. The copies of a "
        "model shard must average their data shards' gradients with `lax.pmean` over DATA_SHARDS "
        "(a psum divided by the number of data shards), as the exercise's step does."
    ),
    "rn_whole_row": (
        "`{name}` returns the right values with the right collectives, but one device materializes an "
        "array of {got} bytes, {ratio}× its own block of x ({want} bytes: one row of {k} float32 numbers; read "
        "from the compiled per-device program on a 2 x 4 grid, where at most {factor}× is allowed): a device "
        "gathers its row's blocks (or another whole array). No device ever holds a whole row: each adds up its "
        "own part of the row and a `lax.psum` over '{m}' adds the partial sums."
    ),
    "rn_layout_hint": (
        "Split x with `in_specs=P(DATA_SHARDS, MODEL_REPLICAS)` and put the blocks back with the "
        "same `out_specs`: each device holds only its own block of x, and so does the result."
    ),
    "tp_layout_hint": (
        "Give each device only its blocks: `in_specs=(P(MODEL_REPLICAS), P(DATA_SHARDS, "
        "MODEL_REPLICAS), P(DATA_SHARDS))` and `out_specs=P(MODEL_REPLICAS)`, with one `lax.psum` "
        "over MODEL_REPLICAS for the predictions and one `lax.pmean` over DATA_SHARDS for the "
        "gradients: no device holds all of w."
    ),
}

HINTS = {
    "row_normalize": [
        "Inside `jax.shard_map(..., in_specs=P(DATA_SHARDS, MODEL_REPLICAS))` each device sees a block of "
        "one row: its own columns of that row. The row's sum is spread over the row's devices.",
        "Each device can add up its own part of the row (keep the dimensions, so it divides the block "
        "cleanly). Which devices hold the other parts of the same row, and along which axis do they differ?",
        "Those partial sums must be added, not averaged. Write a per-block function (partial sum, "
        "collective, divide), wrap it with `jax.shard_map` over the `mesh` argument with the same spec for "
        'input and output, and call the result on `x`: section "Form (b)" shows the pattern.',
    ],
    "device_numbers": [
        "A device's number in an order is how many devices come before it. In the row-major order, which "
        "devices come before this one: how many whole rows, and how many devices of its own row?",
        "`lax.axis_index` and `lax.axis_size` give this device's position along one axis and that axis's "
        "length; the checks use grids of other shapes, so no length may be written as a number.",
        "Like the collectives, `lax.axis_index` also accepts a tuple of axis names: it then numbers the "
        "devices of all those axes together, and the order of the names in the tuple decides which axis "
        "counts slowest. Try both orders on the grid and compare with `device_ids`.",
    ],
    "grid_sums": [
        "For each part, first find the group of devices on the grid: which devices hold the same data shard "
        "as this one, which hold the same model shard? Then ask along which axis the devices of that group "
        "differ.",
        "A collective over one axis combines the devices that differ only along that axis. The devices of a "
        "row share their data shard and differ along MODEL_REPLICAS; the devices of a column share their "
        "model shard and differ along DATA_SHARDS.",
        "No collective combines exactly the devices of the third part. Start from the sum over the whole grid "
        '(one collective with both names as a tuple, the way section "Form (a)" takes the maximum of the '
        "whole grid) and take away this device's row and its column: which value did you take away twice?",
    ],
    "tp_dp_step": [
        "Draw the blocks first: which part of w, which examples and which features of x does device "
        "(i, j) hold? Then ask what it is missing to predict its examples, and what it is missing to "
        "update its part of w.",
        "A device's product of its x block with its part of w is only a partial prediction: the devices of "
        "its row hold the other features, and their partial products add up to the prediction. The "
        "gradient formula then needs only the device's own blocks, but it covers only its data shard.",
        "The copies of a model shard (the devices of a column) must take the same step: combine their "
        "gradients over the axis along which they differ, as an average, then subtract LEARNING_RATE "
        "times it from the shard. The new w stays split like the old one.",
    ],
}
MISTAKE_HINTS = {
    "row_normalize": {
        "rn_elementwise_column": 2,
        "rn_local_block": 2,
        "rn_elementwise_row": 2,
        "rn_whole_array": 2,
        "rn_partials_wrong_axis": 2,
        "rn_partials_mean": 3,
        "rn_partials_mean_wrong_axis": 3,
        "rn_partials_mean_both": 3,
    },
    "device_numbers": {
        "numbers_swapped_row": 3,
        "numbers_swapped_column": 3,
        "numbers_hard_coded": 2,
        "numbers_wrong_length_row": 1,
        "numbers_wrong_length_column": 1,
        "numbers_one_axis": 1,
        "numbers_one_based": 1,
    },
    "grid_sums": {"grid_sums_neither_all": 3, "grid_sums_neither_twice": 3},
    "tp_dp_step": {
        "tp_unchanged": 3,
        "tp_sign": 3,
        "tp_data_sum": 3,
        "tp_model_sum": 2,
        "tp_data_small": 3,
        "tp_predictions_averaged": 2,
        "tp_partial_products": 2,
        "tp_mixed_shards": 3,
        "tp_local_examples": 3,
    },
}
TEXT, say = notebook_words(TEXT, HINTS, MISTAKE_HINTS)  # checked; each lookup in the kernel's language
