"""The errors a cluster raises: a worker failed (`WorkerError`, `WorkerTimeout`), a function cannot travel
(`ShipError`)."""

from __future__ import annotations

__all__ = ["WorkerError", "WorkerTimeout", "ShipError"]


class WorkerError(RuntimeError):
    """A worker process failed: its job raised, it died, or it did not answer in time."""

    def __init__(
        self, message: str, *, process_index: int | None = None, stderr_tail: str = "", remote_type: str | None = None
    ):
        super().__init__(message)
        self.process_index = process_index
        self.stderr_tail = stderr_tail
        self.remote_type = remote_type


class WorkerTimeout(WorkerError):
    """A worker did not finish in time; the whole cluster was killed."""


class ShipError(TypeError):
    """A function cannot be sent to the workers as source text."""
