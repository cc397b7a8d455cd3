"""Roster -> Unix accounts: one per student, the instructor, one grader per course (`make roster HUB=1`).

    python -m hub.accounts sync [ROSTER.csv]    # create / keep accounts; without a roster: the instructor alone
    python -m hub.accounts remove               # remove every account this deployment created

Design
- The roster is tools/handin.py's CSV (id, first_name, last_name, email); its ids become the Unix
  names, the hub's user names and nbgrader's student ids, all the same string. Ids must be
  lower-case Unix names (`[a-z][a-z0-9_-]*`, at most 32 characters); anything else is refused
  with the line it is on, before any account is touched.
- Accounts are recognisably the course's: each is in the group `namedaxes` (HUB_GROUP) and says
  "namedaxes course ... (make hub)" in its comment field; each has its own private group, so the
  shared group grants nothing. Homes are in the deployment (HUB_DIR/home/<id>, mode 0700).
- Passwords: a fresh random one per login account (students, instructor), set with chpasswd and
  written to HUB_DIR/state/passwords.csv (mode 0600, root's); an existing account keeps its
  password. Graders have none (locked): they only run the formgrader services.
- A student dropped from the roster keeps their account until `make hub-clean` (their hand-ins
  and home stay); the hub no longer lets them log in.

Threat model: an id that names an account which exists and was not created by this deployment
(root, a system account, a colleague's login, another deployment's student) is refused: the hub
starts servers as the Unix user of that name, so taking one over would hand it to a student.
"""

from __future__ import annotations

import csv
import grp
import os
import pwd
import secrets
import subprocess
import sys
from pathlib import Path

from hub.deployment import ACCOUNT_NAME, Accounts, Deployment

COMMENT = {
    "student": "namedaxes course student (make hub)",
    "instructor": "namedaxes course instructor (make hub)",
    "grader": "namedaxes course grader (make hub)",
}
SHELL = "/bin/bash"


class AccountError(Exception):
    """Bad roster or an account that cannot be created; the message says what to do."""


def read_roster(path: Path) -> list[str]:
    """The student ids of a roster CSV, checked (the other columns go to the gradebook via tools/handin.py)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as err:
        raise AccountError(f"cannot read the roster {path}: {err}") from err
    reader = csv.DictReader(text.splitlines())
    if "id" not in (reader.fieldnames or []):
        raise AccountError(f"{path}: the first line must name the columns id,first_name,last_name,email")
    ids: list[str] = []
    for line, row in enumerate(reader, start=2):
        sid = (row.get("id") or "").strip()
        if not ACCOUNT_NAME.match(sid):
            raise AccountError(
                f"{path}, line {line}: student id {sid!r} cannot be a Unix account name on the hub: "
                f"use lower-case letters, digits, '-' and '_', starting with a letter, at most 32"
            )
        if sid in ids:
            raise AccountError(f"{path}, line {line}: student id {sid!r} appears twice")
        ids.append(sid)
    return ids


def _exists(name: str) -> pwd.struct_passwd | None:
    try:
        return pwd.getpwnam(name)
    except KeyError:
        return None


def _run(cmd: list[str], stdin: str | None = None) -> None:
    proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True)
    if proc.returncode:
        raise AccountError(
            f"{' '.join(cmd[:1])} failed ({proc.returncode}): {proc.stderr.strip() or proc.stdout.strip()}"
        )


def _passwords(dep: Deployment) -> dict[str, str]:
    if not dep.passwords_file.is_file():
        return {}
    with dep.passwords_file.open(newline="") as fh:
        return {row["user"]: row["password"] for row in csv.DictReader(fh)}


def _write_passwords(dep: Deployment, passwords: dict[str, str]) -> None:
    dep.state.mkdir(parents=True, exist_ok=True)
    tmp = dep.passwords_file.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["user", "password"])
        for user in sorted(passwords):
            w.writerow([user, passwords[user]])
    tmp.replace(dep.passwords_file)


def _create(dep: Deployment, name: str, role: str) -> None:
    home = dep.home(name)
    _run(
        [
            "useradd",
            "--user-group",
            "--groups",
            dep.group,
            "--comment",
            COMMENT[role],
            "--home-dir",
            str(home),
            "--no-create-home",
            "--shell",
            SHELL,
            name,
        ]
    )
    entry = pwd.getpwnam(name)
    home.mkdir(parents=True, exist_ok=True)
    os.chown(home, entry.pw_uid, entry.pw_gid)
    os.chmod(home, 0o700)
    if role == "student":
        _write_start_here(home, entry.pw_uid, entry.pw_gid)


# What a student sees first in their (otherwise empty) home when they log in: where the assignments come from.
START_HERE = "START-HERE.md"
START_HERE_TEXT = """# Start here · 从这里开始

Your assignments are not here yet: open **Nbgrader ▸ Assignment List** in the menu bar, press **Fetch**
next to an assignment, then open its notebook from the list. Work in it, save, press **Validate** to check
it, and **Submit** to hand it in. Later, **Fetch Feedback** in the same list shows your score.
This JupyterLab is the English course (`namedaxes`). The Chinese course has its own JupyterLab, in Chinese:
**File ▸ Hub Control Panel**, then **中文课程**. Both see this same folder.

