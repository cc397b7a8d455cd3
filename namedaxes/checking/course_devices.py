"""The checks run on the course's 8 simulated devices: say so plainly when the set-up cell was skipped."""

from __future__ import annotations

from .failures import CheckFailed
from .text import TEXT

__all__ = ["expect_course_devices"]


def expect_course_devices() -> None:
    """The checks run on the course's 8 devices: say so plainly if the set-up cell was skipped."""
    import jax

    from ..axes import N_DEVICES

    if jax.device_count() < N_DEVICES:
        raise CheckFailed(TEXT["need_devices"].format(need=N_DEVICES, have=jax.device_count())) from None
