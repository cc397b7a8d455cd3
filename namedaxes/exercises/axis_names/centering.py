"""Exercise 3: `center`."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from namedaxes import DEVICES
from namedaxes.checking import examined, expect_communication, explained
from namedaxes.grading import programs, rng

from .running import diagnosis, exercise, expect_mapped_values, program_cases
from .text import TEXT


# ---------------------------------------------------------------- 3. center
def _normal(r, shape) -> jax.Array:
    return jnp.asarray(r.normal(size=shape) * 2.0 + 1.0, jnp.float32)


def center_mistakes(x: np.ndarray) -> list[tuple]:
    """The usual mistakes' results on `x` (k devices' blocks): one mean per column of a block (`jnp.mean(x,
    axis=0)` on blocks of 2 dimensions or more), each device's own mean, a mean per position, the total (the
    check's diagnoses, and the grader's)."""
    k = x.shape[0]
    flat = x.reshape(k, -1)
    found = []
    if x.ndim > 2:
        found.append((x - x.mean(axis=tuple(range(x.ndim - 1))), "center_first_axis", {"block": str(x.shape[1:])}))
    return [
        *found,
        (x - flat.mean(axis=1).reshape((k,) + (1,) * (x.ndim - 1)), "center_local", {"axis": DEVICES}),
        (x - x.mean(axis=0), "center_per_position", {}),
        (x - x.sum(), "center_total", {}),
        (x - k * x.mean(), "center_total", {}),
    ]


def _check_center(fn) -> None:
    name = "center"
    r = rng("center_check")
    # per-device blocks of one and two dimensions, and scalars: at least as varied as the hidden cases
    cases = (
        ("pmap", _normal(r, (8, 3))),
        ("pmap", _normal(r, (4, 3))),
        ("vmap", _normal(r, (5, 3))),
        ("pmap", _normal(r, (4, 2, 3))),
        ("pmap", _normal(r, (2,))),
    )

    def diagnose(x, out, how: str) -> str:
        k = x.shape[0]
        otherwise = TEXT["center_hard_coded"] if how == "vmap" or k != 8 else TEXT["center_other"].format(axis=DEVICES)
        return diagnosis(np.asarray(out), center_mistakes(np.asarray(x)), otherwise)

    expect_mapped_values(name, fn, cases, lambda x: x - x.mean(), diagnose)
    # any collective over DEVICES (pmean, psum, all_gather) that reaches the result, read from the compiled
    # program the grader's way (`namedaxes.judging.examine`): the hidden values cell accepts them all too
    with explained(name):
        facts = examined(jax.pmap(fn, axis_name=DEVICES), cases[0][1])
    expect_communication(name, facts, DEVICES, hint=TEXT["center_structure"])


def _observe_center(fn) -> dict:
    sizes = [(how, k, shape) for k, shape in ((2, (4,)), (4, ()), (8, (2, 3))) for how in ("pmap", "vmap")]
    return programs(program_cases(fn, sizes, (), draw={"kind": "normal", "mean": 1.0, "scale": 2.0}))


center = exercise("center", _check_center, observe=_observe_center)
