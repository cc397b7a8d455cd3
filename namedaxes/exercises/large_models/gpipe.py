"""Exercise 1: `pipeline_loss`, GPipe's schedule over STAGES."""

from __future__ import annotations

import re
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from namedaxes import STAGES
from namedaxes.checking import (
    expect_result,
    explained,
    f32,
    fail,
    fail_values,
    same_values,
    show_values,
)
from namedaxes.checking.compiled import compiled_once
from namedaxes.grading import Case, programs
from namedaxes.judging import COMPILER_OPTIONS, Work
from namedaxes.meshes import abstract_on, describe, with_mesh

from .running import (
    MICROBATCHES,
    Ran,
    answer_rules,
    diagnosed,
    exercise,
    expect_collectives,
    expect_work,
    run_answer,
    stage_mesh,
)
from .text import TEXT, say

# ---------------------------------------------------------------- 1. pipeline_loss
# (stages, batch, features): the batch divides by MICROBATCHES.
_PIPE_SHAPES = [(8, 8, 6), (4, 8, 5), (2, 4, 4)]


def _pipe_inputs(k, n, d, seed: int = 0):
    r = np.random.default_rng(40 + k + seed)
    params = {"w": f32(r.normal(size=(k, d, d)) / np.sqrt(d)), "b": f32(r.normal(size=(k, d)) * 0.3)}
    return params, f32(r.normal(size=(n, d))), f32(r.normal(size=(n, d)))


def _pipe_outputs(params, x) -> np.ndarray:
    h = np.asarray(x, np.float64)
    for w, b in zip(params["w"], params["b"]):
        h = np.tanh(h @ np.asarray(w, np.float64) + b)
    return h


def pipe_wrongs(params, x, y) -> list:
    """The usual mistakes' losses: the last microbatches missing, the sum for the mean, or each microbatch's
    outputs compared with another microbatch's targets (the last stage's delay of k - 1 steps missed)."""
    y64 = np.asarray(y, np.float64)
    out = _pipe_outputs(params, x)
    err = (out - y64) ** 2
    micro = np.array_split(err, MICROBATCHES)
    wrongs = [(sum(m.sum() for m in micro[:-i]) / err.size, "pipe_short", {}) for i in (1, 2, 3)]
    outs, ys = np.array_split(out, MICROBATCHES), np.array_split(y64, MICROBATCHES)
    k, m = params["w"].shape[0], MICROBATCHES
    for shift in range(-(m + k), m + k):
        for index in (lambda j: min(max(j + shift, 0), m - 1), lambda j: (j + shift) % m):  # noqa: B023
            order = [index(j) for j in range(m)]
            if order != list(range(m)):
                shifted = sum(((o - ys[i]) ** 2).sum() for o, i in zip(outs, order)) / err.size
                wrongs.append((shifted, "pipe_targets", {}))
    return [*wrongs, (err.sum(), "pipe_sum", {})]


def _sequential_loss(params, x, y):
    h = x
    for s in range(params["w"].shape[0]):
        h = jnp.tanh(h @ params["w"][s] + params["b"][s])
    return jnp.mean((h - y) ** 2)


def _pipe_placed(mesh, params, x, y):
    on = lambda spec: NamedSharding(mesh, spec)  # noqa: E731
    return (
        {key: jax.device_put(v, on(P(STAGES))) for key, v in params.items()},
        jax.device_put(x, on(P())),
        jax.device_put(y, on(P())),
    )


# The work judged (the grader's `Case(work=...)` on every mesh and the visible check alike): the largest array
# one device materializes, at most `_PIPE_WORK["largest_bytes"]` times the reference's (the outputs of every
# microbatch kept in one buffer, as a `lax.fori_loop` schedule keeps them, are 4x; every stage's `w` on every
# device 24x, 10x and 8x on 8, 4 and 2 stages), and its FLOPs, at most `_PIPE_WORK["flops"]` times the
# reference's (the whole batch through the stages one after another, no microbatches: 2.7x and 2.0x on 8 and
# 4 stages). The reference's, per mesh, measured from the solution notebook's program (a test keeps them true).
_PIPE_WORK = {"flops": 1.5, "largest_bytes": 5.0, "sent_bytes": 1.5}
_PIPE_REFERENCE = {
    8: Work(1928.0, 0, 48, sent_bytes=484),
    4: Work(950.0, 0, 40, sent_bytes=244),
    2: Work(264.0, 0, 16, sent_bytes=68),
}


