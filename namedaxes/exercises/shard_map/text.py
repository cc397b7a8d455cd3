"""The words of notebook 05's checks as data: sentences (TEXT), hints (HINTS), known mistakes' hints (MISTAKE_HINTS)."""

from __future__ import annotations

from namedaxes.exercises import notebook_words

# ---------------------------------------------------------------- every student-facing string
TEXT = {
    # crashes, any exercise
    "empty_assertion": (
        "`{name}` stopped with an empty AssertionError from inside JAX. On this JAX that is what a "
        "collective (`lax.psum`, `lax.pmean`, ...) inside `jax.shard_map` raises when its axis name is "
        "not an axis of the mesh, e.g. a typo such as 'device'. Use the course's constants (`DEVICES`, "
        "`DATA_SHARDS`, `MODEL_REPLICAS`, `DATA_PARALLEL`).{axes}"
    ),
    "mesh_axes": " This mesh has the axes {axes}.",
    "unbound": (
        "`{name}` calls a collective over '{axis}' where no mesh axis of that name is bound (JAX says: "
        '"{first}"). Collectives work inside the function you give `jax.shard_map`, over the axis '
        "names of its `mesh`: put the `lax.psum`/`lax.pmean` in that per-device function, and use the "
        "course's constants for the names.{axes}"
    ),
    "set_mesh_in_jit": (
        "`{name}` uses `jax.set_mesh`, which only works outside `jax.jit`, and the check runs your "
        "function under `jax.jit`. Place the inputs with `jax.device_put(x, NamedSharding(mesh, P(...)))` "
        "and pass `mesh=mesh` to `jax.shard_map` instead."
    ),
    "set_mesh_in_jit_no_shard_map": (
        "`{name}` uses `jax.set_mesh`, which only works outside `jax.jit`, and the check runs your "
        "function under `jax.jit`. Place the inputs with `jax.device_put(x, NamedSharding(mesh, P(...)))` "
        "(or `jax.reshard(x, NamedSharding(mesh, P(...)))`), then call the jitted step on them: no "
        "`set_mesh` and no `shard_map` is needed."
    ),
    "spec_without_mesh": (
        '`{name}` failed with JAX\'s error "{first}": a bare `P(...)` only means something under '
        "`jax.set_mesh`, which is not available under `jax.jit`. Give `jax.device_put` or `jax.reshard` "
        "a `NamedSharding(mesh, P(...))` built on the `mesh` argument."
    ),
    "mixed_devices": (
        '`{name}` failed with JAX\'s error "{first}": an input that lives on one device met the mesh '
        "inside `jax.jit`. Place every input on the `mesh` argument with "
        "`jax.device_put(x, NamedSharding(mesh, P(...)))` before the computation uses it."
    ),
    "other_mesh": (
        "`{name}` ran on {n} devices {where}, but the `mesh` argument has {k}: build every `NamedSharding` "
        "(and `jax.shard_map`'s `mesh=`) on the `mesh` argument the check passes, not on a mesh from another cell."
    ),
    "spec_mismatch": (
        '`{name}` failed with JAX\'s error "{first}". The mesh from `jax.make_mesh` has Explicit axes, '
        "so `shard_map` checks that each input already has the sharding your `in_specs` names. Place "
        "the inputs first, e.g. `jax.device_put(x, NamedSharding(mesh, P(...)))` with the same spec as "
        "in_specs."
    ),
    "varying_output": (
        "`{name}` failed with JAX's error \"{first}\": an output's `out_specs` says it is the same on "
        "every device along some mesh axis, but JAX's type of the value says it still varies along "
        "that axis. In JAX's types only a reducing collective over that axis (`lax.psum`, `lax.pmean`, "
        "`lax.pmax`, ...) makes a value the same on every device; a value computed from the device's own "
        "block, or from an `all_gather` or a `ppermute`, still varies. Reduce over that axis, or name "
        "the axis in the output's `out_specs`."
    ),
    "not_divisible": (
        '`{name}` failed with JAX\'s error "{first}": an array dimension cannot be cut into that many '
        "equal blocks. Split over the `mesh` argument the check passes (it has 2, 4 or 8 devices), not "
        "over a mesh from another cell, and split only the dimension the exercise says. A dimension whose "
        "length is no multiple of the devices is padded first, with values that change nothing (zero rows "
        "for a sum: `jnp.pad`).{axes}"
    ),
    "out_specs_too_long": (
        '`{name}` failed with JAX\'s error "{first}": an `out_specs` names more dimensions than your per-device '
        "result has. A sum along an axis (`jnp.sum(block, axis=1)`) removes that dimension: give one entry "
        "per dimension that is left, e.g. `P(DATA_SHARDS)` for a vector split over DATA_SHARDS."
    ),
    "specs": (
        '`{name}` failed with JAX\'s error "{first}". Check that `in_specs` and `out_specs` name the '
        "mesh's axes for the array dimensions that are split, and `P()` for values that are the same "
        "on every device."
    ),
    # results, any exercise
    "values": "`{name}` has the wrong values {where}: expected {want}, got {got}. {hint}",
    "seen_nothing": "no collective at all",
    "where_line": "(mesh of {k} devices, {what})",
    # 1. sharded_scaled_sum
    "scaled_x": "x of shape {shape}",
    "scaled_shape": (
        "`{name}` should return shape {want}, the total of 2 * x in each of x's {m} columns, but it "
        "returned shape {got} {where}.{hint}"
    ),
    "scaled_shape_scalar": (
        " A scalar is the total of a whole block, all columns mixed: let each device add up its rows "
        "only, so that every column keeps its own total."
    ),
    "scaled_shape_block": (
        " Shape {got} is one device's block of rows: `lax.psum` adds the blocks of all devices element "
        "by element, but the rows of each block still have to be added up."
    ),
    "scaled_shape_row_totals": (
        " Shape {got} has one number per row of a device's block: that sums along the columns. Add up "
        "the rows instead, so that one number per column is left."
    ),
    "scaled_shape_per_device": (
        " That is {k} results side by side: with `out_specs=P(DEVICES)` the devices' results are "
        "concatenated along dimension 0. After a psum every device holds the same column totals: "
        "`out_specs=P()`."
    ),
    "scaled_wrong": "`{name}` returned {got} {where}, but the column totals of 2 * x are {want}. {hint}",
    "scaled_plain_sum": "Those are the plain column totals of x: multiply by 2.0.",
    "scaled_rows_dropped": (
        "Those are the totals of the first {kept} rows only: the last {dropped} were cut off to make the rows "
        "divide evenly. Pad x with zero rows instead (`jnp.pad`): zeros change no total."
    ),
    "scaled_first_share": (
        "Those are only the first device's shares (the column totals of device 0's rows). Add the "
        "shares of all devices with `lax.psum(..., DEVICES)` inside the shard_map."
    ),
    "scaled_mean": "That is the mean of the devices' shares (`lax.pmean`): use `lax.psum` for the totals.",
    "scaled_by_hand": (
        "The result does not change when `x` does: if you wrote numbers by hand, compute them "
        "instead: the check uses several meshes and shapes."
    ),
    "scaled_other": (
        "Those are not 2.0 times the column totals of all of `x`: each device should add up 2.0 "
        "times its own rows, and `lax.psum(..., DEVICES)` adds the devices' shares."
    ),
    "scaled_why": (
        "The point is the shard_map form: each device adds up only its own rows, and "
        "`lax.psum(..., DEVICES)` inside `jax.shard_map` adds the devices' shares."
    ),
    "total": "column totals",
    # 2. replica_totals
    "replica_where": "({rows} x {cols} mesh, x of shape {shape})",
    "replica_shape": (
        "`{name}` should return shape {want} {where}: one total per row of x, all of its columns added up, "
        "with the rows split over DATA_SHARDS. It returned shape {got}.{hint}"
    ),
    "replica_shape_blocks_added": (
        " That is the {cols} column blocks added up (section 3's `psum_over` for the other axis), not yet "
        "each row's total: first add up the columns of the device's own block (`jnp.sum(block, axis=1)`), "
        "then the row partners' numbers."
    ),
    "replica_shape_copies": (
        " That is {cols} copies of the row totals side by side: after the psum every device of a row holds "
        "the same numbers, so the `out_specs` names only DATA_SHARDS: `out_specs=P(DATA_SHARDS)`."
    ),
    "replica_shape_block": (
        " Those are one data shard's rows only: the result still differs between data shards, so its "
        "out_specs must name DATA_SHARDS for dimension 0."
    ),
    "replica_shape_data_sum": " That shape is what a sum over DATA_SHARDS gives. Reduce over MODEL_REPLICAS only.",
    "replica_over_both": (
        "Those are the totals over the whole mesh: reduce over MODEL_REPLICAS only, so each data shard "
        "keeps its own rows."
    ),
    "replica_row_partners": (
        "Each device should add up its block's columns, then add its numbers to those of its row's other devices."
    ),
    "replica_pmean": (
        "Those are the row totals divided by the {k} replicas: `lax.pmean` averages the row partners' "
        "numbers, and a total adds them, `lax.psum`."
    ),
    "replica_own_block": (
        "Those are the totals of each device's own block only: add them to the row partners' with a psum "
        "over MODEL_REPLICAS."
    ),
    "replica_why": (
        "Use `jax.shard_map` and let each device add its block to its row partners' with "
        "`lax.psum(..., MODEL_REPLICAS)`."
    ),
    "replica_extra_axis": (
        "`{name}` communicates over '{axis}' too ({seen}), but the data shards never need each other's "
        "values here: reduce over MODEL_REPLICAS only."
    ),
    # 3./4. the weighted training steps
    "step_where": "(mesh of {k} devices, {n} examples, weights per device {weights})",
    "step_not_dict": (
        "`{name}` should return the new parameters as a dict with keys 'w' and 'b' (like `params`), but "
        "it returned {kind} {where}. `jax.tree.map` over `params` and the gradients keeps the structure."
    ),
    "step_kind_dict": "a dict with keys {keys}",
    "step_kind_type": "a `{type}`",
    "step_not_scalar": (
        "`{name}(...)['{key}']` should be a scalar like `params['{key}']`, but it has shape {shape} {where}.{hint}"
    ),
    "step_per_device": (
        " One value per device: the new parameters are the same on every device, so their `out_specs` is `P()`."
    ),
    "step_wrong": (
        "`{name}` returned w = {got_w}, b = {got_b} {where}, but one SGD step on the weighted loss of "
        "the whole batch gives w = {want_w}, b = {want_b}. {hint}"
    ),
    "step_unweighted": (
        "That is the step of the *unweighted* loss: every example counted once. The loss of the batch "
        "is the weighted mean of the squared errors, sum(weight * error²) / sum(weight): an example "
        "with weight 0 (padding) must not count at all."
    ),
    "step_devices_equal": (
        "That is the mean of the devices' own weighted-mean steps: every device counted equally, "
        "although their weights add up to different totals. A `pmean` of the local losses "
        "or gradients is only right for equal shards. Add up each device's weighted sums across "
        "devices instead (`lax.psum` of the numerator and of the weights, then divide)."
    ),
    "step_k_times": (
        "Your update is {k} times too large: the gradients were summed over the {k} devices, not "
        "averaged. Either a `lax.psum` stands where a division belongs, or you met the shard_map trap "
        "(Pitfall 4): `params` enter with `in_specs=P()`, so `jax.grad` with respect to them already "
        "sums the devices' gradients."
    ),
    "step_k_small": (
        "Your update is {k} times too small: the devices' gradients were averaged over the {k} devices "
        "(`lax.pmean`) and divided by the total weight as well. Add them up with `lax.psum`, then divide once."
    ),
    "step_divided_by_examples": (
        "That divides the weighted sum by the number of examples ({n}, padding included), but the weighted "
        "mean divides by the sum of the weights: `lax.psum(jnp.sum(weight), DATA_PARALLEL)`."
    ),
    "step_unchanged": "The parameters did not change: subtract LEARNING_RATE * gradient from each one.",
    "step_100x": "The step is 100 times too large: the learning rate is LEARNING_RATE, 0.01.",
    "step_ascent": "The step goes the wrong way: subtract the gradient, do not add it.",
    "step_other": (
        "Compare with one plain SGD step on one device, on the weighted loss "
        "sum(weight * error²) / sum(weight) of the whole batch."
    ),
    "parameters": "parameters",
    "dp_why": (
        "Here the communication is yours to write: inside `jax.shard_map`, each device computes its own "
        "sums and a `lax.psum` over DATA_PARALLEL combines them. (Exercise 4 is where the compiler does "
        "it for you.)"
    ),
    "dp_gathers": (
        "`{name}` returns the right parameters, but it moves whole blocks between devices ({seen}): "
        "every device ends up with the whole batch, which is one-device training repeated on every "
        "device, not data parallelism. Keep each device on its own examples and combine only their "
        "sums (a few numbers) with `lax.psum` over DATA_PARALLEL."
    ),
    "migration_whole": (
        "`{name}` returns the right total and columns, but one device's largest array is {ratio}× the "
        "reference's on {k} devices ({got} bytes against {want}, read from the compiled per-device program; at "
        "most {factor}× is allowed): every device holds all of the weighted columns. As under `pmap`, each "
        "device weights its own column only, and `lax.psum` over DEVICES adds them up."
    ),
    "replica_whole_row": (
        "`{name}` returns the right totals with a psum over MODEL_REPLICAS, but one device computes {ratio}× "
        "the reference's FLOPs on the {mesh} mesh ({got} against {want}, read from the compiled per-device "
        "program; at most {factor}× is allowed): every device holds all of its row's blocks and adds up the "
        "whole row. Each device adds up its own block's part of each row, and `lax.psum` over MODEL_REPLICAS "
        "adds those partial totals."
    ),
    "scaled_whole": (
        "`{name}` returns the right totals with a psum over DEVICES, but one device computes {ratio}× the "
        "reference's FLOPs on {k} devices ({got} against {want}, read from the compiled per-device program; at "
        "most {factor}× is allowed): every device holds all of `x` and adds up every row. Each device adds up "
        "its own rows only, and `lax.psum` over DEVICES adds those partial totals (a few numbers)."
    ),
    "dp_whole_batch": (
        "`{name}` returns the right parameters with a psum over DATA_PARALLEL, but one device computes "
        "{ratio}× the reference's FLOPs on {k} devices ({got} against {want}, read from the compiled per-device "
        "program; at most {factor}× is allowed): every device holds all of the batch and computes the whole "
        "batch's step. Keep each device on its own examples and combine only their sums (a few numbers) with "
        "`lax.psum` over DATA_PARALLEL."
    ),
    "jit_writes_collectives": (
        "`{name}` returns the right parameters, but it writes its own collectives ({seen}). In this "
        "exercise the compiler does the communication: no `shard_map` and no `lax.psum`/`lax.pmean`, "
        "just `jax.jit` of a one-device step on the weighted loss, applied to sharded arrays."
    ),
    "jit_gathers_batch": (
        "`{name}` returns the right parameters, but its compiled program has no all-reduce: the batch was "
        "placed split, then made whole again inside the step ({seen}, laid out with `P()` by a `jax.reshard` or "
        "`jax.device_put`), so every device computes the whole batch's step. Leave the batch split inside the "
        "jitted step: the compiler then sums each device's own examples and inserts the all-reduce itself."
    ),
    "jit_no_all_reduce": (
        "`{name}` returns the right parameters, but its compiled program has no all-reduce: everything "
        "ran without communication, so the batch was not split over the mesh. Place it with "
        "`jax.device_put(batch, NamedSharding(mesh, P(DATA_PARALLEL)))` (and `params` with `P()`) "
        "before calling the jitted step."
    ),
    # 5. weighted_total_shard_map
    "migration_where": "(mesh of {k} devices, w of shape {w_shape}, x of shape {x_shape})",
    "migration_shape": (
        "`{name}` should return what the pmap version returns, shape {want} {where}, but it returned shape {got}.{hint}"
    ),
    "migration_block_axis": (
        " The mapped axis is still there: pmap removed it, so `weighted_total` saw columns of shape "
        "(d,); shard_map keeps it, so each device's block of x has shape (d, 1), and `w * x_block` "
        "broadcasts (d,) against (d, 1) into (d, d). Take the column (`x_block[:, 0]`) before calling "
        "`weighted_total`."
    ),
    "migration_pair": (
        "`{name}` should return what the pmap version returns {where}: a pair, the total (`out_axes` None) and "
        "the weighted columns (`out_axes` 1), but it returned {kind}."
    ),
    "migration_kind": "a `{type}` of length {n}",
    "migration_columns_dim0": (
        " Those columns are stacked along dimension 0 (`out_specs` P(DEVICES)): `out_axes=1` stacks them "
        "along dimension 1, `P(None, DEVICES)`, each device handing back its column as shape (d, 1) "
        "(`col[:, None]`)."
    ),
    "migration_per_device": (
        " One result per device: that is what `out_specs` naming DEVICES gives. `out_axes=None` "
        "translates to `out_specs=P()`."
    ),
    "migration_wrong": (
        "`{name}` has the wrong values {where}: the pmap version gives {want}, yours gives {got}. {hint}"
    ),
    "migration_mean": "That is the mean over devices: keep `weighted_total`'s `lax.psum`.",
    "migration_first": "That is only device 0's term: the psum over DEVICES is missing.",
    "migration_why": "Keep `weighted_total` (with its `lax.psum`) as the per-device function of `jax.shard_map`.",
}

