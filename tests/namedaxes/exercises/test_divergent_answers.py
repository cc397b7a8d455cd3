"""Answers whose fate depends on the JAX line (issue 59): one verdict on every line, from the visible check and
from the grader alike, and a message that says what this line does with the answer. Run on jax 0.10.2 by
`make test` and on the newest line by `make test-newest` (conftest.py's NEWEST).

- `ppermute` over two mesh axes named out of the mesh's order: jax 0.10.2 runs it in the mesh's order (a
  permutation other than the one written, silently); from 0.11.1 JAX refuses it when it lowers the program.
  The check reads the order from the traced program, which both lines trace alike.
- A partial sum returned under `out_specs=P(..., unreduced={axis})` without `lax.pcast(..., to='unreduced')`:
  jax 0.10.2 accepts it (both type as unreduced); from 0.11.0 `shard_map` refuses its out_specs.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P
from judge_helpers import judge_observations, observe, visible

from namedaxes import jax_line
from namedaxes import zero as zr
from namedaxes.exercises import collectives as collectives_q
from namedaxes.exercises import step_anatomy as step_q

from .test_collectives import ref_ring_all_reduce
from .test_step_anatomy import ref_accumulate_grads

ZERO = zr.ZERO
OLDEST = jax_line._release(jax.__version__) < (0, 11)  # jax 0.10.2; else the newest line (0.12.1)


def ring_named_out_of_mesh_order(x, mesh):
    """The ring over the same devices seen as a 2 x k/2 grid, its axes named ('cols', 'rows') in the ppermute
    and the specs, while the grid's mesh declares ('rows', 'cols')."""
    grid = Mesh(mesh.devices.reshape(2, -1), ("rows", "cols"), axis_types=(AxisType.Explicit,) * 2)
    k = grid.devices.size
    ring = [(i, (i + 1) % k) for i in range(k)]

    def add_around_the_ring(block):
        total, travelling = block, block
        for _ in range(k - 1):
            travelling = lax.ppermute(travelling, ("cols", "rows"), perm=ring)
            total = total + travelling
        return total

    spec = P(("cols", "rows"))
    x = jax.reshard(x, NamedSharding(grid, spec))
    return jax.shard_map(add_around_the_ring, mesh=grid, in_specs=spec, out_specs=spec)(x)


def accumulate_unreduced_without_pcast(params, xs, ys):
    """Per device: m local gradients added and returned as the partial sums they are under
    out_specs=P(unreduced={ZERO}), without `lax.pcast(..., to='unreduced')`; reduced once outside."""

    def local(params, xs, ys):
        mine = jax.tree.map(lambda a: lax.pcast(a, ZERO, to="varying"), params)
        total = jax.grad(zr.mlp_loss)(mine, xs[0], ys[0])
        for i in range(1, xs.shape[0]):
            total = jax.tree.map(jnp.add, total, jax.grad(zr.mlp_loss)(mine, xs[i], ys[i]))
        return total

    partial = jax.shard_map(
        local, in_specs=(P(), P(None, ZERO), P(None, ZERO)), out_specs=P(None, None, unreduced={ZERO})
    )(params, xs, ys)
    n = jax.sharding.get_abstract_mesh().shape[ZERO] * xs.shape[0]
    return jax.tree.map(lambda g: jax.reshard(g, P()) / n, partial)


# answer -> (exercise, reference, the visible check's message on jax 0.10.2, on the newest line, each a regex)
DIVERGENT = {
    "ppermute over ('cols', 'rows') on a ('rows', 'cols') mesh": (
        collectives_q.ring_all_reduce,
        ref_ring_all_reduce,
        ring_named_out_of_mesh_order,
        r"(?s)calls `lax\.ppermute` over the axes \('cols', 'rows'\), named out of the mesh's order "
        r"\('rows', 'cols'\)\. jax 0\.10\.2 runs it without an error but numbers the devices in the mesh's order",
        r"(?s)calls `lax\.ppermute` over the axes \('cols', 'rows'\), named out of the mesh's order "
        r"\('rows', 'cols'\): jax 0\.1[1-9][.\d]* refuses to run it \(jax 0\.10\.2 ran it silently",
    ),
    "partial sums under out_specs=P(unreduced=...) without pcast": (
        step_q.accumulate_grads,
        ref_accumulate_grads,
        accumulate_unreduced_without_pcast,
        r"(?s)right mean gradient, but it is written per device with `jax.shard_map` \(over 'fsdp_axis'\)",
        r"(?s)returns a value under `out_specs=P\(\.\.\., unreduced=\.\.\.\)` that is not typed unreduced, "
        r"and jax 0\.1[1-9][.\d]* refuses it.*lax\.pcast\(value, axis, to='unreduced'\)",
    ),
}


@pytest.mark.parametrize("answer", DIVERGENT, ids=list(DIVERGENT))
def test_the_visible_check_refuses_it_saying_what_this_line_does(answer):
    exercise, _, fn, on_oldest, on_newest = DIVERGENT[answer]
    message = visible(exercise.check, fn)
    assert message is not None, "the visible check passed it"
    assert re.search(on_oldest if OLDEST else on_newest, message), message


@pytest.mark.parametrize("answer", DIVERGENT, ids=list(DIVERGENT))
def test_the_grader_refuses_it_too(answer):
    """jax 0.10.2 runs both answers in the graded kernel and the judge refuses their programs; the newest line
    refuses them in the kernel already (the hidden test raises: 0 points)."""
    exercise, reference, fn, *_ = DIVERGENT[answer]
    if not OLDEST:
        with pytest.raises(Exception):  # noqa: B017 - JAX's own error, whichever: the hidden test raises
            observe(exercise, fn)
        return
    said = judge_observations(observe(exercise, reference), observe(exercise, fn))
    assert not said.passed, said.reason()


def test_the_divergence_is_real_on_this_line():
    """What each line does with the two answers' core, outside the exercises: 0.10.2 permutes in the mesh's
    order and accepts the unmarked partial sum; the newest line refuses both."""
    grid = Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("rows", "cols"))
    spec = P(("cols", "rows"))

    def shift(b):
        return lax.ppermute(b, ("cols", "rows"), perm=[(i, (i + 1) % 8) for i in range(8)])

    ring = jax.shard_map(shift, mesh=grid, in_specs=spec, out_specs=spec)
    if OLDEST:
        assert ring(jnp.arange(8.0)).tolist() == [7, 6, 0, 1, 2, 3, 4, 5]
    else:
        with pytest.raises(RuntimeError, match="same order as the axis_names declared on the mesh"):
            ring(jnp.arange(8.0))
