"""Exercise 1: `rank_weighted_sum`."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from namedaxes import DEVICES
from namedaxes.grading import programs, rng

from .running import diagnosis, exercise, expect_mapped_values, program_cases
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


def _weighted_total(x) -> np.ndarray:
    """The sum of every device's `x` times its position, on every device."""
    xs = np.asarray(x, np.float64)
    ranks = np.arange(xs.shape[0])[:, None]
    return np.broadcast_to((ranks * xs).sum(axis=0), xs.shape)


def _weighted_diagnosis(x, out, how: str) -> str:
    del how  # the same mistakes under pmap and vmap
    got, xs = np.asarray(out, np.float64), np.asarray(x, np.float64)
    return diagnosis(got, weighted_mistakes(xs), TEXT["weighted_other"])


def _check_rank_weighted_sum(fn) -> None:
    r = rng("rank_weighted_sum_check")
    cases = [
        (how, jnp.asarray(r.normal(size=(k, 2)), jnp.float32)) for how, k in (("pmap", 8), ("pmap", 4), ("vmap", 5))
    ]
    expect_mapped_values("rank_weighted_sum", fn, cases, _weighted_total, _weighted_diagnosis)


def _observe_rank_weighted_sum(fn) -> dict:
    return programs(
        program_cases(fn, [("pmap", 2, None), ("pmap", 4, None), ("pmap", 8, None), ("vmap", 5, None)], (2,))
    )


rank_weighted_sum = exercise("rank_weighted_sum", _check_rank_weighted_sum, observe=_observe_rank_weighted_sum)
