"""Exercises of notebook 04 (`04_gradient_averaging`): data-parallel SGD with `lax.pmean`.

The model is a line, `w * x + b`, fitted by mean squared error. Parameters are
a dict `{'w': scalar, 'b': scalar}`; a batch is a dict `{'x': ..., 'y': ...}`
whose leading axis is the examples (a *sharded* batch has one more leading
axis, the devices).

- `loss_fn(params, local_batch)` and `compute_gradients(params, local_batch)`
  are local: the checks call them directly and under
  `jax.pmap(fn, axis_name=DATA_PARALLEL, in_axes=(None, 0))`.
- `parallel_update_step(params, local_batch)` is a per-device function that
  must average gradients over DATA_PARALLEL; the checks run it under that same
  pmap with the default `out_axes=0`, so every device's copy of the new
  parameters is visible (with `out_axes=None` a device that disagrees would go
  unnoticed).
- `train(params, sharded_batch, steps)` runs on the host and returns
  `(final_params, losses)`, `losses[i]` being the full-batch loss *before* step i.

Checks go type -> pytree structure/shape/dtype -> value -> structure
(collectives). Visible checks use small readable inputs; `observe` uses seeded
random inputs (`rng(grade_id)`) on 2, 4 and 8 devices with several per-device
batch sizes.
"""
from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from namedaxes import DATA_PARALLEL, model
from namedaxes.checking import (Exercise, collective_axes, expect_collective, explained, fail, progress_of,
                                same_values, show_values, unbound_axis_name)
from namedaxes.grading import Case, pmapped, programs, spec

__all__ = ["loss_fn", "compute_gradients", "parallel_update_step", "train",
           "LEARNING_RATE", "GRADE_IDS", "progress"]
progress = progress_of(__name__)   # q.progress(): which exercises of the notebook pass

LEARNING_RATE = model.LEARNING_RATE   # the course's reference model: namedaxes.model
PARAM_NAMES = ("w", "b")
BATCH_NAMES = ("x", "y")

GRADE_IDS = {
    "loss_fn": "loss_fn_mean_squared_error",
    "compute_gradients": "compute_gradients_values",
    "parallel_update_step": "update_step_averages_gradients",
    "train": "train_losses_and_params",
}

# (devices, examples per device, trailing shape of x and y) of the hidden observations
_OBSERVED_SHAPES = ((2, 5, ()), (4, 3, (1,)), (8, 2, ()))
# (devices, examples per device, steps) of the hidden train observations
_OBSERVED_TRAIN = ((2, 4, 6), (4, 3, 9), (8, 2, 5))


# ---------------------------------------------------------------- small helpers
def _explained(name: str, *, local: bool = False):
    """Run an answer; crashes become readable messages (`checking.explained` plus the rule for local functions)."""
    def local_collective(err: BaseException) -> str | None:
        axis = unbound_axis_name(err)
        if not local or axis is None:
            return None
        return (f"`{name}` uses a collective over '{axis}', but it is a local function: it sees one "
                f"device's batch and needs no communication. Leave the averaging to "
                f"`parallel_update_step`.")
    return explained(name, run=f"`jax.pmap({name}, axis_name=DATA_PARALLEL, in_axes=(None, 0))`",
                     binds=(DATA_PARALLEL,), rules=(local_collective,))


def _as_batch(x, y) -> dict:
    return {"x": jnp.asarray(x, jnp.float32), "y": jnp.asarray(y, jnp.float32)}


def _as_params(w, b) -> dict:
    return {"w": jnp.asarray(w, jnp.float32), "b": jnp.asarray(b, jnp.float32)}


# ---------------------------------------------------------------- the reference maths (float64)
_ref_loss = model.loss_np
_ref_grads = model.gradients_np


def _full(sharded_batch) -> dict:
    """The whole batch: devices and examples per device merged into one leading axis."""
    return {k: np.asarray(v, float).reshape((-1,) + np.shape(v)[2:]) for k, v in sharded_batch.items()}


def _ref_step(params, sharded_batch, lr: float = LEARNING_RATE) -> dict:
    g = _ref_grads(params, _full(sharded_batch))   # equal shards: mean of device gradients == this
    return {k: params[k] - lr * g[k] for k in PARAM_NAMES}


