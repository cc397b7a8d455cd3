"""Exercise 1: `rank_weighted_sum`."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from namedaxes import DEVICES
from namedaxes.checking import same_values
from namedaxes.grading import programs, rng

from .running import diagnosis, exercise, program_cases, run_answer, wrong_values
from .text import TEXT


# ---------------------------------------------------------------- 1. rank_weighted_sum
def weighted_mistakes(xs: np.ndarray) -> list[tuple]:
    """The usual mistakes' results on `x` (k devices' rows): each device's own term, the plain total, positions
    counted from 1, all positions times the device's own `x` (the check's diagnoses, and the grader's)."""
    k = xs.shape[0]
    ranks = np.arange(k).reshape((k,) + (1,) * (xs.ndim - 1))
    return [
        (ranks * xs, "weighted_own_term", {"axis": DEVICES}),
        (np.broadcast_to(xs.sum(axis=0), xs.shape), "weighted_no_weights", {}),
        (np.broadcast_to(((ranks + 1) * xs).sum(axis=0), xs.shape), "weighted_from_one", {}),
        (ranks.sum() * xs, "weighted_ranks_summed", {}),
    ]


def _check_rank_weighted_sum(fn) -> None:
    name = "rank_weighted_sum"
    r = rng("rank_weighted_sum_check")
    for how, k in (("pmap", 8), ("pmap", 4), ("vmap", 5)):
        x = jnp.asarray(r.normal(size=(k, 2)), jnp.float32)
        out = run_answer(name, fn, x, how)
        xs, got = np.asarray(x, np.float64), np.asarray(out, np.float64)
        ranks = np.arange(k)[:, None]
        want = np.broadcast_to((ranks * xs).sum(axis=0), xs.shape)
        if same_values(got, want):
            continue
        wrong_values(name, out, want, how, diagnosis(got, weighted_mistakes(xs), TEXT["weighted_other"]))


def _observe_rank_weighted_sum(fn) -> dict:
    return programs(
        program_cases(fn, [("pmap", 2, None), ("pmap", 4, None), ("pmap", 8, None), ("vmap", 5, None)], (2,))
    )


rank_weighted_sum = exercise("rank_weighted_sum", _check_rank_weighted_sum, observe=_observe_rank_weighted_sum)
