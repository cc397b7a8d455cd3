"""An exported program compiled and run as the grader compiles and runs it: on the mesh its signature states
(`mesh_of`), its inputs laid out as stated (unstated ones replicated), with the judge's compiler options.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import numpy as np

from . import jax_private
from .module_texts import module_text
from .typed import exported_reductions
from .work import Work, work_of

__all__ = [
    "COMPILER_OPTIONS",
    "mesh_of",
    "text_mesh",
    "compile_exported",
    "exported_work",
    "with_reductions",
    "UNREADABLE_REDUCTIONS",
    "run_exported",
]

# How the judge compiles a program (here and in `autograder.judge.compiling`). Its programs are small and
# run on a few inputs, so compiling is what costs: machine code made by LLVM at level 0 without its
# expensive passes compiles in 55-70 % of the time (a training step: 155 -> 121 ms). What the judge reads
# is untouched: the optimized HLO comes from XLA's HLO passes, which run before code generation (the same
# text over all 1515 compiles of the exercise tests of notebooks 02, 03, 04 and 07; tests/namedaxes/test_judging.py).
COMPILER_OPTIONS = {"xla_backend_optimization_level": 0, "xla_llvm_disable_expensive_passes": True}


def mesh_of(exp) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """(axis names, sizes) of the mesh an exported program runs on: its shardings' abstract mesh, else
    the module's first `sdy.mesh` of the right size (pmap programs), else one axis 'devices'."""
    for s in jax_private.in_shardings(exp) + jax_private.out_shardings(exp):
        mesh = getattr(s, "mesh", None)
        if mesh is not None and mesh.axis_names and int(np.prod(mesh.axis_sizes)) == exp.nr_devices:
            return tuple(mesh.axis_names), tuple(mesh.axis_sizes)
    return text_mesh(exp) or (("devices",), (exp.nr_devices,))


def text_mesh(exp) -> tuple[tuple[str, ...], tuple[int, ...]] | None:
    """The first `sdy.mesh` of the module whose size is the device count (pmap programs), or None."""
    for body in re.findall(r"sdy\.mesh\s+@[\w.\-]+\s*=\s*<\[([^\]]*)\]", module_text(exp)):
        pairs = re.findall(r'"([^"]+)"\s*=\s*(\d+)', body)
        if pairs and int(np.prod([int(s) for _, s in pairs])) == exp.nr_devices:
            return tuple(n for n, _ in pairs), tuple(int(s) for _, s in pairs)
    return None


def compile_exported(exp, names, sizes) -> tuple[Any, list]:
    """`exp` compiled for the first devices as the grader compiles it (its own input layouts, unstated ones
    replicated; `COMPILER_OPTIONS`), and the input shardings."""
    import jax
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = Mesh(np.array(jax.devices()[: exp.nr_devices]).reshape(sizes), names)
    shardings = [
        NamedSharding(mesh, s.spec)
        if s is not None and getattr(s, "mesh", None) is not None and s.mesh.axis_names
        else NamedSharding(mesh, P())
        for s in jax_private.in_shardings(exp)
    ]

    def flat_call(*leaves):
        args, kwargs = jax.tree_util.tree_unflatten(exp.in_tree, leaves)
        return exp.call(*args, **kwargs)

    args = [jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=s) for a, s in zip(exp.in_avals, shardings)]
    return jax.jit(flat_call).lower(*args).compile(dict(COMPILER_OPTIONS)), shardings


def exported_work(exp) -> Work:
    """The `Work` of one device of an exported program compiled as the grader compiles it (for the visible
    checks: the same facts the grader reads, on the same compile)."""
    names, sizes = mesh_of(exp)
    compiled, _ = compile_exported(exp, names, sizes)
    return work_of(compiled, names, sizes, exp.nr_devices)


# `Work.reduced_bytes` of a module the reader cannot walk (too many operations): more than any case allows
UNREADABLE_REDUCTIONS = 1 << 40


def with_reductions(work: Work, exp, names: tuple, sizes: tuple) -> Work:
    """`work` with the reductions the exported program's types make (`Work.reduced_bytes`, read from its module,
    not from the compile: the same on every backend); `UNREADABLE_REDUCTIONS` where the module cannot be read.
    Where a case judges them only: walking a training step's module costs about 0.15 s."""
    try:
        found = exported_reductions(exp, names, sizes).nbytes
    except Exception:  # noqa: BLE001 - a hostile module: judged as reducing more than any case allows
        found = UNREADABLE_REDUCTIONS
    return dataclasses.replace(work, reduced_bytes=found)


def run_exported(exp, values: list, names, sizes) -> tuple[dict, Any]:
    """Compile `exp` for the first devices (its own input layouts, unstated ones replicated), run it on
    `values`; its outputs by pytree path and the compiled program (optimized HLO, output shardings)."""
    import jax

    compiled, shardings = compile_exported(exp, names, sizes)
    out = compiled(*[jax.device_put(np.asarray(v), s) for v, s in zip(values, shardings)])
    flat, _ = jax.tree_util.tree_flatten_with_path(out)
    return {jax.tree_util.keystr(path): np.asarray(v) for path, v in flat}, compiled
