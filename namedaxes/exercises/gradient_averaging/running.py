"""What notebook 04's checks share: the reference maths (float64, `namedaxes.model`), how an answer runs, the shape
of its results, and its graded programs."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from namedaxes import DATA_PARALLEL, model
from namedaxes.checking import exercises_for, explained, fail, unbound_axis_name
from namedaxes.grading import Case, pmapped, programs, spec

from . import text
from .text import say

exercise = exercises_for(__package__, text)  # the notebook's Exercise maker: exercise(name, check, observe=...)

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
# devices): one device's FLOPs, read from the compiled per-device program, at most `STEP_FLOPS_FACTOR` times the
# reference's (37 on 8 devices with 2 examples each, measured from the solution notebook's program on jax
# 0.10.2; 47 on jax 0.12.0.1, far below the factor; a test keeps it between 0.9x and 1.3x). All of the batch on
# every device (an all_gather of the shards or a psum of one-hot-placed ones), then the whole batch's gradient,
# costs 7x (8 devices), 3.4x (4) and 1.8x (2: within the factor there, refused on 4 and 8); the equivalent
# answers 1.49x at most (an all_gather of the losses and gradients, 8 devices).
STEP_FLOPS_FACTOR = 2.5
STEP_REFERENCE_FLOPS = 37.0


# ---------------------------------------------------------------- small helpers
def explained_here(name: str, *, local: bool = False):
    """Run an answer; crashes become readable messages (`checking.explained` plus the rule for local functions)."""

    def local_collective(err: BaseException) -> str | None:
        axis = unbound_axis_name(err)
        if not local or axis is None:
            return None
        return say("local_collective", name=name, axis=axis)

    return explained(name, run=say("run_as", name=name), binds=(DATA_PARALLEL,), rules=(local_collective,))


def as_arrays(params: dict, batch: dict) -> tuple[dict, dict]:
    """A visible case's parameters (`w`, `b`) and batch (`x`, `y`), host numbers, as the float32 arrays an
    answer takes."""
    return (
        {n: jnp.asarray(params[n], jnp.float32) for n in PARAM_NAMES},
        {n: jnp.asarray(batch[n], jnp.float32) for n in BATCH_NAMES},
    )


def run_answer(name: str, fn: Callable, params: dict, batch: dict, *more, local: bool = False):
    """`fn(params, batch, *more)` on a visible case (host numbers, given to the answer as float32 arrays:
    `as_arrays`), run under this notebook's explanations (`explained_here`)."""
    with explained_here(name, local=local):
        return fn(*as_arrays(params, batch), *more)


# ---------------------------------------------------------------- the reference maths (float64, namedaxes.model)
ref_loss = model.loss_np
ref_grads = model.gradients_np
_ref_sgd = model.sgd_step_np


def whole_batch(sharded_batch) -> dict:
    """The whole batch: devices and examples per device merged into one leading axis."""
    return {k: np.asarray(v, float).reshape((-1,) + np.shape(v)[2:]) for k, v in sharded_batch.items()}


def ref_step(params, sharded_batch) -> dict:
    return _ref_sgd(params, whole_batch(sharded_batch))  # equal shards: mean of device gradients == full batch


def ref_train(params, sharded_batch, steps: int):
    """Final params after `steps` steps, and the full-batch loss before each step (and after the last)."""
    full = whole_batch(sharded_batch)
    losses = []
    for _ in range(steps):
        losses.append(ref_loss(params, full))
        params = _ref_sgd(params, full)
    losses.append(ref_loss(params, full))
    return params, np.asarray(losses)


# ---------------------------------------------------------------- structure of the answers
def type_name(value) -> str:
    return "jax.Array" if isinstance(value, jax.Array) else type(value).__name__


def expect_scalar(what: str, value, shape=()) -> None:
    if isinstance(value, (np.ndarray, np.generic)) and not isinstance(value, jax.Array):
        fail(say("numpy_value", what=what, type=type(value).__name__))
    if not isinstance(value, jax.Array):
        fail(say("not_array", what=what, type=type(value).__name__, value=f"{value!r:.80}"))
    if shape is not None and tuple(value.shape) != tuple(shape):
        fail(say("wrong_shape", what=what, want=tuple(shape), got=tuple(value.shape)))
    if np.dtype(value.dtype) != np.float32:
        fail(say("wrong_dtype", what=what, got=np.dtype(value.dtype).name))


def expect_param_dict(name: str, value, what: str, shape=(), hint: str = "") -> None:
    """`value` is a dict with exactly the keys 'w' and 'b', each a float32 array of `shape`."""
    if not isinstance(value, dict):
        fail(say("not_param_dict", name=name, what=what, type=type_name(value), hint=hint).strip())
    if set(value) != set(PARAM_NAMES):
        more = say("batch_keys") if set(value) == set(BATCH_NAMES) else ""
        fail(say("param_keys", name=name, what=what, keys=sorted(map(str, value)), hint=more))
    for key in PARAM_NAMES:
        expect_scalar(f"`{name}(...)['{key}']`", value[key], shape)


def abstract_case(k: int, per: int, trailing=()):
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
        f"k{k}": Case(pmapped(fn, k, DATA_PARALLEL, in_axes=(None, 0)), *abstract_case(k, per, trailing), work=work)
        for k, per, trailing in _OBSERVED_SHAPES
    }
    if local:
        params, sharded = abstract_case(1, 5, ())
        cases["local"] = Case(fn, params, {k: spec(v.shape[1:], v.dtype) for k, v in sharded.items()})
    return programs(cases)


def local_programs(fn: Callable) -> dict:
    return _per_device_programs(fn, local=True)


def step_programs(fn: Callable) -> dict:
    """parallel_update_step's programs: each device's share of the work judged (`STEP_FLOPS_FACTOR`)."""
    return _per_device_programs(fn, work={"flops": STEP_FLOPS_FACTOR})
