"""Exercise 2: `last_device_value`."""

from __future__ import annotations

import inspect
import re

import jax.numpy as jnp
import numpy as np

from namedaxes import DEVICES
from namedaxes.checking import same_values
from namedaxes.grading import programs, rng

from .running import exercise, expect_mapped_values, program_cases
from .text import TEXT

# ---------------------------------------------------------------- 2. last_device_value
MACHINE_COUNT = re.compile(  # the machine's device count: jax.device_count(), len(jax.devices()) and local_*
    r"\b(?:jax\.)?(?:local_)?device_count\(\s*\)|\blen\(\s*(?:jax\.)?(?:local_)?devices\(\s*\)\s*\)"
)


def _not_the_axis_size(fn, k: int) -> str:
    """Why an answer right over 8 devices picks the wrong one over `k`: the machine's device count in its
    code (`jax.device_count()`), else a fixed position."""
    try:
        used = MACHINE_COUNT.search(inspect.getsource(fn))
    except (OSError, TypeError):  # no source (a compiled or built-in function)
        used = None
    if used:
        return TEXT["last_device_count"].format(k=k, used=" ".join(used.group(0).split()))
    return TEXT["last_fixed"].format(k=k)


def last_mistakes(xs: np.ndarray) -> list[tuple]:
    """The usual mistakes' results on `x` (k devices' rows): each device's own `x`, the total, the first device's,
    zeros (no device matched), another device's, the last device's `x` on the last device only (the check's
    diagnoses, and the grader's)."""
    k = xs.shape[0]
    shared_by_last = np.zeros_like(xs)
    shared_by_last[-1] = xs[-1]
    return [
        (xs, "last_own", {"axis": DEVICES}),
        (np.broadcast_to(xs.sum(axis=0), xs.shape), "last_total", {}),
        (np.broadcast_to(xs[0], xs.shape), "last_first", {"last": k - 1}),
        (np.zeros_like(xs), "last_nobody", {"last": k - 1}),
        *((np.broadcast_to(xs[j], xs.shape), "last_other_device", {"j": j, "last": k - 1}) for j in range(1, k - 1)),
        (shared_by_last, "last_not_shared", {"axis": DEVICES}),
    ]


def _last_row(x) -> np.ndarray:
    """The last device's `x`, on every device."""
    xs = np.asarray(x)
    return np.broadcast_to(xs[-1], xs.shape)


def _check_last_device_value(fn) -> None:
    r = rng("last_device_value_check")
    cases = [
        (how, jnp.asarray(r.normal(size=(k, 5)), jnp.float32)) for how, k in (("pmap", 8), ("pmap", 3), ("vmap", 5))
    ]

    def diagnose(x, out, how: str) -> str:
        del how  # the same mistakes under pmap and vmap
        xs, got, k = np.asarray(x), np.asarray(out), x.shape[0]
        found = next((m for m in last_mistakes(xs) if same_values(got, m[0])), None)
        said = TEXT[found[1]].format(**found[2]) if found else TEXT["last_other"].format(last=k - 1)
        if found and found[1] in ("last_nobody", "last_other_device") and k != 8:
            said += _not_the_axis_size(fn, k)
        return said

    expect_mapped_values("last_device_value", fn, cases, _last_row, diagnose)


def _observe_last_device_value(fn) -> dict:
    return programs(
        program_cases(fn, [("pmap", 2, None), ("pmap", 5, None), ("pmap", 8, None), ("vmap", 6, None)], (5,))
    )


last_device_value = exercise("last_device_value", _check_last_device_value, observe=_observe_last_device_value)
