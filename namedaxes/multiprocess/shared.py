"""One shared cluster per kernel: exercises and notebook cells use the same processes."""

from __future__ import annotations

from .cluster import Cluster

__all__ = ["get_cluster"]

# Kept in a dict that is mutated, never rebound: the autograder's guard restores this module's
# names to their values before each cell, which would forget a rebound global (and start a new
# cluster in every cell).
_SHARED: dict = {}


def get_cluster(num_processes: int = 2, local_devices: int = 4) -> Cluster:
    """The kernel's shared cluster: started on first use, reused while it runs.

    Exercises and notebook cells share it, so the processes start once per
    notebook. After a timeout killed it, the next call starts a fresh one.
    """
    shared = _SHARED.get("cluster")
    if (
        shared is None
        or not shared.alive
        or shared.num_processes != num_processes
        or shared.local_devices != local_devices
    ):
        if shared is not None:
            shared.close()
        _SHARED["cluster"] = shared = Cluster(num_processes, local_devices).start()
    return shared
