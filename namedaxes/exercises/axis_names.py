"""Exercises of notebook 01 (axis names): checks, hints and observations.

Every answer is a *per-device* function: it sees one device's slice of the
data and talks to the other devices only through collectives that name the
axis `DEVICES`. The checks run it under `jax.pmap(fn, axis_name=DEVICES)`
(and under `jax.vmap(fn, axis_name=DEVICES)` too) and go
type -> shape/dtype -> value -> structure.

Every student-facing sentence of the checks is a template in `TEXT`; the hints are
the full strings of each `Exercise(..., hints=[...])`. A check and its hidden
observation accept the same answers: `center` takes any collective over DEVICES
(`pmean`, `psum`, `all_gather`) in both, since its hidden cell is a values cell.

`center` subtracts one mean, that of all the elements of all devices (a local mean,
then a collective): the notebook's `batch_mean` cell edited once (`x - pmean(x)`)
subtracts a mean per position instead, and is told so.
"""

from __future__ import annotations

import inspect
import re

import jax
import jax.numpy as jnp
import numpy as np

from namedaxes import DEVICES
from namedaxes.checking import (
    CheckFailed,
    examined,
    exercises_for,
    expect_array,
    expect_communication,
    explained,
    progress_of,
    same_values,
    show_values,
)
from namedaxes.grading import Case, pmapped, programs, rng, spec
from namedaxes.i18n import Messages

__all__ = ["rank_weighted_sum", "last_device_value", "center", "progress", "known_mistakes"]
exercise = exercises_for(__name__)  # this notebook's exercises: exercise(name, check, hints=..., observe=...)
progress = progress_of(__name__)  # q.progress(): which exercises of the notebook pass


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
TEXT = Messages(TEXT)  # the table above, each lookup in the kernel's language


# ---------------------------------------------------------------- shared helpers
def _mapped(fn, how: str):
    """`fn` under pmap, or under vmap (jitted: one compilation instead of one per operation)."""
    if how == "pmap":
        return jax.pmap(fn, axis_name=DEVICES)
    return jax.jit(jax.vmap(fn, axis_name=DEVICES))


def _where(how: str, k: int) -> str:
    if how == "pmap":
        return TEXT["under_pmap"].format(k=k)
    return TEXT["under_vmap"].format(k=k)


def _run(name: str, fn, x, how: str = "pmap"):
    """`fn` mapped over the leading axis of `x`; crashes become readable messages (`checking.explained`)."""
    with explained(name, run=TEXT["run"].format(name=name, where=_where(how, x.shape[0])), binds=(DEVICES,)):
        return _mapped(fn, how)(x)


def _expect_per_device(name: str, out, k: int, shape: tuple, dtype, how: str = "pmap") -> None:
    """Type, then the shape and dtype each device (or example) returns."""
    expect_array(f"{name}(x)", out)
    per = TEXT["device"] if how == "pmap" else TEXT["example"]
    got_shape = tuple(out.shape[1:])
    if got_shape != tuple(shape):
        raise CheckFailed(
            TEXT["wrong_shape"].format(per=per, name=name, shape=tuple(shape), got=got_shape, where=_where(how, k))
        )
    if np.dtype(out.dtype) != np.dtype(dtype):
        raise CheckFailed(
            TEXT["wrong_dtype"].format(name=name, dtype=np.dtype(dtype).name, got=np.dtype(out.dtype).name)
        )


def _wrong_values(name: str, out, want, how: str, diagnosis: str) -> None:
    """Name the function, say where, show expected vs seen on the first device that differs."""
    out, want = np.asarray(out), np.asarray(want)
    per = TEXT["device"] if how == "pmap" else TEXT["example"]
    i = next(i for i in range(want.shape[0]) if not same_values(out[i], want[i]))
    raise CheckFailed(
        TEXT["wrong_values"].format(
            name=name,
            where=_where(how, want.shape[0]),
            diagnosis=diagnosis,
            per=per,
            i=i,
            want=show_values(want[i]),
            got=show_values(out[i]),
        )
    )


# ---------------------------------------------------------------- 1. rank_weighted_sum
def _weighted_mistakes(xs: np.ndarray) -> list[tuple]:
    """The usual mistakes' results on `x` (k devices' rows): each device's own term, the plain total, positions
    counted from 1, all positions times the device's own `x`."""
    k = xs.shape[0]
    ranks = np.arange(k).reshape((k,) + (1,) * (xs.ndim - 1))
    return [
        (ranks * xs, "weighted_own_term", {"axis": DEVICES}),
        (np.broadcast_to(xs.sum(axis=0), xs.shape), "weighted_no_weights", {}),
        (np.broadcast_to(((ranks + 1) * xs).sum(axis=0), xs.shape), "weighted_from_one", {}),
        (ranks.sum() * xs, "weighted_ranks_summed", {}),
    ]


