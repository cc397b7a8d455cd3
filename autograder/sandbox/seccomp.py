"""The system calls a student kernel may make: an allow-list at least as strict as Docker's default profile.

Threat model: the kernel is hostile code running on the instructor's machine.
Bubblewrap's namespaces (launch.py) hide files, processes, the network and
System V IPC, but several kernel facilities are not namespaced at all, or are
large attack surface on the host kernel:

- **keyrings** (`add_key`, `keyctl`, `request_key`): the user keyring belongs to
  the host uid; every kernel runs as the same dedicated uid, so a key one
  student's kernel adds is readable by another student's kernel in a later run
  (a channel between kernels that bubblewrap does not close);
- **io_uring**, **bpf**, **perf_event_open**, **userfaultfd**: the usual
  kernel-exploit surface, and bpf maps / perf buffers outlive a kernel;
- **ptrace**, `process_vm_readv/writev`, `kcmp`, `pidfd_getfd`: reading other
  processes (the pid namespace already hides them; this is a second wall);
- **mount**, the new mount API, `pivot_root`, `chroot`, `unshare`, `setns`,
  `clone`/`clone3` with namespace flags: changing the view itself;
- kexec, modules, reboot, swap, clock setting, `syslog`, `acct`, quotas,
  `lookup_dcookie`, `personality` beyond the harmless values, `socket(AF_VSOCK)`,
  foreign ABIs (i386 and x32 calls on x86-64, 32-bit arm on aarch64).

Like Docker's default profile (moby's `profiles/seccomp/default.json`) the
filter is an *allow-list*: every call not named below fails with EPERM, so a
call the kernel learns after this list was written is refused too. The
differences from Docker's profile only make it stricter: `io_uring_*` (Docker
dropped them in 2023 as well), `ptrace` and `process_vm_readv/writev` (Docker
allows them on kernels >= 4.8) are refused, and no capability-gated call is
granted (the kernel has no capabilities). `clone3` fails with ENOSYS, as in
Docker, because a classic BPF filter cannot read its flags (they are behind a
pointer): glibc then falls back to `clone`, whose flags the filter checks.

What must keep working, and does (tests/autograder/sandbox/test_launch.py): Python and
its threads, JAX/XLA's thread pools, the Jupyter kernel's zmq sockets (TCP on
loopback, epoll, eventfd), `subprocess`, and gloo's TCP collectives between
two processes (notebook 06's multi-process exercises).

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

__all__ = ["ALLOWED", "REFUSED_EXAMPLES", "compile_filter", "libseccomp_version", "resolve", "FilterUnavailable"]

# Docker's unconditional allow-list (moby profiles/seccomp/default.json), without io_uring_enter,
# io_uring_register and io_uring_setup. Names that do not exist on this architecture are skipped.
ALLOWED = (
    "accept",
    "accept4",
    "access",
    "adjtimex",
    "alarm",
    "bind",
    "brk",
    "capget",
    "capset",
    "chdir",
    "chmod",
    "chown",
    "chown32",
    "clock_adjtime",
    "clock_adjtime64",
    "clock_getres",
    "clock_getres_time64",
    "clock_gettime",
    "clock_gettime64",
    "clock_nanosleep",
    "clock_nanosleep_time64",
    "close",
    "close_range",
    "connect",
    "copy_file_range",
    "creat",
    "dup",
    "dup2",
    "dup3",
    "epoll_create",
    "epoll_create1",
    "epoll_ctl",
    "epoll_ctl_old",
    "epoll_pwait",
    "epoll_pwait2",
    "epoll_wait",
    "epoll_wait_old",
    "eventfd",
    "eventfd2",
    "execve",
    "execveat",
    "exit",
    "exit_group",
    "faccessat",
    "faccessat2",
    "fadvise64",
    "fadvise64_64",
    "fallocate",
    "fanotify_mark",
    "fchdir",
    "fchmod",
    "fchmodat",
    "fchown",
    "fchown32",
    "fchownat",
    "fcntl",
    "fcntl64",
    "fdatasync",
    "fgetxattr",
    "flistxattr",
    "flock",
    "fork",
    "fremovexattr",
    "fsetxattr",
    "fstat",
    "fstat64",
    "fstatat64",
    "fstatfs",
    "fstatfs64",
    "fsync",
    "ftruncate",
    "ftruncate64",
    "futex",
    "futex_time64",
    "futex_waitv",
    "futimesat",
    "getcpu",
    "getcwd",
    "getdents",
    "getdents64",
    "getegid",
    "getegid32",
    "geteuid",
    "geteuid32",
    "getgid",
    "getgid32",
    "getgroups",
    "getgroups32",
    "getitimer",
    "getpeername",
    "getpgid",
    "getpgrp",
    "getpid",
    "getppid",
    "getpriority",
    "getrandom",
    "getresgid",
    "getresgid32",
    "getresuid",
    "getresuid32",
    "getrlimit",
    "get_robust_list",
    "getrusage",
    "getsid",
    "getsockname",
    "getsockopt",
    "get_thread_area",
    "gettid",
    "gettimeofday",
    "getuid",
    "getuid32",
    "getxattr",
    "inotify_add_watch",
    "inotify_init",
    "inotify_init1",
    "inotify_rm_watch",
    "io_cancel",
    "ioctl",
    "io_destroy",
    "io_getevents",
    "io_pgetevents",
    "io_pgetevents_time64",
    "ioprio_get",
    "ioprio_set",
    "io_setup",
    "io_submit",
    "ipc",
    "kill",
    "landlock_add_rule",
    "landlock_create_ruleset",
    "landlock_restrict_self",
    "lchown",
    "lchown32",
    "lgetxattr",
    "link",
    "linkat",
    "listen",
    "listxattr",
    "llistxattr",
    "_llseek",
    "lremovexattr",
    "lseek",
    "lsetxattr",
    "lstat",
    "lstat64",
    "madvise",
    "membarrier",
    "memfd_create",
    "memfd_secret",
    "mincore",
    "mkdir",
    "mkdirat",
    "mknod",
    "mknodat",
    "mlock",
    "mlock2",
    "mlockall",
    "mmap",
    "mmap2",
    "mprotect",
    "mq_getsetattr",
    "mq_notify",
    "mq_open",
    "mq_timedreceive",
    "mq_timedreceive_time64",
    "mq_timedsend",
    "mq_timedsend_time64",
    "mq_unlink",
    "mremap",
    "msgctl",
    "msgget",
    "msgrcv",
    "msgsnd",
    "msync",
    "munlock",
    "munlockall",
    "munmap",
    "name_to_handle_at",
    "nanosleep",
    "newfstatat",
    "_newselect",
    "open",
    "openat",
    "openat2",
    "pause",
    "pidfd_open",
    "pidfd_send_signal",
    "pipe",
    "pipe2",
    "pkey_alloc",
    "pkey_free",
    "pkey_mprotect",
    "poll",
    "ppoll",
    "ppoll_time64",
    "prctl",
    "pread64",
    "preadv",
    "preadv2",
    "prlimit64",
    "process_mrelease",
    "pselect6",
    "pselect6_time64",
    "pwrite64",
    "pwritev",
    "pwritev2",
    "read",
    "readahead",
    "readlink",
    "readlinkat",
    "readv",
    "recv",
    "recvfrom",
    "recvmmsg",
    "recvmmsg_time64",
    "recvmsg",
    "remap_file_pages",
    "removexattr",
    "rename",
    "renameat",
    "renameat2",
    "restart_syscall",
    "rmdir",
    "rseq",
    "rt_sigaction",
    "rt_sigpending",
    "rt_sigprocmask",
    "rt_sigqueueinfo",
    "rt_sigreturn",
    "rt_sigsuspend",
    "rt_sigtimedwait",
    "rt_sigtimedwait_time64",
    "rt_tgsigqueueinfo",
    "sched_getaffinity",
    "sched_getattr",
    "sched_getparam",
    "sched_get_priority_max",
    "sched_get_priority_min",
    "sched_getscheduler",
    "sched_rr_get_interval",
    "sched_rr_get_interval_time64",
    "sched_setaffinity",
    "sched_setattr",
    "sched_setparam",
    "sched_setscheduler",
    "sched_yield",
    "seccomp",
    "select",
    "semctl",
    "semget",
    "semop",
    "semtimedop",
    "semtimedop_time64",
    "send",
    "sendfile",
    "sendfile64",
    "sendmmsg",
    "sendmsg",
    "sendto",
    "setfsgid",
    "setfsgid32",
    "setfsuid",
    "setfsuid32",
    "setgid",
    "setgid32",
    "setgroups",
    "setgroups32",
    "setitimer",
    "setpgid",
    "setpriority",
    "setregid",
    "setregid32",
    "setresgid",
    "setresgid32",
    "setresuid",
    "setresuid32",
    "setreuid",
    "setreuid32",
    "setrlimit",
    "set_robust_list",
    "setsid",
    "setsockopt",
    "set_thread_area",
    "set_tid_address",
    "setuid",
    "setuid32",
    "setxattr",
    "shmat",
    "shmctl",
    "shmdt",
    "shmget",
    "shutdown",
    "sigaltstack",
    "signalfd",
    "signalfd4",
    "sigprocmask",
    "sigreturn",
    "socketcall",
    "socketpair",
    "splice",
    "stat",
    "stat64",
    "statfs",
    "statfs64",
    "statx",
    "symlink",
    "symlinkat",
    "sync",
    "sync_file_range",
    "syncfs",
    "sysinfo",
    "tee",
    "tgkill",
    "time",
    "timer_create",
    "timer_delete",
    "timer_getoverrun",
    "timer_gettime",
    "timer_gettime64",
    "timer_settime",
    "timer_settime64",
    "timerfd_create",
    "timerfd_gettime",
    "timerfd_gettime64",
    "timerfd_settime",
    "timerfd_settime64",
    "times",
    "tkill",
    "truncate",
    "truncate64",
    "ugetrlimit",
    "umask",
    "uname",
    "unlink",
    "unlinkat",
    "utime",
    "utimensat",
    "utimensat_time64",
    "utimes",
    "vfork",
    "vmsplice",
    "wait4",
    "waitid",
    "waitpid",
    "write",
    "writev",
)
# Per architecture (Docker's "includes": {"arches": ...}), for the native ABI only.
ALLOWED_ON = {"x86_64": ("arch_prctl", "modify_ldt")}

# Allowed only with these arguments (Docker's conditional rules).
AF_VSOCK = 40
PERSONALITIES = (0x0, 0x8, 0x20000, 0x20008, 0xFFFFFFFF)  # PER_LINUX, +UNAME26, +ADDR_NO_RANDOMIZE, query
CLONE_NAMESPACES = 0x7E020000  # CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET

# Channels the tests try, one per family of the module docstring (each must fail with EPERM).
REFUSED_EXAMPLES = (
    "add_key",
    "keyctl",
    "request_key",
    "io_uring_setup",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "ptrace",
    "process_vm_readv",
    "mount",
    "umount2",
    "fsopen",
    "unshare",
    "setns",
    "kexec_load",
    "init_module",
    "reboot",
    "swapon",
    "settimeofday",
    "syslog",
    "acct",
    "pivot_root",
    "chroot",
    "kcmp",
    "pidfd_getfd",
    "lookup_dcookie",
    "open_by_handle_at",
)

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
