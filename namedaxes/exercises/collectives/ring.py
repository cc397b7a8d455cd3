"""Exercise 3, `ring_all_reduce`: an all-reduce built from ppermute steps around the ring."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from jax.sharding import PartitionSpec as P

from namedaxes import DEVICES, meshes
from namedaxes.checking import (
    expect_float32,
    expect_ppermute_in_mesh_order,
    fail,
    same_values,
    show_values,
    which_mistake,
)
from namedaxes.meshes import abstract_on, line_mesh

from .running import (
    COMMON_RULES,
    exercise,
    explained_here,
    judged,
    observe_programs,
    rule_permutation,
    run_answer,
    seen_words,
)
from .text import TEXT, say

# ---------------------------------------------------------------- 3. ring_all_reduce
_RING_CASES = ((8, 8), (4, 8), (2, 6))  # (devices, block length); block lengths divisible by k


def _ring_input(k: int, n: int) -> np.ndarray:
    return (np.arange(k * n, dtype=np.float32) % 5) - 2.0 + np.repeat(np.arange(k, dtype=np.float32), n)


def _psum_reference(x: np.ndarray, k: int) -> np.ndarray:
    total = np.asarray(x, np.float64).reshape(k, -1).sum(axis=0)
    return np.tile(total, k)


def _ring_counts(fn: Callable, k: int, n: int) -> np.ndarray | None:
    """Feed block j = 10**j: digit j of device i's result counts how often it added block j.

    None when the result is not such a count (not linear in the blocks, or a count above 9).
    """
    mesh = line_mesh(k)
    x = np.repeat(10.0 ** np.arange(k), n).astype(np.float32)
    got = np.asarray(run_answer("ring_all_reduce", fn, mesh, meshes.placed(x, mesh, P(DEVICES))), np.float64)
    if got.shape != (k * n,):
        return None
    per_device = got.reshape(k, n)[:, 0]
    if (
        (per_device < 0).any()
        or (per_device >= 2**24).any()
        or (np.abs(per_device - np.round(per_device)) > 1e-3).any()
    ):
        # float32 holds integers exactly only below 2**24: larger counts cannot be read; a fraction
        # (an answer that divides) is no count at all (a relative tolerance would round 1388888.875 to one)
        return None
    digits = np.array([[int(v) // 10**j % 10 for j in range(k)] for v in np.round(per_device)])
    rebuilt = (digits * 10.0 ** np.arange(k)).sum(axis=1)
    return digits if np.array_equal(rebuilt, np.round(per_device)) else None


_MOST_ROUNDS = 8  # the rounds of the ring a step count written as a number can make on the course's meshes


def ring_patterns(k: int) -> list[tuple]:
    """The usual mistakes as the blocks each device adds on a ring of `k`: `(counts, key, fields)`, where
    `counts[i, j]` is how often device i adds block j. The total divided by `k` or by 2, the ring short of
    steps (each device adds its own block and the m - 1 before it, or after it), the own block twice (k
    steps), every block added the same number of times (rounds of the ring) (the check's diagnoses, on its
    counts, and the grader's, on values: `ring_mistakes`)."""
    ones, eye = np.ones((k, k)), np.eye(k)
    found = [(ones / d, "ring_divided", {"divisor": d}) for d in dict.fromkeys((k, 2))]
    for m in range(1, k):
        for way in (1, -1):
            counts = sum(np.roll(eye, way * s, axis=1) for s in range(m))
            found.append((counts, "ring_missing", {"m": m, "k": k}))
    found.append((ones + eye, "ring_own_twice", {}))
    found += [(times * ones, "ring_uniform", {"times": times}) for times in range(2, _MOST_ROUNDS + 1)]
    return found


def ring_mistakes(x, k: int) -> list[tuple]:
    """The usual mistakes' results on `x` (k blocks, one per device, side by side): `ring_patterns` applied to
    the blocks, one block per device as the answer returns them."""
    blocks = np.asarray(x, np.float64).reshape(k, -1)
    return [((counts @ blocks).reshape(-1), key, fields) for counts, key, fields in ring_patterns(k)]


def _ring_diagnosis(counts: np.ndarray, k: int) -> str:
    """What the blocks each device added (`counts`) are: one of `ring_patterns`, else what they show."""
    listed = next(((key, f) for c, key, f in ring_patterns(k) if np.array_equal(counts, c)), None)
    if listed is not None:
        return say(listed[0], **listed[1])
    per_device = counts.sum(axis=1)
    if len(set(per_device.tolist())) > 1:
        return say("ring_uneven")
    if counts.max() <= 1 and per_device[0] < k:
        return say("ring_missing", m=int(per_device[0]), k=k)
    if (counts == counts[0, 0]).all() and counts[0, 0] > 1:
        return say("ring_uniform", times=int(counts[0, 0]))
    if counts.max() > 1:
        return say("ring_repeated")
    return say("ring_generic")


def _ring_failure(fn: Callable, k: int, where: str, want, got, x) -> str:
    """The message for wrong ring values: the total divided (a known mistake of the values, else any factor);
    else which blocks each device added, where that can be read (`_ring_diagnosis`); else the known mistake
    the values are."""

    def values(hint: str) -> str:
        want_, got_ = show_values(want, dtype=float), show_values(got, dtype=float)
        return say("values", name="ring_all_reduce", where=where, want=want_, got=got_, hint=hint)

    want_np, got_np = np.asarray(want, np.float64), np.asarray(got, np.float64)
    found = which_mistake(got_np, ring_mistakes(x, k), 1e-4)
    if found is not None and found[0] == "ring_divided":
        return values(say(found[0], **found[1]))
    if np.all(np.abs(want_np) > 1e-6):
        ratio = got_np / want_np
        factor = float(ratio.flat[0])
        if 1e-6 < abs(factor) < 1 - 1e-4 and np.allclose(ratio, factor, rtol=1e-4, atol=1e-6):
            return values(say("ring_divided", divisor=f"{1 / factor:.4g}"))
    for devices in (k, 4) if k > 4 else (k,):  # counts above 9 cannot be read on 8 devices
        counts = _ring_counts(fn, devices, 8)
        if counts is not None:
            if (counts == 1).all():
                return say("ring_right_on", name="ring_all_reduce", good=devices, k=k)
            wrong = [
                say("ring_counts_device", i=i, counts=list(map(int, row)))
                for i, row in enumerate(counts)
                if (row != 1).any()
            ]
            report = "; ".join(wrong[:3]) + (say("ring_and_more", more=len(wrong) - 3) if len(wrong) > 3 else "")
            return say(
                "ring_counts",
                name="ring_all_reduce",
                devices=devices,
                ones=[1] * devices,
                report=report,
                hint=_ring_diagnosis(counts, devices),
            )
    return values(say("ring_generic") if found is None else say(found[0], **found[1]))


def _check_ring_all_reduce(fn: Callable) -> None:
    name = "ring_all_reduce"
    rules = (rule_permutation,) + COMMON_RULES
    k, n = _RING_CASES[0]
    with explained_here(name, line_mesh(k), rules):  # read from the traced program: one verdict on every JAX line
        expect_ppermute_in_mesh_order(
            name, meshes.program(fn, line_mesh(k)), meshes.placed(_ring_input(k, n), line_mesh(k), P(DEVICES))
        )
    for k, n in _RING_CASES:
        mesh = line_mesh(k)
        x_np = _ring_input(k, n)
        where = say("where_mesh", k=k, what=say("what_ring", n=n, x=show_values(x_np, dtype=float)))
        out = run_answer(name, fn, mesh, meshes.placed(x_np, mesh, P(DEVICES)), rules=rules)
        expect_float32(name, out, TEXT, where=where)
        want = _psum_reference(x_np, k)
        if tuple(out.shape) != want.shape:
            hint = say("ring_one_copy") if tuple(out.shape) == (n,) else ""
            fail(say("shape", name=name, want=want.shape, got=tuple(out.shape), where=where, hint=hint))
        got = np.asarray(out, np.float64)
        if not same_values(got, want, 1e-4):
            fail(_ring_failure(fn, k, where, want, got, x_np))
    k, n = _RING_CASES[-1]
    mesh = line_mesh(k)
    x = meshes.placed(_ring_input(k, n), mesh, P(DEVICES))
    # Read the grader's way on the smallest mesh: one ring step compiles in a fraction of the 8-device
    # program's time, and a ppermute that does not reach the result (discarded, multiplied by zero, beside
    # a total computed outside shard_map) does not reach it on 2 devices either.
    uses = (("ppermute", say("ring_why")),)
    judged(name, fn, mesh, x, ins=(((DEVICES,),),), axis=DEVICES, uses=uses, rules=rules, screen=_only_ppermute)


def _only_ppermute(facts) -> None:
    """No collective over DEVICES but ppermute: what the compiled program performs (the grader's surplus test:
    present is enough to count against)."""
    forbidden = [d for d in facts.present if d.endswith(f" over '{DEVICES}'") and not d.startswith("ppermute ")]
    if forbidden:
        fail(say("ring_forbidden", name="ring_all_reduce", seen=seen_words(forbidden)))


def _observe_ring_all_reduce(fn: Callable) -> dict:
    """Programs on 8, 4 and 2 devices, x placed P(DEVICES); the reference's ppermute is required."""
    cases = {}
    for k, n in _RING_CASES:
        mesh = line_mesh(k)
        cases[f"k{k}_n{n}"] = (mesh, [abstract_on(mesh, (k * n,), P(DEVICES))])
    return observe_programs(fn, cases, structure="k8_n8", only=True)


ring_all_reduce = exercise("ring_all_reduce", _check_ring_all_reduce, observe=_observe_ring_all_reduce)