def _diagnosis(got, mistakes: list[tuple], otherwise: str) -> str:
    """The sentence of the first known mistake (`(values, key, fields)`) whose values `got` has, else `otherwise`."""
    for values, key, fields in mistakes:
        if same_values(got, values):
            return TEXT[key].format(**fields)
    return otherwise


def _check_rank_weighted_sum(fn) -> None:
    name = "rank_weighted_sum"
    r = rng("rank_weighted_sum_check")
    for how, k in (("pmap", 8), ("pmap", 4), ("vmap", 5)):
        x = jnp.asarray(r.normal(size=(k, 2)), jnp.float32)
        out = _run(name, fn, x, how)
        _expect_per_device(name, out, k, (2,), jnp.float32, how)
        xs, got = np.asarray(x, np.float64), np.asarray(out, np.float64)
        ranks = np.arange(k)[:, None]
        want = np.broadcast_to((ranks * xs).sum(axis=0), xs.shape)
        if same_values(got, want):
            continue
        _wrong_values(name, out, want, how, _diagnosis(got, _weighted_mistakes(xs), TEXT["weighted_other"]))


def _cases(fn, how_sizes, per_shape, draw=None) -> dict:
    """Exported programs: `fn` under pmap over k devices / vmap over k examples (the grader draws x)."""
    cases = {}
    for how, k, shape in how_sizes:
        mapped = pmapped(fn, k, DEVICES) if how == "pmap" else jax.vmap(fn, axis_name=DEVICES)
        cases[f"{how}_{k}"] = Case(
            mapped,
            spec((k, *(per_shape if shape is None else shape)), jnp.float32),
            draw={**(draw or {"kind": "normal"}), "share": f"x{k}"},
        )  # pmap_k, vmap_k: same x
    return cases


def _observe_rank_weighted_sum(fn) -> dict:
    return programs(_cases(fn, [("pmap", 2, None), ("pmap", 4, None), ("pmap", 8, None), ("vmap", 5, None)], (2,)))


rank_weighted_sum = exercise(
    "rank_weighted_sum",
    _check_rank_weighted_sum,
    hints=[
        "Split the job: which part can each device do on its own, and which part needs the other devices?",
        'Device i\'s term, i * x, is local work: it knows its own position (section "Which device am I?") and '
        "its own `x`. Adding the terms of all devices is what the collective of the first section does.",
        "`lax.axis_index(DEVICES) * x` is this device's term; `lax.psum` of it over DEVICES gives every device "
        "the whole sum. No cast is needed: an int32 position times a float32 `x` is float32.",
    ],
    observe=_observe_rank_weighted_sum,
    mistakes={"weighted_own_term": 2, "weighted_no_weights": 2, "weighted_from_one": 3, "weighted_ranks_summed": 3},
)


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


def _last_mistakes(xs: np.ndarray) -> list[tuple]:
    """The usual mistakes' results on `x` (k devices' rows): each device's own `x`, the total, the first device's,
    zeros (no device matched), another device's, the last device's `x` on the last device only."""
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


def _check_last_device_value(fn) -> None:
    name = "last_device_value"
    r = rng("last_device_value_check")
    for how, k in (("pmap", 8), ("pmap", 3), ("vmap", 5)):
        x = jnp.asarray(r.normal(size=(k, 5)), jnp.float32)
        out = _run(name, fn, x, how)
        _expect_per_device(name, out, k, (5,), jnp.float32, how)
        xs, got = np.asarray(x), np.asarray(out)
        want = np.broadcast_to(xs[-1], xs.shape)
        if same_values(got, want):
            continue
        found = next((m for m in _last_mistakes(xs) if same_values(got, m[0])), None)
        diagnosis = TEXT[found[1]].format(**found[2]) if found else TEXT["last_other"].format(last=k - 1)
        if found and found[1] in ("last_nobody", "last_other_device") and k != 8:
            diagnosis += _not_the_axis_size(fn, k)
        _wrong_values(name, out, want, how, diagnosis)


def _observe_last_device_value(fn) -> dict:
    return programs(_cases(fn, [("pmap", 2, None), ("pmap", 5, None), ("pmap", 8, None), ("vmap", 6, None)], (5,)))


