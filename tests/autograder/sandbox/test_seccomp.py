"""Attacks on the student sandbox, each with its exact outcome asserted.

The system-call allow-list (seccomp.py, syscalls.py): Docker's refusals in a real kernel, no keyring shared
between kernels.

Each test starts a small sandboxed Python (the view, identity and limits a kernel gets, through
`Sandbox.wrap`) that tries one attack and prints what happened as JSON. Limits are scaled down (MiB,
not GiB) so each attack takes seconds. Skips are per mechanism and say why (no bubblewrap, not root,
no cgroup); on such a machine the protections report must say the same (test_protections.py).
"""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import textwrap
from pathlib import Path

import pytest
from sandbox_helpers import MiB, finish, popen

from autograder.sandbox import workcopy
from autograder.sandbox.launch import Sandbox
from autograder.sandbox.protections import summary_lines

# Each refused call with arguments that are harmless where the call is allowed (the control shows what it
# does there): (name, arguments). "<self>" is the caller's pid, "<buf>" a zeroed 256-byte buffer.
SYSCALL_ATTEMPTS = (
    ("add_key", (0, 0, 0, 0, 0)),  # NULL type: EFAULT where allowed
    ("keyctl", (0, -4, 0)),  # KEYCTL_GET_KEYRING_ID of the user keyring: its id
    ("request_key", (0, 0, 0, 0)),
    ("io_uring_setup", (1, "<buf>")),  # a ring's descriptor where allowed
    ("io_uring_enter", (-1, 0, 0, 0, 0, 0)),
    ("io_uring_register", (-1, 0, 0, 0)),
    ("bpf", (0, 0, 0)),
    ("perf_event_open", (0, 0, -1, -1, 0)),
    ("userfaultfd", (0,)),
    ("ptrace", (2, "<self>", 0, 0)),  # PTRACE_PEEKDATA of itself: ESRCH (not traced)
    ("process_vm_readv", ("<self>", 0, 0, 0, 0, 0)),  # nothing to read: 0
    ("kcmp", ("<self>", "<self>", 0, 0, 0)),
    ("pidfd_getfd", (-1, 0, 0)),
    ("mount", (0, 0, 0, 0, 0)),
    ("umount2", (0, 0)),
    ("fsopen", (0, 0)),
    ("open_tree", (-1, 0, 0)),
    ("move_mount", (-1, 0, -1, 0, 0)),
    ("pivot_root", (0, 0)),
    ("chroot", (0,)),  # NULL path: EFAULT where allowed
    ("unshare", (0,)),  # no flags: a no-op where allowed
    ("setns", (-1, 0)),
    ("kexec_load", (0, 0, 0, 0)),
    ("kexec_file_load", (-1, -1, 0, 0, 0)),
    ("init_module", (0, 0, 0)),
    ("finit_module", (-1, 0, 0)),
    ("delete_module", (0, 0)),
    ("reboot", (0, 0, 0, 0)),
    ("swapon", (0, 0)),
    ("swapoff", (0,)),
    ("settimeofday", (0, 0)),  # both NULL: a no-op where allowed
    ("clock_settime", (0, 0)),
    ("syslog", (10, 0, 0)),
    ("acct", (0,)),
    ("quotactl", (0, 0, 0, 0)),
    ("lookup_dcookie", (0, 0, 0)),
    ("open_by_handle_at", (-1, 0, 0)),
    ("fanotify_init", (0, 0)),
    ("iopl", (0,)),
    ("ioperm", (0, 0, 0)),
    ("vhangup", ()),
    ("sethostname", (0, 0)),
    ("setdomainname", (0, 0)),
    ("mbind", (0, 0, 0, 0, 0, 0)),
    ("set_mempolicy", (0, 0, 0)),
    ("get_mempolicy", (0, 0, 0, 0, 0)),
    # refused beyond Docker: their objects outlive a kernel in its IPC namespace (a zygote's slot, run/zygote.py)
    ("msgget", (0x4147, 0)),  # an existing queue only: ENOENT where allowed
    ("msgctl", (-1, 0, 0)),
    ("semget", (0x4147, 0, 0)),
    ("shmget", (0x4147, 0, 0)),
    ("shmat", (-1, 0, 0)),
    ("mq_open", (0, 0, 0, 0)),  # NULL name: EFAULT where allowed
    ("mq_unlink", (0,)),
)

