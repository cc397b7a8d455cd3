"""Exercise 1: `one_all_reduce_mlp`, tensor parallelism with one all-reduce."""

from __future__ import annotations

from collections.abc import Callable

import jax
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from namedaxes import MODEL_PARALLEL
from namedaxes.checking import (
    expect_float32,
    expect_layout,
    expect_work_within,
    f32,
    fail,
    fail_values,
    mistake_sentence,
    same_values,
)
from namedaxes.grading import Case, programs
from namedaxes.judging import work_of
from namedaxes.meshes import abstract_on, describe, with_mesh

from .running import (
    auto_line_mesh,
    compiled_answer,
    count_collectives,
    exercise,
    run_answer,
    seen_hlo,
    seen_jaxpr,
    written_collectives,
)
from .text import TEXT, say

# ---------------------------------------------------------------- 1. one_all_reduce_mlp
# (devices, n examples, features in, hidden features, features out); hidden divides by the devices.
_MLP_SHAPES = [(8, 4, 6, 16, 5), (4, 6, 5, 8, 3), (2, 3, 4, 6, 2)]


# The work judged (the grader's `Case(work=...)` and the visible check alike): one device's FLOPs, read from
# the compiled per-device program (XLA's cost analysis), at most `_MLP_FLOPS_FACTOR` times the reference's.
# The reference's, per device count, measured from the solution notebook's program (a test keeps them true):
# computing the whole hidden layer on every device costs 4.5x (8 devices), 2.75x (4) and 1.6x (2).
_MLP_FLOPS_FACTOR = 1.5
_MLP_REFERENCE_FLOPS = {8: 208.0, 4: 226.0, 2: 127.0}


def _mlp_inputs(k, n, d, h, f, seed: int = 0):
    r = np.random.default_rng(10 + k + seed)
    return (
        f32(r.normal(size=(n, d))),
        f32(r.normal(size=(d, h)) / np.sqrt(d)),
        f32(r.normal(size=(h, f)) / np.sqrt(h)),
    )


def _mlp_np(x, w1, w2):
    x, w1, w2 = (np.asarray(a, np.float64) for a in (x, w1, w2))
    return np.maximum(x @ w1, 0.0) @ w2


def mlp_mistakes(x, w1, w2) -> list[tuple]:
    """The usual mistakes' results: the ReLU after both matmuls, no ReLU, a ReLU on the result too (the check's
    diagnoses, and the grader's)."""
    x, w1, w2 = (np.asarray(a, np.float64) for a in (x, w1, w2))
    return [
        (np.maximum(x @ w1 @ w2, 0.0), "mlp_relu_order", {}),
        (x @ w1 @ w2, "mlp_no_relu", {}),
        (np.maximum(_mlp_np(x, w1, w2), 0.0), "mlp_relu_twice", {}),
    ]


def _check_one_all_reduce_mlp(fn: Callable) -> None:
    name = "one_all_reduce_mlp"
    works = []
    for k, n, d, h, f in _MLP_SHAPES:
        mesh = auto_line_mesh(k)
        host = _mlp_inputs(k, n, d, h, f)
        args = [jax.device_put(a, NamedSharding(mesh, P())) for a in host]
        where = say(
            "where_mesh",
            mesh=describe(mesh),
            what=say("what_shapes", shapes=", ".join(f"{v} {a.shape}" for v, a in zip(("x", "w1", "w2"), host))),
        )
        out = run_answer(name, fn, mesh, *args)
        expect_float32(name, out, TEXT, where=where)
        if tuple(out.shape) != (n, f):
            fail(say("shape", name=name, want=(n, f), got=tuple(out.shape), where=where, hint=""))
        if not out.sharding.is_fully_replicated:
            expect_layout(name, out, (), TEXT, where=where, hint=say("mlp_not_replicated"))
        want = _mlp_np(*host)
        got = np.asarray(out, np.float64)
        if not same_values(got, want, 1e-4):
            hint = mistake_sentence(say, got, mlp_mistakes(*host), 1e-4, otherwise=say("mlp_generic"))
            fail_values(say, "values", want, got, dtype=float, threshold=12, name=name, where=where, hint=hint)
        written = written_collectives(name, fn, mesh, *args)
        if written:
            fail(say("mlp_wrote_collectives", name=name, seen=seen_jaxpr(written)))
        compiled = compiled_answer(name, fn, mesh, *args)
        counts = count_collectives(compiled.as_text())
        if not any(counts.values()):
            fail(say("mlp_no_communication", name=name))
        if counts["all-gather"]:
            fail(say("mlp_gathers", name=name, seen=seen_hlo(counts)))
        if counts["all-reduce"] != 1 or sum(counts.values()) != 1:
            fail(say("mlp_wrong_count", name=name, seen=seen_hlo(counts)))
        works.append((k, mesh, work_of(compiled, (MODEL_PARALLEL,), (k,), k)))
    # how the work is split, once the communication is right on every mesh
    for k, mesh, work in works:
        expect_work_within(
            work,
            "flops",
            _MLP_REFERENCE_FLOPS[k],
            _MLP_FLOPS_FACTOR,
            say,
            "mlp_whole_hidden",
            name=name,
            mesh=describe(mesh),
            k=k,
        )


def _observe_one_all_reduce_mlp(fn: Callable) -> dict:
    """Exported programs of `fn(x, w1, w2, mesh)`, inputs replicated on Auto meshes of 8, 4 and 2 devices.

    The reference is a global-view program (no per-device code); the `structure` case requires its
    all-reduce over MODEL_PARALLEL and rejects any other collective (`only_collectives`)."""
    cases = {}
    for k, n, d, h, f in _MLP_SHAPES:
        mesh = auto_line_mesh(k)
        cases[f"k{k}"] = Case(
            with_mesh(fn, mesh),
            abstract_on(mesh, (n, d), P()),
            abstract_on(mesh, (d, h), P()),
            abstract_on(mesh, (h, f), P()),
            rtol=1e-4,
            atol=1e-4,
            work={"flops": _MLP_FLOPS_FACTOR},
        )
    k, n, d, h, f = _MLP_SHAPES[0]
    mesh = auto_line_mesh(k)
    cases["structure"] = Case(
        with_mesh(fn, mesh),
        abstract_on(mesh, (n, d), P()),
        abstract_on(mesh, (d, h), P()),
        abstract_on(mesh, (h, f), P()),
        values=False,
        only_collectives=True,
    )
    return programs(cases)


one_all_reduce_mlp = exercise("one_all_reduce_mlp", _check_one_all_reduce_mlp, observe=_observe_one_all_reduce_mlp)
