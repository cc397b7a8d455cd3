"""Exercise 3: `parallel_update_step`, the averaged SGD step."""

from __future__ import annotations

from collections.abc import Callable

import jax
import numpy as np

from namedaxes import DATA_PARALLEL
from namedaxes.checking import (
    answer_work,
    examined,
    expect_communication,
    expect_work_within,
    fail,
    mistake_sentence,
    same_values,
    show_values,
    which_mistake,
)
from namedaxes.grading import pmapped

from .running import (
    LEARNING_RATE,
    PARAM_NAMES,
    STEP_FLOPS_FACTOR,
    STEP_REFERENCE_FLOPS,
    abstract_case,
    as_arrays,
    exercise,
    expect_param_dict,
    expect_scalar,
    explained_here,
    ref_grads,
    ref_loss,
    ref_step,
    run_answer,
    step_programs,
    type_name,
    whole_batch,
)
from .text import pair, say


# ---------------------------------------------------------------- exercise 3: parallel_update_step
def _visible_step_cases():
    x = np.linspace(-1.5, 1.5, 12)
    yield {"w": 1.0, "b": 0.0}, {"x": x.reshape(4, 3), "y": (2 * x + 0.5).reshape(4, 3)}
    x2 = np.array([-2.0, -1.0, 0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0])
    y2 = np.array([-3.0, -1.0, 1.0, 0.0, 2.0, 2.0, 5.0, 4.0, 7.0, 8.0])
    yield {"w": 0.5, "b": 1.0}, {"x": x2.reshape(2, 5), "y": y2.reshape(2, 5)}


def _every_device(fn: Callable) -> Callable:
    """`fn` under the check's pmap, built when it runs (inside the explanations): every device's copy of both
    results (default out_axes=0: nothing hidden)."""
    return lambda params, sharded: jax.pmap(fn, axis_name=DATA_PARALLEL, in_axes=(None, 0))(params, sharded)


def step_mistakes(p, b) -> list[tuple]:
    """The usual mistakes' new parameters (`{'w', 'b'}`) on the sharded batch `b` (k devices): the averaged
    gradients returned, the parameters unchanged, a step up the gradient, the gradients summed over the k
    devices (the check's diagnoses, and the grader's)."""
    k = np.shape(b["x"])[0]
    g = ref_grads(p, whole_batch(b))
    return [
        ({n: g[n] for n in PARAM_NAMES}, "step_averaged_grads", {}),
        ({n: float(p[n]) for n in PARAM_NAMES}, "step_unchanged", {}),
        ({n: p[n] + LEARNING_RATE * g[n] for n in PARAM_NAMES}, "step_up", {}),
        ({n: p[n] - LEARNING_RATE * k * g[n] for n in PARAM_NAMES}, "step_summed", {"k": k}),
    ]


def step_loss_mistakes(p, b) -> list[tuple]:
    """The usual mistakes' losses on the sharded batch `b`: the loss after the step, the devices' losses summed
    (the check's diagnoses, and the grader's)."""
    k, full = np.shape(b["x"])[0], whole_batch(b)
    return [
        (ref_loss(ref_step(p, b), full), "step_loss_after", {}),
        (k * ref_loss(p, full), "step_loss_summed", {"k": k}),
    ]


def _diagnose_step(p, b, got) -> str:
    """A hint for replicated, well-shaped, but wrong new `params`."""
    found = which_mistake(got, step_mistakes(p, b), 1e-4)
    if found is not None:
        return say(found[0], **found[1])
    k = np.shape(b["x"])[0]
    g = ref_grads(p, whole_batch(b))
    moved = np.array([p[n] - got[n] for n in PARAM_NAMES])
    grad = np.array([g[n] for n in PARAM_NAMES])
    if (np.abs(grad) > 1e-3).all():
        rate = moved / grad
        if np.allclose(rate, rate[0], rtol=1e-3, atol=1e-6):
            return say("step_rate", ratio=f"{float(rate[0]) / LEARNING_RATE:.3g}", k=k)
    return say("step_other")