HINTS = {
    "weighted_total_shard_map": [
        "This pmap splits x along axis 1, not axis 0, so the table's first rows do not apply word for "
        "word. A PartitionSpec lists, dimension by dimension, the mesh axis that splits it: which spec "
        "says 'dimension 0 whole, dimension 1 split over DEVICES'?",
        "With `in_specs=(P(), P(None, DEVICES))` each device's block of x has shape (d, 1), where pmap "
        "handed `weighted_total` a column of shape (d,): pass `x_block[:, 0]` on.",
        "`out_axes=(None, 1)` translates to `out_specs=(P(), P(None, DEVICES))`: the total once, and the "
        "columns side by side along dimension 1, each device handing back its column as shape (d, 1) "
        "(`col[:, None]`). On an Explicit mesh, place x with `NamedSharding(mesh, P(None, DEVICES))` first "
        "(w can stay as it is), and use the `mesh` argument.",
    ],
    "replica_totals": [
        "x arrives already placed with P(DATA_SHARDS, MODEL_REPLICAS): inside "
        "`jax.shard_map(..., in_specs=P(DATA_SHARDS, MODEL_REPLICAS))` each device sees one block.",
        "A row's total needs two sums: over the columns a device holds (local work, no communication), "
        "then over the devices of its mesh row, which hold the row's other columns (a `psum` over "
        "MODEL_REPLICAS).",
        "`lax.psum(jnp.sum(block, axis=1), MODEL_REPLICAS)`: one number per row the device holds. The result "
        "has one dimension and still differs between data shards, but no longer between replicas: "
        "`out_specs=P(DATA_SHARDS)`. `x` is already placed, so no `device_put`.",
    ],
    "sharded_scaled_sum": [
        "Before any code: when the rows of x are split over DEVICES, what does one device's block look "
        "like, which part of the column totals can that device compute alone, and what does it need "
        "from the others?",
        "A device holds some rows of every column, so it can add up its own rows column by column; "
        "adding those partial totals of all devices is section 2's collective. The result is the same "
        "on every device, whatever its shape: which `out_specs` promises that?",
        "Per block: `2.0 * jnp.sum(block, axis=0)`, then `lax.psum` over DEVICES, with "
        "`in_specs=P(DEVICES)` and `out_specs=P()`. When the rows do not divide by the devices, first add "
        "zero rows: `jnp.pad(x, ((0, -x.shape[0] % k), (0, 0)))`. Build the `NamedSharding` for "
        "`jax.device_put` on the `mesh` argument, not on the notebook's `mesh` (Pitfall 1).",
    ],
    "dp_train_step": [
        "Write the weighted loss of the whole batch as a fraction, sum(weight * error²) / sum(weight). "
        "Which parts of that fraction can one device compute from its own examples alone, and how do "
        "the devices then combine those parts?",
        "Inside `jax.shard_map(..., in_specs=(P(), P(DATA_PARALLEL)), out_specs=P())`, each device adds "
        "up `weight * error ** 2` over its examples, and its weights; a `lax.psum` over DATA_PARALLEL of "
        "each gives the whole batch's numerator and denominator. `jax.grad` of their ratio is the "
        "full-batch gradient on every device (that loss is the same everywhere, so Pitfall 4's factor "
        "does not appear).",
        "A `lax.pmean` of the devices' own weighted means would count a device with 1 real example as "
        "much as one with 8. Place `params` with `P()` and the whole `batch` dict with "
        "`P(DATA_PARALLEL)` first, and update with `sgd_update`.",
    ],
    "jit_train_step": [
        "In section 5, what made `jax.jit(sgd_step)` communicate although `sgd_step` names no axis? "
        "If that is the arrays rather than the code, what does your weighted step's code still have "
        "to say, and what does the data have to carry?",
        "Exercise 3's loss without the per-device view: the same fraction, with both sums taken over "
        "the whole batch as one array, needs no collective at all. Differentiate it and update as "
        "`sgd_step` does, and compile that with `jax.jit`.",
        "Place the inputs as section 4 places `params_r` and `batch_s`, but with a `NamedSharding` on the "
        "`mesh` argument. Write no collective: the compiler sees sums over a split dimension and inserts "
        "the all-reduce itself (section 5).",
    ],
}
MISTAKE_HINTS = {
    "weighted_total_shard_map": {"migration_mean": 2, "migration_first": 2},
    "replica_totals": {"replica_pmean": 3, "replica_own_block": 2, "replica_over_both": 3},
    "sharded_scaled_sum": {"scaled_plain_sum": 3, "scaled_rows_dropped": 3, "scaled_first_share": 2, "scaled_mean": 2},
    "dp_train_step": {
        "step_unweighted": 1,
        "step_devices_equal": 3,
        "step_k_times": 2,
        "step_k_small": 2,
        "step_divided_by_examples": 1,
        "step_unchanged": 3,
        "step_100x": 3,
        "step_ascent": 3,
    },
    "jit_train_step": {  # hint 2: the weighted loss of the whole batch, and the step
        "step_unweighted": 2,
        "step_devices_equal": 2,
        "step_k_times": 2,
        "step_k_small": 2,
        "step_divided_by_examples": 2,
        "step_unchanged": 2,
        "step_100x": 2,
        "step_ascent": 2,
    },
}
TEXT, say = notebook_words(TEXT, HINTS, MISTAKE_HINTS)  # checked; each lookup in the kernel's language
