"""The shared parts of notebook 05's checks: the reference model, the migration's pmap program, and
how an answer is run (JAX's errors in this notebook's words, the program compiled once).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp

from namedaxes import DEVICES, model
from namedaxes.checking import (
    exercises_for,
    expect_array,
    explained,
    fail,
    fail_values,
    same_values,
    unbound_axis_name,
)

from . import text
from .text import say

exercise = exercises_for(__package__, text)  # the notebook's Exercise maker: exercise(name, check, observe=...)

LEARNING_RATE = model.LEARNING_RATE  # the course's reference model: namedaxes.model
# Primitives that name an axis without moving data between devices.
# Collectives that reduce (what the weighted step's sums need); anything else moves whole blocks.
# what an all-reduce is called once compiled (`namedaxes.judging.describe_collective`): a pmean is a psum there
COMPILED_REDUCTIONS = {"psum", "pmax", "pmin", "pprod", "pand", "por"}


# ---------------------------------------------------------------- meshes and the reference model
loss_fn = model.loss  # mean squared error of w * x + b: the reference model of notebook 04
sgd_step = model.sgd_step  # one plain SGD step on one device


def weighted_total(w, x_col):
    """The per-device function of the migration exercise (pmap form: `in_axes=(None, 1)`,
    `out_axes=(None, 1)`): the total of the weighted columns, and this device's weighted column."""
    weighted = w * x_col
    return jax.lax.psum(weighted, axis_name=DEVICES), weighted


@functools.cache
def weighted_total_pmap():
    return jax.pmap(weighted_total, axis_name=DEVICES, in_axes=(None, 1), out_axes=(None, 1))


# ---------------------------------------------------------------- running answers
def _shard_map_rules(name: str, mesh=None, *, shard_map_allowed: bool = True):
    """This notebook's own translations (shard_map, meshes, specs); `checking.explain_error` does the rest."""
    axes = say("mesh_axes", axes=tuple(mesh.axis_names)) if mesh is not None else ""

    def rule(err: BaseException) -> str | None:
        if type(err) is AssertionError and not str(err):
            return say("empty_assertion", name=name, axes=axes)
        axis = unbound_axis_name(err)
        if axis is not None:
            return say("unbound", name=name, axis=axis, first=str(err).splitlines()[0], axes=axes)
        if isinstance(err, ValueError):
            return _value_error_message(name, str(err), axes, shard_map_allowed)
        return None

    return (rule,)


def explained_here(name: str, mesh=None, *, shard_map_allowed: bool = True):
    """Run an answer; crashes become readable messages (`checking.explained` plus this notebook's rules)."""
    return explained(name, rules=_shard_map_rules(name, mesh, shard_map_allowed=shard_map_allowed))


def _value_error_message(name: str, text: str, axes: str, shard_map_allowed: bool) -> str | None:
    """The message for a shard_map/mesh `ValueError` of `name`, or None for the core to translate."""
    first = (text.splitlines()[0] if text else "ValueError")[:300]
    if "set_mesh" in text and "can only be used outside" in text:
        return say("set_mesh_in_jit" if shard_map_allowed else "set_mesh_in_jit_no_shard_map", name=name)
    if "PartitionSpec when you are not under a mesh context" in text:
        return say("spec_without_mesh", name=name, first=first)
    if "Length of device assignment" in text and "size of the mesh" in text:
        return say("mixed_devices", name=name, first=first)
    if "does not match the specs of the input" in text:
        return say("spec_mismatch", name=name, first=first)
    if "out_specs" in text and ("replicat" in text or "varying" in text):
        return say("varying_output", name=name, first=first[:200])
    if "evenly divide" in text:
        return say("not_divisible", name=name, first=first, axes=axes)
    if "out_specs entry which is too long" in text:
        return say("out_specs_too_long", name=name, first=first)
    if "out_specs" in text or "in_specs" in text:
        return say("specs", name=name, first=first)
    return None


@functools.cache
def _jitted(fn: Callable, n_args: int):
    """`fn` compiled with its last argument (the mesh) static: cached per answer."""
    return jax.jit(fn, static_argnums=(n_args - 1,))


def _compiled(fn: Callable, n_args: int):
    try:
        return _jitted(fn, n_args)
    except TypeError:  # an unhashable callable: compile it without the cache
        return jax.jit(fn, static_argnums=(n_args - 1,))


def call_answer(fn: Callable, *args):
    """Run the answer `fn(*args, mesh)` compiled (the mesh is the last argument)."""
    return _compiled(fn, len(args))(*args)


# ---------------------------------------------------------------- an answer's results
def expect_result_shape(label: str, got, want_shape: tuple, where: str, key: str, hint: Callable[[tuple], str]) -> None:
    """A result of an answer is a float32 `jax.Array` (`expect_array`) of `want_shape`: else the sentence `key`
    (fields `name`, `want`, `where`, `got`) with `hint(the shape seen)`."""
    expect_array(label, got, dtype=jnp.float32)
    seen = tuple(got.shape)
    if seen != tuple(want_shape):
        fail(say(key, name=label, want=want_shape, where=where, got=seen, hint=hint(seen)))


def expect_values(label: str, got, want, where: str, key: str, hint: Callable[[], str]) -> None:
    """`got` has the values of `want` (within 1e-4, as floats): else `fail_values` with the sentence `key`, the
    values shown as this notebook shows them, and `hint()`, worked out only then."""
    if not same_values(got, want, 1e-4, dtype=float):
        fail_values(say, key, want, got, separator=" ", name=label, where=where, hint=hint())
