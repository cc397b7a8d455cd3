"""Isolation between students on the hub, tried as the students' own Unix users.

One private deployment (tests/hub/conftest.py: hub/accounts.py + hub/layout.py, as `make hub`
lays it out), two students ada and ben, the real nbgrader steps with the hub's own nbgrader
configuration (hub/singleuser/: PrivateExchangeSubmit, path_includes_course):

    grader: release 02_scaled_sum -> ada, ben: fetch, submit (as themselves)
    grader: collect, write feedback, return it -> ada, ben: fetch feedback

Then every attack is one test: ben (and ada, for the positive controls) runs a tiny Python
program as their Unix user that tries one thing and prints the errno it got. Expected outcomes
are exact: the owner succeeds (so a wrong path cannot make a test pass), the other student gets
EACCES / EPERM, or cannot even find the name.

The hub's own login and servers are tested in tests/browser/test_hub.py; these tests need no hub
process, only the deployment's accounts and permissions.
"""

from __future__ import annotations

import importlib.util
import json
import stat
from pathlib import Path

import pytest

from hub import layout

_spec = importlib.util.spec_from_file_location("hub_conftest", Path(__file__).with_name("conftest.py"))
_hub = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_hub)
AID, COURSE, ROOT, HUB_VENV = _hub.AID, _hub.COURSE, _hub.ROOT, _hub.HUB_VENV
as_user, handin = _hub.as_user, _hub.handin

# A program run as the student: try one operation, print "ok" or the errno's name.
TRY = r"""
import errno, os, sys
op, path, arg = sys.argv[1], sys.argv[2], (sys.argv[3] if len(sys.argv) > 3 else "")
try:
    if op == "list":
        os.listdir(path)
    elif op == "read":
        with open(path, "rb") as fh:
            fh.read(1)
    elif op == "write":
        with open(path, "ab") as fh:
            fh.write(b"x")
    elif op == "create":
        with open(os.path.join(path, "planted.txt"), "xb") as fh:
            fh.write(b"x")
    elif op == "delete":
        os.unlink(path)
    elif op == "rmtree":
        os.rmdir(path)
    elif op == "rename":
        os.rename(path, arg)
    elif op == "mkdir":
        os.mkdir(path)
    print("ok")
except OSError as err:
    print(errno.errorcode.get(err.errno, str(err.errno)))
"""


@pytest.fixture(scope="module")
def hub(hub_requirements):
    dep = _hub.new_deployment(["nxti-ada", "nxti-ben"], "i")
    try:
        ada, ben = "nxti-ada", "nxti-ben"
        handin(dep, COURSE, "release", AID)
        cfg = dep.hub_dir / "testcfg"  # the hub's config, minus the hub: no JupyterHubAuthPlugin here
        cfg.mkdir(mode=0o755)
        (cfg / "nbgrader_config.py").write_text(
            'c = get_config()\nc.Authenticator.plugin_class = "nbgrader.auth.NoAuthPlugin"\n'
        )
        config_path = ":".join(
            str(p) for p in (cfg, ROOT / "hub" / "singleuser", ROOT / "jupyter", ROOT / "jupyter" / "nbgrader")
        )

        def nbgrader(student, *args):
            env = {
                "JUPYTER_CONFIG_PATH": config_path,
                "JUPYTERHUB_USER": student,
                "NAMEDAXES_WORK": str(dep.home(student)),
                "NAMEDAXES_EXCHANGE": str(dep.exchange),
            }
            proc = as_user(student, [str(HUB_VENV / "bin" / "nbgrader"), *args, AID, "--course", COURSE], env=env)
            assert proc.returncode == 0, f"nbgrader {args} as {student}:\n{proc.stdout}\n{proc.stderr}"

        for student in (ada, ben):
            nbgrader(student, "fetch_assignment")
            nbgrader(student, "submit")
        handin(dep, COURSE, "collect", AID)
        for student in (ada, ben):  # feedback as `make grade` leaves it (its HTML only), written by the grader
            fb = dep.course_dir(COURSE) / "feedback" / student / AID
            html = f"<html><body>Score for {student}</body></html>"
            script = (
                f"import os; os.makedirs({str(fb)!r}, exist_ok=True); "
                f"open({str(fb / (AID + '.html'))!r}, 'w').write({html!r})"
            )
            proc = as_user(dep.graders[COURSE], [str(HUB_VENV / "bin" / "python"), "-c", script])
            assert proc.returncode == 0, proc.stderr
        handin(dep, COURSE, "return-feedback", AID)
        for student in (ada, ben):
            nbgrader(student, "fetch_feedback")
        yield dep
    finally:
        _hub.server.clean(dep)


def attempt(user: str, op: str, path: Path, arg: Path | None = None) -> str:
    proc = as_user(user, ["/usr/bin/python3", "-I", "-S", "-c", TRY, op, str(path), *([str(arg)] if arg else [])])
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def inbound_entry(dep, student) -> Path:
    """The student's real hand-in: named for them and owned by them (a forged one is someone else's)."""
    import pwd

    uid = pwd.getpwnam(student).pw_uid
    found = [
        p
        for p in (dep.exchange / COURSE / "inbound").iterdir()
        if p.name.startswith(f"{student}+{AID}+") and p.stat().st_uid == uid
    ]
    assert len(found) == 1, found
    return found[0]


