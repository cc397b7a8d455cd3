"""What notebook 11's checks share: the ZeRO stages, the keys of a stage's specs, and how a training step is
graded."""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax

from namedaxes.checking import exercises_for
from namedaxes.grading import Case

from . import text

exercise = exercises_for(__package__, text)  # the notebook's Exercise maker: exercise(name, check, observe=...)

STAGES = (1, 2, 3)
SPEC_KEYS = ("params", "grads", "opt_state")


def adam_step_case(mesh, step: Callable, *args, **kwargs) -> Case:
    """The graded case of a training step `step(*args) -> (params, state, loss)` whose state is Adam's (optax):
    exported under `mesh` (`jax.set_mesh`), returning `(params, mu, nu, loss)`: Adam's moments as plain dicts,
    since an exported tree names no Optax type. The program keeps `step`'s name and arguments; `kwargs` are
    the `Case`'s (draw, tolerances, work)."""

    @functools.wraps(step)
    def with_plain_moments(*step_args):
        params, state, loss = step(*step_args)
        return params, state[0].mu, state[0].nu, loss

    return Case(with_plain_moments, *args, context=functools.partial(jax.set_mesh, mesh), **kwargs)
