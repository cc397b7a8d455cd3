"""The words of notebook 02's checks as data: sentences (TEXT), hints (HINTS), known mistakes' hints (MISTAKE_HINTS)."""

from __future__ import annotations

from namedaxes.exercises import notebook_words

# Every sentence these checks can show, in one place (translate here; the logic below only fills them in).
TEXT = {
    "not_an_array": (
        "`{name}` should return one array (shaped like `x`), but `pmap` got {type} back: {value}. "
        "Did you forget a `return`?"
    ),
    "wrong_shape": (
        "`{name}` should return an array shaped like its input `x` on each device (per-device shape "
        "{per_shape}), but with {k} devices `pmap` got results of shape {shape}, i.e. per-device "
        "shape {got_shape}."
    ),
    "reduced_locally": (
        " Did you reduce `x` with `jnp.sum`/`jnp.max` inside one device? A collective combines "
        "values across devices and keeps the shape."
    ),
    "wrong_dtype": (
        "`{name}` should keep the dtype of `x` ({dtype} in, {dtype} out), but it returned {got}. "
        "Use Python numbers such as `2.0` rather than typed arrays in your arithmetic, so JAX keeps "
        "the input dtype."
    ),
    "where": "({k} devices, input {x}) ",
    "sum_expected": "With {k} devices holding {x}, every device should end with {want} (the sum of x * 2.0 over "
    "all devices).",
    "sum_plain": "That is the plain sum of `x`: multiply by 2.0 before (or after) the psum.",
    "sum_is_mean": "That is the mean over devices (what `lax.pmean` gives): use `lax.psum` for the total.",
    "sum_is_max": "That is the maximum over devices (what `lax.pmax` gives): use `lax.psum` for the total.",
    "by_hand": "The result does not change when `x` does: if you wrote the number by hand, compute it instead: "
    "the check runs several device counts and inputs.",
    "sum_factor": (
        "That is {factor:g} times the expected total: scale by 2.0, once, and add up the scaled values "
        "of all devices with `lax.psum`."
    ),
    "sum_other": (
        "That is not 2.0 times the sum of `x` over the devices. Compare each step of your function "
        "with `lax.psum(x * 2.0, axis_name=DEVICES)`: scale the device's own `x`, then add up."
    ),
    "use_psum": "Add up the scaled values of all devices with `lax.psum(..., axis_name=DEVICES)`.",
    "psum_is_mean": (
        "`scaled_sum` returns {big} over 8 devices and {small} over 2 devices that all hold 1.0: the "
        "same number whatever the device count, so it is a mean (`lax.pmean` is a psum divided by "
        "the device count). A total grows with the number of devices: return the `lax.psum` itself."
    ),
    "psum_not_total": (
        "`scaled_sum` returns {big} over 8 devices and {small} over 2 devices that all hold 1.0; a "
        "total over DEVICES would be 4 times larger over 8 devices than over 2. Return the "
        "`lax.psum` of the scaled values, not something computed from it."
    ),
    "mean_shape": (
        "`scaled_mean` should return one number on each device (per-device shape ()), but with {k} "
        "devices `pmap` got results of shape {shape}, i.e. per-device shape {got_shape}. Reduce the "
        "device's own values with `jnp.nansum` and the count of values, then combine across devices."
    ),
    "mean_expected": (
        "With {k} devices holding {x} (NaN: no value), every device should end with {want}: the mean "
        "of x * 2.0 over all {n} values."
    ),
    "mean_nan": (
        "It returned NaN: a missing entry (NaN) got into a sum or a mean. Add up the values with "
        "`jnp.nansum`, and count them with `~jnp.isnan(x)`."
    ),
    "mean_is_total": "That is the total of x * 2.0, not the mean: divide it by the number of values on all devices.",
    "mean_of_means": (
        "That is the mean of the per-device means: a device with few values weighs as much as one "
        "with many. Add up the values and the counts over the devices separately, then divide."
    ),
    "mean_counts_missing": (
        "You divided by every entry, missing ones (NaN) included: count only the values, "
        "`jnp.sum(~jnp.isnan(x))` on each device, summed over DEVICES."
    ),
    "mean_unscaled": "That is the mean of `x` itself: multiply by 2.0.",
    "share_ones": (
        "Every entry is 1: each device divided by its own value. Divide by the largest magnitude across devices."
    ),
    "share_max_of_shares": (
        "Every entry is 1: that is the largest share, which is always 1 (the entry with the "
        "largest magnitude divides it by itself), handed to every device by the outer "
        "`lax.pmax`. Each device should keep its own share: return the quotient without "
        "reducing it again."
    ),
    "share_is_max": "That is the largest magnitude itself: divide the device's own `x` by it.",
    "share_global_max": (
        "You divided by the largest magnitude of all vectors. Compare each position only with the "
        "same position on the other devices: `lax.pmax` works entry by entry."
    ),
    "share_signed_max": (
        "You divided by the largest *value*; some entries are negative, and one of those is "
        "further from zero. Compare the sizes without their signs, on each device, before the "
        "collective."
    ),
    "share_lost_sign": (
        "The sizes are right but the signs are gone: divide the device's own, signed `x`, and take "
        "the magnitude only inside the maximum."
    ),
    "share_replicated": (
        "Every device holds the same result, but each device should keep its own share: divide "
        "the local `x` by the collective maximum, and do not reduce the quotient."
    ),
}

