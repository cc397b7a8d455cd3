"""Exercises of notebook 05 (`05_shard_map`): the named-axis ideas with `jax.shard_map`.

Every answer is a *global* function that takes its mesh as an argument, e.g.
`sharded_scaled_sum(x, mesh)`. The checks build meshes with `jax.make_mesh`
(Explicit axis types, the default on this JAX) over the first k devices and
run each answer under `jax.jit` with the mesh static, so that a `shard_map`
written without `jit` is still compiled once instead of run op by op.

Visible checks use small, readable inputs; `observe` uses seeded random
inputs (`rng(grade_id)`) on meshes of several sizes, and records the axis
names the answer's collectives use (`collective_axes` looks inside
`shard_map` bodies).
"""
from __future__ import annotations

import functools
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from namedaxes import DATA_PARALLEL, DATA_SHARDS, DEVICES, MODEL_REPLICAS, model
from namedaxes.checking import (Exercise, collectives, expect_array, explained, fail, progress_of,
                                same_values, unbound_axis_name)
from namedaxes.grading import Case, programs, spec

__all__ = ["sharded_scaled_sum", "replica_totals", "dp_train_step", "jit_train_step",
           "weighted_total_shard_map", "line_mesh", "grid_mesh", "loss_fn", "sgd_step",
           "weighted_total", "LEARNING_RATE", "progress"]
progress = progress_of(__name__)   # q.progress(): which exercises of the notebook pass

LEARNING_RATE = model.LEARNING_RATE   # the course's reference model: namedaxes.model
# Primitives that name an axis without moving data between devices.
_NOT_COMMUNICATION = {"pvary", "axis_index"}


def _fmt(value) -> str:
    return np.array2string(np.asarray(value), precision=4, threshold=16)


# ---------------------------------------------------------------- meshes and the reference model
def line_mesh(k: int, name: str = DEVICES):
    """A 1-D mesh over the first `k` devices (Explicit axis type, as `jax.make_mesh` makes it)."""
    return jax.make_mesh((k,), (name,), devices=jax.devices()[:k])


def grid_mesh(shape=(2, 4)):
    """A (DATA_SHARDS, MODEL_REPLICAS) mesh over the first rows x columns devices (Explicit)."""
    rows, cols = shape
    return jax.make_mesh((rows, cols), (DATA_SHARDS, MODEL_REPLICAS), devices=jax.devices()[:rows * cols])


loss_fn = model.loss        # mean squared error of w * x + b: the reference model of notebook 04
sgd_step = model.sgd_step   # one plain SGD step on one device: the reference every training answer must match


def weighted_total(w, x_row):
    """The per-device function of the migration exercise (pmap form)."""
    return jax.lax.psum(w * x_row, axis_name=DEVICES)


_reference_step = jax.jit(sgd_step)


@functools.lru_cache(maxsize=None)
def _weighted_total_pmap():
    return jax.pmap(weighted_total, axis_name=DEVICES, in_axes=(None, 0), out_axes=None)


# ---------------------------------------------------------------- running answers
def _shard_map_rules(name: str, mesh=None):
    """This notebook's own translations (shard_map, meshes, specs); `checking.translate` does the rest."""
    names = f" This mesh has the axes {tuple(mesh.axis_names)}." if mesh is not None else ""

    def rule(err: BaseException) -> str | None:
        if type(err) is AssertionError and not str(err):
            return (f"`{name}` stopped with an empty AssertionError from inside JAX. On this JAX that is "
                    f"what a collective (`lax.psum`, `lax.pmean`, ...) inside `jax.shard_map` raises when "
                    f"its axis name is not an axis of the mesh, e.g. a typo such as 'device'. Use the "
                    f"course's constants (`DEVICES`, `DATA_SHARDS`, `MODEL_REPLICAS`, `DATA_PARALLEL`).{names}")
        axis = unbound_axis_name(err)
        if axis is not None:
            return (f"`{name}` calls a collective over '{axis}' where no mesh axis of that name is bound "
                    f"(JAX says: \"{str(err).splitlines()[0]}\"). Collectives work inside the function you give "
                    f"`jax.shard_map`, over the axis names of its `mesh`: put the `lax.psum`/`lax.pmean` in "
                    f"that per-device function, and use the course's constants for the names.{names}")
        if isinstance(err, ValueError):
            return _value_error_message(name, str(err), names)
        return None
    return (rule,)


