"""What notebook 11's checks share: the ZeRO stages and the keys of a stage's specs."""

from __future__ import annotations

from namedaxes.checking import exercises_for

from . import text

exercise = exercises_for(__package__, text)  # the notebook's Exercise maker: exercise(name, check, observe=...)

STAGES = (1, 2, 3)
SPEC_KEYS = ("params", "grads", "opt_state")
