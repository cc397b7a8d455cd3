"""`make bench-hub`: a class of simulated students against the local hub, all at once (root).

    python -m hub.bench [--students 20] [--keep]

Design
- A private deployment (its own folder under /tmp, group `nxbench`, accounts `nxbench-sNN`), laid
  out and started exactly as `make hub` does (hub/server.py), on a free loopback port; removed at
  the end (hub.server.clean) unless --keep.
- The grader releases 02_scaled_sum; then one thread per student does what a browser does, over
  HTTP on 127.0.0.1 only: GET the login page, POST the login form (PAM), wait for their server
  (LocalProcessSpawner, as their Unix user), open JupyterLab, POST the Assignment List's fetch
  and submit (nbgrader's server extension in their own server).
- Every loop is bounded (a deadline per student); nothing retries past it.
- Afterwards: the hub still answers; every student's hand-in is in the exchange's inbound/ with
  its timestamp.txt (none lost); the time to spawn all servers; the memory (RSS) of the hub,
  its proxy and the students' servers.

Threat model: none beyond make hub's: the students here are the bench's own accounts.
"""

from __future__ import annotations

import argparse
import csv
import http.cookiejar
import os
import pwd
import shutil
import socket
import statistics
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

from courseinfo.course import COURSE_ID
from hub import accounts as hub_accounts
from hub import layout, server
from hub.deployment import ROOT, Deployment

AID, COURSE = "02_scaled_sum", COURSE_ID
SPAWN_DEADLINE = 600  # s for one student's whole loop


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _pids(match) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if match(entry):
                    out.append(int(entry.name))
            except OSError:
                pass
    return out


class SimulatedStudent(threading.Thread):
    def __init__(self, dep: Deployment, name: str, password: str, t0: float):
        super().__init__(daemon=True)
        self.dep, self.name, self.password, self.t0 = dep, name, password, t0
        self.times: dict[str, float] = {}
        self.error = ""

    def run(self):
        try:
            self._loop()
        except Exception as err:  # noqa: BLE001 - reported per student
            self.error = f"{type(err).__name__}: {err}"

    def _loop(self):
        base, deadline = self.dep.url, self.t0 + SPAWN_DEADLINE
        jar = http.cookiejar.CookieJar()
        op = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        op.open(f"{base}/hub/login", timeout=60).read()
        xsrf = next(c.value for c in jar if c.name == "_xsrf")
        op.open(
            f"{base}/hub/login?next=",
            timeout=120,
            data=urllib.parse.urlencode({"username": self.name, "password": self.password, "_xsrf": xsrf}).encode(),
        )
        self.times["logged in"] = time.monotonic() - self.t0
        op.open(f"{base}/hub/spawn/{self.name}", timeout=120)  # the home page's English course (the default server)
        while True:
            if time.monotonic() > deadline:
                raise TimeoutError(f"server not up within {SPAWN_DEADLINE} s")
            try:
                if op.open(f"{base}/user/{self.name}/lab", timeout=60).status == 200 and any(
                    c.name == "_xsrf" and "/user/" in (c.path or "") for c in jar
                ):
                    break
            except OSError:
                pass
            time.sleep(1)
        self.times["server up"] = time.monotonic() - self.t0
        token = [c.value for c in jar if c.name == "_xsrf" and "/user/" in (c.path or "")][-1]
        for step in ("fetch", "submit"):
            req = urllib.request.Request(
                f"{base}/user/{self.name}/assignments/{step}",
                headers={"X-XSRFToken": token},
                data=urllib.parse.urlencode({"course_id": COURSE, "assignment_id": AID}).encode(),
            )
            body = op.open(req, timeout=300).read()
            if b'"success": true' not in body:
                raise RuntimeError(f"{step}: {body[:300]!r}")
            self.times[step] = time.monotonic() - self.t0