last_device_value = exercise(
    "last_device_value",
    _check_last_device_value,
    hints=[
        "Each device can tell whether it is the last one along DEVICES: it knows its own position and the "
        'size of the axis (sections "Which device am I?" and "How many devices?").',
        "`lax.psum` hands every device the total. If every device except the last one puts in zeros, "
        "what is the total?",
        "`jnp.where(is_last, x, 0.0)` keeps `x` on the last device and zeros elsewhere; sum that over "
        "DEVICES. The last position is `lax.psum(1, DEVICES) - 1`, never a fixed 7.",
    ],
    observe=_observe_last_device_value,
    mistakes={
        "last_own": 2,
        "last_total": 2,
        "last_first": 3,
        "last_nobody": 3,
        "last_other_device": 3,
        "last_not_shared": 2,
    },
)


# ---------------------------------------------------------------- 3. center
def _normal(r, shape) -> jax.Array:
    return jnp.asarray(r.normal(size=shape) * 2.0 + 1.0, jnp.float32)


def _center_mistakes(x: np.ndarray) -> list[tuple]:
    """The usual mistakes' results on `x` (k devices' blocks): one mean per column of a block (`jnp.mean(x,
    axis=0)` on blocks of 2 dimensions or more), each device's own mean, a mean per position, the total."""
    k = x.shape[0]
    flat = x.reshape(k, -1)
    found = []
    if x.ndim > 2:
        found.append((x - x.mean(axis=tuple(range(x.ndim - 1))), "center_first_axis", {"block": str(x.shape[1:])}))
    return [
        *found,
        (x - flat.mean(axis=1).reshape((k,) + (1,) * (x.ndim - 1)), "center_local", {"axis": DEVICES}),
        (x - x.mean(axis=0), "center_per_position", {}),
        (x - x.sum(), "center_total", {}),
        (x - k * x.mean(), "center_total", {}),
    ]


def _check_center(fn) -> None:
    name = "center"
    r = rng("center_check")
    # per-device blocks of one and two dimensions, and scalars: at least as varied as the hidden cases
    cases = (
        ("pmap", _normal(r, (8, 3))),
        ("pmap", _normal(r, (4, 3))),
        ("vmap", _normal(r, (5, 3))),
        ("pmap", _normal(r, (4, 2, 3))),
        ("pmap", _normal(r, (2,))),
    )
    for how, x in cases:
        k = x.shape[0]
        out = _run(name, fn, x, how)
        _expect_per_device(name, out, k, x.shape[1:], jnp.float32, how)
        want = x - x.mean()
        if same_values(out, want):
            continue
        otherwise = TEXT["center_hard_coded"] if how == "vmap" or k != 8 else TEXT["center_other"].format(axis=DEVICES)
        _wrong_values(name, out, want, how, _diagnosis(np.asarray(out), _center_mistakes(np.asarray(x)), otherwise))
    # any collective over DEVICES (pmean, psum, all_gather) that reaches the result, read from the compiled
    # program the grader's way (`namedaxes.judging.examine`): the hidden values cell accepts them all too
    with explained(name):
        facts = examined(jax.pmap(fn, axis_name=DEVICES), cases[0][1])
    expect_communication(name, facts, DEVICES, hint=TEXT["center_structure"])


def _observe_center(fn) -> dict:
    sizes = [(how, k, shape) for k, shape in ((2, (4,)), (4, ()), (8, (2, 3))) for how in ("pmap", "vmap")]
    return programs(_cases(fn, sizes, (), draw={"kind": "normal", "mean": 1.0, "scale": 2.0}))


center = exercise(
    "center",
    _check_center,
    hints=[
        "The mean asked for is one number for all the values of all devices. Which part of it can one "
        "device compute alone, and what does it then need from the others?",
        "`jnp.mean(x)` averages this device's own values. Every device holds as many values as the "
        "others, so the mean of everything is the mean of those per-device means across the axis: "
        'the collective of `batch_mean` in section "The same function under vmap".',
        "Average first on the device (`jnp.mean` with no axis), then across DEVICES with `lax.pmean`, and "
        "subtract that from `x`. Don't divide a `psum` by 8: the check also maps over 4 devices and over 5 "
        "vmapped entries; `vmap(axis_name=DEVICES)` binds the same name as `pmap`.",
    ],
    observe=_observe_center,
    mistakes={"center_first_axis": 3, "center_local": 2, "center_per_position": 3, "center_total": 3},
)


# ---------------------------------------------------------------- the grader's side of the diagnoses
_MISTAKES = {"rank_weighted_sum": _weighted_mistakes, "last_device_value": _last_mistakes, "center": _center_mistakes}


def known_mistakes(exercise: str, case: str, inputs: list) -> list[tuple]:
    """The known mistakes' results `(values, key, fields)` on one graded case's inputs (`x`, the k devices'
    or examples' rows, whatever the case): what the grader's judge compares a wrong program's values with,
    on its hidden inputs, to name the mistake as the check names it (`autograder/judge/mistakes.py`)."""
    return _MISTAKES[exercise](np.asarray(inputs[0], np.float64))