def _explained(name: str, mesh=None):
    """Run an answer; crashes become readable messages (`checking.explained` plus this notebook's rules)."""
    return explained(name, rules=_shard_map_rules(name, mesh))


def _value_error_message(name: str, text: str, names: str) -> str | None:
    """The message for a shard_map/mesh `ValueError` of `name`, or None for the core to translate."""
    first = text.splitlines()[0] if text else "ValueError"
    if "set_mesh" in text and "jit" in text:
        return (f"`{name}` uses `jax.set_mesh`, which only works outside `jax.jit`, and the check "
                f"runs your function under `jax.jit`. Place the inputs with "
                f"`jax.device_put(x, NamedSharding(mesh, P(...)))` and pass `mesh=mesh` to "
                f"`jax.shard_map` instead.")
    if "does not match the specs of the input" in text:
        return (f"`{name}` failed with JAX's error \"{first[:300]}\". The mesh from "
                f"`jax.make_mesh` has Explicit axes, so `shard_map` checks that each input already "
                f"has the sharding your `in_specs` names. Place the inputs first, e.g. "
                f"`jax.device_put(x, NamedSharding(mesh, P(...)))` with the same spec as in_specs.")
    if "out_specs" in text and ("replicat" in text or "varying" in text):
        return (f"`{name}` failed with JAX's error \"{first[:200]}\": an output's `out_specs` says "
                f"it is the same on every device along some mesh axis, but the value still varies "
                f"along that axis. Either a collective over that axis is missing (e.g. `lax.psum`), "
                f"or that axis belongs in the output's `out_specs`.")
    if "evenly divide" in text:
        return (f"`{name}` failed with JAX's error \"{first[:300]}\": an array dimension cannot be cut "
                f"into that many equal blocks. Split over the `mesh` argument the check passes (it has "
                f"2, 4 or 8 devices), not over a mesh from another cell, and split only the dimension "
                f"the exercise says.{names}")
    if "out_specs" in text or "in_specs" in text:
        return (f"`{name}` failed with JAX's error \"{first[:300]}\". Check that `in_specs` and "
                f"`out_specs` name the mesh's axes for the array dimensions that are split, and "
                f"`P()` for values that are the same on every device.")
    return None


@functools.lru_cache(maxsize=None)
def _jitted(fn: Callable, n_args: int):
    """`fn` compiled with its last argument (the mesh) static: cached per answer."""
    return jax.jit(fn, static_argnums=(n_args - 1,))


def _call(fn: Callable, *args):
    """Run the answer `fn(*args, mesh)` compiled (the mesh is the last argument)."""
    try:
        compiled = _jitted(fn, len(args))
    except TypeError:  # an unhashable callable: compile it without the cache
        compiled = jax.jit(fn, static_argnums=(len(args) - 1,))
    return compiled(*args)


def _communication(fn: Callable, *args) -> set[tuple[str, tuple[str, ...]]]:
    """The collectives of `fn(*args)` that move data between devices."""
    return {(p, axes) for p, axes in collectives(fn, *args) if p not in _NOT_COMMUNICATION}


def _axes_of(found) -> list[str]:
    return sorted({a for _, axes in found for a in axes})


def _seen(found) -> str:
    return ", ".join(f"{p} over {axes}" for p, axes in sorted(found)) or "no collective at all"


def _f32(values) -> jax.Array:
    return jnp.asarray(values, jnp.float32)


