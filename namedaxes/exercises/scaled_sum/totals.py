"""Exercise 1: `scaled_sum` and `scaled_sum_uses_psum`."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from namedaxes import DEVICES
from namedaxes.checking import examined, expect_communication, fail, same_values, which_mistake
from namedaxes.grading import Case, pmapped, programs, spec

from .running import (
    exercise,
    expect_same_on_every_device,
    expect_values_near,
    explained_here,
    inline_values,
    observe_outputs,
    run_answer,
    visible_inputs,
    visible_results,
)
from .text import TEXT


# ---------------------------------------------------------------- exercise 1: scaled_sum
def sum_mistakes(x) -> list[tuple]:
    """The usual mistakes' results on `x` (k devices' values), one per device as `pmap` returns them: the plain
    sum (no factor 2.0), the mean over devices (`lax.pmean`), the largest (`lax.pmax`) (the check's
    diagnoses, and the grader's)."""
    x = np.asarray(x, np.float64)
    k = x.shape[0]
    total = np.broadcast_to(x.sum(axis=0), x.shape)
    return [
        (total, "sum_plain", {}),
        (2.0 * total / k, "sum_is_mean", {}),
        (np.broadcast_to(2.0 * x.max(axis=0), x.shape), "sum_is_max", {}),
    ]


def _diagnose_sum(fn: Callable, x, got, want) -> str:
    """A hint for a replicated, well-shaped, but wrong `scaled_sum` result (true for what `fn` did)."""
    found = which_mistake(np.asarray(got, float), sum_mistakes(x))
    if found is not None:
        return TEXT[found[0]].format(**found[1])
    x_in = x
    x, got = np.asarray(x, float), np.asarray(got, float)[0]
    moved = np.asarray(run_answer("scaled_sum", fn, x_in + 1), float)[0]
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
    for x, out in visible_results("scaled_sum", fn, visible_inputs()):
        want = np.asarray(x, np.float64).sum(axis=0) * 2.0
        expect_same_on_every_device("scaled_sum", out, x, want, "sum_expected")
        hint = _diagnose_sum(fn, x, out, want)
        expect_values_near("scaled_sum", out, np.broadcast_to(want, out.shape), x, rtol=1e-3, atol=1e-3, hint=hint)


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
    with explained_here("scaled_sum"):
        facts = examined(jax.pmap(fn, axis_name=DEVICES), jnp.arange(8, dtype=jnp.float32))
    expect_communication("scaled_sum", facts, DEVICES, "psum", hint=TEXT["use_psum"], reaching=False)
    with explained_here("scaled_sum"):
        big = np.asarray(run_answer("scaled_sum", fn, jnp.ones(8, jnp.float32)), float)[0]
        small = np.asarray(run_answer("scaled_sum", fn, jnp.ones(2, jnp.float32)), float)[0]
    if same_values(big, 4 * small, dtype=float) and not same_values(small, 0.0, dtype=float):
        expect_communication("scaled_sum", facts, DEVICES, "psum", hint=TEXT["use_psum"])
        return
    key = "psum_is_mean" if same_values(big, small, dtype=float) else "psum_not_total"
    fail(TEXT[key].format(big=inline_values(big), small=inline_values(small)))


def _observe_scaled_sum(fn: Callable) -> dict:
    return observe_outputs(fn, "scaled_sum_total")


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


scaled_sum = exercise("scaled_sum", _check_scaled_sum, observe=_observe_scaled_sum)
scaled_sum_uses_psum = exercise(
    "scaled_sum",
    _check_scaled_sum_uses_psum,
    text="scaled_sum_uses_psum",
    observe=_observe_scaled_sum_uses_psum,
)
