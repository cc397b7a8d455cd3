"""Start, stop and remove the course's JupyterHub (`make hub`, `make hub-stop`, `make hub-clean`).

    python -m hub.server start [--roster students.csv]   # install proxy, accounts, folders; start; await the login page
    python -m hub.server stop                            # stop the hub (its proxy and every server it started)
    python -m hub.server clean                           # stop, remove accounts, restore the checkout, delete HUB_DIR

Design
- `start` does every step in order and says what it does; each is idempotent, so `make hub`
  again (e.g. after `make roster HUB=1`) restarts the hub with the new roster:
  1. root? (PAM logins and servers as other users need it: otherwise it says exactly that)
  2. the proxy: `npm ci` of hub/proxy/package-lock.json into HUB_DIR/proxy (only when it changed)
  3. the accounts (hub/accounts.py; with a roster, also into both hub courses' gradebooks)
  4. the folders and permissions (hub/layout.py), and nbgrader's lab extension in Chinese for the students'
     Chinese servers (HUB_DIR/jupyter-zh, tools/nbgrader_zh.py)
  5. `jupyterhub -f hub/jupyterhub_config.py`, detached, logging to HUB_DIR/state/jupyterhub.log;
     `start` returns once /hub/login answers 200 (or fails with the log's tail after START_TIMEOUT).
- `stop` sends SIGTERM to the hub (pid file) and waits: JupyterHub stops the proxy, the formgrader
  services and every user's server itself (cleanup_servers). Whatever still runs as one of the
  deployment's accounts afterwards is reported and ended, by pid.
- `clean` refuses to delete a HUB_DIR that does not look like a deployment (no state/ folder).

Threat model: root runs this; it never follows a path a student controls (homes and the exchange
are removed as whole folders by `clean`, with shutil.rmtree, which does not follow links).
"""

from __future__ import annotations

import argparse
import filecmp
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from hub import accounts as hub_accounts
from hub import layout
from hub.deployment import ROOT, Deployment
from hub.instructor import handin_command
from tools import nbgrader_zh

START_TARGET = 60  # s: the login page, once installed, on 2 cores (measured, not enforced)
START_TIMEOUT = 180  # s: then `start` gives up and shows the log (the formgrader services start first)
PROXY_SOURCE = ROOT / "hub" / "proxy"
NEEDS_ROOT = (
    "`make hub` needs root: it creates one Unix account per student (useradd, chpasswd), runs "
    "JupyterHub as root so that PAM can check passwords and each student's server runs as that "
    "student (LocalProcessSpawner), and gives the hub's course folders to the grader accounts "
    "(chown). Run it as root (make hub; from another account: sudo make hub), on a machine where you may create users."
)


class HubError(Exception):
    pass


def _announce(msg: str) -> None:
    print(f"hub: {msg}", flush=True)


def _running_pid(dep: Deployment) -> int | None:
    try:
        pid = int(dep.pid_file.read_text().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return None
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return pid if b"jupyterhub" in cmd else None


def install_proxy(dep: Deployment) -> None:
    binary = dep.proxy / "node_modules" / ".bin" / "configurable-http-proxy"
    lock = dep.proxy / "package-lock.json"
    if binary.exists() and lock.is_file() and filecmp.cmp(lock, PROXY_SOURCE / "package-lock.json", shallow=False):
        return
    npm = shutil.which("npm")
    if not npm or not shutil.which("node"):
        raise HubError(
            "Node.js and npm are missing (the Makefile installs Debian's nodejs and npm with apt-get; "
            "it could not here): apt-get install nodejs npm"
        )
    dep.proxy.mkdir(parents=True, exist_ok=True)
    os.chmod(dep.proxy, 0o755)
    for name in ("package.json", "package-lock.json"):
        shutil.copyfile(PROXY_SOURCE / name, dep.proxy / name)
    _announce(
        f"installing JupyterHub's proxy, configurable-http-proxy (official, npm registry; pinned by "
        f"hub/proxy/package-lock.json) into {dep.proxy} with npm ci ..."
    )
    t0 = time.monotonic()
    proc = subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error", "--omit=dev"],
        cwd=dep.proxy,
        capture_output=True,
        text=True,
    )
    if proc.returncode or not binary.exists():
        raise HubError(f"npm ci of configurable-http-proxy failed ({proc.returncode}):\n{proc.stderr.strip()[-2000:]}")
    version = subprocess.run([str(binary), "--version"], capture_output=True, text=True).stdout.strip()
    _announce(f"configurable-http-proxy {version} installed in {time.monotonic() - t0:.0f} s")


