"""The system-call table (autograder/sandbox/syscalls.py), read as data: what it refuses, that every name in it is a
real system call, and that its conditional rules hold the values Docker's default profile holds.

seccomp.py skips a name this architecture does not have, so a misspelt name would silently allow nothing and
refuse nothing; the names are checked here against libseccomp's tables of the architectures the grader runs
on. Whether a real kernel refuses the calls is test_seccomp.py's (sandboxed kernels, slower).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import keyword
import socket

import pytest

from autograder.sandbox import syscalls
from autograder.sandbox.syscalls import (
    AF_VSOCK,
    ALLOWED,
    ALLOWED_ON,
    CLONE_NAMESPACES,
    NO_EFFECT,
    PERSONALITIES,
    UNSUPPORTED,
)

# The calls the module docstring's threat model names: never on the allow-list, on any architecture.
REFUSED = (
    "add_key",
    "keyctl",
    "request_key",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "kcmp",
    "pidfd_getfd",
    "mount",
    "umount",
    "umount2",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "move_mount",
    "open_tree",
    "mount_setattr",
    "pivot_root",
    "chroot",
    "unshare",
    "setns",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "reboot",
    "swapon",
    "swapoff",
    "settimeofday",
    "clock_settime",
    "clock_settime64",
    "stime",
    "syslog",
    "acct",
    "quotactl",
    "lookup_dcookie",
    "msgget",
    "msgsnd",
    "msgrcv",
    "msgctl",
    "semget",
    "semop",
    "semctl",
    "shmget",
    "shmat",
    "shmdt",
    "shmctl",
    "ipc",
    "mq_open",
    "mq_unlink",
    "mq_timedsend",
    "mq_timedreceive",
    "mq_notify",
    "mq_getsetattr",
)
# Allowed only with the arguments of a conditional rule (seccomp.py), or answered without being made.
CONDITIONAL = ("socket", "personality", "clone", "clone3")
# What Python, JAX's thread pools, the kernel's zmq sockets and subprocess need (a sample: test_seccomp.py runs them).
NEEDED = (
    "read",
    "write",
    "openat",
    "close",
    "mmap",
    "munmap",
    "mprotect",
    "brk",
    "futex",
    "rt_sigaction",
    "rt_sigprocmask",
    "exit_group",
    "execve",
    "epoll_create1",
    "epoll_ctl",
    "epoll_wait",
    "eventfd2",
    "connect",
    "bind",
    "listen",
    "accept4",
    "sendto",
    "recvfrom",
    "getrandom",
    "sched_getaffinity",
    "pipe2",
    "wait4",
    "getdents64",
    "newfstatat",
)

# linux/sched.h
CLONE_FLAGS = {
    "CLONE_NEWNS": 0x00020000,
    "CLONE_NEWCGROUP": 0x02000000,
    "CLONE_NEWUTS": 0x04000000,
    "CLONE_NEWIPC": 0x08000000,
    "CLONE_NEWUSER": 0x10000000,
    "CLONE_NEWPID": 0x20000000,
    "CLONE_NEWNET": 0x40000000,
}
# linux/personality.h; audit architectures of linux/audit.h (libseccomp's SCMP_ARCH_*)
PER_LINUX, PER_LINUX32, UNAME26, QUERY = 0x0, 0x8, 0x20000, 0xFFFFFFFF
ARCHES = {"x86_64": 0xC000003E, "x86": 0x40000003, "x32": 0x4000003E, "aarch64": 0xC00000B7, "arm": 0x40000028}


def test_every_name_is_listed_once_and_in_one_table():
    tables = {"ALLOWED": ALLOWED, "UNSUPPORTED": UNSUPPORTED, "NO_EFFECT": NO_EFFECT}
    tables |= {f"ALLOWED_ON[{arch}]": names for arch, names in ALLOWED_ON.items()}
    seen: dict[str, str] = {}
    for table, names in tables.items():
        for name in names:
            assert name.isidentifier() and not keyword.iskeyword(name), (table, name)
            assert name not in seen, f"{name} is in {seen.get(name)} and {table}"
            seen[name] = table
    assert not set(seen) & set(CONDITIONAL), "a conditional call allowed unconditionally loses its condition"


def test_the_threat_models_calls_are_refused():
    allowed = set(ALLOWED).union(*ALLOWED_ON.values())
    assert not allowed & set(REFUSED), sorted(allowed & set(REFUSED))
    assert {"setxattr", "fsetxattr", "removexattr"} <= set(UNSUPPORTED)  # and so POSIX ACLs
    assert {"getxattr", "listxattr"} <= allowed  # reading them stays allowed
    assert {"utimensat", "utimes"} <= set(NO_EFFECT)  # a shared inode's times were a channel between kernels


def test_what_python_jax_and_the_kernel_need_is_allowed():
    assert set(NEEDED) <= set(ALLOWED), sorted(set(NEEDED) - set(ALLOWED))


def test_the_conditional_rules_hold_dockers_values():
    assert sum(CLONE_FLAGS.values()) == CLONE_NAMESPACES  # every namespace flag: a clone with one is refused
    assert sorted(PERSONALITIES) == sorted({PER_LINUX, PER_LINUX32, UNAME26, UNAME26 | PER_LINUX32, QUERY})
    assert getattr(socket, "AF_VSOCK", 40) == AF_VSOCK  # the host's vsock: no socket of that family


def test_the_module_says_what_it_exports():
    assert set(syscalls.__all__) == {name for name in vars(syscalls) if name.isupper() and not name.startswith("_")}


def _libseccomp():
    name = ctypes.util.find_library("seccomp")
    if name is None:
        pytest.skip("libseccomp is not installed (make system-deps): the names cannot be checked against its tables")
    lib = ctypes.CDLL(name)
    lib.seccomp_syscall_resolve_name_arch.argtypes = [ctypes.c_uint32, ctypes.c_char_p]
    lib.seccomp_syscall_resolve_name_arch.restype = ctypes.c_int
    return lib


def test_every_name_is_a_system_call_of_some_architecture():
    """A misspelt name resolves nowhere: seccomp.py would skip it and allow (or refuse) nothing."""
    lib = _libseccomp()

    def known(name: str) -> list[str]:
        return [
            arch for arch, token in ARCHES.items() if lib.seccomp_syscall_resolve_name_arch(token, name.encode()) >= 0
        ]

    names = set(ALLOWED + UNSUPPORTED + NO_EFFECT + CONDITIONAL + REFUSED).union(*ALLOWED_ON.values())
    unknown = sorted(name for name in names if not known(name))
    assert not unknown, f"no architecture has these system calls: {unknown}"
    assert known("acces") == []  # the check itself sees a misspelling
    for arch, names in ALLOWED_ON.items():
        assert all(arch in known(name) for name in names), (arch, names)