SYSCALL_PROBE = """
import ctypes, errno, json, os, socket, subprocess, threading
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(256)
def call(nr, *args):
    conv = [ctypes.c_long(os.getpid()) if a == "<self>" else buf if a == "<buf>" else ctypes.c_long(a)
            for a in args]
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *conv)
    if r >= 0 and nr == NUMBERS.get("io_uring_setup"):
        os.close(r)
    return "ok" if r >= 0 else errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))
out = {name: call(NUMBERS[name], *args) for name, args in ATTEMPTS if name in NUMBERS}
out["clone3"] = call(NUMBERS["clone3"], 0, 0)
if X32:
    out["x32_getpid"] = call(0x40000000 | NUMBERS["getpid"])
out["personality_query"] = call(NUMBERS["personality"], 0xFFFFFFFF)
out["personality_read_implies_exec"] = call(NUMBERS["personality"], 0x0400000)
try:
    socket.socket(40, socket.SOCK_STREAM).close(); out["socket_vsock"] = "ok"
except OSError as e:
    out["socket_vsock"] = errno.errorcode[e.errno]
# what must keep working: threads, fork/exec, loopback TCP, socketpair, eventfd
seen = []
t = threading.Thread(target=lambda: seen.append(1)); t.start(); t.join()
out["thread"] = "ok" if seen else "failed"
out["subprocess"] = "ok" if subprocess.run(["true"]).returncode == 0 else "failed"
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1)
cli = socket.create_connection(srv.getsockname()); conn, _ = srv.accept(); cli.sendall(b"x")
out["loopback_tcp"] = "ok" if conn.recv(1) == b"x" else "failed"
for s in (cli, conn, srv):
    s.close()
a, b = socket.socketpair(); a.close(); b.close()
os.close(os.eventfd(0)); out["socketpair_eventfd"] = "ok"
out["proc_keys"] = open("/proc/keys").read() if os.path.exists("/proc/keys") else None
print(json.dumps(out))
"""


def _numbers(names) -> dict[str, int]:
    from autograder.sandbox import seccomp

    return {n: nr for n in names if (nr := seccomp.syscall_number(n)) is not None}


def _probe_code() -> str:
    names = [n for n, _ in SYSCALL_ATTEMPTS] + ["clone3", "getpid", "personality"]
    return (
        f"NUMBERS = {_numbers(names)!r}\nATTEMPTS = {SYSCALL_ATTEMPTS!r}\n"
        f"X32 = {os.uname().machine == 'x86_64'!r}\n" + SYSCALL_PROBE
    )


def _without_seccomp(launch):
    """The control: the same launch without bwrap's --seccomp (what the sandbox was before seccomp.py)."""
    i = launch.argv.index("--seccomp")
    launch.argv[i : i + 2] = []
    return launch


def run_unfiltered(sb: Sandbox, work: Path, code: str, timeout: float = 60):
    proc, launch = popen(
        sb, work, _without_seccomp(sb.wrap(work, [sb.python, "-c", textwrap.dedent(code)], label="ctl"))
    )
    return finish(proc, launch, timeout)


def need_allow_list(sb: Sandbox) -> None:
    report = {p.key: p for p in sb.protections()}
    if not report["syscall_filter"].available:
        pytest.skip(report["syscall_filter"].detail)


def kernel_json(kernel, code: str, timeout: float = 60):
    """Run `code` in a started Kernel; the JSON of its last stdout line."""
    ran = kernel.execute(textwrap.dedent(code), timeout)
    text = "".join(
        o.get("text", "") for o in ran.outputs if o.get("output_type") == "stream" and o.get("name") == "stdout"
    )
    assert ran.status == "ok", (ran.status, ran.ename, ran.evalue, ran.outputs)
    return json.loads(text.strip().splitlines()[-1])


def start_kernel(sb: Sandbox, tmp_path: Path, label: str):
    """A real kernel (ipykernel, zmq, the warm imports of numpy and jax) in the sandbox, ready."""
    from autograder.run.kernel import Kernel

    sb = dataclasses.replace(sb, memory_bytes=1024 * MiB)  # the fixture's 192 MiB is too small for jax
    kernel = Kernel(tmp_path / f"kernel-{label}", sb, label=label, log_dir=tmp_path)
    try:
        kernel.start()
        kernel.wait_ready(120)
    except BaseException:
        kernel.kill()
        workcopy.remove_with_scratch(kernel.workdir)
        raise
    return kernel


def stop_kernel(kernel) -> None:
    kernel.kill()
    assert workcopy.remove_with_scratch(kernel.workdir)


