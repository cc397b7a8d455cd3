"""A real hub deployment for the tests (tests/hub/ and tests/browser/test_hub.py): real Unix accounts.

`deployment(...)` lays out a private deployment with hub/accounts.py and hub/layout.py, exactly as
`make hub` does, in a fresh folder under /tmp (passable by the students, like a real HUB_DIR), with
its own group and account names (`nxt...`), so that it never meets a `make hub` of this machine.
It is removed with hub.server.clean afterwards (accounts, folders, the checkout's modes).

It needs root (useradd, chown, runuser) and JupyterHub in .venv (`make hub-test-deps`); without them the
tests skip and say why. CI runs as root, so there they run.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from hub import accounts as hub_accounts
from hub import instructor as hub_handin
from hub import layout, server
from hub.deployment import Deployment

ROOT = Path(__file__).resolve().parents[2]

HUB_VENV = ROOT / ".venv"
AID = "02_scaled_sum"
COURSE = "namedaxes"
RUNUSER = shutil.which("runuser") or "/usr/sbin/runuser"


def requirements() -> str:
    """Why the hub tests cannot run here ('' when they can)."""
    if os.geteuid() != 0:
        return "the hub tests create real Unix accounts and run as them: they need root (CI runs as root)"
    if not (HUB_VENV / "bin" / "jupyterhub-singleuser").exists():
        return f"{HUB_VENV} has no jupyterhub-singleuser: `make venv` installs the lock with JupyterHub"
    for tool in ("useradd", "userdel", "chpasswd", "runuser", "setpriv"):
        if not shutil.which(tool) and not os.path.exists(f"/usr/sbin/{tool}"):
            return f"{tool} is missing (Debian's passwd / util-linux)"
    return ""


def built_courses() -> None:
    """build/course and build/zh/course, which the hub's courses are copied from (rebuilt as `make hub` does)."""
    layout.build_courses()
    for course in layout.BUILT_COURSE:
        why = layout.stale_build(course)
        assert not why, f"{layout.BUILT_COURSE[course]} could not be rebuilt: {why}"


ABANDONED_AFTER = 3600  # s: a test deployment untouched this long, with no hub running, was left by a killed run


def clean_abandoned(tag: str) -> list[str]:
    """Remove what a killed run of these tests left (its accounts would make the next run's sync refuse the
    names): the deployments /tmp/namedaxes-hub-<tag>-* whose hub is not running and whose state is older
    than ABANDONED_AFTER (a live one of another checkout on this machine is left alone)."""
    import time

    lines = []
    for hub_dir in sorted(Path("/tmp").glob(f"namedaxes-hub-{tag}-*")):
        state = hub_dir / "state"
        try:
            idle = time.time() - max(state.stat().st_mtime, (state / "accounts.json").stat().st_mtime)
        except OSError:
            continue
        dep = Deployment(hub_dir=hub_dir, group=f"nxt{tag}", instructor=f"nxt{tag}-teacher", venv=HUB_VENV)
        if idle > ABANDONED_AFTER and server._running_pid(dep) is None:
            lines += server.clean(dep)
    return lines


def new_deployment(students: list[str], tag: str, port: int = 8000) -> Deployment:
    clean_abandoned(tag)
    hub_dir = Path(tempfile.mkdtemp(prefix=f"namedaxes-hub-{tag}-", dir="/tmp"))
    os.chmod(hub_dir, 0o711)
    dep = Deployment(hub_dir=hub_dir, port=port, group=f"nxt{tag}", instructor=f"nxt{tag}-teacher", venv=HUB_VENV)
    (hub_dir / "state").mkdir(mode=0o700)
    roster = hub_dir / "state" / "roster.csv"
    roster.write_text("id,first_name,last_name,email\n" + "".join(f"{s},{s.title()},Test,\n" for s in students))
    hub_accounts.sync(dep, roster)
    layout.apply(dep)
    return dep


def as_user(
    user: str, argv: list[str], cwd: Path | None = None, env: dict | None = None, timeout: float = 120
) -> subprocess.CompletedProcess:
    """Run argv as the Unix user `user` (runuser: their uid, their groups), with exactly env."""
    base = {
        "PATH": f"{HUB_VENV}/bin:/usr/bin:/bin",
        "HOME": pwd.getpwnam(user).pw_dir,
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    return subprocess.run(
        [RUNUSER, "-u", user, "--", "env", "-i", *[f"{k}={v}" for k, v in {**base, **(env or {})}.items()], *argv],
        cwd=cwd or pwd.getpwnam(user).pw_dir,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=timeout,
    )


def handin(dep: Deployment, course: str, *args: str) -> str:
    """tools.handin as the course's grader (hub/instructor.py `handin_command`: what `make ... HUB=1` runs)."""
    argv, env = hub_handin.handin_command(dep, course, *args)
    proc = subprocess.run(
        argv, env=env, cwd=ROOT, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120
    )
    assert proc.returncode == 0, (
        f"handin {' '.join(args)} as {dep.graders[course]} failed:\n{proc.stdout}\n{proc.stderr}"
    )
    return proc.stdout


@pytest.fixture(scope="session")
def hub_requirements() -> None:
    why = requirements()
    if why:
        pytest.skip(why)
    built_courses()