def run_handin(dep: Deployment, course: str, *args: str) -> subprocess.CompletedProcess:
    """tools/handin.py ARGS as that course's grader (hub/instructor.py `handin_command`), its output captured."""
    argv, env = handin_command(dep, course, *args)
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, stdin=subprocess.DEVNULL, env=env)


def _import_roster(dep: Deployment, roster: Path) -> None:
    """The roster's names into both hub courses' gradebooks, as each course's grader."""
    import pwd

    for course, grader in dep.graders.items():
        copy = dep.home(grader) / "roster.csv"  # the grader may not read the instructor's file
        shutil.copyfile(roster, copy)
        entry = pwd.getpwnam(grader)
        os.chown(copy, entry.pw_uid, entry.pw_gid)
        proc = run_handin(dep, course, "roster", str(copy))
        if proc.returncode:
            raise HubError(f"importing the roster into {course}'s gradebook failed:\n{proc.stderr.strip()[-2000:]}")


def _hub_env(dep: Deployment) -> dict[str, str]:
    env = {
        "PATH": f"{dep.venv / 'bin'}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "HOME": str(dep.state),
        "PYTHONDONTWRITEBYTECODE": "1",
        **dep.env(),
    }
    for key in ("XLA_FLAGS", "FORMGRADER_CONFIG_PATH", "LC_ALL"):
        if os.environ.get(key):
            env[key] = os.environ[key]
    return env


def _login_page(dep: Deployment) -> int:
    try:
        with urllib.request.urlopen(f"{dep.url}/hub/login", timeout=2) as resp:
            return resp.status
    except urllib.error.HTTPError as err:
        return err.code
    except OSError:
        return 0


