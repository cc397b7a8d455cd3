"""Exercise 1: `mixed_train_step`, bf16 matmuls with float32 parameters."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.extend import core as jcore
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from namedaxes import transformer as tm
from namedaxes.checking import explained, fail
from namedaxes.checking.compiled import compiled_once
from namedaxes.grading import Case, programs
from namedaxes.judging import COMPILER_OPTIONS
from namedaxes.meshes import abstract_on

from .running import adam_step_case, exercise
from .text import say

# ---------------------------------------------------------------- 1. mixed_train_step
CHECK_CONFIG = tm.Config(vocab=32, d_model=16, heads=2, layers=1, seq=8)  # small: a fast compile
_MIXED_LAYOUT = (2, 4, 1)
_MIXED_BATCH = 8
_DOT_RE = re.compile(r"stablehlo\.dot_general[^\n]*?:\s*\(tensor<([^>]*)>,\s*tensor<([^>]*)>\)")


def _to_bf16(tree):
    return jax.tree.map(lambda a: a.astype(jnp.bfloat16), tree)


def _reference_mixed(params, state, window):
    """The solution's step (the values the check compares with)."""

    def loss(p):
        logits = tm.forward(_to_bf16(p), window[:, :-1])
        return tm.cross_entropy(logits.astype(jnp.float32), window[:, 1:])

    value, grads = jax.value_and_grad(loss)(params)
    updates, state = tm.OPTIMIZER.update(grads, state, params)
    return optax.apply_updates(params, updates), state, value


def _mixed_inputs(config, layout, batch, seed=0):
    mesh = tm.layout_mesh(*layout)
    params = tm.place(tm.init_params(config, seed), mesh)
    with jax.set_mesh(mesh):
        state = jax.jit(tm.OPTIMIZER.init)(params)
    window = jax.device_put(tm.batches(config, batch, 1, seed)[0], NamedSharding(mesh, P(tm.BATCH)))
    return mesh, params, state, window


def dot_dtypes(lowered_text: str) -> list[str]:
    """The element types of every matmul's operands in a lowered (StableHLO) module: what the program asks
    for, before a backend's own choices (the CPU computes a bf16 matmul in float32)."""
    return [t.split("x")[-1] for pair in _DOT_RE.findall(lowered_text) for t in pair]


