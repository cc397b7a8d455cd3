"""Helpers for the JAX named-axes course: device setup, student checks, plots."""

from .jax_line import require_supported_jax

require_supported_jax()  # a JAX older than the course's oldest line stops here, in one sentence (jax_line.py)

from .axes import (  # noqa: E402 - after the JAX version is known to be one the course teaches
    BATCH,
    DATA_PARALLEL,
    DATA_SHARDS,
    DEVICES,
    EXPERTS,
    FSDP,
    GRID_AXES,
    GRID_SHAPE,
    MODEL_PARALLEL,
    MODEL_REPLICAS,
    N_DEVICES,
    SEQUENCE,
    STAGES,
)
from .devices import DeviceSetupError, setup_devices  # noqa: E402 - as above

__all__ = [
    "setup_devices",
    "DeviceSetupError",
    "DEVICES",
    "BATCH",
    "DATA_SHARDS",
    "MODEL_REPLICAS",
    "DATA_PARALLEL",
    "MODEL_PARALLEL",
    "FSDP",
    "STAGES",
    "EXPERTS",
    "SEQUENCE",
    "N_DEVICES",
    "GRID_SHAPE",
    "GRID_AXES",
]
__version__ = "0.1.0"
