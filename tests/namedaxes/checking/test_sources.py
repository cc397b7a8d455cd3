"""Unit tests of namedaxes/checking/sources.py: which arguments a program's collectives carry, read from its
traced program (nested programs and loops followed), and the split arrays it makes whole again."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from namedaxes.checking.sources import carried, made_whole

AXIS = "ring"


def _mesh():
    return jax.make_mesh((4,), (AXIS,), axis_types=(AxisType.Explicit,), devices=jax.devices()[:4])


def _ring(body):
    mesh = _mesh()
    spec = P(AXIS)
    return mesh, jax.jit(jax.shard_map(body, mesh=mesh, in_specs=(spec, spec, spec), out_specs=spec))


def _args(mesh):
    return [jax.device_put(np.ones((8, 2), np.float32), NamedSharding(mesh, P(AXIS))) for _ in range(3)]


PAIRS = [(i, (i + 1) % 4) for i in range(4)]


def test_a_ppermute_carries_the_arguments_its_operand_is_computed_from():
    def body(q, k, v):
        k2 = lax.ppermute(k * 2.0, AXIS, PAIRS)  # k only
        out = lax.ppermute(q @ k2.T @ v, AXIS, PAIRS)  # q, k and v
        return out + lax.ppermute(jnp.ones_like(q), AXIS, PAIRS)  # a constant: nothing

    mesh, program = _ring(body)
    assert carried(program, *_args(mesh), primitive="ppermute") == [frozenset({1}), frozenset({0, 1, 2}), frozenset()]
    assert carried(program, *_args(mesh), primitive="all_to_all") == []


def test_a_loops_carry_takes_what_its_body_feeds_back():
    """In a `fori_loop` the block sent in step s + 1 is what step s computed: q's data reaches the ppermute
    only through the carry."""

    def body(q, k, v):
        def step(i, carry):
            block, acc = carry
            return lax.ppermute(block, AXIS, PAIRS), acc + block

        block, acc = lax.fori_loop(0, 3, step, (k, jnp.zeros_like(q)))
        again = lax.fori_loop(0, 2, lambda i, c: lax.ppermute(c + q, AXIS, PAIRS), v)
        return block + acc + again

    mesh, program = _ring(body)
    assert carried(program, *_args(mesh), primitive="ppermute") == [frozenset({1}), frozenset({0, 2})]


def test_a_conds_branches_and_its_predicate_are_followed():
    def body(q, k, v):
        sent = lax.cond(jnp.sum(v) > 0, lambda a, b: a, lambda a, b: b * 2.0, q, k)
        return lax.ppermute(sent, AXIS, PAIRS)

    mesh, program = _ring(body)
    assert carried(program, *_args(mesh), primitive="ppermute") == [frozenset({0, 1, 2})]


def test_a_split_array_laid_out_whole_again_is_found():
    mesh = _mesh()
    x = jax.device_put(np.ones(8, np.float32), NamedSharding(mesh, P(AXIS)))
    whole = jax.jit(lambda a: jnp.sum(jax.reshard(a, NamedSharding(mesh, P())) * 2.0))
    assert made_whole(whole, x) == [f"float32[8@{AXIS}]"]
    kept = jax.jit(lambda a: jnp.sum(jax.reshard(a * 2.0, NamedSharding(mesh, P(AXIS)))))
    assert made_whole(kept, x) == []
    placed = jax.jit(lambda a: jnp.sum(jax.reshard(a, NamedSharding(mesh, P(AXIS)))))
    assert made_whole(placed, np.ones(8, np.float32)) == []
