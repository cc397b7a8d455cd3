"""Exercises of notebook 04 (`04_gradient_averaging`): data-parallel SGD with `lax.pmean`.

The model is the course's reference model (`namedaxes.model`): a line, `w * x + b`,
fitted by mean squared error with plain SGD at `model.LEARNING_RATE`. Parameters are
a dict `{'w': scalar, 'b': scalar}`; a batch is a dict `{'x': ..., 'y': ...}` whose
leading axis is the examples (a *sharded* batch has one more leading axis, the devices).

What each exercise asks that the notebook does not show verbatim:

- `loss_fn(params, local_batch)`: the loss is stated as a formula; the student writes
  it in `jnp` (the demonstrations only call `model.loss`).
- `compute_gradients(params, local_batch)`: `jax.grad` is shown differentiating the
  *second* argument of another function (`scaled_area`, `argnums=1`); the student must
  see that their loss needs the first, the default (copying `argnums=1` gives the
  gradient with respect to the batch, and the check says so).
- `parallel_update_step(params, local_batch)` returns `(new_params, loss)`: one SGD
  step with the gradients averaged over DATA_PARALLEL, *and* the full-batch loss of
  the incoming parameters, identical on every device, so that training can record it
  without a second pass (a second quantity that needs a collective). The notebook's
  `jax.tree.map` example is a midpoint of two dicts, not an SGD step.
- `train(params, sharded_batch, steps)` returns `(final_params, losses)` with
  `steps + 1` losses: the full-batch loss before each step, then that of
  `final_params`. The step reports the loss of the parameters it is *given*, so the
  last entry needs one more evaluation (e.g. one more call whose new parameters are
  dropped); the notebook shows neither the loop nor `lax.scan`'s form of it.

The first two are local: the checks call them directly and under
`jax.pmap(fn, axis_name=DATA_PARALLEL, in_axes=(None, 0))`. The step runs under
that same pmap with the default `out_axes=0`, so every device's copy of both
results is visible (with `out_axes=None` a device that disagrees would go
unnoticed).

Checks go type -> pytree structure/shape/dtype -> value -> structure
(collectives, and for `train` the per-device program), the structure read the grader's
way (`namedaxes.judging` via `checking.examined`: the exported program compiled, its
collectives read from the optimized HLO, counted only when they reach the results).
Visible checks use small readable inputs. Grading contract:
`observe` records no values; it exports each answer (under the pmap above, or
`train` under `jax.jit` with `steps` fixed) on abstract inputs for 2, 4 and 8
devices and several per-device batch sizes; the clean grader draws the inputs and
compares outputs and communication with the reference program's.

Student-facing strings: every message of this module's checks is a template in
the `TEXT` table below (named `{fields}`, whole sentences), and each exercise's
hints are full strings in its `Exercise(...)`; the logic only picks and fills
templates. The shared core (`namedaxes.checking`) words "not written yet",
unbound axis names and errors in the student's own code.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from namedaxes import DATA_PARALLEL, model
from namedaxes.checking import (
    examined,
    exercises_for,
    expect_communication,
    expect_regions,
    explained,
    fail,
    progress_of,
    same_values,
    show_values,
    unbound_axis_name,
)
from namedaxes.grading import Case, pmapped, programs, spec
from namedaxes.i18n import Messages
from namedaxes.judging import Work, exported_work, work_excess

__all__ = [
    "loss_fn",
    "compute_gradients",
    "parallel_update_step",
    "train",
    "LEARNING_RATE",
    "GRADE_IDS",
    "TEXT",
    "progress",
]
exercise = exercises_for(__name__)  # this notebook's exercises: exercise(name, check, hints=..., observe=...)
progress = progress_of(__name__)  # q.progress(): which exercises of the notebook pass

LEARNING_RATE = model.LEARNING_RATE  # the course's reference model: namedaxes.model
PARAM_NAMES = model.PARAM_NAMES
BATCH_NAMES = ("x", "y")

GRADE_IDS = {
    "loss_fn": "loss_fn_mean_squared_error",
    "compute_gradients": "compute_gradients_values",
    "parallel_update_step": "update_step_averages_gradients",
    "train": "train_losses_and_params",
}

# (devices, examples per device, trailing shape of x and y) of the hidden observations
_OBSERVED_SHAPES = ((2, 5, ()), (4, 3, (1,)), (8, 2, ()))
# How parallel_update_step's work is split (the grader's `Case(work=...)` on every mesh, the visible check on 8
# devices): one device's FLOPs, read from the compiled per-device program, at most `_STEP_FLOPS_FACTOR` times the
# reference's (37 on 8 devices with 2 examples each, measured from the solution notebook's program on jax
# 0.10.2; 47 on jax 0.12.0.1, far below the factor; a test keeps it between 0.9x and 1.3x). All of the batch on
# every device (an all_gather of the shards or a psum of one-hot-placed ones), then the whole batch's gradient,
# costs 7x (8 devices), 3.4x (4) and 1.8x (2: within the factor there, refused on 4 and 8); the equivalent
# answers 1.49x at most (an all_gather of the losses and gradients, 8 devices).
_STEP_FLOPS_FACTOR = 2.5
_STEP_REFERENCE_FLOPS = 37.0
# (devices, examples per device, steps) of the hidden train observations
_OBSERVED_TRAIN = ((2, 4, 6), (4, 3, 9), (8, 2, 5))

# ---------------------------------------------------------------- every student-facing string
TEXT = {
    # crashes
    "local_collective": (
        "`{name}` uses a collective over '{axis}', but it is a local function: it sees one device's "
        "batch and needs no communication. Leave the averaging to `parallel_update_step`."
    ),
    "run_as": "`jax.pmap({name}, axis_name=DATA_PARALLEL, in_axes=(None, 0))`",
    # types, shapes, dtypes
    "numpy_value": (
        "{what} is a NumPy value (`{type}`); compute it with `jnp` so it is a `jax.Array` (NumPy cannot "
        "be traced by `jax.grad`, `jax.pmap` or `lax.scan`)."
    ),
    "not_array": "{what} should be a `jax.Array`, but it is a `{type}`: {value}",
    "wrong_shape": "{what} should have shape {want}, but it has shape {got}.",
    "wrong_dtype": ("{what} should have dtype float32 (like the parameters and the batch), but it has dtype {got}."),
    "not_param_dict": (
        "`{name}` should return {what}: a dict with keys 'w' and 'b' like `params`, but it returned a `{type}`. {hint}"
    ),
    "param_keys": "`{name}` should return {what} as a dict with keys ['b', 'w'], but its keys are {keys}.{hint}",
    "batch_keys": (
        " Those are the keys of the batch: differentiate with respect to the first argument, `params` "
        "(the default of `jax.grad`, `argnums=0`)."
    ),
    # 1. loss_fn
    "loss_where": "With params {params} and x of shape {shape},",
    "loss_not_scalar": (
        "{where} `loss_fn` should return one number (shape ()), but it returned shape {got}. Average "
        "the squared errors over the examples with `jnp.mean`."
    ),
    "loss_value": "{where} `loss_fn` should return {want}, but it returned {got}. {hint}",
    "loss_sum": "That is the sum of squared errors: take the mean (`jnp.mean`), not the sum.",
    "loss_abs": "That is the mean absolute error: square the error instead of taking its absolute value.",
    "loss_mean_error": "That is the mean error: square it before averaging, `jnp.mean(error ** 2)`.",
    "loss_root": "That is the root of the mean squared error: drop the square root.",
    "loss_half": "That is half the mean squared error: drop the factor 1/2.",
    "loss_other": (
        "The loss is the mean over the examples of (w * x + b - y) squared: predict, subtract y, square, average."
    ),
    "the_loss": "`loss_fn(params, local_batch)`",
    # 2. compute_gradients
    "grads_value_and_grad": (
        "It looks like (loss, gradients), what `jax.value_and_grad` returns: use `jax.grad`, which "
        "returns only the gradients."
    ),
    "the_gradients": "the gradients",
    "grads_value": (
        "With params {params} and x of shape {shape}, `compute_gradients` should return {want}, but it "
        "returned {got}. Differentiate `loss_fn` with `jax.grad`; if that is what you wrote, `loss_fn` "
        "is wrong: its check says how."
    ),
    "pair_value": "{{'w': {w}, 'b': {b}}}",
    # 3. parallel_update_step
    "step_where": (
        "(run as `jax.pmap({name}, axis_name=DATA_PARALLEL, in_axes=(None, 0))` on {k} devices, {per} examples each)"
    ),
    "step_not_pair": ("`{name}` should return a pair `(new_params, loss)`, but it returned a `{type}` {where}.{hint}"),
    "step_only_params": (
        " That looks like the new parameters alone: return them together with the full-batch loss of "
        "the parameters you were given."
    ),
    "step_the_new_params": "the new parameters as the first item",
    "step_new_params_hint": "Return the new parameters, e.g. `jax.tree.map(lambda p, g: ..., params, grads)`.",
    "step_param_shape": (
        "On each device, `{name}` should return scalar parameters like `params`, but `['{key}']` has "
        "per-device shape {shape} {where}. Did the gradient or the update pick up the batch's shape?"
    ),
    "step_loss_shape": (
        "On each device, the loss `{name}` returns should be one number (shape ()), but it has "
        "per-device shape {shape} {where}."
    ),
    "step_params_differ": (
        "`{name}` returned parameters that differ across devices {where}: w per device {w}, b per device "
        "{b}. The gradients are not averaged: lax.pmean over '{axis}' is missing. Each device stepped "
        "with its own local gradient; average the gradients from `compute_gradients` over "
        "DATA_PARALLEL (a pmean of the loss inside `jax.grad` does not average them under pmap)."
    ),
    "step_params_value": (
        "`{name}` {where}, starting from {start}, should return new parameters {want} on every device, "
        "but it returned {got}. {hint}"
    ),
    "step_averaged_grads": "Those are the averaged gradients: return the updated parameters, `params - 0.01 * grads`.",
    "step_unchanged": "Those are the unchanged parameters: take the step `params - 0.01 * averaged_grads`.",
    "step_up": "The step went up the gradient: subtract it, `params - 0.01 * grads`.",
    "step_summed": (
        "The step is {k} times too large, on {k} devices: the gradients were summed (`lax.psum`) but not "
        "divided by the number of devices. Use `lax.pmean`, or divide by "
        "`lax.psum(1, axis_name=DATA_PARALLEL)`."
    ),
    "step_rate": (
        "The step is {ratio} times the expected one: use the learning rate 0.01 and the *mean* of the "
        "device gradients (`lax.pmean`; a fixed divisor such as 8 is wrong on {k} devices)."
    ),
    "step_other": "Step with the averaged gradients: `new = params - 0.01 * averaged_grads`.",
    "step_loss_differs": (
        "`{name}` returned a loss that differs across devices {where}: {losses}. That is each device's "
        "loss on its own shard; the loss to return is the full-batch loss, the same on every device "
        "(with equal shards, the mean of the device losses)."
    ),
    "step_loss_value": (
        "`{name}` {where}, starting from {start}, should return the full-batch loss {want} of the "
        "parameters it was given, but it returned {got}. {hint}"
    ),
    "step_loss_after": "That is the loss *after* the step: return the loss of the incoming `params`.",
    "step_loss_summed": ("That is {k} times the full-batch loss: the device losses were summed, not averaged."),
    "step_loss_other": "Average the devices' losses of the incoming `params` over DATA_PARALLEL.",
    "step_no_average": "The gradients are not averaged: lax.pmean over '{axis}' is missing.",
    "step_whole_batch": (
        "`{name}` returns the right step with a collective over '{axis}', but one device computes {ratio}× the "
        "reference's FLOPs on {k} devices ({got} against {want}, read from the compiled per-device program; at "
        "most {factor}× is allowed): every device holds all of the batch and computes the whole batch's "
        "gradient. Each device differentiates on its own shard only; `lax.pmean` averages the few numbers "
        "that come out (the loss and the gradients)."
    ),
    # 4. train
    "train_call": "`train(params, sharded_batch, {steps})` ({k} devices, starting from {start})",
    "train_not_pair": "{call} should return a pair `(final_params, losses)`, but it returned a `{type}`{length}",
    "train_length": " of length {n}.",
    "train_per_device_params": (
        "{call} returned one copy of the parameters per device (shape ({k},)). Return a single copy: run "
        "the step with `out_axes=None` (valid because every device holds the same parameters), or take "
        "`[0]` of each leaf."
    ),
    "train_final": "`final_params` as the first item",
    "train_losses_per_device": (
        "{call} returned `losses` of shape {shape}: one loss per device and step. Return one number per "
        "entry, the loss of the whole batch (with equal shards, the mean of the device losses)."
    ),
    "train_losses_shape": (
        "{call} should return `losses` of shape ({n},): the full-batch loss before each of the {steps} "
        "steps, then the loss of `final_params`. It has shape {shape}.{hint}"
    ),
    "train_losses_one_short": " One entry short: the loss of `final_params` is missing at the end.",
    "train_losses_no_start": (
        " One entry short: the loss of the starting `params`, before the first step, is missing at the start."
    ),
    "train_losses_one_short_other": " One entry short.",
    "the_losses": "`losses`",
    "train_params": "{call} should end at {want}, but it ended at {got}. {more}",
    "train_steps_off": "Those are the parameters after {n} step(s): take exactly `steps` steps.",
    "train_apply_step": "Apply `p_update_step` (your `parallel_update_step` under pmap) `steps` times.",
    "train_losses": (
        "{call} should return losses {want} (the full-batch loss before each step, then that of "
        "`final_params`), but it returned {got}. {more}"
    ),
    "train_losses_last": (
        "All entries but the last are right. The last is the loss of `final_params` on the whole batch, "
        "not on one device's shard, and not the loss before the last step."
    ),
    "train_parallel": (
        "Train with `p_update_step`, your `parallel_update_step` under `jax.pmap`: each device "
        "steps on its own shard of the batch, and the step's collective averages the gradients."
    ),
    "train_losses_after": (
        "Those are the losses *after* each step: record the loss of the parameters before you update "
        "them, so `losses[0]` is the loss of the starting parameters."
    ),
}
TEXT = Messages(TEXT)  # the table above, each lookup in the kernel's language


_say = TEXT.say  # a template of this module's TEXT, in the kernel's language, filled in


def _pair(values: dict) -> str:
    return _say("pair_value", w=f"{values['w']:.6g}", b=f"{values['b']:.6g}")


# ---------------------------------------------------------------- small helpers
def _explained(name: str, *, local: bool = False):
    """Run an answer; crashes become readable messages (`checking.explained` plus the rule for local functions)."""

    def local_collective(err: BaseException) -> str | None:
        axis = unbound_axis_name(err)
        if not local or axis is None:
            return None
        return _say("local_collective", name=name, axis=axis)

    return explained(name, run=_say("run_as", name=name), binds=(DATA_PARALLEL,), rules=(local_collective,))


def _as_batch(x, y) -> dict:
    return {"x": jnp.asarray(x, jnp.float32), "y": jnp.asarray(y, jnp.float32)}


def _as_params(w, b) -> dict:
    return {"w": jnp.asarray(w, jnp.float32), "b": jnp.asarray(b, jnp.float32)}


# ---------------------------------------------------------------- the reference maths (float64, namedaxes.model)
_ref_loss = model.loss_np
_ref_grads = model.gradients_np
_ref_sgd = model.sgd_step_np


def _full(sharded_batch) -> dict:
    """The whole batch: devices and examples per device merged into one leading axis."""
    return {k: np.asarray(v, float).reshape((-1,) + np.shape(v)[2:]) for k, v in sharded_batch.items()}


def _ref_step(params, sharded_batch) -> dict:
    return _ref_sgd(params, _full(sharded_batch))  # equal shards: mean of device gradients == full batch


def _ref_train(params, sharded_batch, steps: int):
    """Final params after `steps` steps, and the full-batch loss before each step (and after the last)."""
    full = _full(sharded_batch)
    losses = []
    for _ in range(steps):
        losses.append(_ref_loss(params, full))
        params = _ref_sgd(params, full)
    losses.append(_ref_loss(params, full))
    return params, np.asarray(losses)


# ---------------------------------------------------------------- structure of the answers
def _type_name(value) -> str:
    return "jax.Array" if isinstance(value, jax.Array) else type(value).__name__


def _expect_scalar(what: str, value, shape=()) -> None:
    if isinstance(value, (np.ndarray, np.generic)) and not isinstance(value, jax.Array):
        fail(_say("numpy_value", what=what, type=type(value).__name__))
    if not isinstance(value, jax.Array):
        fail(_say("not_array", what=what, type=type(value).__name__, value=f"{value!r:.80}"))
    if shape is not None and tuple(value.shape) != tuple(shape):
        fail(_say("wrong_shape", what=what, want=tuple(shape), got=tuple(value.shape)))
    if np.dtype(value.dtype) != np.float32:
        fail(_say("wrong_dtype", what=what, got=np.dtype(value.dtype).name))


def _expect_param_dict(name: str, value, what: str, shape=(), hint: str = "") -> None:
    """`value` is a dict with exactly the keys 'w' and 'b', each a float32 array of `shape`."""
    if not isinstance(value, dict):
        fail(_say("not_param_dict", name=name, what=what, type=_type_name(value), hint=hint).strip())
    if set(value) != set(PARAM_NAMES):
        more = _say("batch_keys") if set(value) == set(BATCH_NAMES) else ""
        fail(_say("param_keys", name=name, what=what, keys=sorted(map(str, value)), hint=more))
    for key in PARAM_NAMES:
        _expect_scalar(f"`{name}(...)['{key}']`", value[key], shape)


# ---------------------------------------------------------------- exercise 1: loss_fn
def _visible_loss_cases():
    x = np.array([0.0, 1.0, 2.0])
    yield {"w": 2.0, "b": 0.5}, {"x": x, "y": 2 * x + 0.5}  # perfect fit: loss 0
    yield {"w": 1.0, "b": 0.0}, {"x": x, "y": 2 * x + 0.5}  # errors -0.5, -1.5, -2.5
    x2 = np.array([[-1.0], [0.5], [1.5], [3.0]])  # a trailing feature axis
    yield {"w": -0.5, "b": 1.0}, {"x": x2, "y": np.array([[0.0], [2.0], [1.0], [-1.0]])}


def _diagnose_loss(params, batch, got: float, want: float) -> str:
    x, y = np.asarray(batch["x"], float), np.asarray(batch["y"], float)
    err = params["w"] * x + params["b"] - y
    if same_values(got, np.sum(err**2), 1e-4, dtype=float):
        return _say("loss_sum")
    if same_values(got, np.mean(np.abs(err)), 1e-4, dtype=float):
        return _say("loss_abs")
    if same_values(got, np.mean(err), 1e-4, dtype=float) or same_values(got, -np.mean(err), 1e-4, dtype=float):
        return _say("loss_mean_error")
    if same_values(got, np.sqrt(want), 1e-4, dtype=float):
        return _say("loss_root")
    if same_values(got, want / 2, 1e-4, dtype=float):
        return _say("loss_half")
    return _say("loss_other")


def _check_loss_fn(fn: Callable) -> None:
    name = "loss_fn"
    for p, b in _visible_loss_cases():
        params, batch = _as_params(p["w"], p["b"]), _as_batch(b["x"], b["y"])
        with _explained(name, local=True):
            out = fn(params, batch)
        where = _say("loss_where", params=p, shape=np.shape(b["x"]))
        if isinstance(out, jax.Array) and out.shape != ():
            fail(_say("loss_not_scalar", where=where, got=tuple(out.shape)))
        _expect_scalar(_say("the_loss"), out)
        want = _ref_loss(p, b)
        if not same_values(out, want, dtype=float):
            fail(
                _say(
                    "loss_value",
                    where=where,
                    want=f"{want:.6g}",
                    got=f"{float(out):.6g}",
                    hint=_diagnose_loss(p, b, float(out), want),
                )
            )
    # structure: a local function (its direct calls above bind no axis, so any collective over DATA_PARALLEL
    # has already failed them; the grader exports it on one device too: see `_per_device_programs`)


def _abstract_case(k: int, per: int, trailing=()):
    """Abstract params and sharded batch (shapes and dtypes only: the grader draws the values)."""
    shape = (k, per) + tuple(trailing)
    return (
        {n: spec((), jnp.float32) for n in PARAM_NAMES},
        {"x": spec(shape, jnp.float32), "y": spec(shape, jnp.float32)},
    )


def _per_device_programs(fn: Callable, local: bool = False, work: dict | None = None) -> dict:
    """`fn(params, local_batch)` under `pmap(..., in_axes=(None, 0))` (params replicated), exported: the
    grader compares every device's outputs and reads the collectives' axes from the compiled program.
    `local`: also `fn` itself on one device's batch, with no axis bound (a local function must run there,
    as the notebook runs it: a collective, even one whose result is unused, fails to export, as it fails
    the visible check's direct calls). `work`: how each pmapped case's work is judged (`Case(work=...)`)."""
    cases = {
        f"k{k}": Case(pmapped(fn, k, DATA_PARALLEL, in_axes=(None, 0)), *_abstract_case(k, per, trailing), work=work)
        for k, per, trailing in _OBSERVED_SHAPES
    }
    if local:
        params, sharded = _abstract_case(1, 5, ())
        cases["local"] = Case(fn, params, {k: spec(v.shape[1:], v.dtype) for k, v in sharded.items()})
    return programs(cases)


def _local_programs(fn: Callable) -> dict:
    return _per_device_programs(fn, local=True)


def _step_programs(fn: Callable) -> dict:
    """parallel_update_step's programs: each device's share of the work judged (`_STEP_FLOPS_FACTOR`)."""
    return _per_device_programs(fn, work={"flops": _STEP_FLOPS_FACTOR})


loss_fn = exercise(
    "loss_fn",
    _check_loss_fn,
    hints=[
        "The loss is one number per batch: how far the line's predictions are from `y`, each miss "
        "squared, averaged over the examples. Which `jnp` function averages over the examples?",
        "Predict with `params['w'] * local_batch['x'] + params['b']`, subtract `local_batch['y']`, square "
        "element by element, then average with `jnp.mean`: the result has shape `()`.",
        "Use `jnp`, not `np`: `jax.grad` must differentiate `loss_fn` in the next exercise. At the starting "
        "`params`, `loss_fn(params, batch)` is 1.25.",
    ],
    observe=_local_programs,
)


# ---------------------------------------------------------------- exercise 2: compute_gradients
def _check_compute_gradients(fn: Callable) -> None:
    name = "compute_gradients"
    compiled = jax.jit(fn)  # one compilation per shape instead of op-by-op dispatch: same results, faster
    for p, b in _visible_loss_cases():
        params, batch = _as_params(p["w"], p["b"]), _as_batch(b["x"], b["y"])
        with _explained(name, local=True):
            out = compiled(params, batch)
        hint = ""
        if isinstance(out, tuple) and len(out) == 2 and isinstance(out[1], dict):
            hint = _say("grads_value_and_grad")
        _expect_param_dict(name, out, _say("the_gradients"), hint=hint)
        want = _ref_grads(p, b)
        got = {k: float(out[k]) for k in PARAM_NAMES}
        if not all(same_values(got[k], want[k], dtype=float) for k in PARAM_NAMES):
            fail(_say("grads_value", params=p, shape=np.shape(b["x"]), want=_pair(want), got=_pair(got)))


compute_gradients = exercise(
    "compute_gradients",
    _check_compute_gradients,
    hints=[
        "The cell above differentiates `scaled_area` with respect to its second argument. Which function "
        "do you differentiate here, and which of its arguments holds the parameters?",
        "`params` is `loss_fn`'s first argument: what does `argnums` default to? Differentiating with "
        "respect to `local_batch` would give a dict with the batch's keys 'x' and 'y'. Call the new "
        "function with both arguments.",
        "Don't derive the gradient by hand. At the starting `params` on the full `batch` you should get "
        "about -2.0 for 'w' and -1.0 for 'b'.",
    ],
    observe=_local_programs,
)


# ---------------------------------------------------------------- exercise 3: parallel_update_step
def _visible_step_cases():
    x = np.linspace(-1.5, 1.5, 12)
    yield {"w": 1.0, "b": 0.0}, {"x": x.reshape(4, 3), "y": (2 * x + 0.5).reshape(4, 3)}
    x2 = np.array([-2.0, -1.0, 0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0])
    y2 = np.array([-3.0, -1.0, 1.0, 0.0, 2.0, 2.0, 5.0, 4.0, 7.0, 8.0])
    yield {"w": 0.5, "b": 1.0}, {"x": x2.reshape(2, 5), "y": y2.reshape(2, 5)}


def _run_step(fn: Callable, params, sharded):
    """Every device's copy of both results (default out_axes=0: nothing hidden)."""
    with _explained("parallel_update_step"):
        return jax.pmap(fn, axis_name=DATA_PARALLEL, in_axes=(None, 0))(params, sharded)


