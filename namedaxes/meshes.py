"""The meshes the exercises' checks build, and the small helpers that place inputs on them.

One place for what several exercise modules need (notebooks 03, 05, 06, 07, 08): a mesh over the first
devices (`line_mesh`, `grid_mesh`; `jax.make_mesh` takes the first `prod(shape)` devices), an input
placed on a mesh (`placed`) or described abstractly for export (`abstract_on`), an answer `fn(*args,
mesh)` with its mesh fixed (`with_mesh`), and a mesh in words for messages (`describe`, `axis_list`).
Notebooks keep calling `jax.make_mesh` themselves: that is what they teach.

`axis_type` is one `jax.sharding.AxisType` for every axis; None leaves `jax.make_mesh`'s default.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding

from .axes import DATA_SHARDS, DEVICES, MODEL_REPLICAS
from .grading import spec

__all__ = [
    "first_devices_mesh",
    "line_mesh",
    "grid_mesh",
    "placed",
    "abstract_on",
    "with_mesh",
    "describe",
    "axis_list",
]


def first_devices_mesh(shape: Sequence[int], names: Sequence[str], axis_type=None):
    """A mesh of `shape` with axes `names` over the first `prod(shape)` devices."""
    shape, names = tuple(shape), tuple(names)
    kwargs = {} if axis_type is None else {"axis_types": (axis_type,) * len(shape)}
    return jax.make_mesh(shape, names, devices=jax.devices()[: math.prod(shape)], **kwargs)


def line_mesh(k: int, name: str = DEVICES, axis_type=None):
    """A 1-D mesh over the first `k` devices (Explicit axis type, as `jax.make_mesh` makes it, by default)."""
    return first_devices_mesh((k,), (name,), axis_type)


def grid_mesh(shape: Sequence[int] = (2, 4), names: Sequence[str] = (DATA_SHARDS, MODEL_REPLICAS), axis_type=None):
    """A 2-D mesh, (DATA_SHARDS, MODEL_REPLICAS) unless `names` says otherwise, over the first rows x columns
    devices."""
    return first_devices_mesh(shape, names, axis_type)


def placed(x, mesh, pspec):
    """`x` on `mesh`, split as `pspec` says."""
    return jax.device_put(x, NamedSharding(mesh, pspec))


def abstract_on(mesh, shape, pspec, dtype=jnp.float32):
    """An abstract input of `shape` placed on `mesh` with `pspec` (no values: the grader draws them)."""
    return spec(shape, dtype, sharding=NamedSharding(mesh, pspec))


def with_mesh(fn: Callable, mesh) -> Callable:
    """`fn(*args, mesh)` with the mesh fixed: the program a case exports (the mesh is not an input)."""
    return lambda *args: fn(*args, mesh)


@functools.cache
def _cached_program(fn: Callable, mesh):
    return jax.jit(lambda *args: fn(*args, mesh))


def program(fn: Callable, mesh) -> Callable:
    """An answer `fn(*args, mesh)` as a program of arrays only: `jax.jit` of it with the mesh fixed (cached per
    answer and mesh, so a check's cases compile it once)."""
    try:
        return _cached_program(fn, mesh)
    except TypeError:  # an unhashable callable: compile it without the cache
        return jax.jit(lambda *args: fn(*args, mesh))


def describe(mesh) -> str:
    """A mesh's axes and sizes in words: "2 data_parallel_axis x 4 model_parallel_axis"."""
    return " x ".join(f"{n} {name}" for name, n in mesh.shape.items())


def axis_list(mesh) -> str:
    """A mesh's axis names, quoted: "'devices'" or "'data_shards', 'model_replicas'"."""
    return ", ".join(f"'{a}'" for a in mesh.axis_names)
