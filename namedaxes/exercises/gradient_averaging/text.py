"""The words of notebook 04's checks as data: sentences (TEXT), hints (HINTS), known mistakes' hints (MISTAKE_HINTS)."""

from __future__ import annotations

from namedaxes.exercises import notebook_words

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


def pair(values: dict) -> str:
    return say("pair_value", w=f"{values['w']:.6g}", b=f"{values['b']:.6g}")


HINTS = {
    "loss_fn": [
        "The loss is one number per batch: how far the line's predictions are from `y`, each miss "
        "squared, averaged over the examples. Which `jnp` function averages over the examples?",
        "Predict with `params['w'] * local_batch['x'] + params['b']`, subtract `local_batch['y']`, square "
        "element by element, then average with `jnp.mean`: the result has shape `()`.",
        "Use `jnp`, not `np`: `jax.grad` must differentiate `loss_fn` in the next exercise. At the starting "
        "`params`, `loss_fn(params, batch)` is 1.25.",
    ],
    "compute_gradients": [
        "The cell above differentiates `scaled_area` with respect to its second argument. Which function "
        "do you differentiate here, and which of its arguments holds the parameters?",
        "`params` is `loss_fn`'s first argument: what does `argnums` default to? Differentiating with "
        "respect to `local_batch` would give a dict with the batch's keys 'x' and 'y'. Call the new "
        "function with both arguments.",
        "Don't derive the gradient by hand. At the starting `params` on the full `batch` you should get "
        "about -2.0 for 'w' and -1.0 for 'b'.",
    ],
    "train": [
        "What does one call of `p_update_step` hand back, and whose loss is that: the parameters it "
        "was given, or the ones it returns? Then: which call could tell you the loss of `final_params`?",
        "Carry the parameters from step to step and record each step's loss: a Python loop that "
        "`jnp.stack`s the recorded losses works (a `pmap` step does not stall, see the note above), and "
        "so does `lax.scan` with the parameters as its carry. The last entry needs one more full-batch "
        "loss, at the final parameters.",
        "`p_update_step(final_params, sharded_batch)` returns the loss of `final_params` as its second "
        "item (drop its new parameters); `jnp.append(losses, last_loss)` gives shape `(steps + 1,)`.",
    ],
    "parallel_update_step": [
        "Each device knows only its own shard. Which two numbers does it compute there, and what must "
        "happen to each of them before every device can use it as the whole batch's?",
        "Both are per-device results on a shard of the same size as every other: which collective of "
        "notebook 02 turns such results into the whole batch's, the same on every device? One call "
        "takes a dict, or a tuple of a number and a dict, at once.",
        "For the step, `jax.tree.map` with a two-argument function walks `params` and the averaged "
        "gradients together, leaf by leaf (Pitfall 2): `p - model.LEARNING_RATE * g` for each. Return "
        "`(new_params, averaged_loss)`.",
    ],
}
MISTAKE_HINTS = {
    "loss_fn": {"loss_sum": 2, "loss_abs": 2, "loss_mean_error": 2, "loss_root": 2, "loss_half": 2},
    "train": {"train_steps_off": 2},
    "parallel_update_step": {
        "step_averaged_grads": 3,
        "step_unchanged": 3,
        "step_up": 3,
        "step_summed": 2,
        "step_loss_after": 1,
        "step_loss_summed": 2,
    },
}
TEXT, say = notebook_words(TEXT, HINTS, MISTAKE_HINTS)  # checked; each lookup in the kernel's language
