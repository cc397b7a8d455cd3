"""Compiles the system-call allow-list (syscalls.py) into the BPF program bubblewrap loads into a student kernel.

Threat model: the program is the only wall between a hostile kernel and the host kernel's
un-namespaced facilities (syscalls.py says which and why); it is built here, in the grader, from the
table alone, and nothing a student controls reaches it.

The program is compiled with libseccomp (Debian's `libseccomp2`, which
`make system-deps` installs), called through ctypes, for the machine's own
architecture; bubblewrap loads it (`--seccomp FD`) right before it runs the
kernel. Without libseccomp, launch.py falls back to a small hand-assembled
filter that only refuses new user namespaces and foreign ABIs, and the
protections report says the syscall allow-list is missing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import functools
import os

from .syscalls import AF_VSOCK, ALLOWED, ALLOWED_ON, CLONE_NAMESPACES, PERSONALITIES

__all__ = ["compile_filter", "libseccomp_version", "resolve", "FilterUnavailable"]

# libseccomp's ABI (seccomp.h): actions, attributes, comparison operators, struct scmp_arg_cmp.
_ACT_ALLOW = 0x7FFF0000
_ATTR_ACT_BADARCH = 2
_ATTR_CTL_NNP = 3
_ATTR_CTL_OPTIMIZE = 8
_CMP_NE, _CMP_EQ, _CMP_MASKED_EQ = 1, 4, 7


def _act_errno(code: int) -> int:
    return 0x00050000 | (code & 0xFFFF)


class _ArgCmp(ctypes.Structure):
    _fields_ = [
        ("arg", ctypes.c_uint),
        ("op", ctypes.c_int),
        ("datum_a", ctypes.c_uint64),
        ("datum_b", ctypes.c_uint64),
    ]


class FilterUnavailable(RuntimeError):
    """libseccomp is missing or refused to build the filter; the message says which."""


@functools.cache
def _lib() -> ctypes.CDLL:
    name = ctypes.util.find_library("seccomp") or "libseccomp.so.2"
    try:
        lib = ctypes.CDLL(name, use_errno=True)
    except OSError as err:
        raise FilterUnavailable(
            f"libseccomp is not installed (Debian/Ubuntu: apt-get install libseccomp2): {err}"
        ) from None
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    lib.seccomp_attr_set.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32]
    lib.seccomp_rule_add_array.argtypes = [
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.POINTER(_ArgCmp),
    ]
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_syscall_resolve_name.restype = ctypes.c_int
    return lib


def libseccomp_version() -> str:
    """'2.5.4' (or raises FilterUnavailable)."""
    lib = _lib()

    class _Version(ctypes.Structure):
        _fields_ = [("major", ctypes.c_uint), ("minor", ctypes.c_uint), ("micro", ctypes.c_uint)]

    lib.seccomp_version.restype = ctypes.POINTER(_Version)
    v = lib.seccomp_version().contents
    return f"{v.major}.{v.minor}.{v.micro}"


def resolve(name: str) -> int | None:
    """The native syscall number of `name`, or None where this architecture has no such call."""
    nr = _lib().seccomp_syscall_resolve_name(name.encode())
    return nr if nr >= 0 else None


def _rule(lib, ctx, action: int, name: str, *cmps: tuple[int, int, int, int]) -> None:
    nr = resolve(name)
    if nr is None:
        return
    arr = (_ArgCmp * max(1, len(cmps)))(*(_ArgCmp(*c) for c in cmps))
    rc = lib.seccomp_rule_add_array(ctx, action, nr, len(cmps), arr)
    if rc < 0:
        raise FilterUnavailable(f"libseccomp refused the rule for {name}: {os.strerror(-rc)}")


@functools.cache
def compile_filter() -> bytes:
    """The BPF program (struct sock_filter[], for `bwrap --seccomp FD`) for this machine's architecture."""
    lib = _lib()
    machine = os.uname().machine
    ctx = lib.seccomp_init(_act_errno(errno.EPERM))
    if not ctx:
        raise FilterUnavailable("seccomp_init failed")
    try:
        for attr, value in (
            (_ATTR_ACT_BADARCH, _act_errno(errno.ENOSYS)),
            (_ATTR_CTL_NNP, 0),
            (_ATTR_CTL_OPTIMIZE, 2),
        ):  # 2: a binary tree of syscall numbers
            rc = lib.seccomp_attr_set(ctx, attr, value)
            if rc < 0 and attr != _ATTR_CTL_OPTIMIZE:  # libseccomp < 2.5 has no optimizer: still correct
                raise FilterUnavailable(f"seccomp_attr_set({attr}) failed: {os.strerror(-rc)}")
        for name in ALLOWED + ALLOWED_ON.get(machine, ()):
            _rule(lib, ctx, _ACT_ALLOW, name)
        _rule(lib, ctx, _ACT_ALLOW, "socket", (0, _CMP_NE, AF_VSOCK, 0))
        for persona in PERSONALITIES:
            _rule(lib, ctx, _ACT_ALLOW, "personality", (0, _CMP_EQ, persona, 0))
        _rule(lib, ctx, _ACT_ALLOW, "clone", (0, _CMP_MASKED_EQ, CLONE_NAMESPACES, 0))
        _rule(lib, ctx, _act_errno(errno.ENOSYS), "clone3")
        fd = os.memfd_create("agr-seccomp-build")
        try:
            rc = lib.seccomp_export_bpf(ctx, fd)
            if rc < 0:
                raise FilterUnavailable(f"seccomp_export_bpf failed: {os.strerror(-rc)}")
            size = os.fstat(fd).st_size
            os.lseek(fd, 0, os.SEEK_SET)
            prog = os.read(fd, size)
        finally:
            os.close(fd)
    finally:
        lib.seccomp_release(ctx)
    if not prog or len(prog) % 8:
        raise FilterUnavailable(f"libseccomp exported a malformed program ({len(prog)} bytes)")
    return prog