def _ref_train(params, sharded_batch, steps: int):
    """Final params after `steps` steps, and the full-batch loss before each step (and after the last)."""
    full = _full(sharded_batch)
    losses = []
    for _ in range(steps):
        losses.append(_ref_loss(params, full))
        params = _ref_step(params, sharded_batch)
    losses.append(_ref_loss(params, full))
    return params, np.asarray(losses)


# ---------------------------------------------------------------- structure of the answers
def _type_name(value) -> str:
    return "jax.Array" if isinstance(value, jax.Array) else type(value).__name__


def _expect_scalar(name: str, value, shape=()) -> None:
    if isinstance(value, (np.ndarray, np.generic)) and not isinstance(value, jax.Array):
        fail(f"{name} is a NumPy value (`{type(value).__name__}`); compute it with `jnp` so it is a "
             f"`jax.Array` (NumPy cannot be traced by `jax.grad`, `jax.pmap` or `lax.scan`).")
    if not isinstance(value, jax.Array):
        fail(f"{name} should be a `jax.Array`, but it is a `{type(value).__name__}`: {value!r:.80}")
    if shape is not None and tuple(value.shape) != tuple(shape):
        fail(f"{name} should have shape {tuple(shape)}, but it has shape {tuple(value.shape)}.")
    if np.dtype(value.dtype) != np.float32:
        fail(f"{name} should have dtype float32 (like the parameters and the batch), but it has "
             f"dtype {np.dtype(value.dtype).name}.")


def _expect_param_dict(name: str, value, what: str, shape=(), hint: str = "") -> None:
    """`value` is a dict with exactly the keys 'w' and 'b', each a float32 array of `shape`."""
    if not isinstance(value, dict):
        extra = hint or ""
        fail(f"`{name}` should return {what}: a dict with keys 'w' and 'b' like `params`, but it "
             f"returned a `{_type_name(value)}`. {extra}".strip())
    if set(value) != set(PARAM_NAMES):
        more = ""
        if set(value) == set(BATCH_NAMES):
            more = (" Those are the keys of the batch: differentiate with respect to the first "
                    "argument, `params` (the default of `jax.grad`, `argnums=0`).")
        fail(f"`{name}` should return {what} as a dict with keys ['b', 'w'], but its keys are "
             f"{sorted(map(str, value))}.{more}")
    for key in PARAM_NAMES:
        _expect_scalar(f"`{name}(...)['{key}']`", value[key], shape)


# ---------------------------------------------------------------- exercise 1: loss_fn
def _visible_loss_cases():
    x = np.array([0.0, 1.0, 2.0])
    yield {"w": 2.0, "b": 0.5}, {"x": x, "y": 2 * x + 0.5}           # perfect fit: loss 0
    yield {"w": 1.0, "b": 0.0}, {"x": x, "y": 2 * x + 0.5}           # errors -0.5, -1.5, -2.5
    x2 = np.array([[-1.0], [0.5], [1.5], [3.0]])                     # a trailing feature axis
    yield {"w": -0.5, "b": 1.0}, {"x": x2, "y": np.array([[0.0], [2.0], [1.0], [-1.0]])}


def _diagnose_loss(params, batch, got: float, want: float) -> str:
    x, y = np.asarray(batch["x"], float), np.asarray(batch["y"], float)
    err = params["w"] * x + params["b"] - y
    if same_values(got, np.sum(err ** 2), 1e-4, dtype=float):
        return "That is the sum of squared errors: take the mean (`jnp.mean`), not the sum."
    if same_values(got, np.mean(np.abs(err)), 1e-4, dtype=float):
        return "That is the mean absolute error: square the error instead of taking its absolute value."
    if same_values(got, np.mean(err), 1e-4, dtype=float) or same_values(got, -np.mean(err), 1e-4, dtype=float):
        return "That is the mean error: square it before averaging, `jnp.mean(error ** 2)`."
    if same_values(got, np.sqrt(want), 1e-4, dtype=float):
        return "That is the root of the mean squared error: drop the square root."
    if same_values(got, want / 2, 1e-4, dtype=float):
        return "That is half the mean squared error: drop the factor 1/2."
    return "The loss is `jnp.mean((params['w'] * x + params['b'] - y) ** 2)`."


