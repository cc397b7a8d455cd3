"""The words of notebook 01's checks as data: sentences (TEXT), hints (HINTS), known mistakes' hints (MISTAKE_HINTS)."""

from __future__ import annotations

from namedaxes.exercises import notebook_words

# Every sentence these checks can show, in one place (translate here; the logic below only fills them in).
TEXT = {
    "under_pmap": "under `jax.pmap(..., axis_name=DEVICES)` over {k} devices",
    "under_vmap": "under `jax.vmap(..., axis_name=DEVICES)` over {k} examples",
    "device": "device",
    "example": "example",
    "run": "The check, which runs `{name}` {where},",
    "wrong_shape": "On each {per}, `{name}(x)` should return shape {shape}, but it returns shape {got} ({where}).",
    "wrong_dtype": "`{name}(x)` should return dtype {dtype}, but it returns {got}.",
    "wrong_values": (
        "`{name}(x)` returned the wrong values {where}. {diagnosis}\nOn {per} {i}: expected {want}, got {got}."
    ),
    "weighted_own_term": (
        "Each device returned its own term, i * x. The sum over all devices needs a collective over '{axis}'."
    ),
    "weighted_no_weights": "That is the plain total of x over the devices: weight device i's `x` by its position i.",
    "weighted_from_one": (
        "That weights the first device by 1; positions along the axis start at 0 (`lax.axis_index(DEVICES)`)."
    ),
    "weighted_ranks_summed": (
        "That is the sum of all positions times this device's own `x`: weight each device's "
        "`x` by its own position first, then add up across devices."
    ),
    "weighted_other": "Every device should return the sum over devices of i * x_i, i being a device's position.",
    "last_own": (
        "Each device returned its own `x`. A device sees the other devices' values only through a "
        "collective over '{axis}'."
    ),
    "last_total": (
        "That is the total of all devices' `x`: let only the last device put its `x` into the sum, "
        "and every other device zeros."
    ),
    "last_first": (
        "That is the `x` of the first device (position 0). The last device is at position {last} "
        "here: `lax.psum(1, DEVICES) - 1`."
    ),
    "last_nobody": (
        "Every device returned zeros: no device matched the position you picked. Positions along "
        "the axis run from 0 to {last} here: the last device is at position {last}, one less than the "
        "size of the axis (`lax.psum(1, DEVICES) - 1`)."
    ),
    "last_fixed": (
        " It was right over 8 devices but not over {k}: is the position a fixed number? A fixed 7 only fits 8 devices."
    ),
    "last_device_count": (
        " It was right over 8 devices but not over {k}: `{used}` counts the machine's devices (8 here), not the "
        "devices along the axis ({k} in this check). `lax.psum(1, DEVICES)` is the size of the axis wherever it runs."
    ),
    "last_other_device": (
        "That is the `x` of the device at position {j}. The last device is at position {last} "
        "here, one less than the size of the axis (`lax.psum(1, DEVICES) - 1`)."
    ),
    "last_not_shared": (
        "Only the last device holds its `x`, the others hold zeros: hand it to every device with "
        "a collective over '{axis}'."
    ),
    "last_other": (
        "Every device should return the `x` of the last device, the one at position {last} "
        "(`lax.psum(1, DEVICES) - 1`)."
    ),
    "center_local": (
        "Each device subtracted the mean of its own values only; a collective such as `lax.pmean` over "
        "'{axis}' is missing."
    ),
    "center_per_position": (
        "It subtracts a mean per position, element by element across devices; the exercise asks "
        "for one mean, that of all the elements of all devices."
    ),
    "center_total": "It subtracts the total (`lax.psum`), not the mean (`lax.pmean`).",
    "center_first_axis": (
        "Each device here holds a block of shape {block}: it subtracts one mean per column, because "
        "`jnp.mean(x, axis=0)` averages along the block's first axis only (on 1-D blocks that happens to "
        "be every element). The exercise asks for one mean of all the elements: `jnp.mean(x)`."
    ),
    "center_hard_coded": (
        "It is right over 8 devices but not here: is the number of devices hard-coded? "
        "`lax.pmean`, or `lax.psum(1, DEVICES)`, follows the size of the axis."
    ),
    "center_other": "Subtract, from x, one number: the mean of all elements of x on all devices along '{axis}'.",
    "center_structure": "Average across devices with a collective over DEVICES, such as `lax.pmean`.",
}

HINTS = {
    "center": [
        "The mean asked for is one number for all the values of all devices. Which part of it can one "
        "device compute alone, and what does it then need from the others?",
        "`jnp.mean(x)` averages this device's own values. Every device holds as many values as the "
        "others, so the mean of everything is the mean of those per-device means across the axis: "
        'the collective of `batch_mean` in section "The same function under vmap".',
        "Average first on the device (`jnp.mean` with no axis), then across DEVICES with `lax.pmean`, and "
        "subtract that from `x`. Don't divide a `psum` by 8: the check also maps over 4 devices and over 5 "
        "vmapped entries; `vmap(axis_name=DEVICES)` binds the same name as `pmap`.",
    ],
    "last_device_value": [
        "Each device can tell whether it is the last one along DEVICES: it knows its own position and the "
        'size of the axis (sections "Which device am I?" and "How many devices?").',
        "`lax.psum` hands every device the total. If every device except the last one puts in zeros, "
        "what is the total?",
        "`jnp.where(is_last, x, 0.0)` keeps `x` on the last device and zeros elsewhere; sum that over "
        "DEVICES. The last position is `lax.psum(1, DEVICES) - 1`, never a fixed 7.",
    ],
    "rank_weighted_sum": [
        "Split the job: which part can each device do on its own, and which part needs the other devices?",
        'Device i\'s term, i * x, is local work: it knows its own position (section "Which device am I?") and '
        "its own `x`. Adding the terms of all devices is what the collective of the first section does.",
        "`lax.axis_index(DEVICES) * x` is this device's term; `lax.psum` of it over DEVICES gives every device "
        "the whole sum. No cast is needed: an int32 position times a float32 `x` is float32.",
    ],
}
MISTAKE_HINTS = {
    "center": {"center_first_axis": 3, "center_local": 2, "center_per_position": 3, "center_total": 3},
    "last_device_value": {
        "last_own": 2,
        "last_total": 2,
        "last_first": 3,
        "last_nobody": 3,
        "last_other_device": 3,
        "last_not_shared": 2,
    },
    "rank_weighted_sum": {
        "weighted_own_term": 2,
        "weighted_no_weights": 2,
        "weighted_from_one": 3,
        "weighted_ranks_summed": 3,
    },
}
TEXT, say = notebook_words(TEXT, HINTS, MISTAKE_HINTS)  # checked; each lookup in the kernel's language
