"""What notebook 08's checks share: its meshes, the collectives a compiled program performs, how an answer runs and
is compiled, and the layouts of its results."""

from __future__ import annotations

import re
from collections.abc import Callable

from jax.sharding import AxisType

from namedaxes import DATA_PARALLEL, MODEL_PARALLEL, meshes
from namedaxes.checking import collectives, exercises_for, explained, first_line, layout_error, unbound_axis_name
from namedaxes.meshes import grid_mesh, line_mesh

from . import text
from .text import say

exercise = exercises_for(__package__, text)  # the notebook's Exercise maker: exercise(name, check, observe=...)

# The collectives of an optimized HLO text, by their HLO names (async forms end in "-start").
HLO_COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "collective-permute", "all-to-all")


# Primitives that name an axis without moving data between devices.
_NOT_COMMUNICATION = {"pvary", "pcast", "axis_index"}


# ---------------------------------------------------------------- meshes
def auto_line_mesh(k: int):
    """A 1-D mesh of the first `k` devices, axis MODEL_PARALLEL, Auto (the compiler chooses layouts)."""
    return line_mesh(k, MODEL_PARALLEL, AxisType.Auto)


def explicit_line_mesh(k: int):
    """A 1-D mesh of the first `k` devices, axis MODEL_PARALLEL, Explicit (layouts are part of types)."""
    return line_mesh(k, MODEL_PARALLEL, AxisType.Explicit)


def explicit_grid_mesh(shape):
    """A (DATA_PARALLEL, MODEL_PARALLEL) mesh of the first rows x columns devices, Explicit."""
    return grid_mesh(shape, (DATA_PARALLEL, MODEL_PARALLEL), AxisType.Explicit)


def count_collectives(compiled_text: str) -> dict[str, int]:
    """How many of each collective an optimized HLO text (`compiled.as_text()`) contains."""
    return {op: len(re.findall(rf"\b{op}(?:-start)?\(", compiled_text)) for op in HLO_COLLECTIVES}


def seen_hlo(counts: dict[str, int]) -> str:
    items = [say("seen_item", count=n, op=op) for op, n in counts.items() if n]
    return say("seen_join").join(items) or say("seen_nothing")


def seen_jaxpr(found) -> str:
    return say("seen_join").join(say("seen_primitive", primitive=p, axes=axes) for p, axes in sorted(found)) or say(
        "seen_nothing"
    )


# ---------------------------------------------------------------- running answers


def error_rules(name: str):
    """The rules that name the fix for JAX's errors in `name`'s answer (`explained`): sharding types, meshes."""

    def rule(err: BaseException) -> str | None:
        text, first = str(err), first_line(err)
        if type(err).__name__ == "ShardingTypeError":  # jax's own class (not exported on these versions)
            if "Contracting dimensions are sharded" in text:
                return say("contracting", name=name, first=first)
            if "illegally sharded result" in text:
                return say("illegal", name=name, first=first)
            if "gather" in text:
                return say("gather", name=name, first=first)
            return say("sharding_other", name=name, first=first)
        if (
            isinstance(err, ValueError)
            and "PartitionSpec when you are not under a mesh context" in text
            or isinstance(err, RuntimeError)
            and "non-empty mesh in context" in text
        ):
            return say("spec_without_mesh", name=name, first=first)
        if isinstance(err, ValueError) and "incompatible devices for jitted computation" in text:
            return say("mesh_elsewhere", name=name, first=first)
        if isinstance(err, ValueError) and "reshard" in text and "type Auto" in text:
            return say("reshard_auto", name=name, first=first)
        if "set_mesh" in text and "outside of `jax.jit`" in text:
            return say("set_mesh_in_jit", name=name, first=first)
        if isinstance(err, ValueError) and "does not match the sharding on the respective arg" in text:
            return say("jit_sharding_mismatch", name=name, first=first)
        if kind := layout_error(err):
            return say(kind, name=name, first=first)
        axis = unbound_axis_name(err)
        return None if axis is None else say("unbound", name=name, axis=axis, first=first)

    return (rule,)


def run_answer(name: str, fn: Callable, mesh, *args):
    with explained(name, rules=error_rules(name)):
        return meshes.program(fn, mesh)(*args)


def compiled_answer(name: str, fn: Callable, mesh, *args):
    with explained(name, rules=error_rules(name)):
        return meshes.program(fn, mesh).lower(*args).compile()


def written_collectives(name: str, fn: Callable, mesh, *args) -> set:
    """The collectives the answer writes itself (its jaxpr), that move data."""
    with explained(name, rules=error_rules(name)):
        found = collectives(lambda *a: fn(*a, mesh), *args)
    return {(p, axes) for p, axes in found if p not in _NOT_COMMUNICATION}
