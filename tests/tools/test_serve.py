"""tools/serve.py, the wrapper of `make lab` and `make formgrader`, when the server never comes up.

The URL-last behaviour with a real JupyterLab and formgrader is checked by the browser tests
(tests/browser/conftest.py `MakeServer.url_last`); here: a server that dies at start gives its
own output and exit status, and no URL is printed for a server that is not there.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_server_that_dies_at_start_prints_no_url_and_keeps_its_exit_status():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dying = "import sys; print('cannot bind: the port is taken', sys.argv[1].split('=')[0]); sys.exit(3)"
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "tools" / "serve.py"),
            "--port",
            str(port),
            "--token",
            "t0k",
            "--",
            sys.executable,
            "-c",
            dying,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 3
    assert proc.stdout == "cannot bind: the port is taken --IdentityProvider.token\n", "the token goes to the server"
    assert "is ready" not in proc.stdout and "t0k" not in proc.stdout