KEY_CODE = """
import ctypes, errno, json, os
libc = ctypes.CDLL(None, use_errno=True)
ADD_KEY, KEYCTL, REQUEST_KEY = NUMBERS["add_key"], NUMBERS["keyctl"], NUMBERS["request_key"]
USER_KEYRING, SEARCH, READ, INVALIDATE = -4, 10, 11, 21
def result(r):
    return r if r >= 0 else errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))
def sc(nr, *args):
    ctypes.set_errno(0)
    return result(libc.syscall(ctypes.c_long(nr), *args))
L = ctypes.c_long
out = {}
if "plant" in DO:
    out["plant"] = sc(ADD_KEY, b"user", NAME, PAYLOAD, L(len(PAYLOAD)), L(USER_KEYRING))
if "find" in DO:
    buf = ctypes.create_string_buffer(256)
    out["request_key"] = sc(REQUEST_KEY, b"user", NAME, L(0), L(0))
    out["search"] = sc(KEYCTL, L(SEARCH), L(USER_KEYRING), b"user", NAME, L(0))
    n = sc(KEYCTL, L(READ), L(KEY_ID), buf, L(256))
    out["read"] = buf.raw[:n].decode() if isinstance(n, int) else n
    out["proc_keys"] = open("/proc/keys").read()
if "remove" in DO:
    out["remove"] = sc(KEYCTL, L(INVALIDATE), L(KEY_ID))
print(json.dumps(out))
"""


def _key_code(do: tuple[str, ...], name: bytes, key_id: int = 0) -> str:
    return (
        f"NUMBERS = {_numbers(['add_key', 'keyctl', 'request_key'])!r}\nDO = {do!r}\nNAME = {name!r}\n"
        f"PAYLOAD = b'written by another kernel'\nKEY_ID = {key_id}\n" + KEY_CODE
    )


def test_syscall_allow_list_refuses_dockers_refusals_in_a_real_kernel(sandbox, tmp_path, copies):
    """Every family Docker's default profile refuses fails with EPERM in a kernel (clone3 and foreign ABIs with
    ENOSYS), while threads, subprocesses, loopback TCP (zmq, gloo), socketpair and eventfd work; /proc/keys is
    empty. The control (the same sandbox without the filter) shows the calls are open on this host."""
    need_allow_list(sandbox)
    kernel = start_kernel(sandbox, tmp_path, "sc")
    try:
        seen = kernel_json(kernel, _probe_code())
    finally:
        stop_kernel(kernel)
    expected = {name: "EPERM" for name in _numbers(n for n, _ in SYSCALL_ATTEMPTS)}
    expected.update(
        clone3="ENOSYS",
        personality_query="ok",
        personality_read_implies_exec="EPERM",
        socket_vsock="EPERM",
        thread="ok",
        subprocess="ok",
        loopback_tcp="ok",
        socketpair_eventfd="ok",
        proc_keys="",
    )
    if os.uname().machine == "x86_64":
        expected["x32_getpid"] = "ENOSYS"
    assert seen == expected
    code, control, _, err = run_unfiltered(sandbox, copies(), _probe_code())
    assert code == 0, err
    open_here = {
        "keyctl": "ok",
        "unshare": "ok",
        "process_vm_readv": "ok",
        "ptrace": "ESRCH",
        "chroot": "EFAULT",
        "setns": "EBADF",
        "pidfd_getfd": "EBADF",
        "personality_read_implies_exec": "ok",
    }
    if Path("/proc/sys/kernel/io_uring_disabled").read_text().strip() in ("", "0"):
        open_here["io_uring_setup"] = "ok"
    assert {k: control[k] for k in open_here} == open_here


def test_a_key_one_kernel_writes_never_reaches_another(sandbox, tmp_path, copies):
    """The keyring channel: kernels cannot add keys, and a key in the uid's user keyring (planted by the control,
    a sandbox without the filter, as every kernel was before) is invisible to a later kernel, which is told EPERM
    however it asks, while a later unfiltered sandbox of the same uid still reads it."""
    need_allow_list(sandbox)
    name = b"agr-probe-" + os.urandom(6).hex().encode()
    writer = start_kernel(sandbox, tmp_path, "kw")
    try:
        assert kernel_json(writer, _key_code(("plant",), name)) == {"plant": "EPERM"}
    finally:
        stop_kernel(writer)
    code, planted, _, err = run_unfiltered(sandbox, copies("plant"), _key_code(("plant",), name))
    assert code == 0, err
    if planted["plant"] in ("ENOSYS", "EOPNOTSUPP"):
        pytest.skip(f"this host kernel has no keyrings ({planted['plant']}): the channel does not exist here")
    key_id = planted["plant"]
    assert isinstance(key_id, int), planted
    try:
        reader = start_kernel(sandbox, tmp_path, "kr")
        try:
            seen = kernel_json(reader, _key_code(("find",), name, key_id))
        finally:
            stop_kernel(reader)
        assert seen == {"request_key": "EPERM", "search": "EPERM", "read": "EPERM", "proc_keys": ""}
    finally:
        code, control, _, err = run_unfiltered(sandbox, copies("control"), _key_code(("find", "remove"), name, key_id))
    assert code == 0, err
    assert control == {
        "request_key": key_id,
        "search": key_id,
        "read": "written by another kernel",
        "proc_keys": "",
        "remove": 0,
    }


