"""What notebook 11's checks share: the ZeRO stages and the keys of a stage's specs."""

from __future__ import annotations

STAGES = (1, 2, 3)
SPEC_KEYS = ("params", "grads", "opt_state")