def _diagnose_step(p, b, got) -> str:
    """A hint for replicated, well-shaped, but wrong new `params`."""
    k = np.shape(b["x"])[0]
    g = _ref_grads(p, _full(b))
    if same_values([got[n] for n in PARAM_NAMES], [g[n] for n in PARAM_NAMES], 1e-4, dtype=float):
        return _say("step_averaged_grads")
    if same_values([got[n] for n in PARAM_NAMES], [p[n] for n in PARAM_NAMES], 1e-4, dtype=float):
        return _say("step_unchanged")
    moved = np.array([p[n] - got[n] for n in PARAM_NAMES])
    grad = np.array([g[n] for n in PARAM_NAMES])
    if (np.abs(grad) > 1e-3).all():
        rate = moved / grad
        if np.allclose(rate, rate[0], rtol=1e-3, atol=1e-6):
            r = float(rate[0])
            if np.isclose(r, -LEARNING_RATE, rtol=1e-3):
                return _say("step_up")
            if np.isclose(r, LEARNING_RATE * k, rtol=1e-3):
                return _say("step_summed", k=k)
            return _say("step_rate", ratio=f"{r / LEARNING_RATE:.3g}", k=k)
    return _say("step_other")


def _diagnose_loss_of_step(p, b, got: float) -> str:
    k = np.shape(b["x"])[0]
    full = _full(b)
    if same_values(got, _ref_loss(_ref_step(p, b), full), 1e-4, dtype=float):
        return _say("step_loss_after")
    if same_values(got, k * _ref_loss(p, full), 1e-4, dtype=float):
        return _say("step_loss_summed", k=k)
    return _say("step_loss_other")


