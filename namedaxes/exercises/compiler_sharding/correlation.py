"""Exercise 2: `feature_correlation`, a layout the compiler keeps small."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from namedaxes import DATA_PARALLEL, MODEL_PARALLEL
from namedaxes.checking import (
    answer_work,
    expect_result,
    expect_work_within,
    explained,
    f32,
    fail_values,
    same_values,
    which_mistake,
)
from namedaxes.grading import Case, programs
from namedaxes.meshes import abstract_on, describe

from .running import error_rules, exercise, explicit_grid_mesh, run_answer
from .text import TEXT, say

# ---------------------------------------------------------------- 2. feature_correlation
# (mesh shape, n examples, d features): n divides by the first mesh axis, d by the second.
_CORR_SHAPES = [((2, 4), 6, 8), ((4, 2), 8, 4), ((2, 2), 4, 6)]
_CORR_LAYOUT = (MODEL_PARALLEL, None)


# The work judged (the grader's `Case(work=...)` and the visible check alike): the largest array one device
# materializes, read from the compiled per-device program, at most `_CORR_LARGEST_FACTOR` times the
# reference's (bytes per mesh shape, measured from the solution notebook's program; a test keeps them true).
# Gathering x whole and resharding the one-device result costs 2.7x (2 x 4), 4x (4 x 2) and 2x (2 x 2).
_CORR_LARGEST_FACTOR = 1.5
_CORR_REFERENCE_LARGEST = {(2, 4): 96, (4, 2): 32, (2, 2): 72}


def _corr_input(shape, n, d, seed: int = 0):
    r = np.random.default_rng(20 + shape[0] * 3 + shape[1] + seed)
    return f32(r.normal(size=(n, d)) * np.arange(1, d + 1) + np.arange(d))


def corr_mistakes(x) -> list[tuple]:
    """The usual mistakes' results on `x` (examples x features): the covariance, the correlation of the
    features not centred (the check's diagnoses, and the grader's)."""
    x64 = np.asarray(x, np.float64)
    n = x64.shape[0]
    centred = x64 - x64.mean(axis=0)
    norms = np.sqrt((x64**2).mean(axis=0))
    return [
        (centred.T @ centred / n, "corr_covariance", {}),
        (x64.T @ x64 / n / np.outer(norms, norms), "corr_not_centred", {}),
    ]


def _check_feature_correlation(fn: Callable) -> None:
    name = "feature_correlation"
    for shape, n, d in _CORR_SHAPES:
        mesh = explicit_grid_mesh(shape)
        host = _corr_input(shape, n, d)
        x = jax.device_put(host, NamedSharding(mesh, P(DATA_PARALLEL, MODEL_PARALLEL)))
        where = say("where_mesh", mesh=describe(mesh), what=say("what_shapes", shapes=f"x {host.shape}"))
        out = run_answer(name, fn, mesh, x)
        expect_result(name, out, (d, d), _CORR_LAYOUT, TEXT, layout_hint=say("corr_layout_hint"), where=where)
        x64 = np.asarray(host, np.float64)
        want = np.corrcoef(x64, rowvar=False)
        got = np.asarray(out, np.float64)
        if not same_values(got, want, 1e-4):
            found = which_mistake(got, corr_mistakes(x64), 1e-4)
            if found is not None:
                hint = say(found[0], **found[1])
            elif got[0, 0] != 0 and same_values(got, want * got[0, 0], 1e-4):
                hint = say("corr_scaled", ratio=f"{got[0, 0]:.4g}")
            else:
                hint = say("corr_generic")
            fail_values(say, "values", want, got, dtype=float, threshold=12, name=name, where=where, hint=hint)
    for shape, n, d in _CORR_SHAPES:  # how the work is split, once the values are right on every mesh
        _expect_corr_work(name, fn, shape, n, d)


def _expect_corr_work(name: str, fn: Callable, shape, n: int, d: int) -> None:
    """No device gathers the examples: the largest array one device materializes (read from the compiled
    per-device program the grader compiles, the layout probe included) is at most `_CORR_LARGEST_FACTOR`
    times the reference's."""
    mesh = explicit_grid_mesh(shape)
    x = jax.ShapeDtypeStruct((n, d), jnp.float32, sharding=NamedSharding(mesh, P(DATA_PARALLEL, MODEL_PARALLEL)))
    with explained(name, rules=error_rules(name)):
        work = answer_work(_with_layout(fn, mesh, _CORR_LAYOUT), x)
    want = _CORR_REFERENCE_LARGEST[tuple(shape)]
    expect_work_within(
        work, "largest_bytes", want, _CORR_LARGEST_FACTOR, say, "corr_gathers", name=name, mesh=describe(mesh)
    )


def _with_layout(fn: Callable, mesh, layout) -> Callable:
    """`fn(x, mesh)` followed by an identity `shard_map` with `in_specs=P(*layout)`: on an Explicit mesh
    JAX refuses to trace it unless the result is laid out so."""

    def program(x):
        out = fn(x, mesh)
        return jax.shard_map(lambda block: block, mesh=mesh, in_specs=P(*layout), out_specs=P(*layout))(out)

    return program


def _observe_feature_correlation(fn: Callable) -> dict:
    """Exported programs of `fn(x, mesh)` (x placed P(DATA_PARALLEL, MODEL_PARALLEL)) on three Explicit
    meshes, each ending in the layout probe (`_with_layout`); the grader draws x, compares values and judges
    the largest array one device materializes against the reference's (`_CORR_LARGEST_FACTOR`)."""
    cases = {}
    for shape, n, d in _CORR_SHAPES:
        mesh = explicit_grid_mesh(shape)
        cases[f"mesh{shape[0]}x{shape[1]}"] = Case(
            _with_layout(fn, mesh, _CORR_LAYOUT),
            abstract_on(mesh, (n, d), P(DATA_PARALLEL, MODEL_PARALLEL)),
            rtol=1e-4,
            atol=1e-4,
            work={"largest_bytes": _CORR_LARGEST_FACTOR},
        )
    return programs(cases)


feature_correlation = exercise("feature_correlation", _check_feature_correlation, observe=_observe_feature_correlation)