def _check_loss_fn(fn: Callable) -> None:
    name = "loss_fn"
    for p, b in _visible_loss_cases():
        params, batch = _as_params(p["w"], p["b"]), _as_batch(b["x"], b["y"])
        with _explained(name, local=True):
            out = fn(params, batch)
        where = f"With params {p} and x of shape {np.shape(b['x'])},"
        if isinstance(out, jax.Array) and out.shape != ():
            fail(f"{where} `loss_fn` should return one number (shape ()), but it returned shape "
                 f"{tuple(out.shape)}. Average the squared errors over the examples with `jnp.mean`.")
        _expect_scalar("`loss_fn(params, local_batch)`", out)
        want = _ref_loss(p, b)
        if not same_values(out, want, dtype=float):
            fail(f"{where} `loss_fn` should return {want:.6g}, but it returned {float(out):.6g}. "
                 + _diagnose_loss(p, b, float(out), want))
    # structure: a local function, no communication (inspect it as pmap would run it)
    with _explained(name, local=True):
        axes = collective_axes(fn, params, batch, axis_env=[(DATA_PARALLEL, 4)])
    if axes:
        fail(f"`loss_fn` communicates over {axes}, but it is the loss of one device's batch: "
             f"no collective belongs here (the averaging happens in `parallel_update_step`).")


def _abstract_case(k: int, per: int, trailing=()):
    """Abstract params and sharded batch (shapes and dtypes only: the grader draws the values)."""
    shape = (k, per) + tuple(trailing)
    return ({n: spec((), jnp.float32) for n in PARAM_NAMES},
            {"x": spec(shape, jnp.float32), "y": spec(shape, jnp.float32)})


def _per_device_programs(fn: Callable) -> dict:
    """`fn(params, local_batch)` under `pmap(..., in_axes=(None, 0))` (params replicated), exported."""
    return programs({f"k{k}": Case(pmapped(fn, k, DATA_PARALLEL, in_axes=(None, 0)), *_abstract_case(k, per, trailing))
                     for k, per, trailing in _OBSERVED_SHAPES})


def _observe_loss_fn(fn: Callable) -> dict:
    return _per_device_programs(fn)


loss_fn = Exercise(
    "loss_fn", _check_loss_fn,
    hints=[
        "Predict with `params['w'] * local_batch['x'] + params['b']`, subtract `local_batch['y']`.",
        "Square the error element by element, then average over the examples with `jnp.mean`: the "
        "result is one number, shape `()`.",
        "Use `jnp`, not `np`: `jax.grad` must differentiate `loss_fn` in the next exercise. At the starting "
        "`params`, `loss_fn(params, batch)` is 1.25.",
    ],
    observe=_observe_loss_fn,
)


# ---------------------------------------------------------------- exercise 2: compute_gradients
def _check_compute_gradients(fn: Callable) -> None:
    name = "compute_gradients"
    compiled = jax.jit(fn)   # one compilation per shape instead of op-by-op dispatch: same results, faster
    for p, b in _visible_loss_cases():
        params, batch = _as_params(p["w"], p["b"]), _as_batch(b["x"], b["y"])
        with _explained(name, local=True):
            out = compiled(params, batch)
        hint = ""
        if isinstance(out, tuple) and len(out) == 2 and isinstance(out[1], dict):
            hint = ("It looks like (loss, gradients), what `jax.value_and_grad` returns: use "
                    "`jax.grad`, which returns only the gradients.")
        _expect_param_dict(name, out, "the gradients", hint=hint)
        want = _ref_grads(p, b)
        got = {k: float(out[k]) for k in PARAM_NAMES}
        if not all(same_values(got[k], want[k], dtype=float) for k in PARAM_NAMES):
            fail(f"With params {p} and x of shape {np.shape(b['x'])}, `compute_gradients` should return "
                 f"{{'w': {want['w']:.6g}, 'b': {want['b']:.6g}}}, but it returned "
                 f"{{'w': {got['w']:.6g}, 'b': {got['b']:.6g}}}. Return "
                 f"`jax.grad(loss_fn)(params, local_batch)`; if that is what you wrote, `loss_fn` is "
                 f"wrong: its check says how.")
    with _explained(name, local=True):
        axes = collective_axes(fn, params, batch, axis_env=[(DATA_PARALLEL, 4)])
    if axes:
        fail(f"`compute_gradients` communicates over {axes}, but it should return one device's own "
             f"gradients: the averaging happens in `parallel_update_step`.")


