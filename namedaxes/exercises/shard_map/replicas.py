"""Exercise 2, `replica_totals`: sums over one axis of a 2-D mesh, the other left split."""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from namedaxes import DATA_SHARDS, MODEL_REPLICAS, meshes
from namedaxes.checking import TEXT as checking_text  # the list separator of the language
from namedaxes.checking import (
    expect_case_work,
    f32,
    fail,
    mistake_sentence,
)
from namedaxes.checking.regions import judge_regions
from namedaxes.grading import Case, programs, spec
from namedaxes.meshes import grid_mesh, with_mesh

from .running import call_answer, exercise, expect_result_shape, expect_values, explained_here
from .text import say


# ---------------------------------------------------------------- 2. replica_totals
def _replica_totals_reference(x: np.ndarray) -> np.ndarray:
    return x.sum(axis=1)


# Mesh shapes and x shapes of the visible checks; the hidden observations reuse the shapes.
_REPLICA_CASES = [
    ((2, 4), np.arange(32, dtype=np.float32).reshape(4, 8)),
    ((4, 2), np.arange(8, dtype=np.float32).reshape(4, 2) - 3.0),
    ((2, 2), np.asarray([[1.0, 2.0, 10.0, 20.0], [3.0, 4.0, 30.0, 40.0]], np.float32)),
]
# How the work is split (the grader's `Case(work=...)` on every mesh, the visible check on the 2 x 4 mesh): one
# device's FLOPs, read from the compiled per-device program, at most `_REPLICA_FLOPS_FACTOR` times the
# reference's (4 on the 2 x 4 mesh, measured from the solution notebook's program on jax 0.10.2; a test keeps it
# within 10 %). A row's blocks summed to each of its devices by a psum of one-hot-placed blocks, then the whole
# row added up on each, costs 12.5x (2 x 4), 25x (4 x 2) and 12.5x (2 x 2); the equivalent answers 1.5x at most
# (the blocks psummed, then their columns added). The counts are tiny, hence the wide factor.
_REPLICA_FLOPS_FACTOR = 3.0
_REPLICA_REFERENCE_FLOPS = 4.0


