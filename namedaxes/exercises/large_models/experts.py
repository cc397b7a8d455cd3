"""Exercise 2: `moe_layer`, tokens routed to their experts over EXPERTS."""

from __future__ import annotations

from collections.abc import Callable

import jax
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from namedaxes import EXPERTS
from namedaxes.checking import f32
from namedaxes.meshes import abstract_on

from .running import (
    CAPACITY,
    Collectives,
    Inputs,
    Ran,
    diagnosed,
    exercise,
    expert_line_mesh,
    judged_on_meshes,
    mesh_programs,
)
from .text import say

# ---------------------------------------------------------------- 2. moe_layer
# (experts = devices, tokens per device, features)
_MOE_SHAPES = [(8, 6, 4), (4, 6, 5), (2, 6, 4)]


def _moe_inputs(k, t, d, seed: int = 0):
    r = np.random.default_rng(50 + k + seed)
    return f32(r.normal(size=(k * t, d))), f32(r.normal(size=(d, k))), f32(r.normal(size=(k, d, d)) / np.sqrt(d))


def _moe_np(x, router, w, k: int, capacity=CAPACITY, gated: bool = True, per_device: bool = True) -> np.ndarray:
    """The dense computation of the same routing: token t goes to expert argmax(softmax(x @ router)), scaled by
    that probability; an expert takes the first `capacity` tokens of each device (of all, `per_device=False`)."""
    x, router, w = (np.asarray(a, np.float64) for a in (x, router, w))
    logits = x @ router
    probs = np.exp(logits - logits.max(1, keepdims=True))
    probs /= probs.sum(1, keepdims=True)
    expert, t = probs.argmax(1), x.shape[0] // k
    y, count = np.zeros_like(x), np.zeros(k, int)
    for token, e in enumerate(expert):
        if per_device and token % t == 0:
            count[:] = 0
        if capacity is None or count[e] < capacity:
            y[token] = (probs[token, e] if gated else 1.0) * np.maximum(x[token] @ w[e], 0.0)
        count[e] += 1
    return y


# The work judged (the grader's `Case(work=...)` on every mesh and the visible check alike): the largest array
# one device materializes, at most `_MOE_WORK["largest_bytes"]` times the reference's (every expert's
# weights brought to every device by an all_to_all, the tokens left where they are: 2x, 2.5x and 2x on 8, 4
# and 2 experts), and its FLOPs, at most `_MOE_WORK["flops"]` times the reference's. The reference's:
# `REFERENCE_WORK`.
_MOE_WORK = {"flops": 2.0, "largest_bytes": 1.5}


def _moe_case(k: int, t: int, d: int) -> Inputs:
    """The inputs on `k` experts, and the right outputs."""
    mesh = expert_line_mesh(k)
    x, router, w = host = _moe_inputs(k, t, d)
    shapes = f"x {x.shape}, router {router.shape}, w {w.shape}"
    return Inputs(mesh, host, _moe_placed(mesh, *host), _moe_np(*host, k), (x.shape, (EXPERTS,)), shapes)


def moe_wrongs(x, router, w, k: int) -> list:
    """The usual mistakes' outputs: no token dropped, the gate not applied, the capacity counted over all tokens."""
    return [
        (_moe_np(x, router, w, k, capacity=None), "moe_no_capacity", {}),
        (_moe_np(x, router, w, k, gated=False), "moe_no_gate", {}),
        (_moe_np(x, router, w, k, per_device=False), "moe_global_capacity", {}),
    ]


# The collectives: an all_to_all over EXPERTS, no gather of the experts' weights or the tokens.
_MOE_COLLECTIVES = Collectives(f"all_to_all over '{EXPERTS}'", why="moe_no_all_to_all_why", gathers="moe_gathers")


def _check_moe_layer(fn: Callable) -> None:
    judged_on_meshes(
        "moe_layer", fn, _MOE_SHAPES, _moe_case, _moe_known, "moe_generic", _MOE_COLLECTIVES, _MOE_WORK, _moe_why
    )


def _moe_known(values, host: tuple, k: int) -> str:
    return diagnosed(values, moe_wrongs(*host, k))


def _moe_why(fact: str, run: Ran) -> str:
    """What an expert layer's excess work means, from what its all_to_alls carry (arguments x, router, w: 0, 1,
    2): the experts' weights sent without the tokens, every device's tokens sent to every expert, or more."""
    k, t, d = next(s for s in _MOE_SHAPES if s[0] == run.k)
    if fact == "flops":
        return say("moe_flops")
    sent = run.sends.get(f"all_to_all over '{EXPERTS}'")
    largest = 0 if sent is None else sent.largest
    carried = run.carried_by("all_to_all")
    if largest >= k * d * d * 4 and any(2 in c and 0 not in c for c in carried):
        return say("moe_holds_w", whole=k * d * d * 4)
    if largest >= k * t * d * 4 and any(0 in c for c in carried):
        return say("moe_tokens_everywhere", whole=k * t * d * 4)
    return say("moe_large")


def _moe_placed(mesh, x, router, w):
    on = lambda spec: NamedSharding(mesh, spec)  # noqa: E731
    return jax.device_put(x, on(P(EXPERTS))), jax.device_put(router, on(P())), jax.device_put(w, on(P(EXPERTS)))


def _moe_abstract(mesh, k, t, d):
    return (
        abstract_on(mesh, (k * t, d), P(EXPERTS)),
        abstract_on(mesh, (d, k), P()),
        abstract_on(mesh, (k, d, d), P(EXPERTS)),
    )


def _observe_moe_layer(fn: Callable) -> dict:
    """Exported programs of `fn(x, router, w, mesh)` (x and w P(EXPERTS), router replicated) on 8, 4 and 2
    devices, and a structure case: the reference's all_to_all over EXPERTS and nothing else."""
    return mesh_programs(fn, _MOE_SHAPES, expert_line_mesh, _moe_abstract, _MOE_WORK)


moe_layer = exercise("moe_layer", _check_moe_layer, observe=_observe_moe_layer)
