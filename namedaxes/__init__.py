"""Helpers for the JAX named-axes course: device setup, student checks, plots."""

from .axes import (
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
from .devices import DeviceSetupError, setup_devices

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
