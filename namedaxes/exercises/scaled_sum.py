"""Exercises of notebook 02 (`02_scaled_sum`): psum, pmean and pmax over 'devices'.

Every answer is a per-device function, run by the checks as
`jax.pmap(answer, axis_name=DEVICES)` on inputs with a leading axis of 2, 4 or
8 devices. Visible checks use small, readable inputs; `observe` uses seeded
random inputs (`rng(grade_id)`) of several per-device shapes and dtypes.
"""
from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from namedaxes import DEVICES
from namedaxes.checking import (Exercise, expect_close, expect_collective, expect_replicated,
                                explained, fail, progress_of, same_values)
from namedaxes.grading import Case, pmapped, programs, rng, spec

__all__ = ["scaled_sum", "scaled_sum_uses_psum", "scaled_mean", "global_max_share", "progress"]
progress = progress_of(__name__)   # q.progress(): which exercises of the notebook pass

AXIS_ENV = [(DEVICES, 8)]
DEVICE_COUNTS = (2, 4, 8)

# Every sentence these checks can show, in one place (translate here; the logic below only fills them in).
TEXT = {
    "not_an_array": ("`{name}` should return one array (shaped like `x`), but `pmap` got {type} back: {value}. "
                     "Did you forget a `return`?"),
    "wrong_shape": ("`{name}` should return an array shaped like its input `x` on each device (per-device shape "
                    "{per_shape}), but with {k} devices `pmap` got results of shape {shape}, i.e. per-device "
                    "shape {got_shape}."),
    "reduced_locally": (" Did you reduce `x` with `jnp.sum`/`jnp.max` inside one device? A collective combines "
                        "values across devices and keeps the shape."),
    "wrong_dtype": ("`{name}` should keep the dtype of `x` ({dtype} in, {dtype} out), but it returned {got}. "
                    "Use Python numbers such as `2.0` rather than typed arrays in your arithmetic, so JAX keeps "
                    "the input dtype."),
    "where": "({k} devices, input {x}) ",
    "sum_expected": "With {k} devices holding {x}, every device should end with {want} (the sum of x * 2.0 over "
                    "all devices).",
    "sum_plain": "That is the plain sum of `x`: multiply by 2.0 before (or after) the psum.",
    "sum_is_mean": "That is the mean over devices (what `lax.pmean` gives): use `lax.psum` for the total.",
    "sum_is_max": "That is the maximum over devices (what `lax.pmax` gives): use `lax.psum` for the total.",
    "by_hand": "If you wrote the number by hand, compute it instead: the check runs several device counts and "
               "inputs.",
    "use_psum": "Add up the scaled values of all devices with `lax.psum(..., axis_name=DEVICES)`.",
    "mean_expected": "With {k} devices holding {x}, every device should end with {want} (the mean of x * 2.0 "
                     "over all devices).",
    "mean_is_total": "That is the total, not the mean: use `lax.pmean`, or divide the psum by the device count.",
    "mean_over_8": ("That is the total divided by 8. The device count is not always 8: use `lax.pmean`, or divide "
                    "by `lax.psum(1, axis_name=DEVICES)`."),
    "mean_unscaled": "That is the mean of `x` itself: multiply by 2.0.",
    "share_ones": ("Every entry is 1: each device divided by its own value. Divide by the largest value across "
                   "devices, `lax.pmax(x, axis_name=DEVICES)`."),
    "share_is_max": "That is the maximum itself: divide the device's own `x` by it.",
    "share_global_max": ("You divided by the largest entry of all vectors. Compare each position only with the "
                         "same position on the other devices: `lax.pmax(x, ...)` works entry by entry."),
    "share_replicated": ("Every device holds the same result, but each device should keep its own share: divide "
                         "the local `x` by the collective maximum, and do not reduce the quotient."),
}


def _fmt(value) -> str:
    value = np.asarray(value)
    if value.ndim == 0:
        return f"{float(value):g}"
    return np.array2string(value, precision=4, threshold=16)


def _explained(name: str):
    """How the checks run an answer, for the core's translation of its crashes (`checking.explained`)."""
    return explained(name, run=f"`jax.pmap({name}, axis_name=DEVICES)`", binds=(DEVICES,))


def _run(name: str, fn: Callable, x) -> jax.Array:
    """`jax.pmap(fn, axis_name=DEVICES)(x)`, failures explained."""
    with _explained(name):
        return jax.pmap(fn, axis_name=DEVICES)(x)


