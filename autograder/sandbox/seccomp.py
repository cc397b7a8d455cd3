"""Compiles the system-call allow-list (syscalls.py) into the BPF program bubblewrap loads into a student kernel.

Threat model: the program is the only wall between a hostile kernel and the host kernel's
un-namespaced facilities (syscalls.py says which and why); it is built here, in the grader, from the
table alone, and nothing a student controls reaches it.

The program is compiled with libseccomp (Debian's `libseccomp2`, which
`make system-deps` installs), called through ctypes, for the machine's own
architecture; bubblewrap loads it (`--seccomp FD`) right before it runs the
kernel. Without libseccomp, `kernel_filter` falls back to a small hand-assembled
filter (`userns_filter`) that only refuses new user namespaces and foreign ABIs, and the
protections report says the syscall allow-list is missing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import functools
import os

from .syscalls import AF_VSOCK, ALLOWED, ALLOWED_ON, CLONE_NAMESPACES, NO_EFFECT, PERSONALITIES, UNSUPPORTED

__all__ = [
    "compile_filter",
    "kernel_filter",
    "userns_filter",
    "libseccomp_version",
    "syscall_number",
    "FilterUnavailable",
]

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


def syscall_number(name: str) -> int | None:
    """The native syscall number of `name`, or None where this architecture has no such call."""
    nr = _lib().seccomp_syscall_resolve_name(name.encode())
    return nr if nr >= 0 else None


def _rule(lib, ctx, action: int, name: str, *cmps: tuple[int, int, int, int]) -> None:
    nr = syscall_number(name)
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
        for name in UNSUPPORTED:
            _rule(lib, ctx, _act_errno(errno.EOPNOTSUPP), name)
        for name in NO_EFFECT:
            _rule(lib, ctx, _act_errno(0), name)  # returns 0, the call not made
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


# seccomp: refuse new user namespaces (unshare/clone with CLONE_NEWUSER, and clone3, whose flags a
# classic BPF filter cannot read: glibc then falls back to clone). Syscalls of another ABI (i386, x32)
# are refused too, so they cannot be used to get around it. Per architecture: audit arch, clone, clone3,
# unshare.
_SECCOMP_ARCH = {"x86_64": (0xC000003E, 56, 435, 272), "aarch64": (0xC00000B7, 220, 435, 97)}
_CLONE_NEWUSER = 0x10000000


def userns_filter() -> bytes | None:
    """The compiled BPF program (for `bwrap --seccomp`), or None on an architecture we have no table for."""
    import platform
    import struct

    spec = _SECCOMP_ARCH.get(platform.machine())
    if spec is None:
        return None
    arch, clone, clone3, unshare = spec
    allow, eperm, enosys = 0x7FFF0000, 0x00050000 | 1, 0x00050000 | 38
    ld, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    prog = [
        (ld, 0, 0, 4),  # 0  A = arch
        (jeq, 0, 10, arch),  # 1  another ABI -> ENOSYS (12)
        (ld, 0, 0, 0),  # 2  A = syscall number
        (jge, 8, 0, 0x40000000),  # 3  x32 -> ENOSYS
        (jeq, 7, 0, clone3),  # 4  clone3 -> ENOSYS
        (jeq, 2, 0, unshare),  # 5  unshare -> check flags (8)
        (jeq, 1, 0, clone),  # 6  clone -> check flags (8)
        (ret, 0, 0, allow),  # 7
        (ld, 0, 0, 16),  # 8  A = low word of the first argument (the flags)
        (jset, 1, 0, _CLONE_NEWUSER),  # 9  CLONE_NEWUSER -> EPERM (11)
        (ret, 0, 0, allow),  # 10
        (ret, 0, 0, eperm),  # 11
        (ret, 0, 0, enosys),  # 12
    ]
    return b"".join(struct.pack("<HBBI", *ins) for ins in prog)


@functools.cache
def kernel_filter() -> tuple[bytes | None, str]:
    """(program, '') with the allow-list compiled here, or (fallback program or None, why the allow-list is
    missing). Compiled once per grader process."""
    try:
        return compile_filter(), ""
    except FilterUnavailable as err:
        return userns_filter(), str(err)
