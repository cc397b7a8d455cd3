"""How notebook 02's answers run: under `pmap` over DEVICES on 2, 4 and 8 devices, their crashes in words, one
result per device, and the programs the grader judges."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import jax
import jax.numpy as jnp
import numpy as np

from namedaxes import DEVICES
from namedaxes.checking import exercises_for, expect_close, expect_replicated, explained, fail, show_values
from namedaxes.grading import Case, pmapped, programs, spec

from . import text
from .text import TEXT

exercise = exercises_for(__package__, text)  # the notebook's Exercise maker: exercise(name, check, observe=...)

AXIS_ENV = [(DEVICES, 8)]
DEVICE_COUNTS = (2, 4, 8)


def explained_here(name: str):
    """How the checks run an answer, for the core's translation of its crashes (`checking.explained`)."""
    return explained(name, run=f"`jax.pmap({name}, axis_name=DEVICES)`", binds=(DEVICES,))


def run_answer(name: str, fn: Callable, x) -> jax.Array:
    """`jax.pmap(fn, axis_name=DEVICES)(x)`, failures explained."""
    with explained_here(name):
        return jax.pmap(fn, axis_name=DEVICES)(x)


def inline_values(value) -> str:
    """Values as this notebook's messages show them: on one line, a scalar as a plain number."""
    return show_values(value, separator=" ", scalar_as_number=True)


def expect_same_on_every_device(name: str, out, x, want, key: str, **fields) -> None:
    """`out` the same on every device (`checking.expect_replicated`), else the hint `key` of this notebook's TEXT,
    which shows the devices' inputs `x` and the one result `want` expected of all of them (with `fields`)."""
    hint = TEXT[key].format(k=x.shape[0], x=inline_values(x), want=inline_values(want), **fields)
    expect_replicated(name, out, axis_name=DEVICES, hint=hint)


def expect_values_near(name: str, out, want, x, *, rtol: float, atol: float, hint: str) -> None:
    """`out` within `rtol` and `atol` of `want` (`checking.expect_close`), else expected vs seen, then the devices'
    inputs `x` and `hint` (the known mistake the values are, or advice)."""
    where = TEXT["where"].format(k=x.shape[0], x=inline_values(x))
    expect_close(name, out, want, rtol=rtol, atol=atol, hint=where + hint)


def visible_results(name: str, fn: Callable, inputs: Iterable, expect_shape: Callable | None = None) -> Iterator:
    """Each visible input `x` with the answer's result on it, `(x, out)`: run (`run_answer`) and checked for type,
    shape and dtype (`expect_shape(name, out, x)`, by default `expect_per_device`) before its values are."""
    for x in inputs:
        out = run_answer(name, fn, x)
        (expect_shape or expect_per_device)(name, out, x)
        yield x, out


def expect_per_device(name: str, out, x) -> None:
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
def visible_inputs():
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


def observe_outputs(fn: Callable, grade_id: str, **kwargs) -> dict:
    """Exported programs of `fn` (values and communication are judged by the grader, not here)."""
    del grade_id
    return programs(_program_cases(fn, **kwargs))
