"""What a program's types guarantee about its reductions over one mesh axis, read from its jaxpr (issue 56).

On Explicit axes every value's type says how it is split (`P(...)`) and whether it still holds one partial sum
per device (`unreduced`). A reduction over the axis is where the types go from partial to whole: a `reshard` of
an unreduced value, or a contraction (`dot_general`, `reduce_sum`, ...) over a dimension split over the axis whose
result is not unreduced. The compiler writes an all-reduce for each; a backend may then merge or hoist them (XLA
on a TPU v5e turns m reductions of a loop into one), so a count read from one compiled program is a fact about
that backend. The types are the same wherever the program is compiled: this count is the visible check's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Reductions", "typed_reductions"]

_REDUCERS = ("reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "argmax", "argmin", "reduce_and", "reduce_or")


@dataclass(frozen=True)
class Reductions:
    """The reductions over one axis a program's types make: `nbytes`, the bytes of their results, each counted as
    often as it runs (a `lax.scan` body's as many times as the scan's length; a `while` body's as many times as
    `loop_runs`, its trips not being in its types); `in_loop`, whether one runs in a loop's body; `unreduced`,
    whether any value is typed unreduced over the axis."""

    nbytes: int
    in_loop: bool
    unreduced: bool


def _spec(var):
    return getattr(getattr(getattr(var, "aval", None), "sharding", None), "spec", None)


def _unreduced(var, axis: str) -> bool:
    return axis in (getattr(_spec(var), "unreduced", None) or ())


def _split_dims(var, axis: str) -> set[int]:
    """The dimensions of `var` its type splits over `axis`."""
    spec = _spec(var)
    dims = set()
    for dim, entry in enumerate(tuple(getattr(spec, "partitions", ()) or ())):
        names = entry if isinstance(entry, tuple) else (entry,)
        if axis in names:
            dims.add(dim)
    return dims


def _reduces(eqn, axis: str) -> bool:
    """Does the equation turn partial sums over `axis` into whole values (its results not typed unreduced)?"""
    if any(_unreduced(v, axis) for v in eqn.outvars):
        return False
    name = eqn.primitive.name
    if any(_unreduced(v, axis) for v in eqn.invars if hasattr(v, "aval")):
        return True
    if name == "dot_general":
        (lhs_c, rhs_c), _ = eqn.params["dimension_numbers"]
        lhs, rhs = eqn.invars[:2]
        return bool(_split_dims(lhs, axis) & set(lhs_c)) or bool(_split_dims(rhs, axis) & set(rhs_c))
    if name in _REDUCERS:
        return bool(_split_dims(eqn.invars[0], axis) & set(eqn.params.get("axes", ())))
    return False


def _nbytes(var) -> int:
    aval = var.aval
    return int(np.prod(aval.shape, dtype=np.int64)) * np.dtype(aval.dtype).itemsize


def _subjaxprs(eqn):
    """(jaxpr, runs of it per run of the equation, whether it is a loop's body) of each jaxpr the equation calls;
    a conditional's branches each once (the costliest counts: see `_walk`)."""
    for value in eqn.params.values():
        for sub in value if isinstance(value, tuple | list) else (value,):
            jaxpr = getattr(sub, "jaxpr", sub)
            if hasattr(jaxpr, "eqns"):
                yield jaxpr


def _walk(jaxpr, axis: str, runs: int, loop_runs: int, in_loop: bool) -> tuple[int, bool, bool]:
    nbytes, looped, unreduced = 0, False, False
    for eqn in jaxpr.eqns:
        unreduced = unreduced or any(_unreduced(v, axis) for v in eqn.outvars)
        if _reduces(eqn, axis):
            nbytes += runs * sum(_nbytes(v) for v in eqn.outvars)
            looped = looped or in_loop
        name = eqn.primitive.name
        each = eqn.params.get("length", 1) if name == "scan" else loop_runs if name == "while" else 1
        loop = in_loop or (name == "scan" and each > 1) or name == "while"
        found = [_walk(sub, axis, runs * each, loop_runs, loop) for sub in _subjaxprs(eqn)]
        if name == "cond" and found:  # one branch runs: the costliest
            found = [max(found)]
        for sub_bytes, sub_looped, sub_unreduced in found:
            nbytes += sub_bytes
            looped, unreduced = looped or sub_looped, unreduced or sub_unreduced
    return nbytes, looped, unreduced


def typed_reductions(closed_jaxpr, axis: str, loop_runs: int) -> Reductions:
    """The reductions over `axis` that the types of `closed_jaxpr` (`jax.make_jaxpr(fn)(*args)`) make."""
    nbytes, in_loop, unreduced = _walk(closed_jaxpr.jaxpr, axis, 1, loop_runs, False)
    return Reductions(nbytes, in_loop, unreduced)