def _check_parallel_update_step(fn: Callable) -> None:
    name = "parallel_update_step"
    for p, b in _visible_step_cases():
        params, sharded = _as_params(p["w"], p["b"]), _as_batch(b["x"], b["y"])
        k, per = np.shape(b["x"])[:2]
        where = _say("step_where", name=name, k=k, per=per)
        out = _run_step(fn, params, sharded)
        # type, then pytree structure / shape / dtype: pmap stacks one copy per device
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            hint = _say("step_only_params") if isinstance(out, dict) else ""
            fail(_say("step_not_pair", name=name, type=_type_name(out), where=where, hint=hint))
        new, loss = out
        _expect_param_dict(name, new, _say("step_the_new_params"), shape=None, hint=_say("step_new_params_hint"))
        for n in PARAM_NAMES:
            if tuple(new[n].shape[1:]) != ():
                fail(_say("step_param_shape", name=name, key=n, shape=tuple(new[n].shape[1:]), where=where))
        _expect_scalar(f"`{name}(...)[1]`", loss, shape=None)
        if tuple(loss.shape[1:]) != ():
            fail(_say("step_loss_shape", name=name, shape=tuple(loss.shape[1:]), where=where))
        # value: every device holds the same new parameters ...
        got = {n: np.asarray(new[n], float) for n in PARAM_NAMES}
        if not all(np.allclose(got[n], got[n][0], rtol=1e-5, atol=1e-6) for n in PARAM_NAMES):
            fail(
                _say(
                    "step_params_differ",
                    name=name,
                    where=where,
                    w=show_values(got["w"], dtype=float),
                    b=show_values(got["b"], dtype=float),
                    axis=DATA_PARALLEL,
                )
            )
        # ... and they are one SGD step with the full-batch (= averaged) gradient
        want = _ref_step(p, b)
        first = {n: float(got[n][0]) for n in PARAM_NAMES}
        if not all(same_values(first[n], want[n], dtype=float) for n in PARAM_NAMES):
            fail(
                _say(
                    "step_params_value",
                    name=name,
                    where=where,
                    start=p,
                    want=_pair(want),
                    got=_pair(first),
                    hint=_diagnose_step(p, b, first),
                )
            )
        # the loss: the same on every device, the full-batch loss of the incoming params
        losses = np.asarray(loss, float)
        if not np.allclose(losses, losses[0], rtol=1e-5, atol=1e-6):
            fail(_say("step_loss_differs", name=name, where=where, losses=show_values(losses, dtype=float)))
        want_loss = _ref_loss(p, _full(b))
        if not same_values(losses[0], want_loss, dtype=float):
            fail(
                _say(
                    "step_loss_value",
                    name=name,
                    where=where,
                    start=p,
                    want=f"{want_loss:.6g}",
                    got=f"{losses[0]:.6g}",
                    hint=_diagnose_loss_of_step(p, b, float(losses[0])),
                )
            )
    # structure: the averaging really is a collective over DATA_PARALLEL, read the grader's way
    _expect_averages(fn, params, sharded)