def start(dep: Deployment, roster: Path | None, timeout: float = START_TIMEOUT) -> None:
    if os.geteuid() != 0:
        raise HubError(NEEDS_ROOT)
    bad = layout.problems(dep)
    if bad:
        raise HubError("\n".join(bad))
    if _running_pid(dep):
        _announce("a hub of this deployment is running: restarting it")
        stop(dep)
    install_proxy(dep)
    layout.make_roots(dep)  # before the accounts: their homes go in it
    for line in hub_accounts.sync(dep, roster):
        _announce(line)
    for line in layout.apply(dep):
        _announce(line)
    try:
        nbgrader_zh.build(dep.nbgrader_zh, nbgrader_zh.installed(dep.venv))
    except nbgrader_zh.TranslationError as err:  # the Chinese servers then show nbgrader's English strings
        shutil.rmtree(dep.nbgrader_zh, ignore_errors=True)
        _announce(f"WARNING: nbgrader's Chinese lab extension: {err}")
    if roster is not None:
        _import_roster(dep, roster)
        _announce(f"roster {roster} imported into the gradebooks of {', '.join(dep.graders)}")
    t0 = time.monotonic()
    log = dep.log_file.open("ab")
    proc = subprocess.Popen(
        [str(dep.venv / "bin" / "jupyterhub"), "-f", str(ROOT / "hub" / "jupyterhub_config.py")],
        cwd=dep.state,
        env=_hub_env(dep),
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    log.close()
    while time.monotonic() - t0 < timeout:
        if proc.poll() is not None:
            raise HubError(f"jupyterhub exited with {proc.returncode}; its log ({dep.log_file}) ends:\n{_tail(dep)}")
        if _login_page(dep) == 200:
            break
        time.sleep(0.2)
    else:
        raise HubError(f"the hub's login page did not answer within {timeout:.0f} s; its log ends:\n{_tail(dep)}")
    took = time.monotonic() - t0
    _announce(
        f"JupyterHub is up in {took:.1f} s: {dep.url}/hub/login"
        + (f" (more than {START_TARGET} s: is the machine busy?)" if took > START_TARGET else "")
    )
    _announce(
        f"  instructor (admin): {dep.instructor}; formgrader: "
        + ", ".join(f"{dep.url}/services/{c}/formgrader" for c in dep.graders)
    )
    _announce(f"  passwords of every login: {dep.passwords_file} (root only); students: {len(dep.accounts().students)}")
    _announce(f"  log: {dep.log_file}; stop: make hub-stop; remove accounts and state: make hub-clean")


def _tail(dep: Deployment, n: int = 4000) -> str:
    try:
        return dep.log_file.read_text(errors="replace")[-n:]
    except OSError:
        return "(no log)"


def stop(dep: Deployment) -> list[str]:
    lines = []
    pid = _running_pid(dep)
    if pid:
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and Path(f"/proc/{pid}").exists() and _running_pid(dep) == pid:
            time.sleep(0.2)
        if _running_pid(dep) == pid:
            os.kill(pid, signal.SIGKILL)
            lines.append(f"jupyterhub ({pid}) did not stop within 30 s: killed")
        lines.append(f"stopped the hub ({pid})")
    else:
        lines.append("no hub of this deployment is running")
    # anything still running as one of the deployment's accounts, or the proxy of this deployment
    import pwd

    uids = set()
    for name in dep.accounts().created:
        try:
            uids.add(pwd.getpwnam(name).pw_uid)
        except KeyError:
            pass
    proxy = str(dep.proxy).encode()
    for _ in range(50):
        left = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                cmd = (entry / "cmdline").read_bytes()
                if entry.stat().st_uid in uids or proxy in cmd:
                    left.append(int(entry.name))
            except OSError:
                pass
        if not left:
            break
        time.sleep(0.1)
    for p in left:
        try:
            os.kill(p, signal.SIGKILL)
            lines.append(f"process {p} survived the hub: killed")
        except ProcessLookupError:
            pass
    return lines


def clean(dep: Deployment) -> list[str]:
    if os.geteuid() != 0:
        raise HubError("`make hub-clean` needs root: it removes the course's Unix accounts (userdel)")
    if dep.hub_dir.exists() and not (dep.state.is_dir() or dep.hub_dir.is_symlink()):
        raise HubError(f"{dep.hub_dir} has no state/ folder: not a hub deployment, left alone")
    lines = stop(dep)
    lines += hub_accounts.remove_accounts(dep)
    lines += layout.restore_checkout(dep)
    if dep.hub_dir.is_symlink():
        dep.hub_dir.unlink()
    elif dep.hub_dir.exists():
        shutil.rmtree(dep.hub_dir)
    lines.append(f"removed {dep.hub_dir} (homes, exchange, hub courses, state)")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("start")
    s.add_argument("--roster", type=Path)
    s.add_argument("--timeout", type=float, default=START_TIMEOUT)
    sub.add_parser("stop")
    sub.add_parser("clean")
    args = parser.parse_args(argv)
    dep = Deployment.from_env()
    try:
        if args.cmd == "start":
            layout.build_courses()  # the hub's courses are copied from build/course and build/zh/course
            start(dep, args.roster.absolute() if args.roster else None, args.timeout)
        else:
            for line in (stop if args.cmd == "stop" else clean)(dep):
                _announce(line)
    except (HubError, hub_accounts.AccountError, layout.LayoutError) as err:
        print(f"hub: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
