"""The shared helpers of notebook 03's checks: the grid's meshes and maps, running an answer on them, and
its graded observations.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType
from jax.sharding import PartitionSpec as P

from namedaxes import DATA_SHARDS, GRID_AXES, GRID_SHAPE, MODEL_REPLICAS, meshes
from namedaxes.checking import TEXT as checking_text  # the list separator of the language
from namedaxes.checking import (
    exercises_for,
    expect_communication,
    expect_output_layouts,
    expect_regions,
    explained,
    fail,
    fail_values,
    first_line,
)
from namedaxes.grading import Case, programs, spec

from . import text
from .text import say

exercise = exercises_for(__package__, text)  # the notebook's Exercise maker: exercise(name, check, observe=...)

# ---------------------------------------------------------------- shared helpers
FEATURES, EXAMPLES = 8, 16  # tp_dp_step: w has FEATURES entries, a batch EXAMPLES examples


def grid_map(fn):
    """The pmap-over-vmap form: `fn` runs once per (data shard, model replica) cell of the grid."""
    return jax.pmap(jax.vmap(fn, axis_name=MODEL_REPLICAS), axis_name=DATA_SHARDS)


def auto_grid_mesh(shape=GRID_SHAPE):
    """A (DATA_SHARDS, MODEL_REPLICAS) mesh of `shape` devices, Auto axis types (plain arrays go in)."""
    return meshes.grid_mesh(shape, GRID_AXES, AxisType.Auto)


def grid_words(shape) -> str:
    return say("grid_words", rows=shape[0], cols=shape[1], d=DATA_SHARDS, m=MODEL_REPLICAS)


def _grid_rules(name: str, where: str, fix: str | None, mesh_shape=None):
    """This notebook's own translations (nested pmap, shard_map specs); `checking.explain_error` does the rest."""

    def rule(err: BaseException) -> str | None:
        text = str(err)
        first = first_line(err)
        if isinstance(err, ValueError) and "context mesh" in text:
            return say("nested_pmap", name=name, where=where, first=first)
        if (
            fix == "fix_tp_dp_step"
            and isinstance(err, ValueError)
            and "out_specs" in text
            and ("varying" in text or "replicat" in text)
        ):
            return say("still_varying", name=name, where=where, first=first)
        if (
            fix == "fix_tp_dp_step"
            and isinstance(err, TypeError)
            and ("dot_general requires contracting dimensions" in text or "Incompatible shapes" in text)
        ):
            rows, cols = mesh_shape
            return say(
                "block_shapes",
                name=name,
                where=where,
                first=first,
                x_block=(EXAMPLES // rows, FEATURES // cols),
                w_block=(FEATURES // cols,),
            )
        if fix is not None and isinstance(err, ValueError) and ("specs" in text or "shard_map" in text):
            return say("shard_map_specs", name=name, where=where, first=first, fix=say(fix))
        return None

    return (rule,)


def run_answer(name: str, call, where: str, *, fix: str | None = None, mesh_shape=None):
    """Run `call()`; crashes become readable messages (`checking.explained` plus this notebook's rules)."""
    with explained(
        name,
        run=say("the_check_runs", name=name, where=where),
        binds=GRID_AXES,
        rules=_grid_rules(name, where, fix, mesh_shape),
    ):
        return call()


def _result_kind(out) -> str:
    """What an answer returned, in words: a tuple (or list) and its length, an array and its shape, or a type."""
    if isinstance(out, (tuple, list)):
        return say("tuple_of", kind=type(out).__name__, n=len(out))
    if isinstance(out, jax.Array):
        return say("single_array", shape=tuple(out.shape))
    return say("a_type", type=type(out).__name__)


def expect_grid_array(label: str, value, grid: tuple, per_device: tuple, dtype) -> None:
    """`value` is the stacked output of the grid: shape grid + per_device, dtype `dtype`."""
    if not isinstance(value, jax.Array):
        fail(say("not_jax_array", label=label, type=type(value).__name__, value=f"{value!r:.80}"))
    if tuple(value.shape[:2]) != tuple(grid) or tuple(value.shape[2:]) != tuple(per_device):
        fail(
            say(
                "per_device_shape",
                label=label,
                want=tuple(per_device),
                got=tuple(value.shape[2:]),
                got_all=tuple(value.shape),
                want_all=tuple(grid) + tuple(per_device),
            )
        )
    if np.dtype(value.dtype) != np.dtype(dtype):
        fail(say("dtype", label=label, want=np.dtype(dtype).name, got=np.dtype(value.dtype).name))


def grid_parts(name: str, fn, x, parts: int, what: str) -> tuple[tuple, str]:
    """A per-device answer run on the grid `x` (`grid_map`, by `run_answer`): its results, which must be a tuple
    (or list) of `parts` (`what`: what they are, in words), and where it ran, in words."""
    where = say("on_grid", grid=grid_words(x.shape[:2]))
    out = run_answer(name, lambda: grid_map(fn)(x), where)
    if not isinstance(out, (tuple, list)) or len(out) != parts:
        fail(say("not_a_tuple", name=name, n=parts, what=what, got=_result_kind(out)))
    return out, where


def expect_global_array(label: str, out, want_shape: tuple, where: str, hint: str) -> None:
    """A global answer's result is a float32 `jax.Array` of `want_shape` (`hint` said when its shape is not)."""
    if not isinstance(out, jax.Array):
        fail(say("not_jax_array", label=label, type=type(out).__name__, value=f"{out!r:.80}"))
    if tuple(out.shape) != tuple(want_shape):
        fail(say("global_shape", label=label, want=tuple(want_shape), got=tuple(out.shape), where=where, hint=hint))
    if np.dtype(out.dtype) != np.float32:
        fail(say("dtype", label=label, want="float32", got=np.dtype(out.dtype).name))


def values_failure(label: str, got, want, where: str, hint: str) -> None:
    fail_values(say, "values", want, got, one_line=True, label=label, where=where, hint=hint)


def uniform(r, shape) -> jax.Array:
    return jnp.asarray(r.uniform(0.5, 2.0, size=shape), jnp.float32)


UNIFORM = {"kind": "uniform", "low": 0.5, "high": 2.0}  # the same values, drawn by the grader


def explained_run(name: str, where: str, fix: str, mesh_shape=None):
    """`explained` as `run_answer` uses it, for a step that exports and examines the answer's program."""
    return explained(
        name,
        run=say("the_check_runs", name=name, where=where),
        binds=GRID_AXES,
        rules=_grid_rules(name, where, fix, mesh_shape),
    )


def expect_grid_program(name: str, facts, over: tuple, ins: tuple, outs: tuple, hint: str, primitive=None) -> None:
    """The grader's steps on an examined program over the grid (`checking.examined`), in its order: a collective
    (`primitive`, where given) over each axis of `over` that reaches the results, a per-device region over both
    grid axes that takes its inputs split as `ins` says, the results laid out as `outs` says; `hint` on each."""
    for axis in over:
        expect_communication(name, facts, axis, primitive, hint=hint)
    expect_regions(name, facts, ((tuple(sorted(GRID_AXES)), ins),), hint=hint)
    expect_output_layouts(name, facts, outs, hint=hint)


def seen_descriptions(descs) -> str:
    """Collectives as the compiled program names them ("psum over 'model_replicas'"), or none at all."""
    return checking_text["list_sep"].join(descs) or say("no_collective_at_all")


def on_devices(fn, grid):
    """The per-device `fn` on a real grid of devices: `shard_map` over `auto_grid_mesh(grid)`, one cell per device.

    What the grader runs (the visible checks use `grid_map`): here both axes are devices, so the
    communication over each of them is visible in the compiled program.
    """
    block_spec = P(DATA_SHARDS, MODEL_REPLICAS)

    def per_block(block):
        return jax.tree.map(lambda part: jnp.asarray(part)[None, None], fn(block[0, 0]))

    return jax.shard_map(
        per_block, mesh=auto_grid_mesh(grid), in_specs=block_spec, out_specs=block_spec, check_vma=False
    )


def observe_on_grids(fn, cases, draw) -> dict:
    """Exported programs: `fn` once per device of each grid, x of shape (*grid, *per_device) drawn by the grader."""
    out = {}
    for grid, per_device in cases:
        tag = f"{grid[0]}x{grid[1]}_{'x'.join(map(str, per_device)) or 'scalar'}"
        out[tag] = Case(on_devices(fn, grid), spec((*grid, *per_device), jnp.float32), draw=draw)
    return programs(out)