def _expect_averages(fn: Callable, params, sharded) -> None:
    """The compiled step (under the check's pmap) communicates over DATA_PARALLEL, and that reaches its results."""
    with _explained("parallel_update_step"):
        facts = examined(jax.pmap(fn, axis_name=DATA_PARALLEL, in_axes=(None, 0)), params, sharded)
    expect_communication("parallel_update_step", facts, DATA_PARALLEL, hint=_say("step_no_average", axis=DATA_PARALLEL))
    _expect_step_work(fn)


def _expect_step_work(fn: Callable) -> None:
    """Each device differentiates on its own shard: one device's FLOPs (the grader's 8-device program) at most
    `_STEP_FLOPS_FACTOR` times the reference's."""
    name, k = "parallel_update_step", 8
    with _explained(name):
        program = pmapped(fn, k, DATA_PARALLEL, in_axes=(None, 0))
        work = exported_work(jax.export.export(jax.jit(program))(*_abstract_case(k, 2)))
    excess = work_excess(work, Work(_STEP_REFERENCE_FLOPS, 0, 0), {"flops": _STEP_FLOPS_FACTOR})
    if excess is not None:
        fail(
            _say(
                "step_whole_batch",
                name=name,
                axis=DATA_PARALLEL,
                ratio=f"{excess[1]:.1f}",
                k=k,
                got=f"{work.flops:g}",
                want=f"{_STEP_REFERENCE_FLOPS:g}",
                factor=f"{_STEP_FLOPS_FACTOR:g}",
            )
        )