def _observe_per_device_params(fn: Callable, exercise: str, prefix: str) -> dict:
    """Exported programs of `fn(params, local_batch)` under pmap (params replicated): the grader
    compares every device's returned params and reads the pmean's axis from the compiled program."""
    del exercise, prefix
    return _per_device_programs(fn)


def _observe_compute_gradients(fn: Callable) -> dict:
    return _observe_per_device_params(fn, "compute_gradients", "grad")


compute_gradients = Exercise(
    "compute_gradients", _check_compute_gradients,
    hints=[
        "`jax.grad(loss_fn)` is a new function with the same arguments as `loss_fn`; it returns the "
        "gradient with respect to the first argument, `params`, with the same dict structure.",
        "Don't derive the gradient by hand: build the gradient function from `loss_fn` and call it with "
        "the same two arguments. At the starting `params` on the full `batch` you should get about -2.0 "
        "for 'w' and -1.0 for 'b'.",
    ],
    observe=_observe_compute_gradients,
)


# ---------------------------------------------------------------- exercise 3: parallel_update_step
def _visible_step_cases():
    x = np.linspace(-1.5, 1.5, 12)
    yield {"w": 1.0, "b": 0.0}, {"x": x.reshape(4, 3), "y": (2 * x + 0.5).reshape(4, 3)}
    x2 = np.array([-2.0, -1.0, 0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0])
    y2 = np.array([-3.0, -1.0, 1.0, 0.0, 2.0, 2.0, 5.0, 4.0, 7.0, 8.0])
    yield {"w": 0.5, "b": 1.0}, {"x": x2.reshape(2, 5), "y": y2.reshape(2, 5)}


def _run_step(fn: Callable, params, sharded):
    """Every device's copy of the new parameters (default out_axes=0: nothing hidden)."""
    with _explained("parallel_update_step"):
        return jax.pmap(fn, axis_name=DATA_PARALLEL, in_axes=(None, 0))(params, sharded)


def _diagnose_step(p, b, got) -> str:
    """A hint for a replicated, well-shaped, but wrong new `params`."""
    k = np.shape(b["x"])[0]
    g = _ref_grads(p, _full(b))
    if same_values([got[n] for n in PARAM_NAMES], [g[n] for n in PARAM_NAMES], 1e-4, dtype=float):
        return "Those are the averaged gradients: return the updated parameters, `params - 0.01 * grads`."
    if same_values([got[n] for n in PARAM_NAMES], [p[n] for n in PARAM_NAMES], 1e-4, dtype=float):
        return "Those are the unchanged parameters: take the step `params - 0.01 * averaged_grads`."
    moved = np.array([p[n] - got[n] for n in PARAM_NAMES])
    grad = np.array([g[n] for n in PARAM_NAMES])
    usable = np.abs(grad) > 1e-3
    if usable.all():
        rate = moved / grad
        if np.allclose(rate, rate[0], rtol=1e-3, atol=1e-6):
            r = float(rate[0])
            if np.isclose(r, -LEARNING_RATE, rtol=1e-3):
                return "The step went up the gradient: subtract it, `params - 0.01 * grads`."
            if np.isclose(r, LEARNING_RATE * k, rtol=1e-3):
                return (f"The step is {k} times too large, on {k} devices: the gradients were summed "
                        f"(`lax.psum`) but not divided by the number of devices. Use `lax.pmean`, or "
                        f"divide by `lax.psum(1, axis_name=DATA_PARALLEL)`.")
            return (f"The step is {r / LEARNING_RATE:.3g} times the expected one: use the learning rate "
                    f"0.01 and the *mean* of the device gradients (`lax.pmean`; a fixed divisor such "
                    f"as 8 is wrong on {k} devices).")
    return "Step with the averaged gradients: `new = params - 0.01 * lax.pmean(grads, DATA_PARALLEL)`."


