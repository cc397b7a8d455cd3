"""Exercise 1: `swiglu_block`, a SwiGLU block over data x FSDP x tensor."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

import jax
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from namedaxes import FSDP, MODEL_PARALLEL
from namedaxes.checking import (
    expect_float32,
    explained,
    f32,
    fail,
    fail_values,
    result_layout,
    same_values,
    spec_text,
)
from namedaxes.grading import Case, programs
from namedaxes.judging import work_of
from namedaxes.meshes import abstract_on, describe, with_mesh
from namedaxes.transformer import BATCH, layout_mesh

from .running import exercise, rules
from .text import TEXT, say

# ---------------------------------------------------------------- 1. swiglu_block
# each case: the layout (data, fsdp, tensor) and the sizes (batch, seq, d_model, hidden)
_SWIGLU_CASES = [((2, 2, 2), (8, 4, 16, 32)), ((1, 2, 4), (4, 3, 8, 16)), ((4, 2, 1), (8, 2, 8, 8))]
_WEIGHT_SPECS = {"gate": P(FSDP, MODEL_PARALLEL), "up": P(FSDP, MODEL_PARALLEL), "down": P(MODEL_PARALLEL, FSDP)}


_MANUAL = re.compile(r"manual_axes\s*=\s*\{([^}]*)\}")  # a shard_map region's axes in the lowered module


def _swiglu_inputs(sizes, seed: int = 0):
    b, t, d, f = sizes
    r = np.random.default_rng(70 + b + d + seed)
    x = f32(r.normal(size=(b, t, d)))
    gate, up = (f32(r.normal(size=(d, f)) / np.sqrt(d)) for _ in range(2))
    return x, gate, up, f32(r.normal(size=(f, d)) / np.sqrt(f))


def _silu(a):
    return a / (1.0 + np.exp(-a))


def _swiglu_np(x, gate, up, down, variant: str = "right", tensor: int = 1) -> np.ndarray:
    x, gate, up, down = (np.asarray(a, np.float64) for a in (x, gate, up, down))
    if variant == "swapped":
        return (_silu(x @ up) * (x @ gate)) @ down
    if variant == "no_gate":
        return _silu(x @ up) @ down
    hidden = _silu(x @ gate) * (x @ up)
    if variant == "partial":
        cols = gate.shape[1] // tensor
        return hidden[..., :cols] @ down[:cols]
    return hidden @ down


def _swiglu_placed(mesh, x, gate, up, down):
    on = lambda spec: NamedSharding(mesh, spec)  # noqa: E731
    weights = [jax.device_put(w, on(_WEIGHT_SPECS[k])) for k, w in zip(("gate", "up", "down"), (gate, up, down))]
    return (jax.device_put(x, on(P(BATCH))), *weights)


def _run(name: str, program: Callable, mesh, *args):
    """`jax.jit(program)` lowered, compiled for `args` and run: (its result, the compiled program, the axes
    its `shard_map` regions are written per device over, read from the lowered module as the grader reads
    them)."""
    with explained(name, rules=rules(name)), jax.set_mesh(mesh):
        lowered = jax.jit(program).lower(*args)
        compiled = lowered.compile()
        manual = sorted({a for body in _MANUAL.findall(lowered.as_text()) for a in re.findall(r'"([^"]+)"', body)})
        return compiled(*args), compiled, manual


def _moved(compiled, mesh) -> list[str]:
    names = tuple(mesh.axis_names)
    work = work_of(compiled, names, tuple(mesh.shape[a] for a in names), mesh.size)
    return sorted(d for d, _ in work.moved)


def _expect_swiglu_result(name, out, mesh, x, weights, where) -> None:
    expect_float32(name, out, TEXT, where=where)
    if tuple(out.shape) != x.shape:
        fail(say("shape", name=name, want=x.shape, got=tuple(out.shape), where=where))
    want = _swiglu_np(x, *weights)
    got = np.asarray(out, np.float64)
    if not same_values(got, want, 1e-4):
        tensor = mesh.shape[MODEL_PARALLEL]
        wrongs = [
            (_swiglu_np(x, *weights, "swapped"), "swiglu_swapped"),
            (_swiglu_np(x, *weights, "no_gate"), "swiglu_no_gate"),
            (_swiglu_np(x, *weights, "partial", tensor), "swiglu_partial"),
        ]
        hint = next((say(k) for v, k in wrongs if same_values(got, v, 1e-4)), say("swiglu_generic"))
        fail_values(
            say, "values", want.ravel(), got.ravel(), dtype=float, threshold=12, name=name, where=where, hint=hint
        )
    present = [a for a in BATCH if mesh.shape[a] > 1]
    want_layout = ((present[0] if len(present) == 1 else tuple(present)) if present else None, None, None)
    got_layout = tuple(
        None if e is None else (e if isinstance(e, str) else tuple(a for a in e if mesh.shape[a] > 1) or None)
        for e in result_layout(out)
    )
    got_layout = tuple(e[0] if isinstance(e, tuple) and len(e) == 1 else e for e in got_layout)
    if got_layout != want_layout:
        replicated = say("layout_replicated")
        got, want = spec_text(result_layout(out), replicated), spec_text(want_layout, replicated)
        fail(say("layout", name=name, where=where, got=got, want=want))


def _expect_swiglu_collectives(name, compiled, mesh) -> None:
    seen, mesh_name = _moved(compiled, mesh), describe(mesh)
    listed = say("seen_join").join(seen) or say("seen_nothing")
    gathered = [d for d in seen if d.startswith("all_gather") and MODEL_PARALLEL in d]
    if gathered:
        fail(
            say(
                "swiglu_gathers_tensor",
                name=name,
                mesh=mesh_name,
                seen=say("seen_join").join(gathered),
                tensor=MODEL_PARALLEL,
            )
        )
    need = {f"all_gather over '{FSDP}'": "swiglu_no_gather_why", f"psum over '{MODEL_PARALLEL}'": "swiglu_no_psum_why"}
    for want, why in need.items():
        if want not in seen:
            fail(say("swiglu_missing", name=name, mesh=mesh_name, want=want, seen=listed, why=say(why)))
    others = [d for d in seen if d not in need]
    if others:
        allowed = say("seen_join").join(need)
        fail(say("swiglu_other", name=name, mesh=mesh_name, seen=say("seen_join").join(others), allowed=allowed))


def _check_swiglu_block(fn: Callable) -> None:
    name = "swiglu_block"
    for layout, sizes in _SWIGLU_CASES:
        mesh = layout_mesh(*layout)
        x, *weights = _swiglu_inputs(sizes)
        where = say("where_mesh", mesh=describe(mesh), shapes=f"x {x.shape}, gate {weights[0].shape}")
        out, compiled, manual = _run(name, with_mesh(fn, mesh), mesh, *_swiglu_placed(mesh, x, *weights))
        _expect_swiglu_result(name, out, mesh, x, weights, where)
        if manual:
            fail(say("swiglu_shard_map", name=name, axes=", ".join(repr(a) for a in manual)))
        if layout == _SWIGLU_CASES[0][0]:
            first = compiled, mesh
    _expect_swiglu_collectives(name, *first)


def _swiglu_abstract(mesh, sizes):
    b, t, d, f = sizes
    return (
        abstract_on(mesh, (b, t, d), P(BATCH)),
        abstract_on(mesh, (d, f), _WEIGHT_SPECS["gate"]),
        abstract_on(mesh, (d, f), _WEIGHT_SPECS["up"]),
        abstract_on(mesh, (f, d), _WEIGHT_SPECS["down"]),
    )


def _observe_swiglu_block(fn: Callable) -> dict:
    """Exported programs of `fn(x, gate, up, down, mesh)` on three layouts of (DATA_PARALLEL, FSDP,
    MODEL_PARALLEL), and a structure case on 2 x 2 x 2: the reference's collectives and nothing else, no
    array on a device more than twice the reference's largest."""
    cases = {}
    for layout, sizes in _SWIGLU_CASES:
        mesh = layout_mesh(*layout)
        key = "x".join(map(str, layout))
        context = functools.partial(jax.set_mesh, mesh)  # a PartitionSpec in the answer names this mesh's axes
        cases[key] = Case(with_mesh(fn, mesh), *_swiglu_abstract(mesh, sizes), rtol=1e-4, atol=1e-4, context=context)
    layout, sizes = _SWIGLU_CASES[0]
    mesh = layout_mesh(*layout)
    cases["structure"] = Case(
        with_mesh(fn, mesh),
        *_swiglu_abstract(mesh, sizes),
        context=functools.partial(jax.set_mesh, mesh),
        values=False,
        only_collectives=True,
        work={"largest_bytes": 2.0},
    )
    return programs(cases)


swiglu_block = exercise("swiglu_block", _check_swiglu_block, observe=_observe_swiglu_block)