parallel_update_step = exercise(
    "parallel_update_step",
    _check_parallel_update_step,
    hints=[
        "Each device knows only its own shard. Which two numbers does it compute there, and what must "
        "happen to each of them before every device can use it as the whole batch's?",
        "Both are per-device results on a shard of the same size as every other: which collective of "
        "notebook 02 turns such results into the whole batch's, the same on every device? One call "
        "takes a dict, or a tuple of a number and a dict, at once.",
        "For the step, `jax.tree.map` with a two-argument function walks `params` and the averaged "
        "gradients together, leaf by leaf (Pitfall 2): `p - model.LEARNING_RATE * g` for each. Return "
        "`(new_params, averaged_loss)`.",
    ],
    observe=_step_programs,
)


# ---------------------------------------------------------------- exercise 4: train
def _visible_train_case():
    x = np.linspace(-1.5, 1.5, 12)
    return {"w": 1.0, "b": 0.0}, {"x": x.reshape(4, 3), "y": (2 * x + 0.5).reshape(4, 3)}, 5


_JUDGED_TRAIN_STEPS = 2  # steps of the program `_judge_train` examines


def _check_train(fn: Callable) -> None:
    name = "train"
    p, b, steps = _visible_train_case()
    params, sharded = _as_params(p["w"], p["b"]), _as_batch(b["x"], b["y"])
    k = np.shape(b["x"])[0]
    with _explained(name):
        result = fn(params, sharded, steps)
    call = _say("train_call", steps=steps, k=k, start=p)
    if not (isinstance(result, (tuple, list)) and len(result) == 2):
        length = _say("train_length", n=len(result)) if isinstance(result, (tuple, list)) else "."
        fail(_say("train_not_pair", call=call, type=_type_name(result), length=length))
    new, losses = result
    if (
        isinstance(new, dict)
        and set(new) == set(PARAM_NAMES)
        and all(isinstance(new[n], jax.Array) and tuple(new[n].shape) == (k,) for n in PARAM_NAMES)
    ):
        fail(_say("train_per_device_params", call=call, k=k))
    _expect_param_dict(name, new, _say("train_final"))
    if isinstance(losses, jax.Array) and losses.ndim == 2 and losses.shape[0] in (steps, steps + 1):
        fail(_say("train_losses_per_device", call=call, shape=tuple(losses.shape)))
    if isinstance(losses, jax.Array) and losses.shape != (steps + 1,):
        hint = _one_short(losses, p, b, steps) if losses.shape == (steps,) else ""
        fail(_say("train_losses_shape", call=call, n=steps + 1, steps=steps, shape=tuple(losses.shape), hint=hint))
    _expect_scalar(_say("the_losses"), losses, (steps + 1,))
    ref_params, ref_losses = _ref_train(p, b, steps)
    got = {n: float(new[n]) for n in PARAM_NAMES}
    if not all(same_values(got[n], ref_params[n], dtype=float) for n in PARAM_NAMES):
        done = [
            s
            for s in (steps - 1, steps + 1, 1)
            if all(same_values(got[n], _ref_train(p, b, s)[0][n], dtype=float) for n in PARAM_NAMES)
        ]
        more = _say("train_steps_off", n=done[0]) if done else _say("train_apply_step")
        fail(_say("train_params", call=call, want=_pair(ref_params), got=_pair(got), more=more))
    got_losses = np.asarray(losses, float)
    if not same_values(got_losses, ref_losses, dtype=float):
        if same_values(got_losses[:-1], ref_losses[:-1], dtype=float):
            more = _say("train_losses_last")
        elif same_values(got_losses[:-1], ref_losses[1:], dtype=float):
            more = _say("train_losses_after")
        else:
            more = ""
        fail(
            _say(
                "train_losses",
                call=call,
                want=show_values(ref_losses, dtype=float),
                got=show_values(got_losses, dtype=float),
                more=more,
            ).strip()
        )