def test_without_libseccomp_the_report_says_so_and_the_namespace_filter_stays(monkeypatch):
    """A machine without libseccomp: the allow-list is reported missing (with how to install it), and the
    hand-assembled filter still refuses new user namespaces."""
    from autograder.sandbox import seccomp, view

    monkeypatch.setattr(seccomp.ctypes.util, "find_library", lambda name: "libseccomp-not-here.so.2")
    caches = (seccomp._lib, seccomp.compile_filter, seccomp.kernel_filter)
    for cached in caches:
        cached.cache_clear()
    try:
        bpf, why = seccomp.kernel_filter()
        assert bpf == seccomp.userns_filter()
        assert why.startswith("libseccomp is not installed (Debian/Ubuntu: apt-get install libseccomp2)"), why
        report = {p.key: p for p in Sandbox().protections()}
        assert not report["syscall_filter"].available
        assert report["syscall_filter"].detail.startswith(why) and "keyrings" in report["syscall_filter"].detail
        if bpf is not None and "--seccomp" in view.bwrap_options():
            assert report["no_new_namespaces"].detail.startswith(
                "a seccomp filter refuses unshare/clone with CLONE_NEWUSER"
            )
        assert "system calls limited" in summary_lines(list(report.values()))[0]
    finally:
        for cached in caches:
            cached.cache_clear()


XATTR_CODE = """
import errno, json, os, shutil
def attempt(f, *args):
    try:
        f(*args)
        return "ok"
    except OSError as err:
        return errno.errorcode[err.errno]
open("a", "w").write("data")
out = {
    "setxattr": attempt(os.setxattr, "a", "user.note", b"x"),
    "removexattr": attempt(os.removexattr, "a", "user.note"),
    "getxattr": attempt(os.getxattr, "a", "user.note"),
    "listxattr": os.listxattr("a"),
    "copy2": attempt(shutil.copy2, "a", "b"),
    "copytree": attempt(shutil.copytree, ".ipython", "ipython-copy"),
}
for path in ("/dev/null", "/dev/urandom", "a"):
    before = os.stat(path).st_mtime_ns
    now, explicit = attempt(os.utime, path), attempt(lambda: os.utime(path, ns=(5, 5)))
    out[path] = [now, explicit, os.stat(path).st_mtime_ns == before]
print(json.dumps(out))
"""


def test_extended_attributes_acls_and_times_cannot_be_set_and_copying_files_still_works(sandbox, tmp_path, copies):
    """Issue 33: setting or removing an extended attribute (a POSIX ACL is one) is answered EOPNOTSUPP, as a
    file system without them answers, so shutil's copies, which skip attributes on that answer, still
    work; reading them is allowed. Setting times succeeds and changes nothing, on the host's /dev/null
    (which any kernel may write, so it could set its times to "now") and on its own files alike. The
    control shows the calls are open on this host."""
    need_allow_list(sandbox)
    kernel = start_kernel(sandbox, tmp_path, "xa")
    try:
        seen = kernel_json(kernel, XATTR_CODE)
    finally:
        stop_kernel(kernel)
    unsupported = errno.errorcode[errno.EOPNOTSUPP]
    assert seen == {
        "setxattr": unsupported,
        "removexattr": unsupported,
        "getxattr": "ENODATA",
        "listxattr": [],
        "copy2": "ok",
        "copytree": "ok",
        "/dev/null": ["ok", "ok", True],
        "/dev/urandom": ["ok", "ok", True],
        "a": ["ok", "ok", True],
    }
    code, control, _, err = run_unfiltered(sandbox, copies(), XATTR_CODE)
    assert code == 0, err
    assert control["setxattr"] == "ok" and control["listxattr"] == []  # set, then removed
    assert control["/dev/null"][0] == "ok" and control["/dev/null"][2] is False  # "now": a new time
    assert control["a"] == ["ok", "ok", False]