# The notebook's globals that an answer may read the number of devices from instead of its mesh: (name, value).
_COUNT_GLOBALS = {"pipeline_loss": ("k", 4), "moe_layer": ("n_experts", 8), "causal_ring_attention": ("n_blocks", 8)}


def global_count(name: str, k: int, axis: str, right_there: Callable[[int], bool]) -> str:
    """The hint for values wrong on `k` devices that are right on as many devices as the notebook's global
    count (`_COUNT_GLOBALS`); "" otherwise. `right_there(count)` runs the answer on that mesh."""
    glob, count = _COUNT_GLOBALS[name]
    if k == count:
        return ""
    try:
        right = right_there(count)
    except Exception:  # noqa: BLE001 - any failure there: no such hint
        right = False
    return say("global_count", right=count, k=k, glob=glob, axis=axis) if right else ""


def _pipe_case(fn: Callable, k: int, n: int, d: int) -> tuple:
    """The answer run on `k` stages: (its loss, the right one, the inputs on the host, what it placed, the
    bound program, `Ran`, where)."""
    name, mesh = "pipeline_loss", stage_mesh(k)
    params, x, y = _pipe_inputs(k, n, d)
    args = _pipe_placed(mesh, params, x, y)
    where = say("where_mesh", mesh=describe(mesh), shapes=f"w {params['w'].shape}, b {params['b'].shape}, x {x.shape}")
    program = with_mesh(fn, mesh)
    out, ran = run_answer(name, program, *args, mesh=mesh)
    expect_result(name, out, (), (), TEXT, where=where)
    want = ((_pipe_outputs(params, x) - y) ** 2).mean()
    return out, want, (params, x, y), args, program, ran, where


def _pipe_right_on(fn: Callable, count: int) -> bool:
    out, want, *_ = _pipe_case(fn, *next(s for s in _PIPE_SHAPES if s[0] == count))
    return same_values(np.asarray(out, np.float64), want, 1e-4)


def _check_pipeline_loss(fn: Callable) -> None:
    name = "pipeline_loss"
    ran = []
    for k, n, d in _PIPE_SHAPES:
        out, want, host, args, program, run, where = _pipe_case(fn, k, n, d)
        if not same_values(np.asarray(out, np.float64), want, 1e-4):
            hint = diagnosed(np.asarray(out, np.float64), pipe_wrongs(*host))
            hint = hint or global_count(name, k, "STAGES", lambda c: _pipe_right_on(fn, c)) or say("pipe_generic")
            fail_values(say, "values", want, out, dtype=float, threshold=12, name=name, where=where, hint=hint)
        if k == _PIPE_SHAPES[0][0]:  # the gradient on 8 devices, as the grader reads it
            _expect_pipeline_gradient(name, program, args, run.mesh, host, where)
        ran.append(run)
    k, n, d = _PIPE_SHAPES[0]
    # an all-gather whose result holds every stage's `w` (k, d, d) gathers the model; any other, activations
    whole = re.search(rf"f32\[{k},{d},{d}\]\S* all-gather", ran[0].text) is not None
    rules = {
        "refused": "all_gather",
        "refused_key": "pipe_whole_model" if whole else "pipe_gathers_activations",
        "need": f"ppermute over '{STAGES}'",
        "why": say("pipe_no_ppermute_why"),
        "allowed": (f"ppermute over '{STAGES}'", f"psum over '{STAGES}'"),
    }
    expect_collectives(name, ran[0], rules)
    expect_work(name, ran, _PIPE_REFERENCE, _PIPE_WORK, _pipe_why)


