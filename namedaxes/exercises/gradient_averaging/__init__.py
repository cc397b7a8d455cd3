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

Its words (every message, hint and known mistake's hint) are data in its `text.py`.
"""

from __future__ import annotations

from namedaxes.exercises import notebook_face

notebook_face(
    __name__,
    {
        ".losses": ("compute_gradients", "loss_fn"),
        ".mistakes": ("known_mistakes",),
        ".running": ("BATCH_NAMES", "GRADE_IDS", "LEARNING_RATE", "PARAM_NAMES"),
        ".train_loop": ("train",),
        ".update": ("parallel_update_step",),
    },
)