HINTS = {
    "global_max_share": [
        "Each device keeps its own `x`. What does it need to learn from the others, and how do you "
        "compare the sizes of two numbers when one of them may be negative?",
        "A size regardless of sign is local work on each device, done before any collective. Which "
        "collective of section 5 then gives every device the largest one (entry by entry for vectors)?",
        "Divide this device's own, signed `x` by `lax.pmax(jnp.abs(x), axis_name=DEVICES)`, and stop "
        "there: reducing the quotient again would give every device the same number.",
    ],
    "scaled_mean": [
        "Try it by hand with two devices: one holds 1 value, the other 3. Is the mean of all 4 values the mean "
        "of the two devices' means?",
        "A mean is a sum divided by a count. Each device knows its own sum (`jnp.nansum`) and its own count "
        "(`jnp.sum(~jnp.isnan(x))`); a collective gives every device the sums and counts of all devices "
        "(section 2).",
        "Divide the psum of the sums by the psum of the counts, and do not forget the factor 2.0. The result "
        "is one number, the same on every device; cast the count to `x.dtype` to keep float16.",
    ],
    "scaled_sum": [
        "Inside the function `x` is one device's value. First scale it by 2.0: that part is local work.",
        "Then add the scaled values of all devices together with a collective over the axis "
        "that `pmap` named DEVICES: section 2 does it in `device_total`.",
        "`jnp.sum` only adds up this device's own entries. The total over devices comes from `lax.psum`, "
        "and it is already the same on every device: return it as it is.",
    ],
    "scaled_sum_uses_psum": [
        "The total must come from `lax.psum` over DEVICES: `jnp.sum` only sees one device's value.",
        "This check reads your compiled function: it needs a `psum` over DEVICES whose result reaches what you "
        "return. A psum over another name, one whose result is thrown away, or a total computed without a "
        "collective, fails it.",
        "It also runs your function over 8 and over 2 devices: a total grows with the number of devices, a mean "
        "(`lax.pmean`, a psum divided by the device count) does not.",
    ],
}
MISTAKE_HINTS = {
    "global_max_share": {"share_is_max": 3, "share_signed_max": 1, "share_lost_sign": 3, "share_global_max": 2},
    "scaled_mean": {
        "mean_nan": 2,
        "mean_is_total": 3,
        "mean_of_means": 1,
        "mean_counts_missing": 2,
        "mean_unscaled": 3,
    },
    "scaled_sum": {"sum_plain": 1, "sum_is_mean": 3, "sum_is_max": 3},
}
TEXT, say = notebook_words(TEXT, HINTS, MISTAKE_HINTS)  # checked; each lookup in the kernel's language
