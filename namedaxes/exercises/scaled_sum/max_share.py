"""Exercise 3: `global_max_share`."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from namedaxes.checking import same_values, which_mistake

from .running import AXIS_ENV, exercise, expect_values_near, observe_outputs, visible_results
from .text import TEXT


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


def share_mistakes(x) -> list[tuple]:
    """The usual mistakes' results on `x` (k devices' signed values), one per device as `pmap` returns them: the
    largest magnitude itself, `x` divided by the largest *value* or its signs lost (where some entry is
    negative), and divided by the largest magnitude of all vectors (where each device holds a vector). Every
    entry 1 is told apart by the program, not its values (the check's own words), so it is not listed (the
    check's diagnoses, and the grader's)."""
    xs = np.asarray(x, np.float64)
    sizes = np.abs(xs)
    want = xs / sizes.max(axis=0)
    found = [(np.broadcast_to(sizes.max(axis=0), xs.shape), "share_is_max", {})]
    if (xs < 0).any():
        found += [(xs / xs.max(axis=0), "share_signed_max", {}), (np.abs(want), "share_lost_sign", {})]
    if xs.ndim > 1:
        found.append((xs / sizes.max(), "share_global_max", {}))
    return found


def _check_global_max_share(fn: Callable) -> None:
    name = "global_max_share"
    for x, out in visible_results(name, fn, _visible_signed_inputs()):
        xs = np.asarray(x, np.float64)
        sizes = np.abs(xs)
        want = xs / sizes.max(axis=0)
        got = np.asarray(out, np.float64)
        if same_values(got, np.ones_like(want), dtype=float):
            hint = TEXT["share_max_of_shares" if _returns_collective(fn, x[0], "pmax") else "share_ones"]
        elif (found := which_mistake(got, share_mistakes(xs))) is not None:
            hint = TEXT[found[0]].format(**found[1])
        elif got.ndim and np.allclose(got, got[:1]) and not np.allclose(want, want[:1]):
            hint = TEXT["share_replicated"]
        else:
            hint = ""
        expect_values_near(name, out, want, x, rtol=1e-4, atol=1e-5, hint=hint)


def _observe_global_max_share(fn: Callable) -> dict:
    return observe_outputs(fn, "global_max_share_value", float16=False)  # signed inputs, as the check


global_max_share = exercise("global_max_share", _check_global_max_share, observe=_observe_global_max_share)