# ---------------------------------------------------------------- 1. sharded_scaled_sum
# Visible inputs; the hidden observations use random values of the same shapes (block sizes
# 2, 2 and 3 on 8, 4 and 2 devices), so the compiled answers are reused.
_SCALED_SUM_CASES = [(8, _f32(np.arange(16))), (4, _f32(np.arange(8) * 0.5 - 1.0)),
                     (2, _f32([1.0, -2.0, 3.0, 0.5, 4.0, 1.5]))]

def _check_sharded_scaled_sum(fn: Callable) -> None:
    name = "sharded_scaled_sum"
    for k, x in _SCALED_SUM_CASES:
        mesh = line_mesh(k)
        where = f"(mesh of {k} devices, x = {_fmt(x)})"
        with _explained(name, mesh):
            out = _call(fn, x, mesh)
        expect_array(name, out, dtype=jnp.float32)
        block = x.shape[0] // k
        want = 2.0 * float(np.sum(np.asarray(x, np.float64)))
        if tuple(out.shape) != ():
            hint = ""
            if tuple(out.shape) == (block,):
                hint = (f" Shape ({block},) is one device's block: `lax.psum` adds the blocks of all "
                        f"devices element by element. Sum each block with `jnp.sum` first, then psum "
                        f"the per-device scalars.")
            elif tuple(out.shape) == (k,):
                hint = (" One value per device: with `out_specs=P(DEVICES)` the devices' results are "
                        "put side by side. After a psum every device holds the total: `out_specs=P()`.")
            fail(f"`{name}` should return a scalar (shape ()), the total of 2 * x, but it returned "
                 f"shape {tuple(out.shape)} {where}.{hint}")
        got = float(np.asarray(out))
        if not same_values(got, want, 1e-4, dtype=float):
            first = 2.0 * float(np.sum(np.asarray(x, np.float64)[:block]))
            if same_values(got, want / 2, 1e-4, dtype=float):
                hint = "That is the plain sum of x: multiply by 2.0."
            elif same_values(got, first, 1e-4, dtype=float):
                hint = ("That is only the first device's share (device 0's block). Add the shares of "
                        "all devices with `lax.psum(..., DEVICES)` inside the shard_map.")
            elif same_values(got, want / k, 1e-4, dtype=float):
                hint = "That is the mean of the devices' shares (`lax.pmean`): use `lax.psum` for the total."
            else:
                hint = "If you wrote a number by hand, compute it instead: the check uses several meshes."
            fail(f"`{name}` returned {got:.6g} {where}, but the total of 2 * x is {want:.6g}. {hint}")
    mesh = line_mesh(8)
    x = _f32(np.arange(16))
    with _explained(name):
        found = _communication(lambda v: fn(v, mesh), x)
    if not any(DEVICES in axes for _, axes in found):
        fail(f"`{name}` returns the right total, but it performs {_seen(found)} over '{DEVICES}'. "
             f"The point is the shard_map form: each device sums only its own block, and "
             f"`lax.psum(..., DEVICES)` inside `jax.shard_map` adds the devices' shares.")


def _bound(fn: Callable, mesh):
    """`fn(*args, mesh)` with the mesh fixed: the program a case exports (the mesh is not an input)."""
    return lambda *args: fn(*args, mesh)


def _observe_sharded_scaled_sum(fn: Callable) -> dict:
    """Exported programs of `fn(x, mesh)` on 8, 4 and 2 devices (the grader draws x)."""
    return programs({f"out_k{k}_n{x.shape[0]}": Case(_bound(fn, line_mesh(k)), spec(x.shape, jnp.float32))
                     for k, x in _SCALED_SUM_CASES})


