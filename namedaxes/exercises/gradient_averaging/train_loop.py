"""Exercise 4: `train`, several averaged steps."""

from __future__ import annotations

from collections.abc import Callable

import jax
import numpy as np

from namedaxes import DATA_PARALLEL
from namedaxes.checking import (
    examined,
    expect_communication,
    expect_regions,
    fail,
    mistake_sentence,
    same_values,
    show_values,
)
from namedaxes.grading import Case, programs

from .running import (
    PARAM_NAMES,
    abstract_case,
    as_arrays,
    exercise,
    expect_param_dict,
    expect_scalar,
    ref_train,
    run_answer,
    type_name,
)
from .text import pair, say

# (devices, examples per device, steps) of the hidden train observations
_OBSERVED_TRAIN = ((2, 4, 6), (4, 3, 9), (8, 2, 5))


# ---------------------------------------------------------------- exercise 4: train
def _visible_train_case():
    x = np.linspace(-1.5, 1.5, 12)
    return {"w": 1.0, "b": 0.0}, {"x": x.reshape(4, 3), "y": (2 * x + 0.5).reshape(4, 3)}, 5


_JUDGED_TRAIN_STEPS = 2  # steps of the program `_judge_train` examines


def train_mistakes(p, b, steps: int) -> list[tuple]:
    """The usual mistakes' final parameters (`{'w', 'b'}`) on the sharded batch `b`: one step too few, one too
    many, a single step (the check's diagnoses, and the grader's)."""
    return [(ref_train(p, b, n)[0], "train_steps_off", {"n": n}) for n in (steps - 1, steps + 1, 1) if n != steps]


def _check_train(fn: Callable) -> None:
    name = "train"
    p, b, steps = _visible_train_case()
    k = np.shape(b["x"])[0]
    result = run_answer(name, fn, p, b, steps)
    call = say("train_call", steps=steps, k=k, start=p)
    if not (isinstance(result, (tuple, list)) and len(result) == 2):
        length = say("train_length", n=len(result)) if isinstance(result, (tuple, list)) else "."
        fail(say("train_not_pair", call=call, type=type_name(result), length=length))
    new, losses = result
    if (
        isinstance(new, dict)
        and set(new) == set(PARAM_NAMES)
        and all(isinstance(new[n], jax.Array) and tuple(new[n].shape) == (k,) for n in PARAM_NAMES)
    ):
        fail(say("train_per_device_params", call=call, k=k))
    expect_param_dict(name, new, say("train_final"))
    if isinstance(losses, jax.Array) and losses.ndim == 2 and losses.shape[0] in (steps, steps + 1):
        fail(say("train_losses_per_device", call=call, shape=tuple(losses.shape)))
    if isinstance(losses, jax.Array) and losses.shape != (steps + 1,):
        hint = _one_short(losses, p, b, steps) if losses.shape == (steps,) else ""
        fail(say("train_losses_shape", call=call, n=steps + 1, steps=steps, shape=tuple(losses.shape), hint=hint))
    expect_scalar(say("the_losses"), losses, (steps + 1,))
    ref_params, ref_losses = ref_train(p, b, steps)
    got = {n: float(new[n]) for n in PARAM_NAMES}
    if not all(same_values(got[n], ref_params[n], dtype=float) for n in PARAM_NAMES):
        more = mistake_sentence(say, got, train_mistakes(p, b, steps), otherwise=say("train_apply_step"))
        fail(say("train_params", call=call, want=pair(ref_params), got=pair(got), more=more))
    got_losses = np.asarray(losses, float)
    if not same_values(got_losses, ref_losses, dtype=float):
        if same_values(got_losses[:-1], ref_losses[:-1], dtype=float):
            more = say("train_losses_last")
        elif same_values(got_losses[:-1], ref_losses[1:], dtype=float):
            more = say("train_losses_after")
        else:
            more = ""
        fail(
            say(
                "train_losses",
                call=call,
                want=show_values(ref_losses, dtype=float),
                got=show_values(got_losses, dtype=float),
                more=more,
            ).strip()
        )


def _one_short(losses, p, b, steps: int) -> str:
    """Which end of `losses` (one entry short) is missing, from its values: the starting loss or the last."""
    ref_losses = ref_train(p, b, steps)[1]
    got = np.asarray(losses, float)
    if same_values(got, ref_losses[:-1], dtype=float):
        return say("train_losses_one_short")
    if same_values(got, ref_losses[1:], dtype=float):
        return say("train_losses_no_start")
    return say("train_losses_one_short_other")


def _judge_train(fn: Callable) -> None:
    """The grader's steps on the visible case's program (`jax.jit`, steps fixed): a per-device program over
    DATA_PARALLEL whose batch is split over it (each device trains on its own shard), and communication over
    DATA_PARALLEL that reaches the results. Two steps, not the visible case's five: where the batch lives
    and what is communicated do not depend on how many steps are taken (the values of all five were
    checked already), and a two-step program compiles in half the time, for each variant the judge builds."""
    p, b, _ = _visible_train_case()
    params, sharded = as_arrays(p, b)
    facts = examined(lambda p_, b_: fn(p_, b_, _JUDGED_TRAIN_STEPS), params, sharded, rtol=1e-4, atol=1e-4)
    split = ((DATA_PARALLEL,),)
    expect_regions("train", facts, (((DATA_PARALLEL,), ((), (), split, split)),), hint=say("train_parallel"))
    expect_communication("train", facts, DATA_PARALLEL, hint=say("train_parallel"))


def _observe_train(fn: Callable) -> dict:
    """`train(params, sharded_batch, steps)` compiled as one program per case (`jax.jit`, steps fixed)
    and exported: the grader runs the whole training on its own data and compares the final params
    and the losses (so the loop must stay in JAX: no `float(...)` or `np.asarray` of values in it)."""
    return programs(
        {
            f"k{k}_steps{steps}": Case(
                lambda p, b, steps=steps: fn(p, b, steps),
                *abstract_case(k, per),
                draw={"kind": "normal", "scale": 0.5},
                rtol=1e-4,
                atol=1e-4,
                out_layout=False,
            )  # where params and losses live is open
            for k, per, steps in _OBSERVED_TRAIN
        }
    )


train = exercise("train", _check_train, observe=_observe_train, judge=_judge_train)
