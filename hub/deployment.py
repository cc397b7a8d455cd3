"""The deployment's names and folders: the one place they are written (`Deployment`).

Every other module of hub/ and the hub's own configuration (jupyterhub_config.py) read them from
here; the Makefile passes HUB_DIR, PORT, HUB_IP and the optional names below, when given, as environment
variables (NAMEDAXES_HUB_*).

    HUB_DIR/                 0711 root     (default: hub-data/ in the checkout; git-ignored)
      state/                 0700 root     the hub's database, cookie secret, log, pid, accounts.json,
                                           passwords.csv (the accounts' passwords)
      proxy/                 0755 root     configurable-http-proxy (npm ci of hub/proxy/package-lock.json)
      home/                  0711 root     one home per account, 0700 of its owner
      exchange/              1777 root     nbgrader's exchange; exchange/<course>/ belongs to that course's grader
      courses/               0711 root     courses/<course>/: the hub's nbgrader course folder, 0700 of its grader

Threat model: nothing here trusts a student; the names are fixed by the instructor (environment
of `make hub`), never by a roster. A student id is checked by accounts.py before it becomes a name.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from courseinfo.course import COURSES, edition_of  # the two editions' courses: namedaxes, namedaxes-zh

ROOT = Path(__file__).resolve().parents[1]
# Unix account names that the hub creates: lower-case, as useradd's default NAME_REGEX wants.
ACCOUNT_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")


@dataclass(frozen=True)
class Deployment:
    hub_dir: Path
    port: int = 8000
    ip: str = "127.0.0.1"
    group: str = "namedaxes"  # every account the hub creates is in this group
    instructor: str = "instructor"  # the hub's admin; grades in formgrader
    venv: Path = ROOT / ".venv"  # what the hub and every server it starts run (Makefile: HUB_VENV)
    courses: tuple[str, ...] = COURSES
    graders: dict = field(default_factory=dict)  # course id -> grader account (filled in __post_init__)

    def __post_init__(self):
        if not self.graders:
            object.__setattr__(
                self,
                "graders",
                {c: f"{self.group}-grader" + ("-" + edition_of(c) if edition_of(c) else "") for c in self.courses},
            )

    @classmethod
    def from_env(cls, env=os.environ) -> Deployment:
        hub_dir = Path(env.get("NAMEDAXES_HUB_DIR") or ROOT / "hub-data").absolute()
        return cls(
            hub_dir=hub_dir,
            port=int(env.get("NAMEDAXES_HUB_PORT") or 8000),
            ip=env.get("NAMEDAXES_HUB_IP") or "127.0.0.1",
            group=env.get("NAMEDAXES_HUB_GROUP") or "namedaxes",
            instructor=env.get("NAMEDAXES_HUB_INSTRUCTOR") or "instructor",
            venv=Path(env.get("NAMEDAXES_HUB_VENV") or ROOT / ".venv").absolute(),
        )

    def env(self) -> dict[str, str]:
        """The environment that makes `from_env` give this deployment back (for child processes)."""
        return {
            "NAMEDAXES_HUB_DIR": str(self.hub_dir),
            "NAMEDAXES_HUB_PORT": str(self.port),
            "NAMEDAXES_HUB_IP": self.ip,
            "NAMEDAXES_HUB_GROUP": self.group,
            "NAMEDAXES_HUB_INSTRUCTOR": self.instructor,
            "NAMEDAXES_HUB_VENV": str(self.venv),
        }

    # folders
    @property
    def state(self) -> Path:
        return self.hub_dir / "state"

    @property
    def proxy(self) -> Path:
        return self.hub_dir / "proxy"

    @property
    def homes(self) -> Path:
        return self.hub_dir / "home"

    @property
    def exchange(self) -> Path:
        return self.hub_dir / "exchange"

    @property
    def nbgrader_zh(self) -> Path:
        """nbgrader's lab extension in Chinese, for the students' Chinese servers (tools/nbgrader_zh.py)."""
        return self.hub_dir / "jupyter-zh"

    def home(self, user: str) -> Path:
        return self.homes / user

    def course_dir(self, course: str) -> Path:
        return self.hub_dir / "courses" / course

    # files in state/
    @property
    def accounts_file(self) -> Path:
        return self.state / "accounts.json"

    @property
    def passwords_file(self) -> Path:
        return self.state / "passwords.csv"

    @property
    def log_file(self) -> Path:
        return self.state / "jupyterhub.log"

    @property
    def pid_file(self) -> Path:
        return self.state / "jupyterhub.pid"

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.ip in ("", "0.0.0.0") else self.ip
        return f"http://{host}:{self.port}"

    def accounts(self) -> Accounts:
        return Accounts.load(self.accounts_file)


@dataclass
class Accounts:
    """What accounts.json records: the accounts this deployment created (and only those are removed)."""

    students: list[str] = field(default_factory=list)  # on the current roster: may log in
    staff: list[str] = field(default_factory=list)  # the instructor and the graders
    created: list[str] = field(default_factory=list)  # every account this deployment made (removed by clean)
    created_group: bool = False

    @classmethod
    def load(cls, path: Path) -> Accounts:
        if not path.is_file():
            return cls()
        data = json.loads(path.read_text())
        return cls(
            students=list(data.get("students", [])),
            staff=list(data.get("staff", [])),
            created=list(data.get("created", [])),
            created_group=bool(data.get("created_group")),
        )

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(
            json.dumps(
                {
                    "students": self.students,
                    "staff": self.staff,
                    "created": self.created,
                    "created_group": self.created_group,
                },
                indent=1,
            )
            + "\n"
        )
        os.chmod(tmp, 0o600)
        tmp.replace(path)
