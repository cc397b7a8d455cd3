"""Exercises of notebook 02 (`02_scaled_sum`): psum, pmean and pmax over 'devices'.

Every answer is a per-device function, run by the checks as
`jax.pmap(answer, axis_name=DEVICES)` on inputs with a leading axis of 2, 4 or
8 devices. Visible checks use small, readable inputs; `observe` exports programs
(2, 4 and 8 devices, several per-device shapes) whose inputs the grader draws.

Each visible check and its hidden observation accept the same answers:

- `scaled_sum_uses_psum` is about `lax.psum` only: the compiled program (visible:
  on public inputs, hidden: on the grader's) must psum over DEVICES, that psum must
  reach the result (`namedaxes.judging`: a psum multiplied by zero earns nothing), and the result must grow with
  the device count like a total (`_growth`), which a `pmean` does not (a pmean
  times the device count is a psum in disguise and passes; an `all_gather` summed
  scores the values but not this point);
- `scaled_mean` averages over shards of unequal size (NaN = no value); the hidden
  programs build that padding themselves from the grader's inputs (`_padded`);
- `global_max_share` divides by the largest *magnitude* on any device, on signed
  inputs (visible and hidden): the notebook's `pmax` cell divided by the largest
  value would be one edit away, and is wrong on negative entries.

Every student-facing sentence of the checks is a template in `TEXT`; the hints are
the full strings of each `Exercise(..., hints=[...])`.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from namedaxes import DEVICES
from namedaxes.checking import (
    examined,
    exercises_for,
    expect_close,
    expect_communication,
    expect_replicated,
    explained,
    fail,
    progress_of,
    same_values,
)
from namedaxes.grading import Case, pmapped, programs, spec
from namedaxes.i18n import Messages

__all__ = ["scaled_sum", "scaled_sum_uses_psum", "scaled_mean", "global_max_share", "progress"]
exercise = exercises_for(__name__)  # this notebook's exercises: exercise(name, check, hints=..., observe=...)
progress = progress_of(__name__)  # q.progress(): which exercises of the notebook pass

AXIS_ENV = [(DEVICES, 8)]
DEVICE_COUNTS = (2, 4, 8)

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
TEXT = Messages(TEXT)  # the table above, each lookup in the kernel's language


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
        fail(
            TEXT["wrong_shape"].format(
                name=name, per_shape=per_shape, k=x.shape[0], shape=tuple(out.shape), got_shape=got_shape
            )
            + (TEXT["reduced_locally"] if got_shape == () else "")
        )
    if np.dtype(out.dtype) != x.dtype:
        fail(TEXT["wrong_dtype"].format(name=name, dtype=x.dtype.name, got=np.dtype(out.dtype).name))


# ---------------------------------------------------------------- inputs
def _visible_inputs():
    """The readable inputs of the visible checks: the classic arange first."""
    cases = [jnp.arange(k, dtype=jnp.float32) for k in (8, 2, 4)]
    cases.append(jnp.arange(12, dtype=jnp.float32).reshape(4, 3) / 4 - 1)
    cases.append(jnp.asarray([[0.5, -1.0, 2.0], [1.5, 0.25, -3.0]], dtype=jnp.float16))
    return cases


def _program_cases(fn: Callable, *, float16: bool = True) -> dict:
    """The graded programs: `pmap(fn)` over 2, 4, 8 devices x per-device shapes () and (3,), float32,
    and one float16 case, exported on abstract inputs (the grader draws the values)."""
    draw = {"kind": "normal"}
    cases = {}
    for k in DEVICE_COUNTS:
        for shape in ((), (3,)):
            name = f"k{k}_shape{'x'.join(map(str, shape)) or 'scalar'}_float32"
            cases[name] = Case(pmapped(fn, k, DEVICES), spec((k,) + shape, jnp.float32), draw=draw)
    if float16:
        quarters = {"kind": "quarters", "low": -12, "high": 13}
        cases["k4_shape3_float16"] = Case(pmapped(fn, 4, DEVICES), spec((4, 3), jnp.float16), draw=quarters)
    return cases


def _observe_outputs(fn: Callable, grade_id: str, **kwargs) -> dict:
    """Exported programs of `fn` (values and communication are judged by the grader, not here)."""
    del grade_id
    return programs(_program_cases(fn, **kwargs))


# ---------------------------------------------------------------- exercise 1: scaled_sum
def _diagnose_sum(fn: Callable, x, got, want) -> str:
    """A hint for a replicated, well-shaped, but wrong `scaled_sum` result (true for what `fn` did)."""
    x_in = x
    x, got, k = np.asarray(x, float), np.asarray(got, float)[0], x.shape[0]
    if same_values(got, want / 2, dtype=float):
        return TEXT["sum_plain"]
    if same_values(got, want / k, dtype=float):
        return TEXT["sum_is_mean"]
    if same_values(got, 2.0 * x.max(axis=0), dtype=float):
        return TEXT["sum_is_max"]
    moved = np.asarray(_run("scaled_sum", fn, x_in + 1), float)[0]
    if same_values(moved, got, dtype=float):  # the same number whatever `x` holds: written by hand
        return TEXT["by_hand"]
    # the same factor on `x` and on `x + 1` (on every entry of both): a wrong scale, nothing else
    want, want_moved = np.asarray(want, float), (x + 1).sum(axis=0) * 2.0
    if np.all(np.abs(want) > 1e-6) and np.all(np.abs(want_moved) > 1e-6):
        ratios = np.concatenate([np.ravel(got / want), np.ravel(moved / want_moved)])
        if abs(ratios[0]) > 1e-6 and np.allclose(ratios, ratios[0], rtol=1e-4, atol=1e-6):
            return TEXT["sum_factor"].format(factor=float(ratios[0]))
    return TEXT["sum_other"]


def _check_scaled_sum(fn: Callable) -> None:
    for x in _visible_inputs():
        out = _run("scaled_sum", fn, x)
        _expect_per_device("scaled_sum", out, x)
        want = np.asarray(x, np.float64).sum(axis=0) * 2.0
        k = x.shape[0]
        expect_replicated(
            "scaled_sum", out, axis_name=DEVICES, hint=TEXT["sum_expected"].format(k=k, x=_fmt(x), want=_fmt(want))
        )
        expect_close(
            "scaled_sum",
            out,
            np.broadcast_to(want, out.shape),
            rtol=1e-3,
            atol=1e-3,
            hint=TEXT["where"].format(k=k, x=_fmt(x)) + _diagnose_sum(fn, x, out, want),
        )


def _growth(fn: Callable) -> Callable:
    """`fn`, divided by what it returns under `vmap` over 2 entries that all hold 1.0 (inside the same program).

    Run under `pmap` over 8 devices, a total (`psum`, whatever its scale) gives sum(x) / 2 and a mean
    (`pmean`, i.e. a psum divided by the device count) sum(x) / 8: the ratio tells a psum from a pmean
    without depending on the factor 2.0, so this point is about psum and only psum.
    """

    def grown(x):
        over_two = jax.vmap(fn, axis_name=DEVICES)(jnp.ones((2,) + x.shape, x.dtype))[0]
        return fn(x) / over_two

    return grown


def _check_scaled_sum_uses_psum(fn: Callable) -> None:
    """The grader's steps on the visible inputs: the compiled program's own psum over DEVICES (read from
    the optimized HLO, as the hidden structure case reads it), a total that grows with the device count
    (`_growth`), and that psum reaching the result (changed inside the program, the result must change)."""
    with _explained("scaled_sum"):
        facts = examined(jax.pmap(fn, axis_name=DEVICES), jnp.arange(8, dtype=jnp.float32))
    expect_communication("scaled_sum", facts, DEVICES, "psum", hint=TEXT["use_psum"], reaching=False)
    with _explained("scaled_sum"):
        big = np.asarray(_run("scaled_sum", fn, jnp.ones(8, jnp.float32)), float)[0]
        small = np.asarray(_run("scaled_sum", fn, jnp.ones(2, jnp.float32)), float)[0]
    if same_values(big, 4 * small, dtype=float) and not same_values(small, 0.0, dtype=float):
        expect_communication("scaled_sum", facts, DEVICES, "psum", hint=TEXT["use_psum"])
        return
    key = "psum_is_mean" if same_values(big, small, dtype=float) else "psum_not_total"
    fail(TEXT[key].format(big=_fmt(big), small=_fmt(small)))


def _observe_scaled_sum(fn: Callable) -> dict:
    return _observe_outputs(fn, "scaled_sum_total")


def _observe_scaled_sum_uses_psum(fn: Callable) -> dict:
    """The total must be a psum over DEVICES: the compiled program's own psum (structure case: an all_gather
    summed does not count), and a result that grows with the device count like a total (`_growth`: a pmean
    does not), on 4 and 8 devices."""
    cases = {
        f"k{k}_{label}_growth": Case(pmapped(_growth(fn), k, DEVICES), spec((k,) + shape, jnp.float32))
        for k in (4, 8)
        for label, shape in (("scalar", ()), ("vector", (3,)))
    }
    cases["k8_vector_psum"] = Case(pmapped(fn, 8, DEVICES), spec((8, 3), jnp.float32), values=False)
    return programs(cases)


scaled_sum = exercise(
    "scaled_sum",
    _check_scaled_sum,
    hints=[
        "Inside the function `x` is one device's value. First scale it by 2.0: that part is local work.",
        "Then add the scaled values of all devices together with a collective over the axis "
        "that `pmap` named DEVICES: section 2 does it in `device_total`.",
        "`jnp.sum` only adds up this device's own entries. The total over devices comes from `lax.psum`, "
        "and it is already the same on every device: return it as it is.",
    ],
    observe=_observe_scaled_sum,
)

scaled_sum_uses_psum = exercise(
    "scaled_sum",
    _check_scaled_sum_uses_psum,
    hints=[
        "The total must come from `lax.psum` over DEVICES: `jnp.sum` only sees one device's value.",
        "This check reads your compiled function: it needs a `psum` over DEVICES whose result reaches what you "
        "return. A psum over another name, one whose result is thrown away, or a total computed without a "
        "collective, fails it.",
        "It also runs your function over 8 and over 2 devices: a total grows with the number of devices, a mean "
        "(`lax.pmean`, a psum divided by the device count) does not.",
    ],
    observe=_observe_scaled_sum_uses_psum,
)


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


def _diagnose_mean(xs, got: float, want: float) -> str:
    """A hint for a replicated, well-shaped, but wrong `scaled_mean` result (`xs`: float64, NaN padded)."""
    k, m = xs.shape
    values = ~np.isnan(xs)
    total = 2.0 * np.nansum(xs)
    per_device = [2.0 * xs[i][values[i]].mean() if values[i].any() else NAN for i in range(k)]
    if np.isnan(got):
        return TEXT["mean_nan"]
    if same_values(got, total, dtype=float):
        return TEXT["mean_is_total"]
    if same_values(got, np.mean(per_device), dtype=float):
        return TEXT["mean_of_means"]
    if same_values(got, total / (k * m), dtype=float):
        return TEXT["mean_counts_missing"]
    if same_values(got, want / 2, dtype=float):
        return TEXT["mean_unscaled"]
    return TEXT["by_hand"]


def _check_scaled_mean(fn: Callable) -> None:
    name = "scaled_mean"
    for x in _visible_padded_inputs():
        out = _run(name, fn, x)
        _expect_one_number_per_device(name, out, x)
        xs = np.asarray(x, np.float64)
        k, n = x.shape[0], int((~np.isnan(xs)).sum())
        want = 2.0 * np.nansum(xs) / n
        expect_replicated(
            name, out, axis_name=DEVICES, hint=TEXT["mean_expected"].format(k=k, x=_fmt(x), want=_fmt(want), n=n)
        )
        got = float(np.asarray(out, float)[0])
        tol = 1e-3 if x.dtype == np.float16 else 1e-5
        if not same_values(got, want, tol, dtype=float):
            expect_close(
                name,
                out,
                np.full(out.shape, want),
                rtol=tol,
                atol=tol,
                hint=TEXT["where"].format(k=k, x=_fmt(x)) + _diagnose_mean(xs, got, want),
            )


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


scaled_mean = exercise(
    "scaled_mean",
    _check_scaled_mean,
    hints=[
        "Try it by hand with two devices: one holds 1 value, the other 3. Is the mean of all 4 values the mean "
        "of the two devices' means?",
        "A mean is a sum divided by a count. Each device knows its own sum (`jnp.nansum`) and its own count "
        "(`jnp.sum(~jnp.isnan(x))`); a collective gives every device the sums and counts of all devices "
        "(section 2).",
        "Divide the psum of the sums by the psum of the counts, and do not forget the factor 2.0. The result "
        "is one number, the same on every device; cast the count to `x.dtype` to keep float16.",
    ],
    observe=_observe_scaled_mean,
)


# ---------------------------------------------------------------- exercise 3: global_max_share
def _visible_signed_inputs():
    return [
        jnp.asarray([1.0, -2.0, 4.0, -8.0], jnp.float32),
        jnp.asarray([3.0, 1.5], jnp.float32),
        jnp.asarray([[1.0, -4.0, 2.0], [2.0, 1.0, -8.0], [-4.0, 2.0, 1.0]], jnp.float32),
    ]


def _returns_collective(fn: Callable, x0, primitive: str) -> bool:
    """The value `fn` returns is the result of `primitive` itself (e.g. an outer `lax.pmax`)."""
    closed = jax.make_jaxpr(fn, axis_env=AXIS_ENV)(x0)
    made_by = {id(v): eqn.primitive.name for eqn in closed.jaxpr.eqns for v in eqn.outvars}
    return any(made_by.get(id(v)) == primitive for v in closed.jaxpr.outvars)


def _check_global_max_share(fn: Callable) -> None:
    name = "global_max_share"
    for x in _visible_signed_inputs():
        out = _run(name, fn, x)
        _expect_per_device(name, out, x)
        xs = np.asarray(x, np.float64)
        sizes = np.abs(xs)
        want = xs / sizes.max(axis=0)
        got = np.asarray(out, np.float64)
        k = x.shape[0]
        if same_values(got, np.ones_like(want), dtype=float):
            hint = TEXT["share_max_of_shares" if _returns_collective(fn, x[0], "pmax") else "share_ones"]
        elif same_values(got, np.broadcast_to(sizes.max(axis=0), got.shape), dtype=float):
            hint = TEXT["share_is_max"]
        elif same_values(got, xs / xs.max(axis=0), dtype=float) and (xs < 0).any():
            hint = TEXT["share_signed_max"]
        elif same_values(got, np.abs(want), dtype=float) and (xs < 0).any():
            hint = TEXT["share_lost_sign"]
        elif same_values(got, xs / sizes.max(), dtype=float) and xs.ndim > 1:
            hint = TEXT["share_global_max"]
        elif got.ndim and np.allclose(got, got[:1]) and not np.allclose(want, want[:1]):
            hint = TEXT["share_replicated"]
        else:
            hint = ""
        expect_close(name, out, want, rtol=1e-4, atol=1e-5, hint=TEXT["where"].format(k=k, x=_fmt(x)) + hint)


def _observe_global_max_share(fn: Callable) -> dict:
    return _observe_outputs(fn, "global_max_share_value", float16=False)  # signed inputs, as the check


global_max_share = exercise(
    "global_max_share",
    _check_global_max_share,
    hints=[
        "Each device keeps its own `x`. What does it need to learn from the others, and how do you "
        "compare the sizes of two numbers when one of them may be negative?",
        "A size regardless of sign is local work on each device, done before any collective. Which "
        "collective of section 5 then gives every device the largest one (entry by entry for vectors)?",
        "Divide this device's own, signed `x` by `lax.pmax(jnp.abs(x), axis_name=DEVICES)`, and stop "
        "there: reducing the quotient again would give every device the same number.",
    ],
    observe=_observe_global_max_share,
)