def _replica_shape_hint(got: tuple, x_shape: tuple, mesh_shape: tuple) -> str:
    """What a result of the wrong shape is, for the shapes the typical mistakes give."""
    (rows, cols), (n_data, n_rep) = x_shape, mesh_shape
    known = {
        (rows, cols // n_rep): "replica_shape_blocks_added",
        (rows * n_rep,): "replica_shape_copies",
        (rows, n_rep): "replica_shape_copies",
        (rows // n_data,): "replica_shape_block",
        (rows // n_data, cols): "replica_shape_data_sum",
    }
    return say(known[got], cols=n_rep) if got in known else ""


def replica_mistakes(x, mesh_shape: tuple) -> list[tuple]:
    """The usual mistakes' row totals on `x` (placed on the `mesh_shape` grid): the totals divided by the
    replicas (`lax.pmean`), the totals of each device's own block (the first replica's, as `out_specs` keeps
    it), the totals over the whole mesh (the check's diagnoses, and the grader's)."""
    n_data, n_rep = mesh_shape
    x64 = np.asarray(x, np.float64)
    rows = x64.shape[0]
    own = x64[:, : x64.shape[1] // n_rep].sum(axis=1)
    over_both = np.tile(x64.sum(axis=1).reshape(n_data, rows // n_data).sum(axis=0), n_data)
    return [
        (x64.sum(axis=1) / n_rep, "replica_pmean", {"k": n_rep}),
        (own, "replica_own_block", {}),
        (over_both, "replica_over_both", {}),
    ]


def _replica_hint(got: np.ndarray, x_np: np.ndarray, mesh_shape: tuple) -> str:
    """What wrong row totals are: those of each device's own block, or the totals over the whole mesh."""
    return mistake_sentence(say, got, replica_mistakes(x_np, mesh_shape), 1e-4, otherwise=say("replica_row_partners"))


def _check_replica_totals(fn: Callable) -> None:
    name = "replica_totals"
    for shape, x_np in _REPLICA_CASES:
        mesh = grid_mesh(shape)
        x = meshes.placed(f32(x_np), mesh, P(DATA_SHARDS, MODEL_REPLICAS))
        n_data, n_rep = shape
        where = say("replica_where", rows=n_data, cols=n_rep, shape=x_np.shape)
        with explained_here(name, mesh):
            out = call_answer(fn, x, mesh)
        want = _replica_totals_reference(x_np.astype(np.float64))
        shape_hint = functools.partial(_replica_shape_hint, x_shape=x_np.shape, mesh_shape=shape)
        expect_result_shape(name, out, want.shape, where, "replica_shape", shape_hint)
        got = np.asarray(out, np.float64)
        expect_values(name, got, want, where, "values", functools.partial(_replica_hint, got, x_np, shape))
    shape, x_np = _REPLICA_CASES[-1]  # the smallest mesh: the same verdict, the cheapest compiles
    mesh = grid_mesh(shape)
    x = meshes.placed(f32(x_np), mesh, P(DATA_SHARDS, MODEL_REPLICAS))
    got = judge_regions(
        name,
        fn,
        mesh,
        x,
        ins=(((DATA_SHARDS,), (MODEL_REPLICAS,)),),
        over=tuple(sorted((DATA_SHARDS, MODEL_REPLICAS))),
        axis=MODEL_REPLICAS,
        why=say("replica_why"),
        context=explained_here(name, mesh),
    )
    extra = [c for c in got.present if c.endswith(f" over '{DATA_SHARDS}'")]
    if extra:  # a surplus collective counts against, used or not (as the grader counts it)
        fail(say("replica_extra_axis", name=name, axis=DATA_SHARDS, seen=checking_text["list_sep"].join(extra)))
    _expect_replica_work(name, fn)


def _expect_replica_work(name: str, fn: Callable) -> None:
    """Each device adds up its own block's rows: the graded case on the 2 x 4 mesh, judged by its own rule."""
    shape, x_np = _REPLICA_CASES[0]
    context, where = explained_here(name, grid_mesh(shape)), f"{shape[0]} x {shape[1]}"
    case = _replica_case(fn, shape, x_np)
    expect_case_work(case, "flops", _REPLICA_REFERENCE_FLOPS, say, "replica_whole_row", context, name=name, mesh=where)


def _replica_case(fn: Callable, shape: tuple, x_np) -> Case:
    """The graded program of `fn(x, mesh)` on the `shape` mesh, x placed P(DATA_SHARDS, MODEL_REPLICAS): nothing
    over DATA_SHARDS (`only_axes`), one device's FLOPs at most `_REPLICA_FLOPS_FACTOR` times the reference's."""
    mesh = grid_mesh(shape)
    placed = spec(x_np.shape, jnp.float32, sharding=NamedSharding(mesh, P(DATA_SHARDS, MODEL_REPLICAS)))
    return Case(with_mesh(fn, mesh), placed, only_axes=True, work={"flops": _REPLICA_FLOPS_FACTOR})


def _observe_replica_totals(fn: Callable) -> dict:
    """Exported programs of `fn(x, mesh)`, x placed P(DATA_SHARDS, MODEL_REPLICAS) on three meshes.

    The grader requires the reference's communication (a psum over MODEL_REPLICAS) and nothing over
    DATA_SHARDS (`only_axes`): the rows stay on their data shard; one device's FLOPs are judged against the
    reference's (`_REPLICA_FLOPS_FACTOR`)."""
    return programs(
        {f"out_{s[0]}x{s[1]}_{x.shape[0]}x{x.shape[1]}": _replica_case(fn, s, x) for s, x in _REPLICA_CASES}
    )


replica_totals = exercise("replica_totals", _check_replica_totals, observe=_observe_replica_totals)