def _expect_per_device(name: str, out, x) -> None:
    """One result per device, shaped and typed like that device's `x`."""
    if not isinstance(out, jax.Array):
        fail(TEXT["not_an_array"].format(name=name, type=type(out).__name__, value=f"{out!r:.80}"))
    x = np.asarray(x)
    per_shape, got_shape = x.shape[1:], tuple(out.shape[1:])
    if tuple(out.shape[:1]) != x.shape[:1] or got_shape != per_shape:
        fail(TEXT["wrong_shape"].format(name=name, per_shape=per_shape, k=x.shape[0], shape=tuple(out.shape),
                                        got_shape=got_shape) + (TEXT["reduced_locally"] if got_shape == () else ""))
    if np.dtype(out.dtype) != x.dtype:
        fail(TEXT["wrong_dtype"].format(name=name, dtype=x.dtype.name, got=np.dtype(out.dtype).name))


# ---------------------------------------------------------------- inputs
def _visible_inputs():
    """The readable inputs of the visible checks: the classic arange first."""
    cases = [jnp.arange(k, dtype=jnp.float32) for k in (8, 2, 4)]
    cases.append(jnp.arange(12, dtype=jnp.float32).reshape(4, 3) / 4 - 1)
    cases.append(jnp.asarray([[0.5, -1.0, 2.0], [1.5, 0.25, -3.0]], dtype=jnp.float16))
    return cases


def _program_cases(fn: Callable, *, positive: bool = False, float16: bool = True, values: bool = True) -> dict:
    """The graded programs: `pmap(fn)` over 2, 4, 8 devices x per-device shapes () and (3,), float32,
    and one float16 case, exported on abstract inputs (the grader draws the values)."""
    draw = {"kind": "uniform", "low": 0.25, "high": 4.0} if positive else {"kind": "normal"}
    cases = {}
    for k in DEVICE_COUNTS:
        for shape in ((), (3,)):
            name = f"k{k}_shape{'x'.join(map(str, shape)) or 'scalar'}_float32"
            cases[name] = Case(pmapped(fn, k, DEVICES), spec((k,) + shape, jnp.float32), draw=draw, values=values)
    if float16:
        quarters = {"kind": "quarters", "low": 1 if positive else -12, "high": 13}
        cases["k4_shape3_float16"] = Case(pmapped(fn, 4, DEVICES), spec((4, 3), jnp.float16), draw=quarters,
                                          values=values)
    return cases


def _observe_outputs(fn: Callable, grade_id: str, **kwargs) -> dict:
    """Exported programs of `fn` (values and communication are judged by the grader, not here)."""
    del grade_id
    return programs(_program_cases(fn, **kwargs))


# ---------------------------------------------------------------- exercise 1: scaled_sum
def _diagnose_sum(x, got, want) -> str:
    """A hint for a replicated, well-shaped, but wrong `scaled_sum` result."""
    x, got, k = np.asarray(x, float), np.asarray(got, float)[0], x.shape[0]
    if same_values(got, want / 2, dtype=float):
        return TEXT["sum_plain"]
    if same_values(got, want / k, dtype=float):
        return TEXT["sum_is_mean"]
    if same_values(got, 2.0 * x.max(axis=0), dtype=float):
        return TEXT["sum_is_max"]
    return TEXT["by_hand"]


def _check_scaled_sum(fn: Callable) -> None:
    for x in _visible_inputs():
        out = _run("scaled_sum", fn, x)
        _expect_per_device("scaled_sum", out, x)
        want = np.asarray(x, np.float64).sum(axis=0) * 2.0
        k = x.shape[0]
        expect_replicated("scaled_sum", out, axis_name=DEVICES,
                          hint=TEXT["sum_expected"].format(k=k, x=_fmt(x), want=_fmt(want)))
        expect_close("scaled_sum", out, np.broadcast_to(want, out.shape), rtol=1e-3, atol=1e-3,
                     hint=TEXT["where"].format(k=k, x=_fmt(x)) + _diagnose_sum(x, out, want))


def _check_scaled_sum_uses_psum(fn: Callable) -> None:
    with _explained("scaled_sum"):
        expect_collective("scaled_sum", fn, jnp.float32(1.0), axis_name=DEVICES, axis_env=AXIS_ENV,
                          primitives=("psum",), hint=TEXT["use_psum"])


def _observe_scaled_sum(fn: Callable) -> dict:
    return _observe_outputs(fn, "scaled_sum_total")


def _observe_scaled_sum_uses_psum(fn: Callable) -> dict:
    """Structure only: the compiled programs (scalar and vector, 8 devices) must psum over DEVICES."""
    return programs({f"k8_{label}": Case(pmapped(fn, 8, DEVICES), spec((8,) + shape, jnp.float32), values=False)
                     for label, shape in (("scalar", ()), ("vector", (3,)))})


