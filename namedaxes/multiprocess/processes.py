"""Facts about this machine's processes and ports, as the parent asks them."""

from __future__ import annotations

import os
import socket

__all__ = ["free_port", "process_alive"]


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on `host` that nothing listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def process_alive(pid: int) -> bool:
    """Whether process `pid` still exists (a zombie waiting to be reaped counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True