sharded_scaled_sum = Exercise(
    "sharded_scaled_sum", _check_sharded_scaled_sum,
    hints=[
        "Three steps: place x on the mesh split over DEVICES, map a per-block function with "
        "`jax.shard_map(..., mesh=mesh, in_specs=P(DEVICES), out_specs=P())`, and call it.",
        "The per-block function is the one of section 2: a local sum of the block times 2.0, then a "
        "`psum` over DEVICES. That gives a scalar that is the same on every device, which is what "
        "`out_specs=P()` promises.",
        "Build the `NamedSharding` for `jax.device_put` on the `mesh` argument, not on the notebook's "
        "`mesh`. Under `jax.jit`, both `jax.set_mesh` and a plain input on an Explicit mesh fail "
        "(Pitfall 1 and the three ways after it).",
    ],
    observe=_observe_sharded_scaled_sum,
)


# ---------------------------------------------------------------- 2. replica_totals
def _replica_totals_reference(x: np.ndarray, n_replicas: int) -> np.ndarray:
    rows, cols = x.shape
    return x.reshape(rows, n_replicas, cols // n_replicas).sum(axis=1)


# Mesh shapes and x shapes of the visible checks; the hidden observations reuse the shapes.
_REPLICA_CASES = [((2, 4), np.arange(32, dtype=np.float32).reshape(4, 8)),
                  ((4, 2), np.arange(8, dtype=np.float32).reshape(4, 2) - 3.0),
                  ((2, 2), np.asarray([[1.0, 2.0, 10.0, 20.0], [3.0, 4.0, 30.0, 40.0]], np.float32))]


def _placed(x, mesh, spec):
    return jax.device_put(x, NamedSharding(mesh, spec))


def _check_replica_totals(fn: Callable) -> None:
    name = "replica_totals"
    for shape, x_np in _REPLICA_CASES:
        mesh = grid_mesh(shape)
        x = _placed(_f32(x_np), mesh, P(DATA_SHARDS, MODEL_REPLICAS))
        n_data, n_rep = shape
        where = f"({n_data} x {n_rep} mesh, x of shape {x_np.shape})"
        with _explained(name, mesh):
            out = _call(fn, x, mesh)
        expect_array(name, out, dtype=jnp.float32)
        want = _replica_totals_reference(x_np.astype(np.float64), n_rep)
        got_shape = tuple(out.shape)
        if got_shape != want.shape:
            rows, cols = x_np.shape
            if got_shape == (rows, cols):
                hint = (" That is the shape of x: after the psum every device of a row holds the same "
                        "totals, and `out_specs=P(DATA_SHARDS, MODEL_REPLICAS)` puts those copies side by "
                        "side. Keep one copy: `out_specs=P(DATA_SHARDS, None)`.")
            elif got_shape == (rows // n_data, cols // n_rep):
                hint = (" That is one device's block: the rows are still split over DATA_SHARDS, so the "
                        "result's out_specs must name DATA_SHARDS for dimension 0.")
            elif got_shape == (rows // n_data, cols):
                hint = (" That shape is what a sum over DATA_SHARDS gives. Reduce over MODEL_REPLICAS "
                        "only.")
            else:
                hint = ""
            fail(f"`{name}` should return shape {want.shape} {where}: the rows stay split over "
                 f"DATA_SHARDS, and the {n_rep} column blocks are added up. It returned shape "
                 f"{got_shape}.{hint}")
        got = np.asarray(out, np.float64)
        if not same_values(got, want, 1e-4, dtype=float):
            over_both = np.tile(want.reshape(n_data, -1, want.shape[1]).sum(axis=0), (n_data, 1))
            if same_values(got, over_both, 1e-4, dtype=float):
                hint = ("Those are the totals over the whole mesh: reduce over MODEL_REPLICAS only, "
                        "so each data shard keeps its own rows.")
            else:
                hint = "Each device should add its block to the blocks of its row's other devices."
            fail(f"`{name}` has the wrong values {where}: expected {_fmt(want)}, got {_fmt(got)}. {hint}")
    mesh = grid_mesh((2, 4))
    x = _placed(_f32(np.zeros((4, 8))), mesh, P(DATA_SHARDS, MODEL_REPLICAS))
    with _explained(name):
        found = _communication(lambda v: fn(v, mesh), x)
    axes = _axes_of(found)
    if MODEL_REPLICAS not in axes:
        fail(f"`{name}` returns the right values, but it performs {_seen(found)} over "
             f"'{MODEL_REPLICAS}'. Use `jax.shard_map` and let each device add its block to its row "
             f"partners' with `lax.psum(..., MODEL_REPLICAS)`.")
    if DATA_SHARDS in axes:
        fail(f"`{name}` communicates over '{DATA_SHARDS}' too ({_seen(found)}), but the data shards "
             f"never need each other's values here: reduce over MODEL_REPLICAS only.")


def _observe_replica_totals(fn: Callable) -> dict:
    """Exported programs of `fn(x, mesh)`, x placed P(DATA_SHARDS, MODEL_REPLICAS) on three meshes.

    The grader requires the reference's communication (a psum over MODEL_REPLICAS) and nothing over
    DATA_SHARDS (`only_axes`): the rows stay on their data shard."""
    cases = {}
    for shape, x_np in _REPLICA_CASES:
        mesh = grid_mesh(shape)
        placed = spec(x_np.shape, jnp.float32, sharding=NamedSharding(mesh, P(DATA_SHARDS, MODEL_REPLICAS)))
        cases[f"out_{shape[0]}x{shape[1]}_{x_np.shape[0]}x{x_np.shape[1]}"] = Case(_bound(fn, mesh), placed,
                                                                                  only_axes=True)
    return programs(cases)


replica_totals = Exercise(
    "replica_totals", _check_replica_totals,
    hints=[
        "x arrives already placed with P(DATA_SHARDS, MODEL_REPLICAS): inside "
        "`jax.shard_map(..., in_specs=P(DATA_SHARDS, MODEL_REPLICAS))` each device sees one block.",
        "A `psum` over MODEL_REPLICAS adds the blocks of one row of the mesh. Afterwards the result "
        "still differs between data shards, but no longer between replicas: by the `out_specs` rule, "
        "only dimension 0 stays split, over DATA_SHARDS.",
        "`x` is already placed, so no `device_put`; pass the `mesh` argument to `jax.shard_map`. "
        "Section 3's `psum_over` shows the same pattern for the other axis.",
    ],
    observe=_observe_replica_totals,
)


# ---------------------------------------------------------------- 3./4. training steps
def _visible_training_cases():
    x = np.linspace(-1.0, 1.0, 64)
    toy = ({"w": _f32(1.0), "b": _f32(0.0)}, {"x": _f32(x), "y": _f32(2.0 * x + 0.5)})
    r = np.random.RandomState(5)
    x4 = r.uniform(-2.0, 2.0, size=12)
    other = ({"w": _f32(-0.5), "b": _f32(0.25)}, {"x": _f32(x4), "y": _f32(3.0 * x4 - 1.0)})
    return [(8, *toy), (4, *other)]


def _expect_params(name: str, out, where: str) -> None:
    if not isinstance(out, dict) or set(out) != {"w", "b"}:
        kind = f"a dict with keys {sorted(out)}" if isinstance(out, dict) else f"a `{type(out).__name__}`"
        fail(f"`{name}` should return the new parameters as a dict with keys 'w' and 'b' (like `params`), "
             f"but it returned {kind} {where}. `jax.tree.map` over `params` and the gradients keeps the "
             f"structure.")
    for key in ("w", "b"):
        value = out[key]
        expect_array(f"{name}(...)['{key}']", value, dtype=jnp.float32)
        if tuple(value.shape) != ():
            hint = (" One value per device: the new parameters are the same on every device, so their "
                    "`out_specs` is `P()`." if value.ndim == 1 else "")
            fail(f"`{name}(...)['{key}']` should be a scalar like `params['{key}']`, but it has shape "
                 f"{tuple(value.shape)} {where}.{hint}")


def _check_update(name: str, fn: Callable, k: int, params, batch) -> None:
    mesh = line_mesh(k, DATA_PARALLEL)
    where = f"(mesh of {k} devices, {batch['x'].shape[0]} examples)"
    with _explained(name, mesh):
        out = _call(fn, params, batch, mesh)
    _expect_params(name, out, where)
    want = _reference_step(params, batch)
    got = {key: float(np.asarray(out[key])) for key in ("w", "b")}
    ref = {key: float(np.asarray(want[key])) for key in ("w", "b")}
    if all(same_values(got[key], ref[key], 1e-4, dtype=float) for key in ref):
        return
    old = {key: float(np.asarray(params[key])) for key in ("w", "b")}
    step = {key: got[key] - old[key] for key in ref}
    ref_step = {key: ref[key] - old[key] for key in ref}
    if all(same_values(step[key], k * ref_step[key], 1e-4, dtype=float) for key in ref):
        hint = (f"Your update is {k} times too large: the gradients were summed over the {k} devices, not "
                f"averaged. Either a `lax.psum` stands where `lax.pmean` belongs, or you met the "
                f"shard_map trap: `params` enter with `in_specs=P()`, so `jax.grad` with respect to them "
                f"already sums the devices' gradients, and the `pmean` after it changes nothing. "
                f"Make the parameters per-device first (`lax.pcast(params, DATA_PARALLEL, to='varying')`), "
                f"or differentiate the averaged loss `lax.pmean(loss_fn(p, batch), DATA_PARALLEL)`.")
    elif all(same_values(got[key], old[key], 1e-4, dtype=float) for key in ref):
        hint = "The parameters did not change: subtract LEARNING_RATE * gradient from each one."
    elif all(same_values(step[key], ref_step[key] * 100.0, 1e-4, dtype=float) for key in ref):
        hint = "The step is 100 times too large: the learning rate is 0.01."
    elif all(same_values(step[key], -ref_step[key], 1e-4, dtype=float) for key in ref):
        hint = "The step goes the wrong way: subtract the gradient, do not add it."
    else:
        hint = ("Compare with one plain SGD step on one device: "
                "`jax.tree.map(lambda p, g: p - 0.01 * g, params, jax.grad(loss_fn)(params, batch))`.")
    fail(f"`{name}` returned w = {got['w']:.6g}, b = {got['b']:.6g} {where}, but one SGD step on the "
         f"whole batch gives w = {ref['w']:.6g}, b = {ref['b']:.6g}. {hint}")


def _check_dp_train_step(fn: Callable) -> None:
    name = "dp_train_step"
    for k, params, batch in _visible_training_cases():
        _check_update(name, fn, k, params, batch)
    _, params, batch = _visible_training_cases()[0]
    mesh = line_mesh(8, DATA_PARALLEL)
    with _explained(name):
        found = _communication(lambda p, b: fn(p, b, mesh), params, batch)
    if DATA_PARALLEL not in _axes_of(found):
        fail(f"`{name}` returns the right parameters, but it performs {_seen(found)} over "
             f"'{DATA_PARALLEL}'. Here the averaging is yours to write: inside `jax.shard_map`, average "
             f"the gradients with `lax.pmean(..., DATA_PARALLEL)`. (Exercise 4 is where the compiler "
             f"does it for you.)")


def _observe_training(fn: Callable, grade_id: str) -> dict:
    """Exported programs of one step `fn(params, batch, mesh)` on 8, 4 and 2 devices (the grader draws
    params and batch; the new params are compared with the reference step's)."""
    del grade_id
    cases = {}
    for k, n in ((8, 64), (4, 12), (2, 10)):   # the visible checks' shapes, and 2 devices
        params = {"w": spec((), jnp.float32), "b": spec((), jnp.float32)}
        batch = {"x": spec((n,), jnp.float32), "y": spec((n,), jnp.float32)}
        cases[f"k{k}_n{n}"] = Case(_bound(fn, line_mesh(k, DATA_PARALLEL)), params, batch)
    return programs(cases)


def _training_probe():
    _, params, batch = _visible_training_cases()[0]
    return line_mesh(8, DATA_PARALLEL), params, batch


def _observe_dp_train_step(fn: Callable) -> dict:
    return _observe_training(fn, "dp_train_step_update")


dp_train_step = Exercise(
    "dp_train_step", _check_dp_train_step,
    hints=[
        "Place `params` replicated (`P()`) and `batch` split over DATA_PARALLEL, then `jax.shard_map` a "
        "per-device step with `in_specs=(P(), P(DATA_PARALLEL))` and `out_specs=P()`.",
        "In the per-device step, mark the params as varying over DATA_PARALLEL with `lax.pcast` before "
        "`jax.grad` (as `local_gradients` in section 4 does), then `pmean` the local gradients and call "
        "`sgd_update`.",
        "Without the `pcast`, `jax.grad` of the replicated params already sums over devices and your "
        "step comes out k times too large: the check tells you when that happens.",
    ],
    observe=_observe_dp_train_step,
)


def _hlo(fn: Callable, *args) -> str:
    """The compiled program (optimised HLO text) of `fn(*args, mesh)`."""
    try:
        compiled = _jitted(fn, len(args))
    except TypeError:
        compiled = jax.jit(fn, static_argnums=(len(args) - 1,))
    return compiled.lower(*args).compile().as_text()


def _check_jit_train_step(fn: Callable) -> None:
    name = "jit_train_step"
    for k, params, batch in _visible_training_cases():
        _check_update(name, fn, k, params, batch)
    mesh, params, batch = _training_probe()
    with _explained(name):
        found = _communication(lambda p, b: fn(p, b, mesh), params, batch)
    if found:
        fail(f"`{name}` returns the right parameters, but it writes its own collectives ({_seen(found)}). "
             f"In this exercise the compiler does the communication: no `shard_map` and no `lax.pmean`, "
             f"just `jax.jit` of the one-device step applied to sharded arrays.")
    with _explained(name):
        hlo = _hlo(fn, params, batch, mesh)
    if "all-reduce" not in hlo:
        fail(f"`{name}` returns the right parameters, but its compiled program has no all-reduce: "
             f"everything ran without communication, so the batch was not split over the mesh. Place it "
             f"with `jax.device_put(batch, NamedSharding(mesh, P(DATA_PARALLEL)))` (and `params` with "
             f"`P()`) before calling the jitted step.")


def _observe_jit_train_step(fn: Callable) -> dict:
    """Like `dp_train_step`'s; the reference program has no per-device (shard_map) region, so an answer
    that writes one fails the signature, and its compiled all-reduce must be there."""
    return _observe_training(fn, "jit_train_step_all_reduce")


jit_train_step = Exercise(
    "jit_train_step", _check_jit_train_step,
    hints=[
        "No shard_map here: place the inputs on the mesh and call `jax.jit(sgd_step)` on them.",
        "Place the inputs as section 4 places `params_r` and `batch_s`, but with a `NamedSharding` on the "
        "`mesh` argument: `params` replicated, `batch` split over DATA_PARALLEL.",
        "Write no `shard_map` and no `lax.pmean`: the compiler sees that the mean in the loss runs over a "
        "split axis and inserts the all-reduce itself (section 5).",
    ],
    observe=_observe_jit_train_step,
)


# ---------------------------------------------------------------- 5. weighted_total_shard_map
# Visible inputs; the hidden observations use random values of the same shapes.
_WEIGHTED_CASES = [(8, _f32([1.0, 0.5, -1.0]), _f32(np.arange(24).reshape(8, 3))),
                   (4, _f32([2.0, -1.0]), _f32(np.arange(8).reshape(4, 2) / 4.0 - 1.0)),
                   (2, _f32([0.5]), _f32([[3.0], [-1.0]]))]


def _check_weighted_total_shard_map(fn: Callable) -> None:
    name = "weighted_total_shard_map"
    for k, w, x in _WEIGHTED_CASES:
        mesh = line_mesh(k)
        where = f"(mesh of {k} devices, w of shape {tuple(w.shape)}, x of shape {tuple(x.shape)})"
        with _explained(name, mesh):
            out = _call(fn, w, x, mesh)
        expect_array(name, out, dtype=jnp.float32)
        want = np.asarray(_weighted_total_pmap()(w, x))
        got_shape = tuple(out.shape)
        if got_shape != want.shape:
            d = want.shape[0]
            if got_shape == (1, d):
                hint = (" The extra leading 1 is the mapped axis: pmap removed it, so `weighted_total` saw "
                        "rows of shape (d,); shard_map keeps it, so each device's block of x has shape "
                        "(1, d). Take the row (`x_block[0]`) before calling `weighted_total`.")
            elif got_shape == (k, d):
                hint = (" One row per device: that is `out_axes=0`, i.e. `out_specs=P(DEVICES)`. "
                        "`out_axes=None` translates to `out_specs=P()`.")
            else:
                hint = ""
            fail(f"`{name}` should return what the pmap version returns, shape {want.shape} {where}, "
                 f"but it returned shape {got_shape}.{hint}")
        if not same_values(out, want, 1e-4, dtype=float):
            hint = ""
            if same_values(out, want / k, 1e-4, dtype=float):
                hint = "That is the mean over devices: keep `weighted_total`'s `lax.psum`."
            elif same_values(out, np.asarray(w, np.float64) * np.asarray(x, np.float64)[0], 1e-4, dtype=float):
                hint = "That is only device 0's term: the psum over DEVICES is missing."
            fail(f"`{name}` has the wrong values {where}: the pmap version gives {_fmt(want)}, yours "
                 f"gives {_fmt(out)}. {hint}")
    mesh = line_mesh(8)
    w, x = _f32(np.ones(3)), _f32(np.ones((8, 3)))
    with _explained(name):
        found = _communication(lambda a, b: fn(a, b, mesh), w, x)
    if DEVICES not in _axes_of(found):
        fail(f"`{name}` returns the right values, but it performs {_seen(found)} over '{DEVICES}'. "
             f"Keep `weighted_total` (with its `lax.psum`) as the per-device function of `jax.shard_map`.")


def _observe_weighted_total_shard_map(fn: Callable) -> dict:
    """Exported programs of `fn(w, x, mesh)` on 8, 4 and 2 devices (the grader draws w and x)."""
    return programs({f"out_k{k}_d{w.shape[0]}": Case(_bound(fn, line_mesh(k)), spec(w.shape, jnp.float32),
                                                     spec(x.shape, jnp.float32))
                     for k, w, x in _WEIGHTED_CASES})


weighted_total_shard_map = Exercise(
    "weighted_total_shard_map", _check_weighted_total_shard_map,
    hints=[
        "Translate the pmap arguments with the table: `in_axes=(None, 0)` -> `in_specs=(P(), P(DEVICES))`, "
        "`out_axes=None` -> `out_specs=P()`, `axis_name=DEVICES` -> the mesh's axis DEVICES.",
        "Place x with `NamedSharding(mesh, P(DEVICES))` (w can stay as it is: `P()` means whole on every "
        "device). Each device's block of x has shape (1, d): pass its row `x_block[0]` to `weighted_total`.",
        "The first translation in section 6 (`scaled` with `out_axes=None`) has the same shape: a small "
        "wrapper that passes `block[0]` on, the specs from the table, and here the `mesh` argument.",
    ],
    observe=_observe_weighted_total_shard_map,
)