scaled_sum = Exercise(
    "scaled_sum", _check_scaled_sum,
    hints=[
        "Inside the function `x` is one device's value. First scale it by 2.0: that part is local work.",
        "Then add the scaled values of all devices together with a collective over the axis "
        "that `pmap` named DEVICES: section 2 does it in `device_total`.",
        "`jnp.sum` only adds up this device's own entries. The total over devices comes from `lax.psum`, "
        "and it is already the same on every device: return it as it is.",
    ],
    observe=_observe_scaled_sum,
)

scaled_sum_uses_psum = Exercise(
    "scaled_sum", _check_scaled_sum_uses_psum,
    hints=[
        "The total must come from `lax.psum` over DEVICES: `jnp.sum` only sees one device's value.",
        "This check reads your function's jaxpr: it needs a `psum` whose `axis_name` is DEVICES. A psum over "
        "another name, or a total computed without a collective, fails it.",
    ],
    observe=_observe_scaled_sum_uses_psum,
)


# ---------------------------------------------------------------- exercise 2: scaled_mean
def _check_scaled_mean(fn: Callable) -> None:
    for x in _visible_inputs():
        out = _run("scaled_mean", fn, x)
        _expect_per_device("scaled_mean", out, x)
        k = x.shape[0]
        want = np.asarray(x, np.float64).mean(axis=0) * 2.0
        expect_replicated("scaled_mean", out, axis_name=DEVICES,
                          hint=TEXT["mean_expected"].format(k=k, x=_fmt(x), want=_fmt(want)))
        got = np.asarray(out, float)[0]
        if same_values(got, want * k, dtype=float):
            hint = TEXT["mean_is_total"]
        elif same_values(got, want * k / 8, dtype=float) and k != 8:
            hint = TEXT["mean_over_8"]
        elif same_values(got, want / 2, dtype=float):
            hint = TEXT["mean_unscaled"]
        else:
            hint = ""
        expect_close("scaled_mean", out, np.broadcast_to(want, out.shape), rtol=1e-3, atol=1e-3,
                     hint=TEXT["where"].format(k=k, x=_fmt(x)) + hint)


def _observe_scaled_mean(fn: Callable) -> dict:
    return _observe_outputs(fn, "scaled_mean_value")


scaled_mean = Exercise(
    "scaled_mean", _check_scaled_mean,
    hints=[
        "Like `scaled_sum`, but every device should end with the mean of x * 2.0, not the total.",
        "`lax.pmean` averages over a named axis (section 5). Dividing a psum by a fixed 8 breaks on 2 or 4 "
        "devices.",
        "Scale first or average first, as you like: the mean of x * 2.0 is 2.0 times the mean of x. "
        "For `data` above, every device should hold 7.0.",
    ],
    observe=_observe_scaled_mean,
)


# ---------------------------------------------------------------- exercise 3: global_max_share
def _visible_positive_inputs():
    return [
        jnp.asarray([1.0, 2.0, 4.0, 8.0], jnp.float32),
        jnp.asarray([3.0, 1.5], jnp.float32),
        jnp.asarray([[1.0, 4.0, 2.0], [2.0, 1.0, 8.0], [4.0, 2.0, 1.0]], jnp.float32),
    ]


def _check_global_max_share(fn: Callable) -> None:
    name = "global_max_share"
    for x in _visible_positive_inputs():
        out = _run(name, fn, x)
        _expect_per_device(name, out, x)
        xs = np.asarray(x, np.float64)
        want = xs / xs.max(axis=0)
        got = np.asarray(out, np.float64)
        k = x.shape[0]
        if same_values(got, np.ones_like(want), dtype=float):
            hint = TEXT["share_ones"]
        elif same_values(got, np.broadcast_to(xs.max(axis=0), got.shape), dtype=float):
            hint = TEXT["share_is_max"]
        elif same_values(got, xs / xs.max(), dtype=float) and xs.ndim > 1:
            hint = TEXT["share_global_max"]
        elif got.ndim and np.allclose(got, got[:1]) and not np.allclose(want, want[:1]):
            hint = TEXT["share_replicated"]
        else:
            hint = ""
        expect_close(name, out, want, rtol=1e-4, atol=1e-5, hint=TEXT["where"].format(k=k, x=_fmt(x)) + hint)


def _observe_global_max_share(fn: Callable) -> dict:
    return _observe_outputs(fn, "global_max_share_value", positive=True, float16=False)


global_max_share = Exercise(
    "global_max_share", _check_global_max_share,
    hints=[
        "Each device keeps its own `x`; it only needs to know the largest `x` on any device.",
        "Which collective gives every device the largest value along DEVICES (entry by entry for "
        "vectors)? Section 5 compares the three.",
        "Divide this device's own `x` by that maximum, and stop there: reducing the quotient again would "
        "give every device the same number, but each device should keep its own share.",
    ],
    observe=_observe_global_max_share,
)
