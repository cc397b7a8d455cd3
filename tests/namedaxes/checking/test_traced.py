"""Unit tests of namedaxes/checking/traced.py.

The collectives a function's jaxpr performs, by primitive and axis (inside shard_map bodies too), and the
messages that ask for one.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from jax import lax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from namedaxes import DATA_SHARDS, DEVICES, GRID_AXES, GRID_SHAPE, MODEL_REPLICAS
from namedaxes.checking import (
    CheckFailed,
    collective_axes,
    collectives,
    expect_collective,
    expect_no_collective,
    expect_ppermute_in_mesh_order,
    ppermutes_out_of_mesh_order,
)
from namedaxes.checking.traced import shard_map_axes

ENV = [(DEVICES, 8)]


def test_collectives_found_by_primitive_and_axis():
    found = collectives(lambda x: lax.psum(x * 2.0, DEVICES), 1.0, axis_env=ENV)
    assert found == {("psum", (DEVICES,))}
    assert collective_axes(lambda x: lax.pmax(x, DEVICES) + lax.axis_index(DEVICES), 1.0, axis_env=ENV) == [DEVICES]
    assert collectives(lambda x: jnp.sum(x * 2.0), 1.0, axis_env=ENV) == set()


def test_collectives_look_inside_shard_map_bodies():
    mesh = jax.make_mesh(GRID_SHAPE, GRID_AXES)
    spec = P(DATA_SHARDS, MODEL_REPLICAS)
    f = jax.shard_map(lambda x: lax.psum(x, MODEL_REPLICAS), mesh=mesh, in_specs=spec, out_specs=spec)
    x = jax.device_put(jnp.arange(8.0).reshape(GRID_SHAPE), NamedSharding(mesh, spec))
    assert collective_axes(f, x) == [MODEL_REPLICAS]


def test_expect_collective_messages():
    with pytest.raises(CheckFailed, match=r"should communicate over 'devices'.*no collective at all"):
        expect_collective("f", lambda x: x * 2.0, 1.0, axis_name=DEVICES, axis_env=ENV)
    with pytest.raises(CheckFailed, match=r"with `psum`.*pmax over \('devices',\)"):
        expect_collective(
            "f", lambda x: lax.pmax(x, DEVICES), 1.0, axis_name=DEVICES, axis_env=ENV, primitives=["psum"]
        )
    expect_collective("f", lambda x: lax.psum(x, DEVICES), 1.0, axis_name=DEVICES, axis_env=ENV)
    with pytest.raises(CheckFailed, match=r"should not communicate over 'devices'"):
        expect_no_collective("f", lambda x: lax.psum(x, DEVICES), 1.0, axis_name=DEVICES, axis_env=ENV)


def test_shard_map_psum_counts_as_psum_and_type_casts_do_not_count():
    from jax.sharding import AxisType

    mesh = jax.make_mesh((8,), (DEVICES,), axis_types=(AxisType.Auto,))
    # a replicated (P()) input is axis-invariant: its psum is traced as psum_invariant, after a pvary/pcast
    f = jax.shard_map(lambda x: lax.psum(x, DEVICES), mesh=mesh, in_specs=P(), out_specs=P())
    found = collectives(f, jnp.ones(3))
    assert ("psum", (DEVICES,)) in found
    assert not any(p in ("pvary", "pcast") for p, _ in found)


def _grid_shift(named: tuple):
    grid = jax.make_mesh((2, 4), ("rows", "cols"))
    spec = P(named)
    shift = jax.shard_map(
        lambda b: lax.ppermute(b, named, perm=[(i, (i + 1) % 8) for i in range(8)]),
        mesh=grid,
        in_specs=spec,
        out_specs=spec,
    )
    return shift, jax.device_put(jnp.arange(8.0), NamedSharding(grid, spec))


def test_a_ppermute_over_axes_named_out_of_the_meshs_order_is_read_from_the_jaxpr_on_every_line():
    assert ppermutes_out_of_mesh_order(*_grid_shift(("cols", "rows"))) == [(("cols", "rows"), ("rows", "cols"))]
    assert ppermutes_out_of_mesh_order(*_grid_shift(("rows", "cols"))) == []
    with pytest.raises(CheckFailed, match=r"named out of the mesh's order \('rows', 'cols'\)") as failed:
        expect_ppermute_in_mesh_order("shift", *_grid_shift(("cols", "rows")))
    said_refused = "refuses to run it" in str(failed.value)
    assert said_refused == hasattr(jax.config, "jax_raise_on_ppermute_sort_diff")  # 0.11.1 on; 0.10.2 runs it
    expect_ppermute_in_mesh_order("shift", *_grid_shift(("rows", "cols")))


def test_shard_map_axes_are_the_programs_own_per_device_code():
    mesh = jax.make_mesh((8,), ("z",))
    x = jax.device_put(jnp.ones((8, 4)), NamedSharding(mesh, P("z")))
    mapped = jax.shard_map(lambda b: lax.psum(b, "z"), mesh=mesh, in_specs=P("z"), out_specs=P())
    assert shard_map_axes(mapped, x) == ["z"]
    with jax.set_mesh(mesh):  # reduced and unreduced arithmetic, which jax 0.12.1 lowers through manual regions
        w = jax.reshard(jax.device_put(jnp.ones((4, 4)), NamedSharding(mesh, P())), P(reduced={"z"}))
        assert shard_map_axes(lambda w, x: jax.reshard(jax.grad(lambda w: jnp.sum(x @ w))(w), P()), w, x) == []
