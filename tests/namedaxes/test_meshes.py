"""`namedaxes.meshes`: the meshes the checks build, over the first devices, and the helpers around them."""

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType
from jax.sharding import PartitionSpec as P

from namedaxes import DATA_SHARDS, DEVICES, MODEL_PARALLEL, MODEL_REPLICAS, meshes


def test_line_and_grid_meshes_take_the_first_devices():
    line = meshes.line_mesh(3)
    assert line.axis_names == (DEVICES,) and list(line.devices.flat) == jax.devices()[:3]
    grid = meshes.grid_mesh((2, 2))
    assert grid.axis_names == (DATA_SHARDS, MODEL_REPLICAS) and dict(grid.shape) == {DATA_SHARDS: 2, MODEL_REPLICAS: 2}
    assert sorted(d.id for d in grid.devices.flat) == [d.id for d in jax.devices()[:4]]


def test_axis_types_are_as_asked_or_jax_default():
    assert meshes.line_mesh(2, MODEL_PARALLEL, AxisType.Auto).axis_types == (AxisType.Auto,)
    assert meshes.grid_mesh((2, 4), axis_type=AxisType.Explicit).axis_types == (AxisType.Explicit,) * 2
    assert meshes.line_mesh(4).axis_types == jax.make_mesh((4,), (DEVICES,)).axis_types


def test_placed_abstract_and_bound_inputs():
    mesh = meshes.line_mesh(4)
    x = meshes.placed(jnp.arange(8.0), mesh, P(DEVICES))
    assert x.sharding.spec == P(DEVICES) and len(x.addressable_shards) == 4
    a = meshes.abstract_on(mesh, (8, 2), P(DEVICES))
    assert a.shape == (8, 2) and a.dtype == jnp.float32 and a.sharding.spec == P(DEVICES)
    total = meshes.with_mesh(lambda v, m: v.sum() * m.size, mesh)
    assert float(total(np.ones(3))) == 12.0


def test_meshes_in_words():
    grid = meshes.grid_mesh((2, 4))
    assert meshes.describe(grid) == f"2 {DATA_SHARDS} x 4 {MODEL_REPLICAS}"
    assert meshes.axis_list(grid) == f"'{DATA_SHARDS}', '{MODEL_REPLICAS}'"


def test_the_exercise_modules_use_the_shared_helpers():
    from namedaxes.exercises import multi_process, shard_map
    from namedaxes.exercises.collectives import ring

    assert shard_map.line_mesh is meshes.line_mesh is ring.line_mesh is multi_process.line_mesh
    assert shard_map.grid_mesh is meshes.grid_mesh