def _check_parallel_update_step(fn: Callable) -> None:
    name = "parallel_update_step"
    for p, b in _visible_step_cases():
        params, sharded = _as_params(p["w"], p["b"]), _as_batch(b["x"], b["y"])
        k, per = np.shape(b["x"])[:2]
        where = (f"(run as `jax.pmap({name}, axis_name=DATA_PARALLEL, in_axes=(None, 0))` "
                 f"on {k} devices, {per} examples each)")
        out = _run_step(fn, params, sharded)
        # type, then pytree structure / shape / dtype: pmap stacks one copy per device
        _expect_param_dict(name, out, "the new parameters", shape=None,
                           hint="Return the new parameters, e.g. "
                                "`jax.tree.map(lambda p, g: p - 0.01 * g, params, grads)`.")
        for n in PARAM_NAMES:
            if tuple(out[n].shape[1:]) != ():
                fail(f"On each device, `{name}` should return scalar parameters like `params`, but "
                     f"`['{n}']` has per-device shape {tuple(out[n].shape[1:])} {where}. Did the "
                     f"gradient or the update pick up the batch's shape?")
        # value: every device holds the same new parameters ...
        got = {n: np.asarray(out[n], float) for n in PARAM_NAMES}
        if not all(np.allclose(got[n], got[n][0], rtol=1e-5, atol=1e-6) for n in PARAM_NAMES):
            fail(f"`{name}` returned parameters that differ across devices {where}: "
                 f"w per device {show_values(got['w'], dtype=float)}, "
                 f"b per device {show_values(got['b'], dtype=float)}. The gradients are "
                 f"not averaged: lax.pmean over '{DATA_PARALLEL}' is missing. Each device stepped "
                 f"with its own local gradient; apply `lax.pmean(grads, axis_name=DATA_PARALLEL)` to "
                 f"the gradients from `compute_gradients` (a pmean of the loss inside `jax.grad` does "
                 f"not average them under pmap).")
        # ... and they are one SGD step with the full-batch (= averaged) gradient
        want = _ref_step(p, b)
        first = {n: float(got[n][0]) for n in PARAM_NAMES}
        if not all(same_values(first[n], want[n], dtype=float) for n in PARAM_NAMES):
            fail(f"`{name}` {where}, starting from {p}, should return "
                 f"{{'w': {want['w']:.6g}, 'b': {want['b']:.6g}}} on every device, but it returned "
                 f"{{'w': {first['w']:.6g}, 'b': {first['b']:.6g}}}. " + _diagnose_step(p, b, first))
    # structure: the averaging really is a collective over DATA_PARALLEL
    _expect_averages(fn, params, jax.tree.map(lambda a: a[0], sharded), k)


def _expect_averages(fn: Callable, params, local_batch, k: int) -> None:
    with _explained("parallel_update_step"):
        expect_collective(
            "parallel_update_step", fn, params, local_batch, axis_name=DATA_PARALLEL,
            axis_env=[(DATA_PARALLEL, k)],
            hint=f"The gradients are not averaged: lax.pmean over '{DATA_PARALLEL}' is missing.")


def _observe_parallel_update_step(fn: Callable) -> dict:
    return _observe_per_device_params(fn, "parallel_update_step", "new")


parallel_update_step = Exercise(
    "parallel_update_step", _check_parallel_update_step,
    hints=[
        "Three steps: this device's gradients from `compute_gradients`, their average over all "
        "devices, then the SGD step.",
        "`lax.pmean` over DATA_PARALLEL averages a whole dict of gradients at once; every device gets "
        "the same average.",
        "For the step, `jax.tree.map` with a two-argument function walks `params` and the averaged "
        "gradients together, leaf by leaf: Pitfall 2 does it with made-up gradients "
        "(`jax.tree_map` no longer exists).",
    ],
    observe=_observe_parallel_update_step,
)


# ---------------------------------------------------------------- exercise 4: train
def _visible_train_case():
    x = np.linspace(-1.5, 1.5, 12)
    return {"w": 1.0, "b": 0.0}, {"x": x.reshape(4, 3), "y": (2 * x + 0.5).reshape(4, 3)}, 5


