"""The view a student's kernel is shown: the bubblewrap command line of an allow-list sandbox.

Threat model: the code in a submission is hostile (launch.py); nothing of the host is visible to it
unless named here. The grader builds this command line from a typed record (`View`), never from
anything a student controls.

The view (bubblewrap, an *allow-list*, nothing of the host unless named):

    /usr (+ the /bin /lib /lib64 /sbin links)       read-only
    the Python environment (venv, base prefix)      read-only
    the course helper package, the XLA cache        read-only (`exposed`)
    /etc                                            generated: passwd, group, hosts, hostname,
                                                    nsswitch.conf; plus ld.so.cache, localtime,
                                                    fonts (no secrets)
    /sys/devices/system/cpu                         read-only (CPU count for XLA)
    /proc                                           of the sandbox's own pid namespace, Docker's
                                                    masked paths (/proc/keys, /proc/kcore, ...) empty
    /dev                                            minimal (null, zero, random, tty, pts)
    /tmp, /dev/shm                                  private tmpfs, `tmp_bytes` / `shm_bytes` (for a
                                                    zygote: its slot's two, emptied between kernels)
    WORK                                            its own working copy, the only host path it
                                                    may write (it also holds the IPC sockets)

plus new pid, network (loopback only), IPC, UTS and cgroup namespaces,
`--die-with-parent`, `--new-session`, and a seccomp allow-list at least as
strict as Docker's default profile (seccomp.py): keyrings (not namespaced: the
one channel between kernels of the same uid that the namespaces leave open),
io_uring, bpf, perf events, userfaultfd, ptrace, mount, namespaces, kexec and
the rest fail with EPERM, foreign ABIs and `clone3` with ENOSYS, setting an
extended attribute or ACL with EOPNOTSUPP, and setting times does nothing
(the host's /dev/null is writable by all: its times were a channel). Without
libseccomp a hand-assembled filter still refuses new user namespaces
(`unshare`/`clone` with CLONE_NEWUSER, `clone3`, foreign ABIs), and the
protections report says the allow-list is missing.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from .identity import capability_args, identity_files, kernel_ids, setpriv_args, userns_args
from .seccomp import kernel_filter

__all__ = ["View", "HOSTNAME", "bwrap_args", "bwrap_options", "etc_files", "memfd", "real_path"]

HOSTNAME = "autograder"
# /etc entries bound read-only from the host when they exist (none holds a secret)
ETC_FROM_HOST = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "fonts", "alternatives", "mime.types")
SYS_FROM_HOST = ("/sys/devices/system/cpu",)
# Docker's masked /proc paths (moby's oci defaults): host-wide state a kernel has no business reading.
# /proc/keys lists the keys of every keyring the uid can view (descriptions of other kernels' keys).
PROC_MASKED = (
    "/proc/asound",
    "/proc/acpi",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/proc/scsi",
)


def real_path(p: str | Path) -> str:
    return os.path.realpath(str(p))


@functools.cache
def bwrap_options() -> frozenset[str]:
    try:
        out = subprocess.run(["bwrap", "--help"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return frozenset()
    return frozenset(tok for tok in (out.stdout + out.stderr).split() if tok.startswith("--"))


def memfd(name: str, data: bytes, fds: list[int]) -> int:
    fd = os.memfd_create(name)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    fds.append(fd)
    return fd


@dataclass(frozen=True)
class View:
    """What the view depends on: the kernel's identity, its Python, the folders it is shown or not, the
    sizes of its private /tmp and /dev/shm (`Sandbox.view()` makes one)."""

    userns: bool  # an unprivileged user namespace (the grader is not root)
    dedicated: bool  # kernels run as `uid` (root, setpriv, privileged bwrap)
    uid: int
    gid: int
    python: str
    exposed: tuple[str, ...]  # folders bound read-only (venv, packages, caches)
    hidden: tuple[str, ...]  # folders inside exposed ones that must look empty
    tmp_bytes: int
    shm_bytes: int
    scratch: tuple[str, ...] = ()  # host folders shown as /tmp and /dev/shm instead of fresh ones (a zygote's slot)


def etc_files(view: View, workdir: Path) -> dict[str, bytes]:
    """The generated /etc (no secrets): the kernel's passwd and group, hosts, hostname, nsswitch.conf."""
    uid, gid = kernel_ids(view.dedicated, view.userns, view.uid, view.gid)
    return {
        **identity_files(uid, gid, workdir),
        "hosts": f"127.0.0.1\tlocalhost {HOSTNAME}\n::1\tlocalhost ip6-localhost\n".encode(),
        "hostname": f"{HOSTNAME}\n".encode(),
        "nsswitch.conf": b"passwd: files\ngroup: files\nshadow: files\nhosts: files\n",
    }


