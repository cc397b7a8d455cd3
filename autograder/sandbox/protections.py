"""The protections report: which safeguards are in force for a grading run, and why any is missing.

A grader that silently degrades (no cgroups in a container, not root, no user
namespaces) would let an instructor believe a hostile class is contained when
it is not. So every protection is one typed record, `available` or not, with a
`detail` that says how it is enforced or why it is missing and what is done
instead. The grader prints `summary_lines()` and writes `as_json()` into
`results.json` under the key `"protections"`, where the class report shows it. `in_force(sandbox)`
makes the list from what `launch.Sandbox.setup()` found out on this machine (and `why` each is missing).
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass

from . import seccomp
from .identity import USERNS_UID
from .view import bwrap_options

__all__ = ["Protection", "as_json", "summary_lines", "in_force"]


@dataclass(frozen=True)
class Protection:
    key: str  # stable id, e.g. "memory_cgroup"
    title: str  # what it protects, for people
    available: bool
    detail: str  # how it is enforced, or why it is missing and the fallback


def as_json(protections: list[Protection]) -> list[dict]:
    """[{"key", "title", "available", "detail"}, ...] in a fixed order (for results.json)."""
    return [asdict(p) for p in protections]


def summary_lines(protections: list[Protection]) -> list[str]:
    """One line with the count, then one line per missing protection."""
    missing = [p for p in protections if not p.available]
    lines = [
        f"protections: {len(protections) - len(missing)} of {len(protections)} in force"
        + (f"; MISSING: {', '.join(p.title for p in missing)}" if missing else "")
    ]
    lines += [f"  missing {p.title}: {p.detail}" for p in missing]
    return lines


def _mib(n: int) -> str:
    return f"{n / 2**20:g} MiB"


def in_force(sb) -> list[Protection]:
    """Each protection of a set-up `launch.Sandbox`: in force, or missing and why."""
    return [*_view_and_identity(sb), *_limits(sb), *_system_calls(sb)]


def _view_and_identity(sb) -> list[Protection]:
    """What the kernel sees (its view, network and /tmp) and who it runs as."""
    w, iso = sb.why, sb.isolate
    return [
        Protection(
            "allow_list_view",
            "allow-list view of the file system",
            iso,
            "bubblewrap: only the Python environment and course package (read-only), a generated "
            "/etc, its own working copy, private /tmp and /dev/shm"
            if iso
            else w.get("allow_list_view", "no sandbox") + "; the kernel sees every file the grader's user can read",
        ),
        Protection(
            "dedicated_uid",
            "kernel runs as its own unprivileged user",
            iso and sb.dedicated,
            f"host uid {sb.uid}, gid {sb.gid}, no groups, no capabilities, no_new_privs"
            if iso and sb.dedicated
            else w.get("dedicated_uid", "no sandbox")
            + (
                f"; kernels run as the grader's user (uid {os.geteuid()}) mapped to uid "
                f"{USERNS_UID} in a user namespace, so only the allow-list view protects its files"
                if iso and sb.userns
                else "; kernels run with the grader's user and its permissions"
            ),
        ),
        Protection(
            "network_off",
            "no network",
            iso,
            "own network namespace (loopback only)" if iso else "the kernel can reach the network",
        ),
        Protection(
            "private_tmp",
            "private, size-limited /tmp and /dev/shm",
            iso,
            f"tmpfs /tmp {_mib(sb.tmp_bytes)}, /dev/shm {_mib(sb.shm_bytes)}"
            + (
                f", at most {sb.tmp_files} and {sb.shm_files} files"
                if sb.quota
                else " (no file-count cap: the grader is not root, bubblewrap makes them)"
            )
            if iso
            else "the kernel uses the host's /tmp and /dev/shm",
        ),
    ]


def _limits(sb) -> list[Protection]:
    """Memory, processes, disk and CPU time: cgroups and quotas where they work, else the rlimit fallback."""
    w, cg = sb.why, sb.cgroups
    mem = cg is not None and cg.memory is not None
    memory = Protection(
        "memory_cgroup",
        "memory limit counting shared memory and tmpfs",
        mem,
        f"{_mib(sb.memory_bytes)} per kernel, {cg.describe('memory')}"
        if mem
        else w.get("memory_cgroup", "cgroups were not set up")
        + f"; fallback: RLIMIT_DATA {_mib(sb.memory_bytes)}, which does not count shared mappings or "
        f"files in /tmp, /dev/shm and the working copy",
    )
    pids = cg is not None and cg.pids is not None
    if pids:
        detail = f"pids.max {sb.pids_max} per kernel (processes and threads), {cg.describe('pids')}"
    elif sb.owner is not None:
        detail = (
            w.get("pids_cgroup", "cgroups were not set up") + f"; fallback: RLIMIT_NPROC "
            f"{sb.pids_max} for uid {sb.uid}, shared by all kernels running at once"
        )
    else:
        detail = (
            w.get("pids_cgroup", "cgroups were not set up") + "; no process limit (RLIMIT_NPROC "
            "would count the grader's own user)"
        )
    disk = Protection(
        "disk_quota",
        "disk and file-count quota per working copy",
        sb.quota,
        f"own tmpfs per working copy: {_mib(sb.disk_bytes)}, {sb.max_files} files"
        if sb.quota
        else w.get("disk_quota", "not set up") + f"; fallback: RLIMIT_FSIZE {_mib(sb.file_bytes)} per file, "
        f"working copies share the host disk",
    )
    return [
        memory,
        Protection("process_limit", "limit on processes and threads", pids, detail),
        disk,
        Protection("cpu_time", "CPU-time limit", True, f"RLIMIT_CPU {sb.cpu_seconds} s per kernel"),
    ]


def _system_calls(sb) -> list[Protection]:
    """No new namespaces, and the seccomp allow-list (bubblewrap's --seccomp, seccomp.py)."""
    iso = sb.isolate
    bpf, why_not = seccomp.kernel_filter()
    seccomp_on = iso and bpf is not None and "--seccomp" in bwrap_options()
    allow_list = seccomp_on and not why_not
    how = []
    if allow_list:
        how.append("the seccomp allow-list refuses unshare, setns, clone with namespace flags and clone3")
    elif seccomp_on:
        how.append("a seccomp filter refuses unshare/clone with CLONE_NEWUSER and clone3")
    if iso and sb.userns and not sb.dedicated and "--disable-userns" in bwrap_options():
        how.append("bwrap --disable-userns")
    namespaces = Protection(
        "no_new_namespaces",
        "kernel cannot create user namespaces",
        bool(how),
        "; ".join(how)
        if how
        else "not enforced: the kernel may create user namespaces where the host allows unprivileged ones "
        "(more kernel attack surface; it still sees only its view)",
    )
    if allow_list:
        detail = (
            f"seccomp allow-list at least as strict as Docker's default profile (libseccomp "
            f"{seccomp.libseccomp_version()}): keyrings, io_uring, bpf, perf events, userfaultfd, ptrace, "
            f"mount, namespaces, kexec, modules and the rest fail with EPERM; foreign ABIs with ENOSYS"
        )
    elif not iso:
        detail = "no sandbox, so no seccomp filter: the kernel may make every system call"
    elif "--seccomp" not in bwrap_options():
        detail = "this bubblewrap has no --seccomp option: the kernel may make every system call"
    else:
        detail = (
            why_not + "; the kernel may use keyrings (shared by every kernel of the same uid, across "
            "runs), io_uring, bpf and the rest of Docker's refused calls"
        )
    syscalls = Protection(
        "syscall_filter", "system calls limited (keyrings, io_uring, bpf, ptrace, mount, ...)", allow_list, detail
    )
    return [namespaces, syscalls]
