"""The zygote's side: a Python inside one slot's sandbox that imports the course once and forks kernels.

This file runs *inside* the kernel sandbox (`python -c` with this module's text, see zygote.py),
where the autograder package is not visible, so it needs only the standard library; the modules it
warms are passed on the command line. It runs no student code itself: every request comes from the
grader over the one socket it inherits (`fd`), and each child becomes a Jupyter kernel.

Protocol (SOCK_SEQPACKET, one JSON object a message):
    zygote -> grader   {"ready": true}                   once, after the imports (or {"error": ...}
                                                         if one of them started a JAX backend)
    grader -> zygote   {"argv": [...]} + one descriptor  fork a kernel: its argv, its log
    child  -> grader   {"child": true}                   the grader reads the child's host pid
                                                         from the message's SCM_CREDENTIALS
    zygote -> grader   {"forked": pid} | {"error": ...}
    zygote -> grader   {"exit": pid, "code": n}         a child ended (n as Popen.returncode)

Threat model: the children run hostile code as the zygote's own uid, in the same namespaces, one at
a time (the grader kills a kernel's whole cgroup and empties the slot before the next fork). The
zygote is not dumpable, so a child cannot read or write its memory through /proc (ptrace and
process_vm_* are refused by seccomp already); a child may still signal it, which only ends the
slot (the grader starts kernels the plain way then). Each child closes every descriptor but its
log before any student code runs, so it cannot ask the zygote for anything.
"""

import ctypes
import importlib
import json
import os
import signal
import socket
import sys

_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4


def _prctl(option: int, value: int) -> None:
    ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)


def _send(ctl: socket.socket, obj: dict) -> None:
    ctl.send(json.dumps(obj).encode())


def _become_kernel(ctl: socket.socket, argv: list, log_fd: int) -> None:
    """In the child: a session of its own, the log as stdout and stderr, nothing else open; then the kernel."""
    try:
        os.setsid()
        _prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL))
        _prctl(_PR_SET_DUMPABLE, 1)  # as a kernel started by exec would be
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)  # as Python starts: the kernel's interrupts
        _send(ctl, {"child": True})
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        import random

        random.seed()  # not the zygote's sequence
        numpy = sys.modules.get("numpy")
        if numpy is not None:
            numpy.random.seed()
        from ipykernel import kernelapp

        sys.argv = ["ipykernel_launcher", *argv]
        kernelapp.launch_new_instance()
    except BaseException:  # noqa: BLE001 - whatever happens, the child never returns into the zygote's loop
        import traceback

        traceback.print_exc()
        os._exit(1)
    os._exit(0)


def _reap(ctl: socket.socket) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        _send(ctl, {"exit": pid, "code": os.waitstatus_to_exitcode(status)})


def main(fd: int, warm: list) -> None:
    _prctl(_PR_SET_DUMPABLE, 0)
    for name in warm:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - the kernel imports it again, or reports why not
            pass
    ctl = socket.socket(fileno=fd)
    bridge = sys.modules.get("jax._src.xla_bridge")
    if bridge is not None and getattr(bridge, "_backends", None):  # its threads would not survive a fork,
        _send(ctl, {"error": "a module it imported started a JAX backend"})  # and the device count is set
        os._exit(1)
    rd, wr = os.pipe()
    os.set_blocking(wr, False)
    signal.set_wakeup_fd(wr)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    _send(ctl, {"ready": True})
    import select

    while True:
        ready, _, _ = select.select([ctl, rd], [], [])
        if rd in ready:
            os.read(rd, 4096)
            _reap(ctl)
        if ctl not in ready:
            continue
        msg, fds, _, _ = socket.recv_fds(ctl, 1 << 16, 1)
        if not msg:
            os._exit(0)  # the grader is gone
        try:
            argv = [str(a) for a in json.loads(msg)["argv"]]
            if len(fds) != 1:
                raise ValueError("a fork request carries exactly one descriptor (the log)")
            pid = os.fork()
        except Exception as err:  # noqa: BLE001 - told to the grader, which starts the kernel the plain way
            for extra in fds:
                os.close(extra)
            _send(ctl, {"error": f"{type(err).__name__}: {err}"})
            continue
        if pid == 0:
            os.close(rd)
            os.close(wr)
            _become_kernel(ctl, argv, fds[0])
        os.close(fds[0])
        _send(ctl, {"forked": pid})
        _reap(ctl)
