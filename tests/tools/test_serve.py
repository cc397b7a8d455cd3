"""tools/serve.py, the wrapper of `make lab` and `make formgrader`: its readiness probe and its port.

The URL-last behaviour with a real JupyterLab and formgrader is checked by the browser tests
(tests/browser/conftest.py `MakeServer.url_last`); here: a server that dies at start gives its
own output and exit status, and no URL is printed for a server that is not there; a port taken
by another server (answering as a Jupyter server does to a token it does not know: a redirect
to its login page, which answers 200) is never announced: serve.py starts ours on the next free
port, says so, and the URL it prints is answered by ours with its token.
"""

from __future__ import annotations

import http.server
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tools import serve

ROOT = Path(__file__).resolve().parents[2]

# A stand-in for the server `make lab` starts: it takes its port and token from the arguments
# serve.py appends, answers /api/status and /lab with 200 only with that token, and runs until terminated.
OURS = """
import http.server, sys
args = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
token, port = args["IdentityProvider.token"], int(args["ServerApp.port"])
assert args["ServerApp.port_retries"] == "0", "the server must not move to another port unannounced"
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        ok = self.path in ("/api/status", "/lab") and self.headers.get("Authorization") == "token " + token
        self.send_response(200 if ok else 403)
        self.end_headers()
        self.wfile.write(b"ours" if ok else b"forbidden")
    def log_message(self, *a):
        pass
print("our server listens on", port, flush=True)
http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
"""


class OtherJupyter(http.server.BaseHTTPRequestHandler):
    """Another Jupyter server, as it answers a token it does not know: its API 403, its pages 302 to
    /login, which is 200."""

    def do_GET(self):
        if self.path.startswith("/api/"):
            self.send_response(403)
            self.end_headers()
        elif self.path.startswith("/login"):
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"<title>Jupyter Server</title> Password or token: ...")
        else:
            self.send_response(302)
            self.send_header("Location", "/login?next=" + self.path)
            self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def other_server():
    server = http.server.HTTPServer(("127.0.0.1", 0), OtherJupyter)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_the_other_servers_login_page_is_not_ready(other_server):
    assert not serve.ready(other_server, "/lab", "t0k"), "a redirect to a login page is not our page answering"
    assert not serve.port_free(other_server)


def test_a_taken_port_starts_ours_on_the_next_free_one_and_prints_only_its_url(other_server):
    proc = subprocess.Popen(
        [sys.executable, "-m", "tools.serve", "--port", str(other_server), "--token", "t0k", "--"]
        + [sys.executable, "-c", OURS],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any("?token=" in ln for ln in lines):
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    out = "".join(lines)
    said = re.search(rf"Port {other_server} is taken .*: starting on port (\d+) instead", out)
    assert said, out
    port = int(said.group(1))
    assert port != other_server
    assert f"our server listens on {port}" in out
    urls = re.findall(r"http://\S+", out)
    assert urls == [f"http://localhost:{port}/lab?token=t0k"], out
    assert out.index("Port ") < out.index("our server listens") < out.index("is ready"), out
    assert f":{other_server}/" not in out


def test_an_answer_on_the_port_is_ours_only_with_our_token():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ours = subprocess.Popen(
        [sys.executable, "-c", OURS, "--IdentityProvider.token=right", f"--ServerApp.port={port}"]
        + ["--ServerApp.port_retries=0"],
        stdout=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while not serve.ready(port, "/lab", "right") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert serve.ready(port, "/lab", "right")
        assert not serve.ready(port, "/lab", "wrong"), "a server that rejects our token is not ours"
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(f"http://127.0.0.1:{port}/lab", timeout=5)
    finally:
        ours.terminate()
        ours.wait(timeout=10)


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
