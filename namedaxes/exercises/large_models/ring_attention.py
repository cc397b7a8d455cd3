"""Exercise 3: `causal_ring_attention`, keys and values passed around SEQUENCE."""

from __future__ import annotations

from collections.abc import Callable

import jax
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from namedaxes import SEQUENCE
from namedaxes.checking import f32, same_values
from namedaxes.meshes import abstract_on

from .running import Collectives, Inputs, Ran, diagnosed, exercise, judged_on_meshes, mesh_programs, sequence_line_mesh
from .text import say

# ---------------------------------------------------------------- 3. causal_ring_attention
# (devices, positions per block, features)
_RING_SHAPES = [(8, 3, 4), (4, 4, 6), (2, 5, 4)]


def _ring_inputs(k, b, h, seed: int = 0):
    r = np.random.default_rng(60 + k + seed)
    return tuple(f32(r.normal(size=(k * b, h))) for _ in range(3))


def _attention_np(q, k, v, allowed) -> np.ndarray:
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    scores = np.where(allowed, q @ k.T / np.sqrt(q.shape[1]), -np.inf)
    p = np.exp(scores - scores.max(1, keepdims=True))
    return (p / p.sum(1, keepdims=True)) @ v


def ring_wrongs(q, k, v, blocks: int) -> list:
    n = q.shape[0]
    b = n // blocks
    pos = np.arange(n)
    causal = pos[None, :] <= pos[:, None]
    local = (pos % b)[None, :] <= (pos % b)[:, None]
    short = causal & ~(pos[None, :] // b == (pos[:, None] // b + 1) % blocks)
    per_block = np.zeros((n, q.shape[1]))
    for j in range(blocks):
        cols = slice(j * b, (j + 1) * b)
        seen = causal[:, cols].any(1)
        part = _attention_np(q[seen], k[cols], v[cols], causal[seen][:, cols])
        per_block[seen] += part
    own = pos // b  # the device that holds each query
    held = np.zeros((n, n), bool)  # the blocks travel i -> i - 1, the mask assumes i -> i + 1
    for s in range(blocks):
        actual, assumed = (own + s) % blocks, (own - s) % blocks
        for c in range(b):
            held[pos, actual * b + c] = assumed * b + c <= pos
    with np.errstate(invalid="ignore", divide="ignore"):  # the strict mask leaves position 0 no key: NaN
        strict = _attention_np(q, k, v, pos[None, :] < pos[:, None])
    strict[pos % b == 0] = np.nan  # a ring whose step 0 masks a block's first query entirely: NaN there
    return [
        (_attention_np(q, k, v, np.ones((n, n), bool)), "ring_no_mask", {}),
        (_attention_np(q, k, v, held), "ring_direction", {}),
        (_attention_np(q, k, v, local), "ring_local_mask", {}),
        (per_block, "ring_per_block", {}),
        (_attention_np(q, k, v, short), "ring_short", {}),
        (strict, "ring_strict_mask", {}),
    ]


# The work judged (the grader's `Case(work=...)` on every mesh and the visible check alike): the largest array
# one device materializes, at most `_RING_WORK["largest_bytes"]` times the reference's (a ring that first
# collects every key and value block, then does one softmax: 8x, 4x and 2x on 8, 4 and 2 devices), and its
# FLOPs, at most `_RING_WORK["flops"]` times the reference's. The reference's: `REFERENCE_WORK`.
_RING_WORK = {"flops": 2.0, "largest_bytes": 1.5}


def _ring_case(k: int, b: int, h: int) -> Inputs:
    """The inputs on `k` devices, and the right outputs (causal attention over the whole sequence)."""
    mesh = sequence_line_mesh(k)
    q, kk, v = host = _ring_inputs(k, b, h)
    placed = tuple(jax.device_put(a, NamedSharding(mesh, P(SEQUENCE))) for a in host)
    pos = np.arange(q.shape[0])
    want = _attention_np(q, kk, v, pos[None, :] <= pos[:, None])
    return Inputs(mesh, host, placed, want, (q.shape, (SEQUENCE,)), f"q, k, v {q.shape}")


# The collectives: a ppermute over SEQUENCE, no gather of the keys and values.
_RING_COLLECTIVES = Collectives(f"ppermute over '{SEQUENCE}'", why="ring_no_ppermute_why", gathers="ring_gathers")


def _check_causal_ring_attention(fn: Callable) -> None:
    name = "causal_ring_attention"
    judged_on_meshes(
        name, fn, _RING_SHAPES, _ring_case, _ring_known, "ring_generic", _RING_COLLECTIVES, _RING_WORK, _ring_why
    )


def _ring_known(values, host: tuple, k: int) -> str:
    return _ring_nan(values, *host, k) or diagnosed(values, ring_wrongs(*host, k))


def _ring_nan(got, q, k, v, blocks: int) -> str:
    """The hint for NaN rows: the strict mask's (NaN exactly where a block's first query sees no key of its own
    block, the strict mask's values elsewhere), else a fully masked block met while the maximum was -inf."""
    nan = np.isnan(got).any(axis=1)
    if not nan.any():
        return ""
    n = q.shape[0]
    pos = np.arange(n)
    starts = pos % (n // blocks) == 0
    with np.errstate(invalid="ignore", divide="ignore"):
        strict = _attention_np(q, k, v, pos[None, :] < pos[:, None])
    if np.array_equal(nan, starts) and same_values(got[~nan], strict[~nan], 1e-4):
        return say("ring_strict_mask")
    return say("ring_nan")


def _ring_why(fact: str, run: Ran) -> str:
    """What a ring's excess work means, from what its ppermutes carry: the whole sequence's keys or values on
    every device where they travel, a whole sequence's worth of queries or their results where those do."""
    k, b, h = next(s for s in _RING_SHAPES if s[0] == run.k)
    if fact == "flops":
        return say("ring_flops")
    whole = k * b * h * 4
    if run.work.largest_bytes < whole:
        return say("ring_large")
    if any(0 in c for c in run.carried_by("ppermute")):  # arguments q, k, v: the queries (or their results) travel
        return say("ring_holds_queries", whole=whole)
    return say("ring_holds_all", whole=whole)


def _ring_abstract(mesh, k, b, h):
    return tuple(abstract_on(mesh, (k * b, h), P(SEQUENCE)) for _ in range(3))


def _observe_causal_ring_attention(fn: Callable) -> dict:
    """Exported programs of `fn(q, k, v, mesh)` (each P(SEQUENCE)) on 8, 4 and 2 devices, and a structure
    case: the reference's ppermute over SEQUENCE and nothing else."""
    return mesh_programs(fn, _RING_SHAPES, sequence_line_mesh, _ring_abstract, _RING_WORK)


causal_ring_attention = exercise(
    "causal_ring_attention",
    _check_causal_ring_attention,
    observe=_observe_causal_ring_attention,
)
