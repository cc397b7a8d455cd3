"""Exercise 2: `scaled_mean`, over padded inputs."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from namedaxes import DEVICES
from namedaxes.checking import fail, mistake_sentence, same_values
from namedaxes.grading import Case, pmapped, programs, spec

from .running import DEVICE_COUNTS, exercise, expect_same_on_every_device, expect_values_near, visible_results
from .text import TEXT

# ---------------------------------------------------------------- exercise 2: scaled_mean
NAN = float("nan")


def _visible_padded_inputs():
    """Shards of unequal size, padded with NaN: the mean of means is wrong on each, one device is empty."""
    return [
        jnp.asarray([[1.0, 2.0, 3.0], [4.0, NAN, NAN], [0.0, 2.0, NAN], [3.0, 3.0, 3.0]], jnp.float32),
        jnp.asarray(
            [[1.0, 5.0], [2.0, NAN], [0.5, 1.5], [4.0, NAN], [NAN, NAN], [3.0, 1.0], [6.0, NAN], [2.5, 2.5]],
            jnp.float32,
        ),
        jnp.asarray([[0.5, -1.0, NAN], [2.0, NAN, NAN]], jnp.float16),
    ]


def _expect_one_number_per_device(name: str, out, x) -> None:
    """A scalar per device, in the dtype of `x`."""
    if not isinstance(out, jax.Array):
        fail(TEXT["not_an_array"].format(name=name, type=type(out).__name__, value=f"{out!r:.80}"))
    x = np.asarray(x)
    if tuple(out.shape) != x.shape[:1]:
        fail(TEXT["mean_shape"].format(k=x.shape[0], shape=tuple(out.shape), got_shape=tuple(out.shape[1:])))
    if np.dtype(out.dtype) != x.dtype:
        fail(TEXT["wrong_dtype"].format(name=name, dtype=x.dtype.name, got=np.dtype(out.dtype).name))


def mean_mistakes(xs) -> list[tuple]:
    """The usual mistakes' results on `xs` (k devices' slots, float64, NaN where a device has no value), one
    number per device as `pmap` returns them: NaN (a missing value summed), the total, the mean of the devices'
    means, the empty slots counted, the factor 2.0 left out (the check's diagnoses, and the grader's)."""
    xs = np.asarray(xs, np.float64)
    k, m = xs.shape
    values = ~np.isnan(xs)
    total = 2.0 * np.nansum(xs)
    means = [2.0 * xs[i][values[i]].mean() for i in range(k) if values[i].any()]
    found = [(np.full(k, NAN), "mean_nan", {}), (np.full(k, total), "mean_is_total", {})]
    if len(means) == k:  # a device with no value makes the mean of means NaN: said above
        found.append((np.full(k, np.mean(means)), "mean_of_means", {}))
    found.append((np.full(k, total / (k * m)), "mean_counts_missing", {}))
    found.append((np.full(k, total / values.sum() / 2), "mean_unscaled", {}))
    return found


def padded_slots(x, n) -> np.ndarray:
    """The slots the graded program builds from the grader's `x` and `n` (`_padded`), in float64: device i keeps
    its first `n[i]` values (the first device at least one), the rest NaN."""
    x, n = np.asarray(x, np.float64), np.asarray(n).copy()
    n[0] = max(int(n[0]), 1)
    return np.where(np.arange(x.shape[1]) < n[:, None], x, NAN)


def _diagnose_mean(xs, got) -> str:
    """A hint for a replicated, well-shaped, but wrong `scaled_mean` result (`xs`: float64, NaN padded)."""
    return mistake_sentence(TEXT.say, np.asarray(got, np.float64), mean_mistakes(xs), otherwise=TEXT["by_hand"])


def _check_scaled_mean(fn: Callable) -> None:
    name = "scaled_mean"
    for x, out in visible_results(name, fn, _visible_padded_inputs(), _expect_one_number_per_device):
        xs = np.asarray(x, np.float64)
        n = int((~np.isnan(xs)).sum())
        want = 2.0 * np.nansum(xs) / n
        expect_same_on_every_device(name, out, x, want, "mean_expected", n=n)
        got = float(np.asarray(out, float)[0])
        tol = 1e-3 if x.dtype == np.float16 else 1e-5
        if not same_values(got, want, tol, dtype=float):
            hint = _diagnose_mean(xs, out)
            expect_values_near(name, out, np.full(out.shape, want), x, rtol=tol, atol=tol, hint=hint)


def _padded(fn: Callable, m: int) -> Callable:
    """`fn` on one device's row of `m` values of which only the first `n` are kept, the rest NaN.

    The grader draws `x` and `n` (0 to m values per device; the first device always keeps one, so the
    mean is defined): the padding is built inside the graded program, from the grader's own inputs.
    """

    def on_padded(x, n):
        first = (jax.lax.axis_index(DEVICES) == 0).astype(n.dtype)
        keep = jnp.arange(m) < jnp.maximum(n, first)
        return fn(jnp.where(keep, x, jnp.nan))

    return on_padded


def _observe_scaled_mean(fn: Callable) -> dict:
    """Values on 2, 4 and 8 devices with 3 or 5 slots per device, each device keeping 0 to all of them,
    and one float16 case (the dtype must be kept, as the visible check requires)."""
    cases = {}
    for k in DEVICE_COUNTS:
        for m in (3, 5):
            cases[f"k{k}_slots{m}"] = Case(
                pmapped(_padded(fn, m), k, DEVICES),
                spec((k, m), jnp.float32),
                spec((k,), jnp.int32),
                draw={"kind": "normal", "low": 0, "high": m + 1},
            )
    # float16 in, float16 out, as the visible check's float16 case (quarters are exact in float16; the
    # tolerance is the visible check's for float16)
    cases["k4_slots3_float16"] = Case(
        pmapped(_padded(fn, 3), 4, DEVICES),
        spec((4, 3), jnp.float16),
        spec((4,), jnp.int32),
        draw={"kind": "quarters", "low": 0, "high": 4},
        rtol=1e-3,
        atol=1e-3,
    )
    return programs(cases)


scaled_mean = exercise("scaled_mean", _check_scaled_mean, observe=_observe_scaled_mean)