def matmul_mistake(name: str, text: str) -> tuple[str, dict] | None:
    """What a program's matmuls say of its precision, from its StableHLO `text` (`dot_dtypes`): a matmul of
    another type than bf16 or float32, or matmuls with a float32 operand; `(key of TEXT, fields)`, None when
    every matmul is bf16. The visible check reads the program it compiles, the grader's judge the one a
    student exported (`program_mistakes`), so both say the same."""
    dots = dot_dtypes(text)
    others = sorted({d for d in dots if d not in ("bf16", "f32")})
    if others:
        return "mixed_other_dtype", {"name": name, "dtype": others[0]}
    fp32 = sum(1 for i in range(0, len(dots), 2) if "f32" in dots[i : i + 2])
    return ("mixed_fp32_dots", {"name": name, "count": fp32, "total": len(dots) // 2}) if fp32 else None


def softmax_dtypes(fn: Callable, args: tuple, vocab: int) -> set[str]:
    """The element types the step's largest-logit reductions run in (`reduce_max` over a last axis of `vocab`:
    the loss's log-softmax), read from its jaxpr, nested ones included."""
    found: set[str] = set()

    def walk(jaxpr) -> None:
        for eqn in jaxpr.eqns:
            aval = getattr(eqn.invars[0], "aval", None) if eqn.invars else None
            if eqn.primitive.name == "reduce_max" and aval is not None and aval.ndim == 3 and aval.shape[-1] == vocab:
                found.add(str(aval.dtype))
            for value in eqn.params.values():
                for sub in value if isinstance(value, (tuple, list)) else (value,):
                    if isinstance(sub, jcore.ClosedJaxpr):
                        walk(sub.jaxpr)
                    elif isinstance(sub, jcore.Jaxpr):
                        walk(sub)

    walk(jax.make_jaxpr(fn)(*args).jaxpr)
    return found


def _expect_mixed_outputs(name, out, params) -> None:
    if not (isinstance(out, tuple) and len(out) == 3):
        fail(say("result_tuple", name=name, want="(params, state, loss)", got=type(out).__name__))
    new_params, state, loss = out
    for key, a in new_params.items():
        if a.dtype != jnp.float32:
            fail(say("dtype", name=name, what=f"params['{key}']", got=a.dtype, why=say("dtype_master")))
    for a in jax.tree.leaves(state[0].mu) + jax.tree.leaves(state[0].nu):
        if a.dtype != jnp.float32:
            fail(say("dtype", name=name, what="Adam's moments", got=a.dtype, why=say("dtype_state")))
    if jnp.asarray(loss).dtype != jnp.float32:
        fail(say("dtype", name=name, what="the loss", got=jnp.asarray(loss).dtype, why=say("dtype_loss")))


@functools.cache
def _mixed_expected():
    """The check's inputs and the reference step's results on them (computed once per kernel)."""
    mesh, params, state, window = _mixed_inputs(CHECK_CONFIG, _MIXED_LAYOUT, _MIXED_BATCH)
    with jax.set_mesh(mesh):
        want = jax.jit(_reference_mixed).lower(params, state, window).compile(COMPILER_OPTIONS)(params, state, window)
    return mesh, params, state, window, want


def _check_mixed_train_step(fn: Callable) -> None:
    name = "mixed_train_step"
    mesh, params, state, window, want = _mixed_expected()
    with explained(name), jax.set_mesh(mesh):
        lowered = jax.jit(fn).lower(params, state, window)
        out = compiled_once(lowered, COMPILER_OPTIONS)(params, state, window)  # as the grader compiles
    _expect_mixed_outputs(name, out, params)
    found = matmul_mistake(name, lowered.as_text())
    if found is not None:
        fail(say(found[0], **found[1]))
    with jax.set_mesh(mesh):
        if "bfloat16" in softmax_dtypes(fn, (params, state, window), CHECK_CONFIG.vocab):
            fail(say("mixed_logits_bf16", name=name))
    got_leaves = {"loss": out[2], **{f"params['{k}']": v for k, v in out[0].items()}}
    got_leaves.update({f"mu['{k}']": v for k, v in out[1][0].mu.items()})
    want_leaves = {"loss": want[2], **{f"params['{k}']": v for k, v in want[0].items()}}
    want_leaves.update({f"mu['{k}']": v for k, v in want[1][0].mu.items()})
    for key, w in want_leaves.items():
        g, w = np.asarray(got_leaves[key], np.float64), np.asarray(w, np.float64)
        if g.shape != w.shape or not np.allclose(g, w, rtol=1e-3, atol=1e-5):
            diff = float(np.max(np.abs(g - w))) if g.shape == w.shape else float("inf")
            fail(
                say("mixed_values", name=name, mesh=_MIXED_LAYOUT, what=key, diff=f"{diff:.2e}", hint=say("mixed_hint"))
            )


def _mixed_case(fn, config, layout, batch, **kwargs) -> Case:
    mesh = tm.layout_mesh(*layout)
    shapes = tm.shapes(config)
    params = {k: abstract_on(mesh, shapes[k], tm.RULES[k]) for k in shapes}
    window = abstract_on(mesh, (batch, config.seq + 1), P(tm.BATCH), jnp.int32)

    def step(params, window):  # Adam's state made inside: its moments start at zero, as in training
        return fn(params, tm.OPTIMIZER.init(params), window)

    return adam_step_case(
        mesh, step, params, window, draw={"kind": "normal", "scale": 0.5, "high": 27}, rtol=1e-3, atol=1e-5, **kwargs
    )


def _observe_mixed_train_step(fn: Callable) -> dict:
    """Exported steps on two layouts of a hidden model size (values within rtol 1e-3, atol 1e-5 of the
    reference's; the largest array on a device at most twice the reference's)."""
    config = tm.Config(vocab=32, d_model=16, heads=4, layers=1, seq=8)
    return programs(
        {
            "2x4x1": _mixed_case(fn, config, (2, 4, 1), 8, work={"largest_bytes": 2.0}),
            "1x2x4": _mixed_case(fn, config, (1, 2, 4), 4),
        }
    )


mixed_train_step = exercise("mixed_train_step", _check_mixed_train_step, observe=_observe_mixed_train_step)