def _pipe_why(fact: str, run: Ran) -> str:
    """What a pipeline's excess work means: the whole model held, or the whole batch sent at once."""
    k, n, d = next(s for s in _PIPE_SHAPES if s[0] == run.k)
    if fact == "largest_bytes":  # FLOPs or bytes sent: the schedule's sends say which
        whole = k * d * d * 4
        return say("pipe_holds_w", whole=whole) if run.work.largest_bytes >= whole else say("pipe_large")
    sent = run.sends.get(f"ppermute over '{STAGES}'")
    batch = n * d * 4
    if sent is not None and sent.largest >= batch:
        return say(
            "pipe_no_microbatches",
            sent=sent.largest,
            runs=sent.runs,
            want_runs=MICROBATCHES + k - 2,
            want_sent=batch // MICROBATCHES,
        )
    return say("pipe_flops")


def _expect_pipeline_gradient(name, program, args, mesh, host, where) -> None:
    params, x, y = host
    with explained(name, rules=answer_rules(name)), jax.set_mesh(mesh):  # a zero gradient is made on the mesh
        grads = compiled_once(jax.jit(jax.grad(program)).lower(*args), COMPILER_OPTIONS)(*args)
    want = jax.grad(_sequential_loss)(params, x, y)
    for leaf in ("w", "b"):
        got = grads[leaf] if isinstance(grads, dict) and leaf in grads else None
        if got is None or not same_values(np.asarray(got, np.float64), np.asarray(want[leaf], np.float64), 1e-4):
            shown = show_values(got, dtype=float, threshold=12) if got is not None else repr(grads)[:80]
            fail(
                say(
                    "pipe_grad_values",
                    name=name,
                    where=where,
                    want=show_values(want[leaf], dtype=float, threshold=12),
                    got=shown,
                )
            )


def _derivative(program: Callable) -> Callable:
    """The loss's derivative along the direction `tangent` (forward mode, `jax.jvp`): what the grader compares
    of the gradient. A reverse-mode program's per-device regions take residuals that differ from one right
    answer to another; a `jvp`'s take the primal inputs and their tangents, the same for every answer."""

    def derivative(params, x, y, tangent):
        zeros = jnp.zeros_like(x)
        return jax.jvp(program, (params, x, y), (tangent, zeros, jnp.zeros_like(y)))[1]

    return derivative


def _pipe_abstract(mesh, k, n, d):
    return (
        {"w": abstract_on(mesh, (k, d, d), P(STAGES)), "b": abstract_on(mesh, (k, d), P(STAGES))},
        abstract_on(mesh, (n, d), P()),
        abstract_on(mesh, (n, d), P()),
    )


def _observe_pipeline_loss(fn: Callable) -> dict:
    """Exported programs of `fn(params, x, y, mesh)` (params P(STAGES), x and y replicated) on 8, 4 and 2
    devices, its derivative along a direction the grader draws on 8 (`_derivative`), and a structure case: the
    reference's ppermute and psum over STAGES and nothing else."""
    cases = {}
    for k, n, d in _PIPE_SHAPES:
        mesh = stage_mesh(k)
        cases[f"k{k}"] = Case(
            with_mesh(fn, mesh), *_pipe_abstract(mesh, k, n, d), rtol=1e-4, atol=1e-4, work=_PIPE_WORK
        )
    k, n, d = _PIPE_SHAPES[0]
    mesh = stage_mesh(k)
    params, x, y = _pipe_abstract(mesh, k, n, d)
    cases["derivative"] = Case(_derivative(with_mesh(fn, mesh)), params, x, y, params, rtol=1e-4, atol=1e-4)
    cases["structure"] = Case(with_mesh(fn, mesh), *_pipe_abstract(mesh, k, n, d), values=False, only_collectives=True)
    return programs(cases)


pipeline_loss = exercise("pipeline_loss", _check_pipeline_loss, observe=_observe_pipeline_loss)
