"""How notebook 01's answers run: under `pmap` or `vmap` over DEVICES, their crashes in words, their outputs checked
per device, and the cases the grader draws."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import jax
import jax.numpy as jnp
import numpy as np

from namedaxes import DEVICES
from namedaxes.checking import CheckFailed, exercises_for, expect_array, explained, same_values, show_values
from namedaxes.grading import Case, pmapped, spec

from . import text
from .text import TEXT

exercise = exercises_for(__package__, text)  # the notebook's Exercise maker: exercise(name, check, observe=...)


# ---------------------------------------------------------------- shared helpers
def _mapped(fn, how: str):
    """`fn` under pmap, or under vmap (jitted: one compilation instead of one per operation)."""
    if how == "pmap":
        return jax.pmap(fn, axis_name=DEVICES)
    return jax.jit(jax.vmap(fn, axis_name=DEVICES))


def where_run(how: str, k: int) -> str:
    if how == "pmap":
        return TEXT["under_pmap"].format(k=k)
    return TEXT["under_vmap"].format(k=k)


def run_answer(name: str, fn, x, how: str = "pmap"):
    """`fn` mapped over the leading axis of `x`, its crashes readable messages (`checking.explained`), and its
    result checked: a float32 array, each device's (or example's) shaped like its `x` (`_expect_each_result`)."""
    with explained(name, run=TEXT["run"].format(name=name, where=where_run(how, x.shape[0])), binds=(DEVICES,)):
        out = _mapped(fn, how)(x)
    _expect_each_result(name, out, x.shape[0], x.shape[1:], jnp.float32, how)
    return out


def _expect_each_result(name: str, out, k: int, shape: tuple, dtype, how: str = "pmap") -> None:
    """Type, then the shape and dtype each device (or example) returns."""
    expect_array(f"{name}(x)", out)
    per = TEXT["device"] if how == "pmap" else TEXT["example"]
    got_shape = tuple(out.shape[1:])
    if got_shape != tuple(shape):
        raise CheckFailed(
            TEXT["wrong_shape"].format(per=per, name=name, shape=tuple(shape), got=got_shape, where=where_run(how, k))
        )
    if np.dtype(out.dtype) != np.dtype(dtype):
        raise CheckFailed(
            TEXT["wrong_dtype"].format(name=name, dtype=np.dtype(dtype).name, got=np.dtype(out.dtype).name)
        )


def wrong_values(name: str, out, want, how: str, diagnosis: str) -> None:
    """Name the function, say where, show expected vs seen on the first device that differs."""
    out, want = np.asarray(out), np.asarray(want)
    per = TEXT["device"] if how == "pmap" else TEXT["example"]
    i = next(i for i in range(want.shape[0]) if not same_values(out[i], want[i]))
    raise CheckFailed(
        TEXT["wrong_values"].format(
            name=name,
            where=where_run(how, want.shape[0]),
            diagnosis=diagnosis,
            per=per,
            i=i,
            want=show_values(want[i]),
            got=show_values(out[i]),
        )
    )


def expect_mapped_values(
    name: str, fn, cases: Iterable[tuple], expected: Callable, diagnose: Callable[..., str]
) -> None:
    """Each case `(how, x)` run (`run_answer`) and its values compared with `expected(x)`: the first case that
    differs fails (`wrong_values`) with `diagnose(x, out, how)`, the known mistake its values are."""
    for how, x in cases:
        out = run_answer(name, fn, x, how)
        want = expected(x)
        if not same_values(out, want):
            wrong_values(name, out, want, how, diagnose(x, out, how))


def program_cases(fn, how_sizes, per_shape, draw=None) -> dict:
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


def diagnosis(got, mistakes: list[tuple], otherwise: str) -> str:
    """The sentence of the first known mistake (`(values, key, fields)`) whose values `got` has, else `otherwise`."""
    for values, key, fields in mistakes:
        if same_values(got, values):
            return TEXT[key].format(**fields)
    return otherwise
