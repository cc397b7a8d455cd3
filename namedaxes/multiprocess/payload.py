"""Job arguments and results on their way between processes: functions shipped, arrays as NumPy arrays."""

from __future__ import annotations

import sys
import types
from typing import Any

from .shipping import Shipped, ship

__all__ = ["pack", "unpack", "to_host"]


def pack(value: Any) -> Any:
    """Arguments for the workers: functions shipped, jax arrays as NumPy arrays."""
    if isinstance(value, Shipped):
        return value
    if isinstance(value, dict):
        return {k: pack(v) for k, v in value.items()}
    if type(value) in (list, tuple):
        return type(value)(pack(v) for v in value)
    if "jax" in sys.modules and isinstance(value, sys.modules["jax"].Array):
        import numpy as np

        return np.asarray(value)
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType)) or (
        callable(value) and hasattr(value, "__wrapped__")
    ):
        return ship(value)
    return value


def unpack(value: Any, cache: dict) -> Any:
    if isinstance(value, Shipped):
        return value.load(cache)
    if isinstance(value, dict):
        return {k: unpack(v, cache) for k, v in value.items()}
    if type(value) in (list, tuple):
        return type(value)(unpack(v, cache) for v in value)
    return value


def to_host(value: Any) -> Any:
    """A job's result as plain Python/NumPy values (blocks until computed)."""
    if isinstance(value, dict):
        return {k: to_host(v) for k, v in value.items()}
    if type(value) in (list, tuple):
        return type(value)(to_host(v) for v in value)
    jax = sys.modules.get("jax")
    if jax is not None and isinstance(value, jax.Array):
        import numpy as np

        if not value.is_fully_addressable:
            raise TypeError(
                "a job returned a jax.Array that spans several processes; return "
                "process-local values (e.g. the output of pmap) instead"
            )
        return np.asarray(value)
    return value
