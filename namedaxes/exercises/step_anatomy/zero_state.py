"""Exercise 2: `zero_specs`, the optimizer state split as ZeRO splits it."""

from __future__ import annotations

from collections.abc import Callable

import jax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from namedaxes import zero as zr
from namedaxes.checking import explained, fail
from namedaxes.checking.compiled import compiled_once
from namedaxes.grading import Case, programs
from namedaxes.judging import COMPILER_OPTIONS, work_of
from namedaxes.meshes import abstract_on

from .running import SPEC_KEYS, STAGES, adam_step_case, exercise
from .text import say

# ---------------------------------------------------------------- 2. zero_specs
_SPLIT = {  # which arrays each stage splits (the stored bytes the check compares)
    1: {"params": False, "grads": False, "opt_state": True},
    2: {"params": False, "grads": True, "opt_state": True},
    3: {"params": True, "grads": True, "opt_state": True},
}
_WANT_COLLECTIVES = {  # the loss's psum beside each stage's reduce-scatter and all-gather
    1: ("all_gather", "psum", "psum_scatter"),
    2: ("all_gather", "psum", "psum_scatter"),
    3: ("all_gather", "psum", "psum_scatter"),
}
# One device's peak memory may be at most this times the reference's: the stages' layouts of the parameters and the
# optimizer state are the programs' signatures, the gradients' only their peak (stage 1's whole gradient, added up
# over the microbatches, holds 1.16x stage 2's at the graded size; the same specs give the same program)
PEAK_FACTOR = 1.1
_WHY = {
    "opt_state": {1: "why_opt_state", 2: "why_opt_state", 3: "why_opt_state"},
    "grads": {1: "why_grads_1", 2: "why_grads_2", 3: "why_grads_2"},
    "params": {1: "why_params_12", 2: "why_params_12", 3: "why_params_3"},
}


def _entries(spec) -> tuple:
    """A spec's entries without its trailing `None`s: `P(ZERO, None)` is `P(ZERO)`, `P(None)` is `P()`."""
    entries = list(spec)
    while entries and entries[-1] is None:
        entries.pop()
    return tuple(entries)


def _specs_of(name_stage: int, got) -> dict:
    if not isinstance(got, dict) or set(got) != set(SPEC_KEYS):
        fail(say("specs_type", stage=name_stage, got=repr(got)[:120]))
    for key in SPEC_KEYS:
        spec = got[key]
        if not isinstance(spec, P) or _entries(spec) not in ((), (zr.ZERO,)):
            fail(say("specs_value", stage=name_stage, key=key, got=repr(spec)[:80]))
    return got


def _split(spec) -> bool:
    return _entries(spec) == (zr.ZERO,)


def _zero_inputs(mesh, specs, d=32, hidden=64, batch=64):
    params, state = zr.place(zr.mlp_params(d, hidden), mesh, specs)
    x, y = zr.regression_data((batch,), d)
    data = [jax.device_put(a, NamedSharding(mesh, P(zr.ZERO))) for a in (x, y)]
    return params, state, *data


def _kinds(compiled, mesh) -> tuple:
    work = work_of(compiled, (zr.ZERO,), (mesh.size,), mesh.size)
    return tuple(sorted(d.split(" over ")[0] for d, _ in work.moved))


def _check_zero_specs(fn: Callable) -> None:
    mesh = zr.zero_mesh()
    for stage in STAGES:
        with explained("zero_specs"):
            specs = _specs_of(stage, fn(stage))
        for key in ("opt_state", "grads", "params"):
            if _split(specs[key]) != _SPLIT[stage][key]:
                got, want = (
                    say("stored_split", n=mesh.size) if s else say("stored_whole")
                    for s in (_split(specs[key]), _SPLIT[stage][key])
                )
                fail(say("specs_stored", stage=stage, key=f"'{key}'", got=got, want=want, why=say(_WHY[key][stage])))
        with jax.set_mesh(mesh):
            args = _zero_inputs(mesh, specs)
            compiled = compiled_once(jax.jit(zr.zero_step(specs, mesh)).lower(*args), COMPILER_OPTIONS)
        kinds = _kinds(compiled, mesh)
        if kinds != _WANT_COLLECTIVES[stage]:
            fail(say("specs_collectives", stage=stage, seen=", ".join(kinds), want=", ".join(_WANT_COLLECTIVES[stage])))


def _zero_case(fn, stage: int, d: int, hidden: int, batch: int) -> Case:
    mesh = zr.zero_mesh()
    specs = fn(stage)
    shapes = {"w1": (d, hidden), "w2": (hidden, d)}
    params = {k: abstract_on(mesh, s, specs["params"]) for k, s in shapes.items()}
    moments = {k: abstract_on(mesh, s, specs["opt_state"]) for k, s in shapes.items()}
    x, y = (abstract_on(mesh, (batch, d), P(zr.ZERO)) for _ in range(2))
    step = zr.zero_step(specs, mesh)

    def exported(params, mu, nu, x, y):  # Adam's state from its moments, given as plain dicts
        state = zr.OPTIMIZER.init(params)
        return step(params, (state[0]._replace(mu=mu, nu=nu), *state[1:]), x, y)

    return adam_step_case(
        mesh,
        exported,
        params,
        moments,
        moments,
        x,
        y,
        draw={"kind": "uniform", "low": 0.0, "high": 1.0},
        rtol=1e-4,
        atol=1e-5,
        only_collectives=True,
        work={"peak_bytes": PEAK_FACTOR},
    )


def _observe_zero_specs(fn: Callable) -> dict:
    """The step each stage's specs give, exported for an MLP of a size the notebook does not show: values,
    input and output layouts, the reference's collectives only, and peak memory within `PEAK_FACTOR`."""
    return programs({f"stage{stage}": _zero_case(fn, stage, 48, 96, 32) for stage in STAGES})


zero_specs = exercise("zero_specs", _check_zero_specs, observe=_observe_zero_specs)
