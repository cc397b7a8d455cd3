"""Exercise 4, `fsdp_step`: one FSDP training step, the weights gathered and the gradients reduce-scattered."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from jax.sharding import PartitionSpec as P

from namedaxes import DATA_PARALLEL, meshes
from namedaxes.checking import (
    expect_float32,
    expect_work_within,
    f32,
    fail,
    fail_values,
    first_line,
    mistake_sentence,
    same_values,
)
from namedaxes.meshes import abstract_on, line_mesh

from .running import COMMON_RULES, exercise, judged, observe_programs, run_answer, work_here
from .text import TEXT, say

LEARNING_RATE = 0.1


# ---------------------------------------------------------------- 4. fsdp_step
def _sgd_step_np(w, batch) -> np.ndarray:
    """One plain SGD step on one device of the notebook's FSDP model (its `loss_fn`, the mean squared error of
    `x @ w`, and `sgd_step`), in float64 NumPy (the gradient in closed form): the checks' reference, which every
    FSDP answer must match, with nothing to compile."""
    x, y, w = (np.asarray(a, np.float64) for a in (batch["x"], batch["y"], w))
    return w - LEARNING_RATE * 2.0 * x.T @ (x @ w - y) / x.shape[0]


FEATURES = 8
_FSDP_CASES = ((8, 16), (4, 12), (2, 10))  # (devices, examples)
# How the work is split (the grader's `Case(work=...)` on every case, the visible check on the first): one
# device's FLOPs, read from the compiled per-device program, at most `_FSDP_FLOPS_FACTOR` times the
# reference's (measured from the solution notebook's program on 8 devices on jax 0.10.2; 73 on 0.12.0.1; a test
# keeps it within 10 %). Gathering
# the whole batch on every device costs 8x (8 devices), 3.9x (4) and 2x (2); equivalent answers 1.1x at most.
_FSDP_FLOPS_FACTOR = 1.5
_FSDP_REFERENCE_FLOPS = 68.0


def _fsdp_visible(k: int, n: int):
    r = np.random.RandomState(70 + k)
    w = f32(np.linspace(-1.0, 1.0, FEATURES))
    x = r.normal(size=(n, FEATURES))
    y = x @ np.arange(1.0, FEATURES + 1) / FEATURES + 0.1 * r.normal(size=n)
    return w, {"x": f32(x), "y": f32(y)}


def _fsdp_placed(mesh, w, batch):
    return meshes.placed(w, mesh, P(DATA_PARALLEL)), meshes.placed(batch, mesh, P(DATA_PARALLEL))


def _fsdp_rules():
    def not_gathered(err, name, mesh):
        text = str(err)
        if isinstance(err, TypeError) and (
            "dot_general requires contracting dimensions" in text or "Incompatible shapes for broadcasting" in text
        ):
            k = mesh.devices.size if mesh is not None else 1
            return say("not_gathered", name=name, first=first_line(err), shard=FEATURES // k, d=FEATURES)
        return None

    return (not_gathered,) + COMMON_RULES


_FSDP_RULES = _fsdp_rules()


def fsdp_mistakes(w, batch, k: int) -> list[tuple]:
    """The usual mistakes' new w on `w` and `batch` (split over `k` devices): the step `k` times too large (the
    gradients summed) or too small, no step, a step up the gradient, each device's shard updated with its own
    examples' gradient only (the check's diagnoses, and the grader's)."""
    old = np.asarray(w, np.float64)
    x, y = np.asarray(batch["x"], np.float64), np.asarray(batch["y"], np.float64)
    ref_step = _sgd_step_np(old, {"x": x, "y": y}) - old
    shard, rows = len(old) // k, x.shape[0] // k
    local = np.empty_like(old)
    for i in range(k):  # device i's shard updated with the gradient of device i's examples only
        mine, own = slice(i * rows, (i + 1) * rows), slice(i * shard, (i + 1) * shard)
        local[own] = old[own] - LEARNING_RATE * (2.0 * x[mine].T @ (x[mine] @ old - y[mine]) / rows)[own]
    return [
        (old + k * ref_step, "fsdp_k_times", {"k": k}),
        (old + ref_step / k, "fsdp_k_small", {"k": k}),
        (old, "fsdp_unchanged", {}),
        (old - ref_step, "fsdp_sign", {}),
        (local, "fsdp_local", {}),
    ]


def _fsdp_diagnosis(got, w, k: int, batch) -> str:
    return mistake_sentence(say, got, fsdp_mistakes(w, batch, k), 1e-4, otherwise=say("fsdp_generic"))


def _check_fsdp_step(fn: Callable) -> None:
    name = "fsdp_step"
    for k, n in _FSDP_CASES:
        mesh = line_mesh(k, DATA_PARALLEL)
        w, batch = _fsdp_visible(k, n)
        where = say("where_mesh", k=k, what=say("what_fsdp", features=FEATURES, n=n))
        out = run_answer(name, fn, mesh, *_fsdp_placed(mesh, w, batch), rules=_FSDP_RULES)
        expect_float32(name, out, TEXT, where=where)
        if tuple(out.shape) != (FEATURES,):
            hint = say("fsdp_whole_w") if tuple(out.shape) == (k * FEATURES,) else ""
            fail(say("shape", name=name, want=(FEATURES,), got=tuple(out.shape), where=where, hint=hint))
        got = np.asarray(out, np.float64)
        ref = _sgd_step_np(w, batch)
        if not same_values(got, ref, 1e-4):
            hint = _fsdp_diagnosis(got, w, k, batch)
            fail_values(say, "fsdp_update", ref, got, dtype=float, name=name, where=where, hint=hint)
    k, n = _FSDP_CASES[-1]  # the grader's reading, on the smallest mesh
    mesh = line_mesh(k, DATA_PARALLEL)
    split = ((DATA_PARALLEL,),)
    placed = _fsdp_placed(mesh, *_fsdp_visible(k, n))
    uses = (("all_gather", say("fsdp_why_gather")), ("psum_scatter", say("fsdp_why_scatter")))
    judged(name, fn, mesh, *placed, ins=(split, split, split), axis=DATA_PARALLEL, uses=uses, rules=_FSDP_RULES)
    k, n = _FSDP_CASES[0]  # how the work is split, on the largest mesh (where a whole batch costs most)
    mesh = line_mesh(k, DATA_PARALLEL)
    placed = _fsdp_placed(mesh, *_fsdp_visible(k, n))
    work = work_here(name, fn, mesh, *placed, rules=_FSDP_RULES)
    expect_work_within(
        work, "flops", _FSDP_REFERENCE_FLOPS, _FSDP_FLOPS_FACTOR, say, "fsdp_whole_batch", name=name, k=k
    )


def _observe_fsdp_step(fn: Callable) -> dict:
    """Programs on 8, 4 and 2 devices, w and batch placed P(DATA_PARALLEL); the reference's all_gather
    and psum_scatter are required."""
    cases = {}
    for k, n in _FSDP_CASES:
        mesh = line_mesh(k, DATA_PARALLEL)
        batch = {
            "x": abstract_on(mesh, (n, FEATURES), P(DATA_PARALLEL)),
            "y": abstract_on(mesh, (n,), P(DATA_PARALLEL)),
        }
        cases[f"k{k}_n{n}"] = (mesh, [abstract_on(mesh, (FEATURES,), P(DATA_PARALLEL)), batch])
    return observe_programs(fn, cases, structure="k8_n16", only=True, work={"flops": _FSDP_FLOPS_FACTOR})


fsdp_step = exercise("fsdp_step", _check_fsdp_step, observe=_observe_fsdp_step)