def feedback_file(dep, student) -> Path:
    found = list((dep.home(student) / COURSE / AID / "feedback").glob(f"*/{AID}.html"))
    assert len(found) == 1, found
    return found[0]


def exchange_feedback(dep, student) -> Path:
    """The exchange's copy of the student's feedback: the one whose content names them (root looks)."""
    found = [p for p in (dep.exchange / COURSE / "feedback").iterdir() if student in p.read_text()]
    assert len(found) == 1, found
    return found[0]


ADA, BEN = "nxti-ada", "nxti-ben"


# --- homes and workspaces
def test_a_student_cannot_list_or_read_another_students_home(hub):
    notebook = hub.home(ADA) / COURSE / AID / f"{AID}.ipynb"
    assert attempt(ADA, "read", notebook) == "ok"
    assert attempt(BEN, "list", hub.home(ADA)) == "EACCES"
    assert attempt(BEN, "read", notebook) == "EACCES"


def test_a_student_cannot_change_another_students_workspace(hub):
    notebook = hub.home(ADA) / COURSE / AID / f"{AID}.ipynb"
    assert attempt(BEN, "write", notebook) == "EACCES"
    assert attempt(BEN, "create", hub.home(ADA)) == "EACCES"
    assert attempt(BEN, "delete", notebook) == "EACCES"
    assert attempt(BEN, "create", hub.home(BEN)) == "ok"  # control: his own home is his


def test_homes_are_0700_and_the_student_owns_theirs(hub):
    import pwd

    for student in (ADA, BEN):
        st = hub.home(student).stat()
        assert (st.st_mode & 0o777, st.st_uid) == (0o700, pwd.getpwnam(student).pw_uid)


# --- the exchange: hand-ins
def test_a_student_cannot_list_the_inbound_hand_ins(hub):
    assert attempt(BEN, "list", hub.exchange / COURSE / "inbound") == "EACCES"


def test_a_student_cannot_read_another_students_hand_in_even_knowing_its_name(hub):
    entry = inbound_entry(hub, ADA)
    notebook, secret = entry / f"{AID}.ipynb", entry / "submission_secret.txt"
    assert attempt(ADA, "read", notebook) == "ok"
    assert attempt(BEN, "list", entry) == "EACCES"
    assert attempt(BEN, "read", notebook) == "EACCES"
    assert attempt(BEN, "read", secret) == "EACCES"  # the secret that names ada's feedback


def test_a_student_cannot_change_delete_or_rename_another_students_hand_in(hub):
    entry = inbound_entry(hub, ADA)
    notebook = entry / f"{AID}.ipynb"
    assert attempt(BEN, "write", notebook) == "EACCES"
    assert attempt(BEN, "delete", notebook) == "EACCES"
    assert attempt(BEN, "create", entry) == "EACCES"
    assert attempt(BEN, "rename", entry, entry.with_name(entry.name + "x")) == "EPERM"  # sticky inbound/
    assert attempt(BEN, "rmtree", entry) in ("EPERM", "ENOTEMPTY")
    assert entry.is_dir() and notebook.is_file()


def test_a_student_cannot_find_a_hand_in_by_guessing_its_name(hub):
    entry = inbound_entry(hub, ADA)
    guess = entry.with_name(entry.name.rsplit("+", 1)[0])  # student+assignment+timestamp, no random part
    assert attempt(BEN, "read", guess / f"{AID}.ipynb") == "ENOENT"


def test_a_hand_in_in_another_students_name_is_owned_by_its_real_author(hub):
    """inbound/ is writable by all (nbgrader's design): ben can make a folder named for ada, but it is
    his: the owner is what `make collect` checks before taking a hand-in as ada's."""
    import pwd

    forged = hub.exchange / COURSE / "inbound" / f"{ADA}+{AID}+2099-01-01 00:00:00.000000 UTC+forged"
    assert attempt(BEN, "mkdir", forged) == "ok"
    assert forged.stat().st_uid == pwd.getpwnam(BEN).pw_uid != pwd.getpwnam(ADA).pw_uid


def test_hand_ins_belong_to_the_grader_group_and_are_closed_to_others(hub):
    import grp

    entry = inbound_entry(hub, ADA)
    grader_group = grp.getgrgid(__import__("pwd").getpwnam(hub.graders[COURSE]).pw_gid).gr_name
    for path in (entry, entry / f"{AID}.ipynb"):
        st = path.stat()
        assert grp.getgrgid(st.st_gid).gr_name == grader_group
        assert st.st_mode & 0o007 == 0, f"{path}: mode {oct(st.st_mode)}"


