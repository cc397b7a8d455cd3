"""The resource limits a student's kernel starts under, and how each is enforced where the machine allows.

Threat model: a hostile kernel may exhaust memory, processes, disk or CPU so that classmates lose
points; every limit counts everything it can. Limits: a memory cgroup (shared mappings, /dev/shm,
/tmp and working-copy pages count) and a pids cgroup per kernel (cgroups.py), a size- and
file-count-limited tmpfs per working copy (workcopy.py), RLIMIT_CPU, RLIMIT_FSIZE, RLIMIT_NOFILE,
RLIMIT_DATA (kept as a first, friendlier line: a too-big array raises MemoryError), no core files.
Fallbacks where the machine lacks a mechanism: without a memory cgroup only RLIMIT_DATA (not counting
shared memory or tmpfs); without a pids cgroup RLIMIT_NPROC for the dedicated uid (all of the run's
kernels together); without root, no per-copy disk quota (RLIMIT_FSIZE per file only); without
bubblewrap no view at all.

The rlimits are set by `prlimit` in front of the command line, or, where it is missing, in the child
before it execs (`before_exec`).
"""

from __future__ import annotations

import resource

__all__ = ["Rlimit", "kernel_rlimits", "prlimit_prefix", "before_exec"]

Rlimit = tuple[str, int, int]  # prlimit's name, resource.RLIMIT_*, the value (soft and hard)


def kernel_rlimits(
    cpu_seconds: int, memory_bytes: int, file_bytes: int, open_files: int, nproc: int | None = None
) -> list[Rlimit]:
    """A kernel's rlimits; `nproc`: the fallback RLIMIT_NPROC (it counts the whole uid), None for none."""
    limits = [
        ("cpu", resource.RLIMIT_CPU, cpu_seconds),
        ("data", resource.RLIMIT_DATA, memory_bytes),
        ("fsize", resource.RLIMIT_FSIZE, file_bytes),
        ("nofile", resource.RLIMIT_NOFILE, open_files),
        ("core", resource.RLIMIT_CORE, 0),
    ]
    if nproc is not None:
        limits.append(("nproc", resource.RLIMIT_NPROC, nproc))  # fallback: counts the whole uid
    return limits


def prlimit_prefix(limits: list[Rlimit]) -> list[str]:
    """The `prlimit` command that sets `limits` on what follows it."""
    return ["prlimit", *(f"--{name}={v}:{v}" for name, _, v in limits), "--"]


def before_exec(limits: list[Rlimit]):
    """Fallback when `prlimit` is missing: a `preexec_fn` that sets the limits in the child before exec."""
    values = [(which, v) for _, which, v in limits]

    def apply():
        for which, value in values:
            resource.setrlimit(which, (value, value))

    return apply