def _one_short(losses, p, b, steps: int) -> str:
    """Which end of `losses` (one entry short) is missing, from its values: the starting loss or the last."""
    ref_losses = _ref_train(p, b, steps)[1]
    got = np.asarray(losses, float)
    if same_values(got, ref_losses[:-1], dtype=float):
        return _say("train_losses_one_short")
    if same_values(got, ref_losses[1:], dtype=float):
        return _say("train_losses_no_start")
    return _say("train_losses_one_short_other")


def _judge_train(fn: Callable) -> None:
    """The grader's steps on the visible case's program (`jax.jit`, steps fixed): a per-device program over
    DATA_PARALLEL whose batch is split over it (each device trains on its own shard), and communication over
    DATA_PARALLEL that reaches the results. Two steps, not the visible case's five: where the batch lives
    and what is communicated do not depend on how many steps are taken (the values of all five were
    checked already), and a two-step program compiles in half the time, for each variant the judge builds."""
    p, b, _ = _visible_train_case()
    params, sharded = _as_params(p["w"], p["b"]), _as_batch(b["x"], b["y"])
    facts = examined(lambda p_, b_: fn(p_, b_, _JUDGED_TRAIN_STEPS), params, sharded, rtol=1e-4, atol=1e-4)
    split = ((DATA_PARALLEL,),)
    expect_regions("train", facts, (((DATA_PARALLEL,), ((), (), split, split)),), hint=_say("train_parallel"))
    expect_communication("train", facts, DATA_PARALLEL, hint=_say("train_parallel"))


