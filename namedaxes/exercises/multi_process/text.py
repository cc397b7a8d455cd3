"""The words of notebook 06's checks as data: sentences (TEXT), hints (HINTS), known mistakes' hints (MISTAKE_HINTS)."""

from __future__ import annotations

from namedaxes.exercises import notebook_words

# ---------------------------------------------------------------- every student-facing string
TEXT = {
    # how a check ran the answer (the `{where}` of the messages)
    "in_worker": "In worker process {i} of {p} ({n} local devices)",
    "in_kernel": "In this kernel (process 0 of 1, {n} local devices: it owns every row)",
    "as_process": "In this kernel, answering as process {i} of {p} ({n} local devices each)",
    "on_mesh_kernel": (
        "On a mesh of {k} devices in this kernel, answering as process 0 of a cluster of {p} "
        "processes x {n} devices ({what})"
    ),
    "on_mesh_workers": ("On the mesh of {k} devices spanning the {p} worker processes, {n} devices each ({what})"),
    # crashes
    "cannot_ship": "`{name}` cannot be sent to the worker processes: {error}.",
    "wrong_axis": (
        "`{name}` stopped with an empty AssertionError from inside JAX. On this JAX that is what a "
        "collective inside `jax.shard_map` raises when its axis name is not an axis of the mesh, e.g. "
        "a typo. The mesh here has the axis {axes}: use the course's constant, not a string."
    ),
    "unbound": (
        "`{name}` calls a collective over '{axis}', but no mesh axis of that name is bound there. "
        "Collectives work inside the function you give `jax.shard_map`, over the axis names of its "
        "`mesh` (here {axes})."
    ),
    "varying_output": (
        '`{name}` failed with JAX\'s error "{first}": `out_specs=P()` promises a value that is the same '
        "on every device, but JAX cannot tell that it is: either it still differs per device (a device's "
        "own sum, say), or it comes from a collective whose result JAX types as per-device, such as "
        "`lax.all_gather` (even though every device then holds the same values). Combine the devices' "
        "values with `lax.psum`, whose result JAX knows to be the same everywhere, before returning them."
    ),
    "global_sharding": (
        '`{name}` failed with JAX\'s error "{first}": outside `jax.shard_map`, JAX refuses this operation '
        "on an array split over the mesh. Do the per-device work inside the function you give "
        "`jax.shard_map`, where each device sees its own block of rows."
    ),
    # results, any exercise
    "not_callable": "`{name}` should be a function, but it is a `{type}`.",
    "not_dict": "{where}, `{name}` should return a dict with keys {keys}, but it returned {kind}.",
    "a_dict": "a dict with keys {keys}",
    "a_type": "a `{type}`",
    "leaf_shape": "{where}, `{name}` should return `{key}` of shape {want}, but it has shape {got}.{hint}",
    "no_shard_map": (
        "`{name}` returns the right values, but without `jax.shard_map`: this exercise asks for the "
        "per-device view, one block of rows per device of the mesh, across both processes. Put the "
        "work in the function you give `jax.shard_map(..., mesh=mesh)`."
    ),
    "no_collective": ("`{name}` performs no collective over '{axis}': each device would only know its own rows. {why}"),
    # 1. local_rows
    "rows_dict_keys": (
        "For a dict batch {{'x': ..., 'y': ...}}, {where} `{name}` returned {kind}; it should return the "
        "same dict with the rows of every array: `jax.tree.map(lambda a: a[start:stop], global_batch)` "
        "slices every leaf."
    ),
    "rows_key": "{where} (key '{key}')",
    "rows_not_array": "{where} `{name}` returned a `{type}`; it should return an array, {want} of the batch.",
    "rows_all": ("{where} `{name}` returned all {total} rows; each process keeps only its own share, {want}."),
    "rows_one": (
        "{where} `{name}` returned a single row (shape {got}); it should return {want}, a slice "
        "`global_batch[start:stop]` of shape {shape}."
    ),
    "rows_shape": "{where} `{name}` returned shape {got}{seen}; it should return {want}, shape {shape}.",
    "rows_per_device": (
        " That is one row per local device. Here the batch has {total} rows for {p} processes, "
        "{per} rows each: count the share from the batch and `jax.process_count()`, not from the devices."
    ),
    "rows_empty": (
        " That is no row at all: the slice starts past the end of the batch. With {p} processes, "
        "each share has {per} rows; take the number of processes from `jax.process_count()`."
    ),
    "rows_values": "{where} `{name}` returned {seen}, but it owns {want}.{extra}",
    "rows_start": (" Each process finds its first row from `jax.process_index()` and the size of its share."),
    "rows_range": "rows {start} to {stop}",
    "rows_dict_sliced": (
        "On a dict batch {{'x': ..., 'y': ...}}, `{name}` slices the dict itself "
        "(`global_batch[start:stop]`), but a dict has keys, not rows. Slice every array of the dict, e.g. "
        "with `jax.tree.map(lambda a: a[start:stop], global_batch)`."
    ),
    "rows_dict_failed": (
        "On a dict batch {{'x': ..., 'y': ...}}, `{name}` fails with {error}. Slice every array of the "
        "dict, e.g. with `jax.tree.map(lambda a: a[start:stop], global_batch)`."
    ),
    # 2. global_metrics
    "metric_values": "{where}, `{name}` returned {key} = {got}, expected {want}. {hint}",
    "metric_fixed_count": (
        "That is {ratio} times the right value: the number of devices is written as 8, but this mesh "
        "has {k} devices. Take counts from the mesh or from a collective: `lax.psum(1, DEVICES)`, "
        "`mesh.size`, or `lax.psum` of each block's size."
    ),
    "metric_local_count": (
        "That divides by `jax.local_device_count()` ({n}, the devices of one process), but the mean "
        "is over the devices of every process on the mesh ({k}): count with `lax.psum(..., DEVICES)` or "
        "`mesh.size`."
    ),
    "metric_mean_of_sums": (
        "That is the mean of the devices' sums: each device holds {rows} entries, and the mean divides "
        "the total by all {size} entries of the array."
    ),
    "metric_one_device": "That is one device's own block only: add up the blocks of all devices.",
    "metric_pmean_total": (
        "That is the total divided by the {k} devices: `lax.pmean` averages the devices' sums, and `total` "
        "is their sum, `lax.psum`."
    ),
    "metric_rows_count": (
        "That divides the total by the {rows} rows, but `errors` of shape {shape} has {size} entries: the "
        "mean divides by all of them (`block.size`, added up over the devices)."
    ),
    "metric_mean_for_total": "That is the mean of all entries; `total` is their sum.",
    "per_process_shape": (
        " `per_process` has one entry per process, `jax.process_count()` of them ({p} here): not one per "
        "device, and not a number written by hand."
    ),
    "per_process_means": (
        "Those are the means of each process's rows: entry i is their sum (the rows of the devices process i "
        "owns, added up)."
    ),
    "per_process_total": (
        "Every entry is the total of all rows: entry i adds up only the rows of the devices that process i "
        "owns, so the entries differ and add up to `total`."
    ),
    "per_process_generic": (
        "Entry i is the sum of the rows that process i owns: the devices at mesh positions i * n to "
        "(i + 1) * n - 1, with n = jax.local_device_count()."
    ),
    "metric_generic": "Compare with NumPy on the whole array: `errors.sum()` and `errors.mean()`.",
    "metric_why": "Add up the blocks with `lax.psum(..., DEVICES)` inside `jax.shard_map`.",
    # 3. masked_step
    "step_values": (
        "{where}, `{name}` returned new {key} = {got}, but one SGD step on the real rows gives {want}. {hint}"
    ),
    "step_no_mask": (
        "That step counts the padding rows too. Only rows with `mask` True are examples: leave the "
        "others out of the squared errors and out of the count."
    ),
    "step_mean_of_means": (
        "That averages each device's own mean gradient with equal weight (`lax.pmean`), but the devices "
        "hold different numbers of real rows. Add up the squared-error gradients and the real "
        "rows over all devices (`lax.psum`), then divide."
    ),
    "step_fixed_count": (
        "That divides by 8, written by hand, but this mesh has {k} devices. Divide by what the devices "
        "really hold, counted with `lax.psum`."
    ),
    "step_local_count": (
        "That divides by `jax.local_device_count()` ({n}, the devices of one process), but the step "
        "averages over every real row of both processes."
    ),
    "step_all_rows": (
        "That divides by all {rows} rows of the batch, padding included: divide by the number of real "
        "rows, `lax.psum(jnp.sum(mask), DATA_PARALLEL)`."
    ),
    "step_summed": (
        "The step is much too large: the summed gradients were not divided by the number of real rows "
        "of the whole batch."
    ),
    "step_k_times": (
        "The step is {k} times too large. The gradient of a replicated parameter (in_specs `P()`) is "
        "already added up over the devices by JAX, so a further `lax.psum` multiplies it by {k}. "
        "Differentiate a device's own copy, `lax.pcast(params, DATA_PARALLEL, to='varying')` as in "
        "notebook 05, then `lax.psum` the gradients."
    ),
    "step_unchanged": "The parameters did not change: return the *updated* params.",
    "step_sign": "The parameters moved the wrong way: step *against* the gradient, `p - LEARNING_RATE * g`.",
    "step_generic": (
        "One step is `p - LEARNING_RATE * g`, with `g` the gradient of the mean squared error over the "
        "real rows of the whole batch."
    ),
    "step_why": (
        "The devices' gradients and real-row counts are combined with `lax.psum(..., DATA_PARALLEL)` "
        "inside `jax.shard_map`."
    ),
    "metrics_whole": (
        "`{name}` returns the right metrics, but one device computes {ratio}× the reference's FLOPs on {k} "
        "devices ({got} against {want}, read from the compiled per-device program; at most {factor}× is "
        "allowed): every device holds all of `errors` and computes every metric on it. Each device sums its "
        "own rows only; `lax.psum` over DEVICES adds the sums and the counts (a few numbers)."
    ),
    "step_whole_batch": (
        "`{name}` returns the right step with a psum over DATA_PARALLEL, but one device computes {ratio}× the "
        "reference's FLOPs on {k} devices ({got} against {want}, read from the compiled per-device program; at "
        "most {factor}× is allowed): every device holds all of the batch and computes the whole batch's "
        "gradient. Each device differentiates its own rows' sum only; `lax.psum` adds the gradients and the "
        "real-row counts (a few numbers)."
    ),
    "case_metrics": "errors of shape {shape}",
    "case_step": "{rows} rows, {real} real: {counts} real rows per device",
}

