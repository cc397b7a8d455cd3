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
    explained,
    f32,
    fail,
    same_values,
    show_values,
)
from namedaxes.checking.compiled import compiled_once
from namedaxes.grading import Case
from namedaxes.judging import COMPILER_OPTIONS
from namedaxes.meshes import abstract_on

from .running import (
    MICROBATCHES,
    Answered,
    Collectives,
    Inputs,
    Ran,
    answer_rules,
    diagnosed,
    exercise,
    judged_on_meshes,
    mesh_programs,
    stage_line_mesh,
)
from .text import say

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
# 4 stages). The reference's: `REFERENCE_WORK`.
_PIPE_WORK = {"flops": 1.5, "largest_bytes": 5.0, "sent_bytes": 1.5}


def _pipe_case(k: int, n: int, d: int) -> Inputs:
    """The inputs on `k` stages, and the right loss."""
    mesh = stage_line_mesh(k)
    params, x, y = host = _pipe_inputs(k, n, d)
    want = ((_pipe_outputs(params, x) - y) ** 2).mean()
    shapes = f"w {params['w'].shape}, b {params['b'].shape}, x {x.shape}"
    return Inputs(mesh, host, _pipe_placed(mesh, *host), want, ((), ()), shapes)


def _pipe_known(values, host: tuple, k: int) -> str:
    return diagnosed(values, pipe_wrongs(*host))


def _pipe_gathers(ran: Ran) -> str:
    """An all-gather whose result holds every stage's `w` (k, d, d) gathers the model; any other, activations."""
    k, n, d = _PIPE_SHAPES[0]
    whole = re.search(rf"f32\[{k},{d},{d}\]\S* all-gather", ran.text) is not None
    return "pipe_whole_model" if whole else "pipe_gathers_activations"


# The collectives: a ppermute over STAGES (and the loss's psum), no gather of the model or the activations.
_PIPE_COLLECTIVES = Collectives(
    f"ppermute over '{STAGES}'", why="pipe_no_ppermute_why", gathers=_pipe_gathers, also=(f"psum over '{STAGES}'",)
)


def _check_pipeline_loss(fn: Callable) -> None:
    name = "pipeline_loss"
    judged_on_meshes(
        name,
        fn,
        _PIPE_SHAPES,
        _pipe_case,
        _pipe_known,
        "pipe_generic",
        _PIPE_COLLECTIVES,
        _PIPE_WORK,
        _pipe_why,
        first=_expect_pipeline_gradient,  # the gradient on the first mesh (8 devices), as the grader reads it
    )


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


def _expect_pipeline_gradient(name: str, answer: Answered) -> None:
    program, args, mesh, where = answer.ran.program, answer.ran.args, answer.ran.mesh, answer.where
    params, x, y = answer.inputs.host
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

    def derivative(program: Callable, inputs: tuple) -> dict:
        return {"derivative": Case(_derivative(program), *inputs, inputs[0], rtol=1e-4, atol=1e-4)}

    return mesh_programs(fn, _PIPE_SHAPES, stage_line_mesh, _pipe_abstract, _PIPE_WORK, more=derivative)


pipeline_loss = exercise("pipeline_loss", _check_pipeline_loss, observe=_observe_pipeline_loss)