你的作业还不在这里。中文课程（`namedaxes-zh`）有自己的中文 JupyterLab：登录后在 Hub 主页点击
**中文课程**（在 JupyterLab 中：**文件 ▸ Hub 控制面板**）。然后在菜单栏中打开 **Nbgrader ▸ 作业列表**，在作业旁点击
**获取**，再从列表中打开它的笔记本。完成并保存后，点击 **验证** 检查，点击 **提交** 提交。之后在同一列表中点击
**获取反馈** 查看你的成绩。两门课程使用同一个主目录。
"""


def _write_start_here(home: Path, uid: int, gid: int) -> None:
    """START-HERE.md in a student's home, once (never over a file, never through a link: root writes it)."""
    try:
        fd = os.open(home / START_HERE, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    except FileExistsError:
        return
    try:
        os.write(fd, START_HERE_TEXT.encode())
        os.fchown(fd, uid, gid)
    finally:
        os.close(fd)


def sync(dep: Deployment, roster: Path | None) -> list[str]:
    """Create what the roster (or, without one, the staff alone) needs; return what was done, line by line."""
    if os.geteuid() != 0:
        raise AccountError("creating the course's Unix accounts needs root (useradd, chpasswd): run as root")
    ids = read_roster(roster) if roster is not None else []
    accounts = dep.accounts()
    staff = [dep.instructor, *dep.graders.values()]
    for name in staff:
        if not ACCOUNT_NAME.match(name):
            raise AccountError(f"account name {name!r} (HUB_INSTRUCTOR / HUB_GROUP) is not a Unix name")
    clash = sorted(set(ids) & set(staff))
    if clash:
        raise AccountError(f"{roster}: student id(s) {', '.join(clash)} are the hub's staff accounts; rename them")
    # refuse before creating anything: every name must be new, or ours already
    foreign = [n for n in staff + ids if _exists(n) and n not in accounts.created]
    if foreign:
        raise AccountError(
            f"account(s) {', '.join(foreign)} already exist on this machine and were not created by "
            f"this hub ({dep.hub_dir}): the hub never takes over an existing account. Rename those "
            f"students in the roster (or remove the other accounts yourself)."
        )
    lines = []
    try:
        grp.getgrnam(dep.group)
    except KeyError:
        _run(["groupadd", dep.group])
        accounts.created_group = True
        lines.append(f"created the group {dep.group}")
    passwords = _passwords(dep)
    new = []
    for name in staff + ids:
        role = "student" if name in ids else ("instructor" if name == dep.instructor else "grader")
        if not _exists(name):
            accounts.created.append(name)
            accounts.save(dep.accounts_file)  # before useradd: a failure halfway still knows what it made
            _create(dep, name, role)
            new.append(name)
        elif not dep.home(name).is_dir():  # state was removed by hand: give the home back
            entry = pwd.getpwnam(name)
            dep.home(name).mkdir(parents=True)
            os.chown(dep.home(name), entry.pw_uid, entry.pw_gid)
            os.chmod(dep.home(name), 0o700)
        if role != "grader" and name not in passwords:
            passwords[name] = secrets.token_urlsafe(12)
            _run(["chpasswd"], stdin=f"{name}:{passwords[name]}\n")
            _write_passwords(dep, passwords)
    dropped = [s for s in accounts.students if s not in ids] if roster is not None else []
    if roster is not None:
        accounts.students = ids
    accounts.staff = staff
    accounts.save(dep.accounts_file)
    lines.append(
        f"{len(new)} account(s) created"
        + (f" ({', '.join(new)})" if new else "")
        + f"; {len(accounts.students)} student(s) may log in, instructor {dep.instructor}, graders "
        + ", ".join(dep.graders.values())
    )
    if dropped:
        lines.append(f"not on this roster (accounts kept, logins off until they are back): {', '.join(dropped)}")
    lines.append(f"passwords: {dep.passwords_file} (root only)")
    return lines


def _processes_of(uids: set[int]) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid in uids:
                    pids.append(int(entry.name))
            except OSError:
                pass
    return pids


def remove_accounts(dep: Deployment) -> list[str]:
    """Remove exactly the accounts accounts.json lists (and the group when this deployment made it)."""
    if os.geteuid() != 0:
        raise AccountError("removing the course's Unix accounts needs root (userdel): run as root")
    import signal
    import time

    accounts = dep.accounts()
    ours = [n for n in accounts.created if (e := _exists(n)) and e.pw_dir == str(dep.home(n))]
    skipped = [n for n in accounts.created if n not in ours and _exists(n)]
    uids = {pwd.getpwnam(n).pw_uid for n in ours}
    for sig in (signal.SIGTERM, signal.SIGKILL):  # the accounts' own processes (kernels, servers)
        for pid in _processes_of(uids):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 5
        while _processes_of(uids) and time.monotonic() < deadline:
            time.sleep(0.1)
    for name in ours:
        _run(["userdel", name])
    lines = [f"removed {len(ours)} account(s)" + (f" ({', '.join(ours)})" if ours else "")]
    if skipped:
        lines.append(f"left alone (their home is no longer in {dep.homes}): {', '.join(skipped)}")
    if accounts.created_group:
        try:
            if not grp.getgrnam(dep.group).gr_mem:
                _run(["groupdel", dep.group])
                lines.append(f"removed the group {dep.group}")
        except KeyError:
            pass
    Accounts().save(dep.accounts_file)
    return lines


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("sync")
    s.add_argument("roster", nargs="?", type=Path)
    sub.add_parser("remove")
    args = parser.parse_args(argv)
    dep = Deployment.from_env()
    try:
        lines = sync(dep, args.roster) if args.cmd == "sync" else remove_accounts(dep)
    except AccountError as err:
        print(f"hub accounts: {err}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