def _observe_train(fn: Callable) -> dict:
    """`train(params, sharded_batch, steps)` compiled as one program per case (`jax.jit`, steps fixed)
    and exported: the grader runs the whole training on its own data and compares the final params
    and the losses (so the loop must stay in JAX: no `float(...)` or `np.asarray` of values in it)."""
    return programs(
        {
            f"k{k}_steps{steps}": Case(
                lambda p, b, steps=steps: fn(p, b, steps),
                *_abstract_case(k, per),
                draw={"kind": "normal", "scale": 0.5},
                rtol=1e-4,
                atol=1e-4,
                out_layout=False,
            )  # where params and losses live is open
            for k, per, steps in _OBSERVED_TRAIN
        }
    )


train = exercise(
    "train",
    _check_train,
    hints=[
        "What does one call of `p_update_step` hand back, and whose loss is that: the parameters it "
        "was given, or the ones it returns? Then: which call could tell you the loss of `final_params`?",
        "Carry the parameters from step to step and record each step's loss: a Python loop that "
        "`jnp.stack`s the recorded losses works (a `pmap` step does not stall, see the note above), and "
        "so does `lax.scan` with the parameters as its carry. The last entry needs one more full-batch "
        "loss, at the final parameters.",
        "`p_update_step(final_params, sharded_batch)` returns the loss of `final_params` as its second "
        "item (drop its new parameters); `jnp.append(losses, last_loss)` gives shape `(steps + 1,)`.",
    ],
    observe=_observe_train,
    judge=_judge_train,
)