def _check_train(fn: Callable) -> None:
    name = "train"
    p, b, steps = _visible_train_case()
    params, sharded = _as_params(p["w"], p["b"]), _as_batch(b["x"], b["y"])
    k = np.shape(b["x"])[0]
    with _explained(name):
        result = fn(params, sharded, steps)
    call = f"`train(params, sharded_batch, {steps})` ({k} devices, starting from {p})"
    if not (isinstance(result, (tuple, list)) and len(result) == 2):
        fail(f"{call} should return a pair `(final_params, losses)`, but it returned a "
             f"`{_type_name(result)}`" + (f" of length {len(result)}." if isinstance(result, (tuple, list)) else "."))
    new, losses = result
    if isinstance(new, dict) and set(new) == set(PARAM_NAMES) and all(
            isinstance(new[n], jax.Array) and tuple(new[n].shape) == (k,) for n in PARAM_NAMES):
        fail(f"{call} returned one copy of the parameters per device (shape ({k},)). Return a single "
             f"copy: run the step with `out_axes=None` (valid because every device holds the same "
             f"parameters), or take `[0]` of each leaf.")
    _expect_param_dict(name, new, "`final_params` as the first item")
    if isinstance(losses, jax.Array) and losses.ndim == 2 and losses.shape[0] == steps:
        fail(f"{call} returned `losses` of shape {tuple(losses.shape)}: one loss per device and step. "
             f"Return one number per step, the loss of the whole batch (with equal shards, the mean "
             f"of the device losses).")
    if isinstance(losses, jax.Array) and losses.shape != (steps,):
        fail(f"{call} should return `losses` of shape ({steps},), one loss per step, but it has "
             f"shape {tuple(losses.shape)}.")
    _expect_scalar("`losses`", losses, (steps,))
    ref_params, ref_losses = _ref_train(p, b, steps)
    got = {n: float(new[n]) for n in PARAM_NAMES}
    if not all(same_values(got[n], ref_params[n], dtype=float) for n in PARAM_NAMES):
        done = [s for s in (steps - 1, steps + 1, 1) if all(
            same_values(got[n], _ref_train(p, b, s)[0][n], dtype=float) for n in PARAM_NAMES)]
        more = (f"Those are the parameters after {done[0]} step(s): take exactly `steps` steps."
                if done else "Apply `p_update_step` (your `parallel_update_step` under pmap) `steps` times.")
        fail(f"{call} should end at {{'w': {ref_params['w']:.6g}, 'b': {ref_params['b']:.6g}}}, but it "
             f"ended at {{'w': {got['w']:.6g}, 'b': {got['b']:.6g}}}. {more}")
    got_losses = np.asarray(losses, float)
    if not same_values(got_losses, ref_losses[:-1], dtype=float):
        more = ""
        if same_values(got_losses, ref_losses[1:], dtype=float):
            more = ("Those are the losses *after* each step: record the loss of the parameters before "
                    "you update them, so `losses[0]` is the loss of the starting parameters.")
        fail(f"{call} should return losses {show_values(ref_losses[:-1], dtype=float)} "
             f"(the full-batch loss before each "
             f"step), but it returned {show_values(got_losses, dtype=float)}. {more}")


def _observe_train(fn: Callable) -> dict:
    """`train(params, sharded_batch, steps)` compiled as one program per case (`jax.jit`, steps fixed)
    and exported: the grader runs the whole training on its own data and compares the final params
    and the losses (so the loop must stay in JAX: no `float(...)` or `np.asarray` of values in it)."""
    return programs({f"k{k}_steps{steps}": Case(lambda p, b, steps=steps: fn(p, b, steps), *_abstract_case(k, per),
                                                draw={"kind": "normal", "scale": 0.5}, rtol=1e-4, atol=1e-4)
                     for k, per, steps in _OBSERVED_TRAIN})


train = Exercise(
    "train", _check_train,
    hints=[
        "Build the full batch once, before the loop: reshape every array of `sharded_batch` (with "
        "`jax.tree.map`) so that its first two axes become one, e.g. (8, 8) -> (64,). Then, each step, "
        "record the full-batch loss of the current `params` *before* updating them with `p_update_step`.",
        "A Python loop works; `lax.scan(one_step, params, length=steps)` with "
        "`one_step(params, _) -> (new_params, loss)` compiles the whole loop once and is much faster.",
        "Return `(final_params, losses)`, `losses` a `jax.Array` of shape `(steps,)`: "
        "`jnp.stack(list_of_losses)` after a loop, or the second output of `lax.scan`.",
    ],
    observe=_observe_train,
)
