"""Who a student's kernel runs as: a dedicated host uid, or the grader's uid in a user namespace.

Threat model: the kernel's code is hostile; host file permissions are a second wall behind the
allow-list view (view.py) only when the kernel is not the grader's user. When the grader is root,
bubblewrap (privileged) builds the view and `setpriv` then drops to a *dedicated* host uid/gid
(`uid`, default 65534) with no supplementary groups, no capabilities (bounding set empty) and
no_new_privs, so host file permissions protect as well: the working copy is a mode-0700 folder of
that uid, the published XLA cache is search-only. When the grader is not root, bubblewrap maps the
grader's uid to uid 1000 inside an unprivileged user namespace (`--disable-userns` forbids nesting
another) — the dedicated-uid protection is then missing and `protections()` says so.

The generated /etc/passwd and /etc/group name only root and the kernel's own user (`STUDENT`, its
home the working copy): no host account is listed.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "USERNS_UID",
    "DEDICATED_UID",
    "STUDENT",
    "kernel_ids",
    "identity_files",
    "userns_args",
    "capability_args",
    "setpriv_args",
]

USERNS_UID = 1000  # the uid inside the user namespace when the grader is not root
DEDICATED_UID = 65534  # default dedicated host uid/gid when the grader is root ("nobody")
STUDENT = "student"  # the kernel's user name in the generated /etc/passwd


def kernel_ids(dedicated: bool, userns: bool, uid: int, gid: int) -> tuple[int, int]:
    """The uid, gid the kernel has inside its view."""
    if dedicated:
        return uid, gid
    inside = USERNS_UID if userns else os.geteuid()
    return inside, inside


def identity_files(uid: int, gid: int, workdir: Path) -> dict[str, bytes]:
    """The generated /etc/passwd and /etc/group for a kernel of `uid`, `gid` (file name -> content)."""
    users = [("root", 0, 0, "/root")]
    if uid != 0:
        users.append((STUDENT, uid, gid, str(workdir)))
    passwd = "".join(f"{n}:x:{u}:{g}:{n}:{h}:/usr/sbin/nologin\n" for n, u, g, h in users)
    group = "root:x:0:\n" + (f"{STUDENT}:x:{gid}:\n" if gid != 0 else "")
    return {"passwd": passwd.encode(), "group": group.encode()}


def userns_args(opts: frozenset[str]) -> list[str]:
    """bwrap's options for a user namespace mapping the grader to `USERNS_UID` (no nested namespaces)."""
    args = ["--unshare-user", "--uid", str(USERNS_UID), "--gid", str(USERNS_UID)]
    if "--disable-userns" in opts:
        args.append("--disable-userns")
    return args


def capability_args(dedicated: bool, userns: bool) -> list[str]:
    """bwrap's capabilities: only setpriv's two for a dedicated uid, none for root without a namespace."""
    if dedicated:
        return ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]  # for setpriv only
    if os.geteuid() == 0 and not userns:
        return ["--cap-drop", "ALL"]
    return []


def setpriv_args(uid: int, gid: int) -> list[str]:
    """The command that drops to the dedicated uid/gid: no groups, no capabilities, no_new_privs."""
    return [
        "setpriv",
        f"--reuid={uid}",
        f"--regid={gid}",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--no-new-privs",
        "--",
    ]