def bwrap_args(view: View, workdir: Path, fds: list[int] | None = None) -> list[str]:
    """The bwrap part of the command line. Generated /etc files are memfds appended to `fds`."""
    opts = bwrap_options()
    work = real_path(workdir)
    args = ["bwrap"]
    if view.userns and not view.dedicated:
        args += userns_args(opts)
    args += [
        "--unshare-pid",
        "--unshare-net",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try" if "--unshare-cgroup-try" in opts else "--unshare-cgroup",
        "--hostname",
        HOSTNAME,
        "--die-with-parent",
        "--new-session",
    ]
    args += capability_args(view.dedicated, view.userns)
    args += _system_args(view)
    if fds is not None:
        args += _generated_args(view, work, fds, opts)
    for name in ETC_FROM_HOST:
        src = f"/etc/{name}"
        if os.path.exists(src):
            args += ["--ro-bind", src, src]
    args += _allow_list_args(view, work)
    args += ["--chdir", work, "--"]
    if view.dedicated:
        args += setpriv_args(view.uid, view.gid)
    return args


def _system_args(view: View) -> list[str]:
    """/usr and the merged-/usr links (or the real folders on older layouts), /proc, /dev, a private /tmp
    and /dev/shm, and an empty /etc."""
    args = ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    args += ["--proc", "/proc", "--dev", "/dev"]
    if view.scratch:  # the slot's own tmpfs mounts, emptied by the grader between its kernels
        tmp, shm = (real_path(p) for p in view.scratch)
        args += ["--bind", tmp, "/tmp", "--bind", shm, "/dev/shm"]
    else:
        args += ["--perms", "1777", "--size", str(view.tmp_bytes), "--tmpfs", "/tmp"]
        args += ["--perms", "1777", "--size", str(view.shm_bytes), "--tmpfs", "/dev/shm"]
    return args + ["--perms", "0755", "--dir", "/etc"]


def _generated_args(view: View, work: str, fds: list[int], opts) -> list[str]:
    """/etc generated (no secrets), the seccomp filter, and the masked /proc paths: memfds appended to `fds`."""
    args = []
    for name, data in etc_files(view, Path(work)).items():
        fd = memfd(f"agr-etc-{name}", data, fds)
        args += ["--perms", "0644", "--ro-bind-data", str(fd), f"/etc/{name}"]
    bpf, _ = kernel_filter()
    if bpf is not None and "--seccomp" in opts:
        args += ["--seccomp", str(memfd("agr-seccomp", bpf, fds))]
    for path in PROC_MASKED:  # an empty read-only file or folder over each (as Docker does)
        if os.path.isdir(path):
            args += ["--tmpfs", path, "--remount-ro", path]
        elif os.path.exists(path):
            args += ["--perms", "0444", "--ro-bind-data", str(memfd("agr-mask", b"", fds)), path]
    return args


def _allow_list_args(view: View, work: str) -> list[str]:
    """The allow-list: Python, the course package, caches (read-only), then the working copy (the one host
    folder it may write); the hidden folders inside them made to look empty."""
    needed = [
        sys.prefix,
        sys.base_prefix,
        os.path.dirname(real_path(view.python)),
        os.path.dirname(os.path.dirname(real_path(view.python))),
    ]
    ro = sorted({real_path(p) for p in [*view.exposed, *needed] if os.path.isdir(p)}, key=lambda p: (p.count("/"), p))
    ro = [p for p in ro if p != "/" and not any(p == q or p.startswith(q + "/") for q in ("/usr",))]
    ro = [p for p in SYS_FROM_HOST if os.path.isdir(p)] + ro
    rw = [work]
    args = []
    made = {"/", "/usr", "/tmp", "/dev", "/etc", "/proc"}  # parents bwrap would make are 0700: make them
    covered: list[str] = []
    for dest in ro + rw:
        parent, chain = os.path.dirname(dest), []
        while parent not in made and not any(parent == c or parent.startswith(c + "/") for c in covered):
            chain.append(parent)
            parent = os.path.dirname(parent)
        for d in reversed(chain):
            args += ["--perms", "0755", "--dir", d]
            made.add(d)
        args += ["--bind" if dest in rw else "--ro-bind", dest, dest]
        covered.append(dest)
    for path in sorted({real_path(p) for p in view.hidden}):
        if any(path.startswith(q + "/") for q in ro) and path not in rw and not work.startswith(path + "/"):
            if os.path.isdir(path):
                args += ["--tmpfs", path, "--remount-ro", path]
            elif os.path.exists(path):
                args += ["--ro-bind", "/dev/null", path]
    return args