def _diagnose_loss_of_step(p, b, got: float) -> str:
    return mistake_sentence(say, got, step_loss_mistakes(p, b), 1e-4, otherwise=say("step_loss_other"))


def _check_parallel_update_step(fn: Callable) -> None:
    name = "parallel_update_step"
    for p, b in _visible_step_cases():
        k, per = np.shape(b["x"])[:2]
        where = say("step_where", name=name, k=k, per=per)
        out = run_answer(name, _every_device(fn), p, b)
        # type, then pytree structure / shape / dtype: pmap stacks one copy per device
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            hint = say("step_only_params") if isinstance(out, dict) else ""
            fail(say("step_not_pair", name=name, type=type_name(out), where=where, hint=hint))
        new, loss = out
        expect_param_dict(name, new, say("step_the_new_params"), shape=None, hint=say("step_new_params_hint"))
        for n in PARAM_NAMES:
            if tuple(new[n].shape[1:]) != ():
                fail(say("step_param_shape", name=name, key=n, shape=tuple(new[n].shape[1:]), where=where))
        expect_scalar(f"`{name}(...)[1]`", loss, shape=None)
        if tuple(loss.shape[1:]) != ():
            fail(say("step_loss_shape", name=name, shape=tuple(loss.shape[1:]), where=where))
        # value: every device holds the same new parameters ...
        got = {n: np.asarray(new[n], float) for n in PARAM_NAMES}
        if not all(np.allclose(got[n], got[n][0], rtol=1e-5, atol=1e-6) for n in PARAM_NAMES):
            fail(
                say(
                    "step_params_differ",
                    name=name,
                    where=where,
                    w=show_values(got["w"], dtype=float),
                    b=show_values(got["b"], dtype=float),
                    axis=DATA_PARALLEL,
                )
            )
        # ... and they are one SGD step with the full-batch (= averaged) gradient
        want = ref_step(p, b)
        first = {n: float(got[n][0]) for n in PARAM_NAMES}
        if not all(same_values(first[n], want[n], dtype=float) for n in PARAM_NAMES):
            fail(
                say(
                    "step_params_value",
                    name=name,
                    where=where,
                    start=p,
                    want=pair(want),
                    got=pair(first),
                    hint=_diagnose_step(p, b, first),
                )
            )
        # the loss: the same on every device, the full-batch loss of the incoming params
        losses = np.asarray(loss, float)
        if not np.allclose(losses, losses[0], rtol=1e-5, atol=1e-6):
            fail(say("step_loss_differs", name=name, where=where, losses=show_values(losses, dtype=float)))
        want_loss = ref_loss(p, whole_batch(b))
        if not same_values(losses[0], want_loss, dtype=float):
            fail(
                say(
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
    _expect_averages(fn, p, b)


def _expect_averages(fn: Callable, p, b) -> None:
    """The compiled step (under the check's pmap, on the visible case `p`, `b`) communicates over DATA_PARALLEL,
    and that reaches its results."""
    with explained_here("parallel_update_step"):
        facts = examined(jax.pmap(fn, axis_name=DATA_PARALLEL, in_axes=(None, 0)), *as_arrays(p, b))
    expect_communication("parallel_update_step", facts, DATA_PARALLEL, hint=say("step_no_average", axis=DATA_PARALLEL))
    _expect_step_work(fn)


def _expect_step_work(fn: Callable) -> None:
    """Each device differentiates on its own shard: one device's FLOPs (the grader's 8-device program) at most
    `STEP_FLOPS_FACTOR` times the reference's."""
    name, k = "parallel_update_step", 8
    with explained_here(name):
        program = pmapped(fn, k, DATA_PARALLEL, in_axes=(None, 0))
        work = answer_work(program, *abstract_case(k, 2))
    expect_work_within(
        work,
        "flops",
        STEP_REFERENCE_FLOPS,
        STEP_FLOPS_FACTOR,
        say,
        "step_whole_batch",
        name=name,
        axis=DATA_PARALLEL,
        k=k,
    )


parallel_update_step = exercise("parallel_update_step", _check_parallel_update_step, observe=step_programs)