def run(n: int, keep: bool) -> int:
    if os.geteuid() != 0:
        print(server.NEEDS_ROOT, file=sys.stderr)
        return 1
    hub_dir = Path(tempfile.mkdtemp(prefix="namedaxes-hub-bench-", dir="/tmp"))
    os.chmod(hub_dir, 0o711)
    dep = Deployment(
        hub_dir=hub_dir,
        port=_free_port(),
        group="nxbench",
        instructor="nxbench-teacher",
        venv=Path(os.environ.get("NAMEDAXES_HUB_VENV") or ROOT / ".venv"),
    )
    names = [f"nxbench-s{i:02d}" for i in range(1, n + 1)]
    try:
        (hub_dir / "state").mkdir(mode=0o700)
        roster = hub_dir / "state" / "roster.csv"
        roster.write_text("id,first_name,last_name,email\n" + "".join(f"{s},S,{s},\n" for s in names))
        t = time.monotonic()
        hub_accounts.sync(dep, roster)
        print(f"bench: {n} accounts in {time.monotonic() - t:.1f} s")
        cached = ROOT / "hub-data" / "proxy"
        if (cached / "node_modules").is_dir():
            shutil.copytree(cached, dep.proxy, symlinks=True)
        server.start(dep, None, timeout=300)
        proc = server.run_handin(dep, COURSE, "release", AID)
        if proc.returncode:
            print(f"bench: release failed:\n{proc.stderr}", file=sys.stderr)
            return 1
        with dep.passwords_file.open() as fh:
            passwords = {r["user"]: r["password"] for r in csv.DictReader(fh)}
        t0 = time.monotonic()
        students = [SimulatedStudent(dep, s, passwords[s], t0) for s in names]
        for s in students:
            s.start()
        for s in students:
            s.join(timeout=max(1, t0 + SPAWN_DEADLINE + 60 - time.monotonic()))
        wall = time.monotonic() - t0
        # the hub is still up; every hand-in is there with its timestamp
        with urllib.request.urlopen(f"{dep.url}/hub/api", timeout=10) as resp:
            hub_ok = resp.status == 200
        inbound = dep.exchange / COURSE / "inbound"
        handed = {}
        for entry in inbound.iterdir():
            owner = pwd.getpwuid(entry.lstat().st_uid).pw_name
            if (entry / "timestamp.txt").is_file():
                handed[owner] = (entry / "timestamp.txt").read_text().strip()
        lost = [s for s in names if s not in handed]
        errors = {s.name: s.error for s in students if s.error}
        ups = sorted(s.times["server up"] for s in students if "server up" in s.times)
        hub_pid = int(dep.pid_file.read_text())
        proxy_pids = _pids(lambda e: str(dep.proxy).encode() in (e / "cmdline").read_bytes())
        uids = {pwd.getpwnam(s).pw_uid for s in names}
        server_pids = _pids(lambda e: e.stat().st_uid in uids)
        print(f"bench: {n} students at once on {os.cpu_count()} cores, loopback only")
        print(
            f"  all {len(ups)} servers up {ups[-1]:.1f} s after the first login (median {statistics.median(ups):.1f} s)"
            if ups
            else "  no server came up"
        )
        print(f"  fetch+submit done for {n - len(errors)} of {n}; whole run {wall:.1f} s")
        print(
            f"  hand-ins in the exchange with their timestamp: {len(handed)} of {n}"
            + (f"; LOST: {lost}" if lost else "")
        )
        print(f"  hub answering afterwards: {hub_ok}")
        print(
            f"  memory (RSS): hub {_rss_kib(hub_pid) / 1024:.0f} MiB, "
            f"proxy {sum(map(_rss_kib, proxy_pids)) / 1024:.0f} MiB, "
            f"students' servers {sum(map(_rss_kib, server_pids)) / 1024:.0f} MiB in all "
            f"({sum(map(_rss_kib, server_pids)) / 1024 / max(1, n):.0f} MiB each)"
        )
        for name, err in sorted(errors.items()):
            print(f"  {name}: {err}")
        return 0 if hub_ok and not lost and not errors else 1
    finally:
        if keep:
            print(f"bench: kept {hub_dir} (python -m hub.server clean with NAMEDAXES_HUB_DIR={hub_dir} removes it)")
        else:
            server.clean(dep)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=20)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args(argv)
    try:
        layout.build_courses()  # its hub's courses are copied from build/course and build/zh/course
    except layout.LayoutError as err:
        print(f"hub layout: {err}", file=sys.stderr)
        return 1
    return run(args.students, args.keep)


if __name__ == "__main__":
    sys.exit(main())
