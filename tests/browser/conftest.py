"""Browser tests: Playwright driving Debian's Chromium (installed by `make browser-deps`).

Playwright never downloads a browser here: it launches the system Chromium
(`CHROMIUM`, default /usr/bin/chromium) headless, sandbox-free (we run as root
in CI), with a fresh profile per test and every background network feature off.
Screenshots go to build/screenshots/.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "build" / "screenshots"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
START_TIMEOUT = 120  # s for `make lab`/`make formgrader` to answer; includes make's venv check
LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def chromium() -> str:
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        pytest.skip(
            f"Debian's Chromium is not installed at {CHROMIUM} (`make browser-deps` installs it with "
            f"apt-get; it could not here), so the browser tests cannot run"
        )
    return CHROMIUM


@pytest.fixture
def browser(chromium, tmp_path):
    """A fresh Chromium (new user-data dir) driven by Playwright; closed after the test."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"),
            executable_path=chromium,
            headless=True,
            args=LAUNCH_ARGS,
            viewport={"width": 1400, "height": 1000},
            device_scale_factor=1,
        )
        try:
            yield context
        finally:
            context.close()


@pytest.fixture(scope="session")
def screenshots() -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS


@pytest.fixture
def free_port() -> int:
    """A local TCP port that was free a moment ago (the server refuses to move if it is taken since)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _live_processes() -> dict[int, tuple[int, str]]:
    """pid -> (session id, command line) of every live (non-zombie) process."""
    procs = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) ": state ppid pgrp session ...
        if fields[0] != "Z":
            procs[int(entry.name)] = (int(fields[3]), cmd)
    return procs


def _leftovers(session: int, marker: str) -> list[tuple[int, str]]:
    """Processes of the make's session, or whose command line names our state folder (kernels)."""
    return [
        (pid, cmd[:200])
        for pid, (sid, cmd) in _live_processes().items()
        if pid != os.getpid() and (sid == session or marker in cmd)
    ]


class MakeServer:
    """`make TARGET PORT=... LAB_TOKEN=... [VAR=value ...]` (lab or formgrader) in its own session,
    stopped via /api/shutdown."""

    def __init__(self, target: str, port: int, token: str, state: Path, make_vars: dict | None = None):
        self.target, self.port, self.token, self.state = target, port, token, state
        self.make_vars = [f"{k}={v}" for k, v in (make_vars or {}).items()]
        self.url = f"http://127.0.0.1:{port}"
        self.log_path = state / f"make-{target}.log"
        settings = state / "user-settings" / "@jupyterlab" / "docmanager-extension"
        settings.mkdir(parents=True)
        (settings / "plugin.jupyterlab-settings").write_text(json.dumps({"autosave": False}))
        # a `make` inside `make test` must not inherit the outer make's job server
        self.env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
        self.env.update(
            JUPYTER_RUNTIME_DIR=str(state / "runtime"),
            JUPYTERLAB_WORKSPACES_DIR=str(state / "workspaces"),
            JUPYTERLAB_SETTINGS_DIR=str(state / "user-settings"),
        )
        self.proc: subprocess.Popen | None = None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:] if self.log_path.exists() else ""

    def url_last(self, path: str, timeout: float = 30) -> None:
        """tools/serve.py's banner: the URL with the token, after the server's start-up lines."""
        want = f"http://localhost:{self.port}{path}?token={self.token}"
        deadline = time.monotonic() + timeout
        while True:
            lines = [ln.strip() for ln in self.log_path.read_text(errors="replace").splitlines()]
            if want in lines or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert want in lines, f"`make {self.target}` never printed {want}:\n{self.log()}"
        at = lines.index(want)
        assert lines[at - 2].endswith("is ready. Open this URL in your browser (Ctrl-C stops it):"), lines[
            at - 3 : at + 1
        ]
        startup = [
            i
            for i, ln in enumerate(lines)
            if "Use Control-C to stop this server" in ln or "Skipped non-installed server" in ln
        ]
        assert startup and max(startup) < at, f"the URL is not after the start-up lines:\n{self.log()}"
        assert not any("Skipped non-installed server" in ln for ln in lines), "jupyter_lsp's list is back (issue 61)"

    def request(self, path: str, data: dict | None = None, timeout: float = 10) -> tuple[int, bytes]:
        body = urllib.parse.urlencode(data).encode() if data is not None else None
        req = urllib.request.Request(
            self.url + path,
            data=body,
            method="POST" if data is not None else "GET",
            headers={"Authorization": f"token {self.token}"},
        )
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as err:
            return err.code, err.read()

    def start(self) -> None:
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(
                [
                    "make",
                    "--no-print-directory",
                    self.target,
                    f"PORT={self.port}",
                    f"LAB_TOKEN={self.token}",
                    *self.make_vars,
                ],
                cwd=ROOT,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"`make {self.target}` exited with {self.proc.returncode} before serving:\n{self.log()}")
            try:
                if self.request("/api/status", timeout=2)[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.3)
        pytest.fail(f"`make {self.target}` did not answer on port {self.port} within {START_TIMEOUT} s:\n{self.log()}")

    def stop(self) -> list[str]:
        """Shut down through the API; return what went wrong (nothing when the shutdown was clean)."""
        problems: list[str] = []
        if self.proc is None:
            return problems
        if self.proc.poll() is None:
            try:
                self.request("/api/shutdown", data={}, timeout=10)
            except OSError as err:
                problems.append(f"/api/shutdown failed: {err}")
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                problems.append(f"`make {self.target}` was still running 30 s after /api/shutdown")
                os.killpg(self.proc.pid, signal.SIGTERM)
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                    self.proc.wait(timeout=10)
        deadline = time.monotonic() + 10  # kernels get a moment to exit after the server
        while (left := _leftovers(self.proc.pid, str(self.state / "runtime"))) and time.monotonic() < deadline:
            time.sleep(0.2)
        for pid, cmd in left:
            problems.append(f"process {pid} survived the server: {cmd}")
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return problems


@pytest.fixture
def make_server(tmp_path, free_port):
    """Start `make lab` or `make formgrader` on a free port with a random token; always stopped afterwards.

    The test must call `server.stop()` itself and assert it returned no problems
    (a clean shutdown); this fixture only cleans up after a failed test.
    """
    servers = []

    def start(target: str, **make_vars) -> MakeServer:
        server = MakeServer(target, free_port, os.urandom(16).hex(), tmp_path / target, make_vars)
        servers.append(server)
        server.start()
        return server

    yield start
    for server in servers:
        server.stop()