HINTS = {
    "global_metrics": [
        "Inside `jax.shard_map(..., mesh=mesh, in_specs=P(DEVICES), out_specs=P())` each device sees only "
        "its own block of rows, and the result must be the same on every device. Which numbers can a "
        "device compute alone, and which need every device?",
        "A device's block gives its own sum and its own number of entries; `lax.psum` over DEVICES adds "
        "them up over every device of every process, so `total / count` is the mean and no count is "
        "written by hand. For `per_process`: the device at mesh position `d` belongs to process "
        "`d // jax.local_device_count()`.",
        "Put a device's sum at its process's entry of a vector of `jax.process_count()` zeros (e.g. "
        "`jax.nn.one_hot(process, jax.process_count()) * block_sum`), then `lax.psum` those vectors.",
    ],
    "local_rows": [
        "Every process runs the same code, so the share must come from what each process can ask: "
        "`jax.process_index()` and `jax.process_count()`, and the batch's own number of rows.",
        "With `B` rows and `p` processes, every share has `B // p` rows, and process `i`'s share starts "
        "at row `i * (B // p)`. `jax.tree.map` slices every array of a dict the same way, and also "
        "accepts a plain array.",
        "In this kernel `jax.process_index()` is 0 and `jax.process_count()` is 1, so `local_rows(x)` "
        "returns all of `x`: try it before running the test cell.",
    ],
    "masked_step": [
        "The mean squared error over the real rows is (sum of the real rows' squared errors) / (number of "
        "real rows), both over the whole global batch. Which of the two can one device compute alone?",
        "Per device: the gradient of its own *sum* of masked squared errors, taken on its own copy of the "
        "parameters (`lax.pcast(..., to='varying')`, as in notebook 05), and its number of real rows. Add "
        "both up over DATA_PARALLEL with `lax.psum`, then divide.",
        "A `lax.pmean` of each device's own mean is not the same: the devices hold different numbers of "
        "real rows. `jnp.where(mask, err ** 2, 0.0)` zeroes the padding rows' errors; the update is the "
        "SGD step of notebook 04, inside `jax.shard_map` with `in_specs=(P(), P(DATA_PARALLEL))` and "
        "`out_specs=P()`.",
    ],
}
MISTAKE_HINTS = {
    "global_metrics": {
        "per_process_means": 3,
        "per_process_total": 3,
        "metric_fixed_count": 2,
        "metric_local_count": 2,
        "metric_mean_of_sums": 2,
        "metric_mean_for_total": 2,
        "metric_pmean_total": 2,
        "metric_rows_count": 2,
        "metric_one_device": 1,
    },
    "masked_step": {
        "step_no_mask": 1,
        "step_mean_of_means": 3,
        "step_fixed_count": 2,
        "step_local_count": 2,
        "step_all_rows": 1,
        "step_summed": 2,
        "step_k_times": 2,
        "step_unchanged": 3,
        "step_sign": 3,
    },
}
TEXT, say = notebook_words(TEXT, HINTS, MISTAKE_HINTS)  # checked; each lookup in the kernel's language
