"""Run a Jupyter server and print its URL, with the login token, last: after the server's own start-up lines.

    python -m tools.serve --port 8888 --path /lab [--token T] [--what "JupyterLab"] -- jupyter lab ARGS...

(`make lab` and `make formgrader`.) A Jupyter server prints its URL in the middle of a dozen log
lines, and more follow; a student looks at the last line. So this starts the server with a
known token (the one given, else a fresh random one) appended as `--IdentityProvider.token`,
on a port it has checked is free (`--port`, else the next free one, said before the server's
own lines: another server may already be on 8888), appended as `--ServerApp.port` with
`--ServerApp.port_retries=0` so the server cannot move elsewhere unannounced; passes every byte
it writes through as it comes, asks the server's API with that token until it is accepted (another
Jupyter server refuses it; its pages would redirect to a login page that answers 200) and the page
(`--path`) answers 200, waits until its output has been quiet
for a moment (at most a few seconds), and then prints

    JupyterLab is ready. Open this URL in your browser (Ctrl-C stops it):

        http://localhost:8888/lab?token=...

Ctrl-C reaches the server directly (same terminal, same process group); this process ignores it
and waits, so the server's own "Shutdown this Jupyter server (y/[n])?" still works. SIGTERM is
passed on. The exit status is the server's. Only the standard library: it runs in the venv but
needs nothing of it.
"""

from __future__ import annotations

import argparse
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

QUIET_S = 0.5  # the server's start-up lines have ended when it has said nothing for this long
QUIET_MAX_S = 8.0  # ... or after this long, whatever it still says
# (first line, the line that comes late after it): start-up lines to wait for before the URL. jupyter_lsp's
# list of about 20 skipped language servers used to be one; the course's configs turn its search off
# (jupyter/jupyter_server_config.py, jupyter/formgrader/), so nothing comes late now.
LATE_LINES: tuple[tuple[bytes, bytes], ...] = ()
POLL_S = 0.2
PORTS_TRIED = 50  # how far past --port to look for a free one


class Output(threading.Thread):
    """Copies the server's output to ours, byte for byte (a prompt without a newline shows at once)."""

    def __init__(self, fd: int, sink):
        super().__init__(daemon=True)
        self.fd, self.sink, self.last = fd, sink, time.monotonic()
        self.lock = threading.Lock()
        self.seen = b""  # everything said before the banner (start-up: some kB)

    def run(self) -> None:
        while chunk := os.read(self.fd, 65536):
            with self.lock:
                self.sink.write(chunk)
                self.sink.flush()
                self.last = time.monotonic()
                if len(self.seen) < 1 << 20:
                    self.seen += chunk

    def settled(self) -> bool:
        """Quiet for QUIET_S, and every line announced as coming later has come."""
        with self.lock:
            pending = any(first in self.seen and later not in self.seen for first, later in LATE_LINES)
            return not pending and time.monotonic() - self.last >= QUIET_S

    def say(self, text: str) -> None:
        with self.lock:
            self.sink.write(text.encode())
            self.sink.flush()


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):  # a redirect is an answer of its own (3xx), never followed
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def _answer(opener, url: str, token: str, timeout: float) -> int | None:
    req = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    try:
        with opener.open(req, timeout=timeout) as resp:
            return resp.status
    except urllib.error.HTTPError as err:
        return err.code
    except (OSError, urllib.error.URLError):
        return None


def ready(port: int, path: str, token: str, timeout: float = 2.0) -> bool:
    """The server on the port is ours, and its page answers.

    Ours: its API accepts our token as it is (`/api/status` 200, no redirect followed; a Jupyter
    server that does not know the token answers 403, and its pages redirect to a login page that
    answers 200, which must not count). Then the page itself (`--path`, formgrader's too, not only
    the server) answers 200, following its own redirects (/formgrader goes to its first page).
    """
    base = f"http://127.0.0.1:{port}"
    if _answer(_OPENER, f"{base}/api/status", token, timeout) != 200:
        return False
    return _answer(urllib.request.build_opener(), f"{base}{path}", token, timeout) == 200


def port_free(port: int) -> bool:
    """Nothing listens on the port, on either loopback address (a Jupyter server binds `localhost`)."""
    for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        try:
            sock = socket.socket(family, socket.SOCK_STREAM)
        except OSError:  # no IPv6 here
            continue
        with sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds (TIME_WAIT is free)
            try:
                sock.bind((host, port))
            except OSError as err:
                if family == socket.AF_INET6 and err.errno == 99:  # EADDRNOTAVAIL: no ::1 on this machine
                    continue
                return False
    return True


def choose_port(wanted: int) -> int | None:
    """The wanted port if free, else the next free one after it (None: none of PORTS_TRIED)."""
    return next((p for p in range(wanted, wanted + PORTS_TRIED) if p < 65536 and port_free(p)), None)


def port_taken(wanted: int, chosen: int | None) -> str:
    if chosen is None:
        return (
            f"Port {wanted} and the {PORTS_TRIED - 1} after it are taken. Stop the other servers "
            f"(`jupyter server list` shows Jupyter's), or choose a free port with PORT=<port>\n"
        )
    return (
        f"Port {wanted} is taken (another server is running there, perhaps another JupyterLab): "
        f"starting on port {chosen} instead (PORT=<port> chooses one). Open the URL printed last.\n"
    )


def banner(what: str, url: str) -> str:
    return f"\n{what} is ready. Open this URL in your browser (Ctrl-C stops it):\n\n    {url}\n\n"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--" not in argv:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    split = argv.index("--")
    parser = argparse.ArgumentParser(prog="serve.py")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--path", default="/lab", help="the page the URL opens (/lab, /formgrader)")
    parser.add_argument("--token", default="", help="login token (default: a fresh random one)")
    parser.add_argument("--what", default="JupyterLab", help="what the banner calls the server")
    args = parser.parse_args(argv[:split])
    command = argv[split + 1 :]
    token = args.token or secrets.token_hex(24)
    port = choose_port(args.port)
    if port != args.port:
        sys.stdout.write(port_taken(args.port, port))
        sys.stdout.flush()
        if port is None:
            return 1
    url = f"http://localhost:{port}{args.path}?token={token}"
    read, write = os.pipe()
    server_args = [f"--IdentityProvider.token={token}", f"--ServerApp.port={port}", "--ServerApp.port_retries=0"]
    proc = subprocess.Popen([*command, *server_args], stdout=write, stderr=write)
    os.close(write)
    out = Output(read, sys.stdout.buffer)
    out.start()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server gets the terminal's Ctrl-C itself
    signal.signal(signal.SIGTERM, lambda *_: proc.send_signal(signal.SIGTERM))
    while proc.poll() is None and not ready(port, args.path, token):
        time.sleep(POLL_S)
    if proc.poll() is None:
        settled = time.monotonic() + QUIET_MAX_S
        while time.monotonic() < settled and not out.settled() and proc.poll() is None:
            time.sleep(QUIET_S / 5)
        out.say(banner(args.what, url))
    code = proc.wait()
    out.join(timeout=5)
    return code


if __name__ == "__main__":
    sys.exit(main())
