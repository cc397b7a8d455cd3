"""Which of an answer's inputs a collective carries: what a program sends, read from its traced program.

A check that refuses an answer for its work says what the excess means; whether the experts' weights or the
tokens travel, the keys or the queries, is a fact of the program, not of an array's size. `carried(fn, *args,
primitive="all_to_all")` traces `fn` (`jax.make_jaxpr`, nothing runs) and follows every value back to the
array arguments it is computed from (their leaves' positions, in order): for each `primitive` of the program,
the arguments its operands come from. Nested programs (`jit`, `shard_map`, `cond`, loops) are followed; a
loop's carry takes what its body feeds back until nothing changes. `made_whole(fn, *args)`: the arrays the
program itself brings back whole on every device (a `jax.reshard` or `jax.device_put` of a split array to a
replicated layout), which a compiler may do without any collective where the data was whole already.

Words only: a check's verdict never depends on it (the grader's judge reads the compiled program), only the
sentence that says why.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
from jax.extend.core import ClosedJaxpr, Jaxpr

__all__ = ["carried", "made_whole"]


def carried(fn: Callable, *args, primitive: str) -> list[frozenset[int]]:
    """For each `primitive` (a JAX primitive's name: "all_to_all", "ppermute") in `fn(*args)`'s traced program,
    the positions of the array arguments (`args`' leaves, in order) its operands are computed from."""
    closed = jax.make_jaxpr(fn)(*args)
    seen: dict[int, frozenset[int]] = {}
    _flow(closed.jaxpr, [frozenset({i}) for i in range(len(closed.jaxpr.invars))], primitive, seen)
    return list(seen.values())


def _union(labels) -> frozenset[int]:
    return frozenset().union(*labels) if labels else frozenset()


def _inner(value) -> Jaxpr | None:
    if isinstance(value, ClosedJaxpr):
        return value.jaxpr
    return value if isinstance(value, Jaxpr) else None


def _flow(jaxpr: Jaxpr, ins: list, primitive: str, seen: dict) -> list[frozenset[int]]:
    """The labels of `jaxpr`'s outputs, given its inputs' (`ins`); each `primitive` met records its operands'."""
    labels = dict(zip(jaxpr.invars, ins))
    of = lambda v: labels.get(v, frozenset()) if not hasattr(v, "val") else frozenset()  # noqa: E731 - a Literal
    for eqn in jaxpr.eqns:
        got = [of(v) for v in eqn.invars]
        if eqn.primitive.name == primitive:
            seen[id(eqn)] = seen.get(id(eqn), frozenset()) | _union(got)
        outs = _through(eqn, got, primitive, seen)
        labels.update(zip(eqn.outvars, outs))
    return [of(v) for v in jaxpr.outvars]


def _through(eqn, got: list, primitive: str, seen: dict) -> list[frozenset[int]]:
    """The labels of one equation's outputs: through its nested programs where it has some."""
    params, n_out = eqn.params, len(eqn.outvars)
    if eqn.primitive.name == "while":
        cn, bn = params["cond_nconsts"], params["body_nconsts"]
        carry = _fixpoint(_inner(params["body_jaxpr"]), got[cn : cn + bn], got[cn + bn :], primitive, seen)
        _flow(_inner(params["cond_jaxpr"]), got[:cn] + carry, primitive, seen)
        return carry
    if eqn.primitive.name == "scan":
        body, counts = _inner(params["jaxpr"]), _scan_counts(params)
        if counts is None:  # a layout of a scan's parameters this reading does not know: everything from everything
            _flow(body, [_union(got)] * len(body.invars), primitive, seen)
            return [_union(got)] * n_out
        nc, ncarry = counts
        consts, xs = got[:nc], got[nc + ncarry :]
        carry = _fixpoint(body, consts, got[nc : nc + ncarry], primitive, seen, xs)
        return carry + _flow(body, consts + carry + xs, primitive, seen)[ncarry:]
    if eqn.primitive.name == "cond":
        outs = [_flow(_inner(b), got[1:], primitive, seen) for b in params["branches"]]
        return [_union([o[i] for o in outs]) | got[0] for i in range(n_out)]
    inner = [j for j in map(_inner, params.values()) if j is not None and len(j.invars) == len(got)]
    if len(inner) == 1 and len(inner[0].outvars) == n_out:
        return _flow(inner[0], got, primitive, seen)
    return [_union(got)] * n_out


def _scan_counts(params: dict) -> tuple[int, int] | None:
    """(constants, carried values) of a scan's inputs: `num_consts` and `num_carry` on jax 0.10, the first two
    parts of `ft_in` (a flat tree of constants, carry and scanned inputs) on the newest line."""
    if "num_consts" in params:
        return params["num_consts"], params["num_carry"]
    try:
        consts, carry, _ = params["ft_in"].unpack()
        return len(consts), len(carry)
    except (KeyError, AttributeError, TypeError, ValueError):
        return None


def _fixpoint(body: Jaxpr, consts: list, carry: list, primitive: str, seen: dict, xs: list = ()) -> list:
    """A loop's carry labels: what its body feeds back, added until nothing changes."""
    while True:
        fed = _flow(body, consts + carry + list(xs), primitive, seen)[: len(carry)]
        grown = [c | f for c, f in zip(carry, fed)]
        if grown == carry:
            return carry
        carry = grown


_RELAYOUTS = ("reshard", "device_put", "sharding_constraint")


def made_whole(fn: Callable, *args) -> list[str]:
    """The types (`float32[64@data]`) of the split arrays that `fn(*args)`'s traced program lays out again
    replicated: a reshard, device_put or sharding constraint of an array split over a mesh axis to a layout
    that splits nothing."""
    found = []
    for eqn in _equations(jax.make_jaxpr(fn)(*args).jaxpr):
        if eqn.primitive.name not in _RELAYOUTS:
            continue
        targets = [eqn.params.get(k) for k in ("dst_sharding", "sharding", "devices", "shardings")]
        specs = [getattr(t, "spec", None) for t in _flat(targets)]
        whole = specs and all(spec is not None and all(e is None for e in spec) for spec in specs)
        split = [v for v in eqn.invars if any(e is not None for e in _spec_of(v))]
        if whole and split:
            found += [str(v.aval) for v in split]
    return found


def _flat(values) -> list:
    out = []
    for v in values:
        out += _flat(v) if isinstance(v, list | tuple) else [] if v is None else [v]
    return out


def _spec_of(var) -> tuple:
    return tuple(getattr(getattr(getattr(var, "aval", None), "sharding", None), "spec", None) or ())


def _equations(jaxpr: Jaxpr):
    """Every equation of `jaxpr` and of the programs nested in it."""
    for eqn in jaxpr.eqns:
        yield eqn
        for value in _flat(list(eqn.params.values())):
            inner = _inner(value)
            if inner is not None:
                yield from _equations(inner)