def test_a_student_cannot_rename_the_course_away_in_the_exchange(hub):
    """The exchange's root is 0777 (nbgrader insists): sticky, so the course folder stays the grader's."""
    course = hub.exchange / COURSE
    assert attempt(BEN, "rename", course, hub.exchange / "stolen") == "EPERM"
    assert attempt(BEN, "create", course / "outbound") == "EACCES"  # nor plant a release


# --- the exchange: feedback
def test_a_student_cannot_list_the_feedback_or_read_another_students(hub):
    assert attempt(BEN, "list", hub.exchange / COURSE / "feedback") == "EACCES"
    assert attempt(ADA, "read", feedback_file(hub, ADA)) == "ok"
    assert attempt(BEN, "read", feedback_file(hub, ADA)) == "EACCES"  # ada's fetched copy, in her home
    assert "nxti-ada" in feedback_file(hub, ADA).read_text() and "nxti-ben" in feedback_file(hub, BEN).read_text()


def test_a_student_cannot_change_feedback_in_the_exchange(hub):
    theirs = exchange_feedback(hub, ADA)
    assert attempt(BEN, "write", theirs) == "EACCES"
    assert attempt(BEN, "delete", theirs) == "EACCES"
    assert attempt(BEN, "create", hub.exchange / COURSE / "feedback") == "EACCES"


# --- the course: source, gradebook, the checkout, the hub's state
@pytest.mark.parametrize("where", ["source", "gradebook", "submitted", "release"])
def test_a_student_cannot_read_the_hub_course(hub, where):
    course = hub.course_dir(COURSE)
    path = {
        "source": course / "source" / AID / f"{AID}.ipynb",
        "gradebook": course / "gradebook.db",
        "submitted": course / "submitted" / ADA / AID / f"{AID}.ipynb",
        "release": course / "release" / AID / f"{AID}.ipynb",
    }[where]
    assert path.is_file()
    assert attempt(BEN, "read", path) == "EACCES"
    assert attempt(hub.graders[COURSE], "read", path) == "ok"  # control: the formgrader's account reads it


@pytest.mark.parametrize(
    "rel",
    [
        "solutions/02_scaled_sum.ipynb",
        "solutions/recorded/references-hlo-cpu.json.xz",  # every reference program's HLO (issue 58)
        "solutions/recorded/references-cpu.json",
        "build/course/gradebook.db",
        "build/course/source/02_scaled_sum/02_scaled_sum.ipynb",
        "tests/tools/test_handin.py",
        ".git",
        "solutions",
    ],
)
def test_a_student_cannot_read_the_course_source_in_the_checkout(hub, rel):
    path = ROOT / rel  # .git: a folder in a clone, a file in a worktree
    assert path.exists()
    assert attempt(BEN, "list" if path.is_dir() else "read", path) == "EACCES"


def test_a_student_finds_no_reference_program_in_what_the_checkout_lets_them_read(hub):
    """Issue 58: the reference programs were in namedaxes/recorded/, which the hub keeps readable. Ben searches
    every file of every folder the checkout leaves open to him (decompressing): none holds one (the virtual
    environment aside: it is the installed packages). Where they are now, solutions/recorded/, he cannot list."""
    from reference_programs import SEARCH, marks

    roots = [str(ROOT / name) for name in layout.OPEN if (ROOT / name).is_dir() and name != ".venv"]
    proc = as_user(BEN, [str(HUB_VENV / "bin" / "python"), "-c", SEARCH, json.dumps(marks()), *roots])
    seen = json.loads(proc.stdout)
    assert seen["files"] > 100 and seen["found"] == [], proc.stderr
    proc = as_user(BEN, [str(HUB_VENV / "bin" / "python"), "-c", SEARCH, "[]", str(ROOT / "solutions" / "recorded")])
    assert json.loads(proc.stdout) == {"files": 0, "found": [], "refused": [str(ROOT / "solutions" / "recorded")]}


def test_a_student_cannot_list_the_checkout_but_runs_the_course_venv(hub):
    assert attempt(BEN, "list", ROOT) == "EACCES"
    proc = as_user(BEN, [str(HUB_VENV / "bin" / "python"), "-c", "import namedaxes, nbgrader, jupyterhub; print('ok')"])
    assert proc.stdout.strip() == "ok", proc.stderr


def test_a_student_cannot_read_the_hubs_state(hub):
    assert attempt(BEN, "list", hub.state) == "EACCES"
    assert attempt(BEN, "read", hub.passwords_file) == "EACCES"


def test_a_student_logs_in_to_a_note_that_points_to_the_assignment_list(hub):
    """Issue 35: the home was an empty folder; START-HERE.md (both languages) says where assignments come from."""
    import pwd

    for student in (ADA, BEN):
        note = hub.home(student) / "START-HERE.md"
        st = note.lstat()
        assert stat.S_ISREG(st.st_mode) and st.st_uid == pwd.getpwnam(student).pw_uid, "the student's own file"
        text = note.read_text(encoding="utf-8")
        assert "Nbgrader ▸ Assignment List" in text and "作业列表" in text and "Fetch" in text
