"""Attacks on `make collect` (tools/handin.py collect, autograder/intake/inbound.py): hostile hand-ins in the
exchange's inbound/.

On a JupyterHub every student is a Unix user who may create folders in inbound/ (nbgrader's mode
0733) and the instructor collects, often as root. Each case here builds the hand-in a student could
build (real files, real links, real owners set with os.chown) and asserts the exact outcome: what is
refused, with which message, and that the other students' hand-ins are collected untouched.

Students are two real Unix users of every Debian system, `daemon` (uid 1) and `bin` (uid 2): the
exchange's student id is the hub's user name, and collect checks that a hand-in named `bin+...`
belongs to uid 2. Setting owners needs root; the tests are skipped without it.
"""

from __future__ import annotations

import os
import pwd
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from autograder.intake import inbound as intake
from tools import handin

ROOT = Path(__file__).resolve().parents[3]

AID = "02_scaled_sum"
NB = f"{AID}.ipynb"
ALICE, BOB = "daemon", "bin"  # real Unix users: the students
SOLUTION = '{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5, "secret": "THE SOLUTION"}'


def _have_users(*names: str) -> bool:
    try:
        return all(pwd.getpwnam(n) for n in names)
    except KeyError:
        return False


pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="setting a hand-in's owner (os.chown) needs root"),
    pytest.mark.skipif(not _have_users(ALICE, BOB), reason="the system users daemon and bin are missing"),
]


def uid(user: str) -> int:
    return pwd.getpwnam(user).pw_uid


def stamp(ts: datetime) -> str:
    return ts.strftime("%Y-%m-%d %H:%M:%S.%f UTC")


NOW = datetime.now(UTC).replace(microsecond=0)
EARLIER, LATER = NOW - timedelta(hours=2), NOW - timedelta(hours=1)
# The hand-ins below are made now and say they were made hours ago: a file system cannot make them
# otherwise (no call sets a ctime). The cases about links, owners and bounds let them keep their
# stated times (`BACKDATED`); the cases about the change-time rule use the default limits.
BACKDATED = {"change_slack_s": float("inf")}


@pytest.fixture(scope="module")
def gradebook(tmp_path_factory) -> Path:
    """An empty course gradebook, made once (nbgrader's alembic migration takes seconds per database)."""
    folder = tmp_path_factory.mktemp("gradebook")
    (folder / "nbgrader_config.py").write_text('c = get_config()\nc.CourseDirectory.course_id = "namedaxes"\n')
    with handin._api(folder, None).gradebook:
        pass
    return folder / "gradebook.db"


@pytest.fixture
def course(tmp_path, gradebook) -> Path:
    folder = tmp_path / "course"
    (folder / "source" / AID).mkdir(parents=True)
    (folder / "source" / AID / NB).write_text(SOLUTION)  # the instructor's, readable by root only
    os.chmod(folder / "source" / AID / NB, 0o600)
    (folder / "nbgrader_config.py").write_text('c = get_config()\nc.CourseDirectory.course_id = "namedaxes"\n')
    shutil.copyfile(gradebook, folder / "gradebook.db")
    return folder


@pytest.fixture
def inbound(tmp_path) -> Path:
    folder = tmp_path / "exchange" / "namedaxes" / "inbound"
    folder.mkdir(parents=True)
    os.chmod(folder, 0o2733)  # nbgrader's release makes it so
    return folder


def hand_in(
    inbound: Path,
    student: str,
    ts: datetime,
    owner: str | None = None,
    answer: str | None = None,
    name: str | None = None,
) -> Path:
    """What nbgrader's submit writes: student+assignment+timestamp+random/ with the notebook, timestamp.txt
    and submission_secret.txt, all owned by `owner` (default: the student's own Unix user)."""
    folder = inbound / (name or f"{student}+{AID}+{stamp(ts)}+r{int(ts.timestamp())}")
    folder.mkdir()
    (folder / NB).write_text(answer or f'{{"answer": "{student} at {stamp(ts)}"}}')
    (folder / "timestamp.txt").write_text(stamp(ts))
    (folder / "submission_secret.txt").write_text(student[0] * 128)
    chown_tree(folder, owner or student)
    return folder


def chown_tree(folder: Path, owner: str) -> None:
    for path in [folder, *folder.rglob("*")]:
        os.chown(path, uid(owner), uid(owner), follow_symlinks=False)


def collect(course: Path, inbound: Path, limits: intake.Limits | None = None, **kw) -> list[str]:
    limits = limits or intake.Limits(**BACKDATED)
    return handin.collect(course, inbound.parent.parent, [AID], limits=limits, **kw)


def collected(course: Path, student: str) -> str | None:
    nb = course / "submitted" / student / AID / NB
    return nb.read_text() if nb.exists() else None


def test_honest_hand_ins_are_collected_newest_first(course, inbound):
    hand_in(inbound, ALICE, EARLIER)
    hand_in(inbound, ALICE, LATER)
    hand_in(inbound, BOB, EARLIER)
    lines = collect(course, inbound)
    assert lines == [f"{AID}: 2 new or newer hand-in(s) ({BOB}, {ALICE}); 2 collected in all"]
    assert collected(course, ALICE) == f'{{"answer": "{ALICE} at {stamp(LATER)}"}}'
    assert collected(course, BOB) == f'{{"answer": "{BOB} at {stamp(EARLIER)}"}}'
    assert (course / "submitted" / ALICE / AID / "timestamp.txt").read_text() == stamp(LATER)


# ------------------------------------------------------------------ links
def test_a_notebook_that_links_to_the_solution_is_refused(course, inbound):
    honest = hand_in(inbound, ALICE, EARLIER)
    evil = hand_in(inbound, ALICE, LATER)
    (evil / NB).unlink()
    (evil / NB).symlink_to(course / "source" / AID / NB)
    os.chown(evil / NB, uid(ALICE), uid(ALICE), follow_symlinks=False)
    lines = collect(course, inbound)
    assert lines == [
        f"{AID}: 1 new or newer hand-in(s) ({ALICE}); 1 collected in all; 1 refused (below)",
        f"  REFUSED {evil.name}: {evil.name}/{NB} is a symbolic link: only regular files are collected",
    ]
    assert collected(course, ALICE) == f'{{"answer": "{ALICE} at {stamp(EARLIER)}"}}', "the older honest hand-in"
    assert "THE SOLUTION" not in "".join(p.read_text() for p in (course / "submitted").rglob("*") if p.is_file())
    assert honest.is_dir() and (evil / NB).is_symlink(), "nothing in inbound/ is changed"


def test_a_hand_in_folder_that_is_a_link_is_refused(course, inbound):
    link = inbound / f"{ALICE}+{AID}+{stamp(LATER)}+x"
    link.symlink_to(course / "source" / AID)
    os.chown(link, uid(ALICE), uid(ALICE), follow_symlinks=False)
    lines = collect(course, inbound)
    assert lines[:2] == [
        f"{AID}: 0 new or newer hand-in(s); 0 collected in all; 1 refused (below)",
        f"  REFUSED {link.name}: it is a symbolic link, not a hand-in folder",
    ]
    assert collected(course, ALICE) is None


def test_links_to_the_folder_itself_do_not_multiply(course, inbound):
    evil = hand_in(inbound, ALICE, LATER)
    for name in ("a", "b"):
        (evil / name).symlink_to(".")
        os.chown(evil / name, uid(ALICE), uid(ALICE), follow_symlinks=False)
    hand_in(inbound, BOB, LATER)
    lines = collect(course, inbound)
    assert lines[:2] == [
        f"{AID}: 1 new or newer hand-in(s) ({BOB}); 1 collected in all; 1 refused (below)",
        f"  REFUSED {evil.name}: {evil.name}/a is a symbolic link: only regular files are collected",
    ]
    assert not (course / "submitted" / ALICE).exists()
    assert sum(1 for _ in (course / "submitted").rglob("*")) == 5, "bob/, bob/02/ and bob's three files, nothing more"


def test_a_file_swapped_for_a_link_while_collect_runs_is_never_followed(course, inbound, monkeypatch):
    """The swap lands between collect's lstat of the notebook and its open: O_NOFOLLOW refuses it."""
    evil = hand_in(inbound, ALICE, LATER)
    real_open = os.open
    swapped = []

    def swap_then_open(path, flags, mode=0o777, *, dir_fd=None):
        if path == NB and dir_fd is not None and not swapped:
            swapped.append(path)
            (evil / "tmp-link").symlink_to(course / "source" / AID / NB)
            os.replace(evil / "tmp-link", evil / NB)
        return real_open(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(intake.os, "open", swap_then_open)
    lines = collect(course, inbound)
    monkeypatch.undo()
    assert swapped == [NB]
    assert (
        lines[1] == f"  REFUSED {evil.name}: {evil.name}/{NB} changed while being collected "
        f"(now a link or not a regular file)"
    )
    assert collected(course, ALICE) is None


def test_a_file_swapped_after_it_was_opened_is_read_as_it_was_checked(course, inbound, monkeypatch):
    evil = hand_in(inbound, ALICE, LATER)
    real_open = os.open

    def open_then_swap(path, flags, mode=0o777, *, dir_fd=None):
        fd = real_open(path, flags, mode, dir_fd=dir_fd)
        if path == NB and dir_fd is not None and not (evil / NB).is_symlink():
            os.rename(evil / NB, evil / "moved-away.ipynb")
            (evil / NB).symlink_to(course / "source" / AID / NB)
        return fd

    monkeypatch.setattr(intake.os, "open", open_then_swap)
    lines = collect(course, inbound)
    monkeypatch.undo()
    assert (evil / NB).is_symlink()
    assert lines == [f"{AID}: 1 new or newer hand-in(s) ({ALICE}); 1 collected in all"]
    assert collected(course, ALICE) == f'{{"answer": "{ALICE} at {stamp(LATER)}"}}'


def test_pipes_and_hard_links_are_not_collected(course, inbound, tmp_path):
    piped = hand_in(inbound, ALICE, LATER)
    os.mkfifo(piped / "extra.ipynb")  # opening it for reading would block collect
    os.chown(piped / "extra.ipynb", uid(ALICE), uid(ALICE))
    linked = hand_in(inbound, BOB, LATER)
    elsewhere = tmp_path / "bobs-other-file"
    elsewhere.write_text("x")
    os.chown(elsewhere, uid(BOB), uid(BOB))
    os.link(elsewhere, linked / "notes.txt")
    lines = collect(course, inbound)
    assert lines[1:3] == [
        f"  REFUSED {linked.name}: {linked.name}/notes.txt has 2 hard links: "
        f"only files of the hand-in's own are collected",
        f"  REFUSED {piped.name}: {piped.name}/extra.ipynb is a named pipe: only regular files are collected",
    ]
    assert collected(course, ALICE) is None and collected(course, BOB) is None


# ------------------------------------------------------------------ bounds
def test_too_many_files_or_bytes_refuse_the_hand_in_not_the_class(course, inbound):
    many = hand_in(inbound, ALICE, LATER)
    for i in range(10):
        (many / f"f{i}.txt").write_text("x")
    chown_tree(many, ALICE)
    big = hand_in(inbound, BOB, LATER, answer="y" * 5000)
    lines = collect(course, inbound, limits=intake.Limits(**BACKDATED, max_files=8, max_bytes=4096))
    assert lines == [
        f"{AID}: 0 new or newer hand-in(s); 0 collected in all; 2 refused (below)",
        f"  REFUSED {big.name}: the hand-in is larger than 4096 bytes (at {big.name}/{NB})",
        f"  REFUSED {many.name}: the hand-in has more than 8 files and folders",
        f"  nbgrader: [WARNING] No submissions of '{AID}' for course 'namedaxes' to collect",
    ]


def test_a_file_that_grows_past_its_size_is_cut_off_by_what_is_read(course, inbound, monkeypatch):
    """The byte bound counts what is read, not what st_size claimed when the file was checked."""
    grows = hand_in(inbound, ALICE, LATER)
    real_open = os.open

    def open_then_grow(path, flags, mode=0o777, *, dir_fd=None):
        fd = real_open(path, flags, mode, dir_fd=dir_fd)
        if path == NB and dir_fd is not None:
            with open(grows / NB, "a") as f:
                f.write("z" * 10000)
        return fd

    monkeypatch.setattr(intake.os, "open", open_then_grow)
    lines = collect(course, inbound, limits=intake.Limits(**BACKDATED, max_bytes=4096))
    monkeypatch.undo()
    assert lines[1] == f"  REFUSED {grows.name}: the hand-in is larger than 4096 bytes (at {grows.name}/{NB})"


def test_a_flood_of_refused_hand_ins_is_read_at_most_max_tries_times(course, inbound):
    for minute in range(5):
        evil = hand_in(inbound, ALICE, LATER + timedelta(minutes=minute))
        (evil / "x").symlink_to(".")
        os.chown(evil / "x", uid(ALICE), uid(ALICE), follow_symlinks=False)
    honest = hand_in(inbound, ALICE, EARLIER)
    lines = collect(course, inbound, limits=intake.Limits(**BACKDATED, max_tries=3))
    assert lines[0] == f"{AID}: 0 new or newer hand-in(s); 0 collected in all; 4 refused (below)"
    newest = sorted(p.name for p in inbound.iterdir())[::-1]  # the same day: names sort by time
    assert lines[1:4] == [
        f"  REFUSED {name}: {name}/x is a symbolic link: only regular files are collected" for name in newest[:3]
    ]
    assert lines[4] == (
        f"  REFUSED {newest[3]}: not examined: the 3 newer hand-ins of {ALICE} were refused, and so "
        f"are the 3 older ones without a look ({newest[3]}, {newest[4]}, {honest.name})"
    )
    assert collected(course, ALICE) is None


def test_an_unreadable_folder_refuses_that_hand_in_only(course, inbound):
    """collect may run as a grader account, not root: a folder it cannot list is one refusal, not a crash."""
    locked = hand_in(inbound, ALICE, LATER)
    (locked / "sub").mkdir()
    chown_tree(locked, ALICE)
    hand_in(inbound, BOB, LATER)
    real_listdir = os.listdir

    def listdir(path="."):
        if isinstance(path, int) and os.fstat(path).st_ino == (locked / "sub").stat().st_ino:
            raise PermissionError(13, "Permission denied")
        return real_listdir(path)

    import unittest.mock

    with unittest.mock.patch.object(intake.os, "listdir", listdir):
        lines = collect(course, inbound)
    assert lines[:2] == [
        f"{AID}: 1 new or newer hand-in(s) ({BOB}); 1 collected in all; 1 refused (below)",
        f"  REFUSED {locked.name}: it cannot be read (Permission denied)",
    ]


def test_deep_folders_are_refused(course, inbound):
    deep = hand_in(inbound, ALICE, LATER)
    (deep / "a" / "b" / "c").mkdir(parents=True)
    chown_tree(deep, ALICE)
    lines = collect(course, inbound, limits=intake.Limits(**BACKDATED, max_depth=2))
    assert lines[1] == f"  REFUSED {deep.name}: {deep.name}/a/b/c is nested more than 2 folders deep"


# ------------------------------------------------------------------ names, dates, owners
def test_one_bad_entry_is_reported_and_the_class_is_collected(course, inbound):
    garbage = hand_in(inbound, ALICE, LATER, name=f"{ALICE}+{AID}+not-a-time+x")
    odd = hand_in(inbound, ALICE, LATER, name=f"{ALICE}+{AID}+{stamp(LATER)}+r+extra")
    (inbound / f"{BOB}+{AID}+{stamp(LATER)}+file").write_text("a file, not a folder")
    hand_in(inbound, ALICE, EARLIER)
    hand_in(inbound, BOB, EARLIER)
    (inbound / "notes-of-another-assignment").mkdir()
    lines = collect(course, inbound)
    assert lines == [
        f"{AID}: 2 new or newer hand-in(s) ({BOB}, {ALICE}); 2 collected in all; 3 refused (below)",
        f"  REFUSED {BOB}+{AID}+{stamp(LATER)}+file: it is a file, not a hand-in folder",
        f"  REFUSED {odd.name}: not a hand-in folder name (student+{AID}+timestamp[+random])",
        f"  REFUSED {garbage.name}: timestamp 'not-a-time' cannot be read (ParserError)",
    ]
    assert collected(course, ALICE) == f'{{"answer": "{ALICE} at {stamp(EARLIER)}"}}'
    assert collected(course, BOB) == f'{{"answer": "{BOB} at {stamp(EARLIER)}"}}'


def test_a_student_cannot_hand_in_as_another(course, inbound):
    """alice (daemon) writes bob+... folders, one dated now, one far in the future; bob's own hand-ins win."""
    hand_in(inbound, BOB, EARLIER)
    now_as_bob = hand_in(inbound, BOB, LATER + timedelta(minutes=30), owner=ALICE, answer='{"answer": "zero"}')
    future = NOW.replace(year=2099)
    future_as_bob = hand_in(inbound, BOB, future, owner=ALICE, answer='{"answer": "zero"}')
    lines = collect(course, inbound)
    owner = (
        f"the folder belongs to daemon (uid {uid(ALICE)}), not to bin's Unix user bin (uid {uid(BOB)}) "
        f"nor to the user running collect, root (uid 0)"
    )
    assert lines[0] == f"{AID}: 1 new or newer hand-in(s) ({BOB}); 1 collected in all; 2 refused (below)"
    assert lines[1] == f"  REFUSED {now_as_bob.name}: {owner}"
    dated = f"dated {future.replace(tzinfo=None).isoformat(' ')}+00:00, in the future (now "
    assert lines[2].startswith(f"  REFUSED {future_as_bob.name}: {dated}") and lines[2].endswith(f"); {owner}")
    assert len(lines) == 3
    assert collected(course, BOB) == f'{{"answer": "{BOB} at {stamp(EARLIER)}"}}'
    hand_in(inbound, BOB, NOW - timedelta(minutes=1))  # bob hands in again: it is collected
    assert (
        collect(course, inbound)[0]
        == f"{AID}: 1 new or newer hand-in(s) ({BOB}); 1 collected in all; 2 refused (below)"
    )
    assert collected(course, BOB) == f'{{"answer": "{BOB} at {stamp(NOW - timedelta(minutes=1))}"}}'


def test_a_file_planted_in_a_students_folder_is_refused(course, inbound):
    """nbgrader makes every hand-in folder mode 0777: another user can add a file to it."""
    folder = hand_in(inbound, BOB, LATER)
    (folder / "planted.py").write_text("x = 1")
    os.chown(folder / "planted.py", uid(ALICE), uid(ALICE))
    lines = collect(course, inbound)
    assert lines[1] == (
        f"  REFUSED {folder.name}: {folder.name}/planted.py belongs to daemon (uid {uid(ALICE)}), "
        f"not to bin (uid {uid(BOB)}), who owns the hand-in folder"
    )


def test_a_students_own_future_date_does_not_win(course, inbound):
    hand_in(inbound, BOB, EARLIER)
    ahead = hand_in(inbound, BOB, NOW + timedelta(days=1))
    lines = collect(course, inbound)
    assert lines[1].startswith(f"  REFUSED {ahead.name}: dated ") and "in the future" in lines[1]
    assert collected(course, BOB) == f'{{"answer": "{BOB} at {stamp(EARLIER)}"}}'


def test_a_timestamp_file_that_disagrees_with_the_name_is_refused(course, inbound):
    """nbgrader compares collected hand-ins by timestamp.txt: a 2099 there would beat every later hand-in."""
    folder = hand_in(inbound, BOB, LATER)
    (folder / "timestamp.txt").write_text("2099-01-01 00:00:00.000000 UTC")
    lines = collect(course, inbound)
    assert lines[1] == (
        f"  REFUSED {folder.name}: its timestamp.txt says '2099-01-01 00:00:00.000000 UTC', "
        f"its folder name {LATER.replace(tzinfo=None).isoformat(' ')}+00:00"
    )
    assert collected(course, BOB) is None


def test_one_machine_class_checks_the_collecting_user_and_says_so(course, inbound):
    """Student ids that are no Unix user (make lab STUDENT=...): the hand-in must be the collector's."""
    ours = hand_in(inbound, "li-not-a-user", LATER, owner="root")
    planted = hand_in(inbound, "wang-not-a-user", LATER, owner=ALICE)
    lines = collect(course, inbound)
    assert len(lines) == 3 and lines[:2] == [
        f"{AID}: 1 new or newer hand-in(s) (li-not-a-user); 1 collected in all; 1 refused (below)",
        f"  REFUSED {planted.name}: the folder belongs to daemon (uid {uid(ALICE)}), not to the user running "
        f"collect, root (uid 0) (wang-not-a-user is no Unix user here)",
    ]
    assert lines[-1] == (  # one line (it was a paragraph on every one-machine collect and return-feedback)
        "owner check: li-not-a-user handed in as the user running collect, root (uid 0): on one machine the "
        "name on a hand-in is not proven (make hub: one Unix user per student)"
    )
    assert ours.is_dir()


def test_class_user_names_the_one_os_user_of_a_one_machine_class(course, inbound):
    """Students ran `make lab STUDENT=...` as daemon; the instructor collects as root with CLASS_USER=daemon."""
    ours = hand_in(inbound, "li-not-a-user", LATER, owner=ALICE)
    planted = hand_in(inbound, "wang-not-a-user", LATER, owner="root")
    lines = collect(course, inbound, class_user=ALICE)
    assert lines[:2] == [
        f"{AID}: 1 new or newer hand-in(s) (li-not-a-user); 1 collected in all; 1 refused (below)",
        f"  REFUSED {planted.name}: the folder belongs to root (uid 0), not to the class's OS user, "
        f"daemon (uid {uid(ALICE)}) (wang-not-a-user is no Unix user here)",
    ]
    assert ours.is_dir()
    with pytest.raises(handin.HandinError, match="class user 'no-such-user-here' is no Unix user here"):
        collect(course, inbound, class_user="no-such-user-here")


def test_a_unix_users_hand_in_made_by_the_collecting_user_is_taken_and_said(course, inbound):
    """`make lab STUDENT=bin` run by root on a machine that also has a Unix user bin: root is trusted, but
    the hand-in proves nothing about who made it, and collect says so."""
    hand_in(inbound, BOB, LATER, owner="root")
    lines = collect(course, inbound)
    assert lines[0] == f"{AID}: 1 new or newer hand-in(s) ({BOB}); 1 collected in all"
    assert lines[1].startswith(f"owner check: {BOB} handed in as the user running collect, root (uid 0): ")


def test_student_user_maps_ids_to_unix_names(course, inbound):
    """--student-user: a hub whose Unix accounts are named differently from the student ids."""
    folder = hand_in(inbound, "aemon", LATER, owner=ALICE)  # Unix user d + aemon = daemon
    lines = collect(course, inbound, student_user="d{student}")
    assert lines == [f"{AID}: 1 new or newer hand-in(s) (aemon); 1 collected in all"]
    assert collected(course, "aemon") is not None and folder.is_dir()


def test_collect_without_any_hand_in_says_so(course, tmp_path):
    (tmp_path / "exchange" / "namedaxes").mkdir(parents=True)
    assert handin.collect(course, tmp_path / "exchange", [AID]) == [
        f"{AID}: nothing handed in yet ({tmp_path / 'exchange' / 'namedaxes' / 'inbound'} does not exist)"
    ]


def test_the_command_line_prints_refusals_and_nbgrader_warnings(course, inbound, capsys):
    hand_in(inbound, ALICE, LATER, name=f"{ALICE}+{AID}+garbage")
    big = hand_in(inbound, "aemon", LATER, owner=ALICE, answer="y" * 3000)
    exchange = str(inbound.parent.parent)
    assert (
        handin.main(
            [
                "--course",
                str(course),
                "--exchange",
                exchange,
                "collect",
                "--student-user",
                "d{student}",
                "--max-files",
                "10",
                "--max-bytes",
                "2000",
                AID,
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert f"REFUSED {ALICE}+{AID}+garbage: timestamp 'garbage' cannot be read" in out
    assert f"REFUSED {big.name}: the hand-in is larger than 2000 bytes" in out
    assert f"nbgrader: [WARNING] No submissions of '{AID}' for course 'namedaxes' to collect" in out


def test_staging_is_private_and_gone_after_collect(course, inbound, monkeypatch):
    made = []
    real = intake.stage

    def spy(inbound_, staging, *a, **kw):
        root = staging.parent.parent
        made.append((staging, root.parent == course and oct(root.stat().st_mode & 0o777)))
        return real(inbound_, staging, *a, **kw)

    monkeypatch.setattr(intake, "stage", spy)
    hand_in(inbound, ALICE, LATER)
    collect(course, inbound)
    ((staging, mode),) = made
    assert mode == "0o700", "a folder of the course only the instructor can enter"
    assert not staging.exists() and not staging.parent.parent.exists()
    assert sorted(p.name for p in course.iterdir()) == ["gradebook.db", "nbgrader_config.py", "source", "submitted"]


# ------------------------------------------------------------------ return-feedback
def test_return_feedback_collects_first_and_never_sends_feedback_on_an_older_hand_in(course, inbound):
    """bob hands in again after grading and nobody ran collect: his page is about the older hand-in."""
    from nbgrader.utils import notebook_hash

    hand_in(inbound, ALICE, EARLIER)
    hand_in(inbound, BOB, EARLIER)
    collect(course, inbound)
    for sid in (ALICE, BOB):  # what `make grade` writes, after collect
        page = course / "feedback" / sid / AID / f"{AID}.html"
        page.parent.mkdir(parents=True)
        page.write_text(f"<p>feedback for {sid}</p>")
    newer = hand_in(inbound, BOB, LATER)  # waiting in inbound/, not collected
    lines = handin.return_feedback(course, inbound.parent.parent, [AID], limits=intake.Limits(**BACKDATED))
    assert lines == [
        "collecting first, so that no feedback goes out about a hand-in that a newer one replaces:",
        f"  {AID}: 1 new or newer hand-in(s) ({BOB}); 2 collected in all",
        f"{AID}: feedback returned to 1 student(s) ({ALICE}); NOT returned to {BOB}: they handed in again after "
        f"grading (run `make grade`)",
    ]
    assert collected(course, BOB) == f'{{"answer": "{BOB} at {stamp(LATER)}"}}' and newer.is_dir()
    sent = sorted(p.name for p in (inbound.parent / "feedback").iterdir())
    assert sent == [f"{notebook_hash(secret=ALICE[0] * 128, notebook_id=AID)}.html"]
    assert (inbound.parent / "feedback" / sent[0]).read_text() == f"<p>feedback for {ALICE}</p>"


# ------------------------------------------------------------------ the time a hand-in was made
def test_a_back_dated_hand_in_counts_from_the_last_change_of_its_files(course, inbound):
    """A student names a hand-in made now as if made two hours ago (before a deadline): the folder name
    and timestamp.txt agree, but the files' change times (ctime, which no student can set) are now.
    It is collected as handed in at that change, and the collect says so; an honest classmate who
    handed in just now keeps the time stated."""
    made = datetime.now(UTC)
    backdated = hand_in(inbound, BOB, EARLIER)
    honest_time = datetime.now(UTC).replace(microsecond=0)
    hand_in(inbound, ALICE, honest_time)
    lines = collect(course, inbound, limits=intake.Limits())
    assert lines[0] == f"{AID}: 2 new or newer hand-in(s) ({BOB}, {ALICE}); 2 collected in all"
    assert len(lines) == 2 and lines[1].startswith(f"{backdated.name}: stated {EARLIER.isoformat(' ')}, but its files")
    assert lines[1].endswith(": collected as handed in then")
    recorded = intake.parse_time((course / "submitted" / BOB / AID / "timestamp.txt").read_text())
    assert made - timedelta(seconds=5) <= recorded <= datetime.now(UTC)
    assert collected(course, BOB) == f'{{"answer": "{BOB} at {stamp(EARLIER)}"}}'  # the content, untouched
    assert (course / "submitted" / ALICE / AID / "timestamp.txt").read_text() == stamp(honest_time)


def test_a_hand_in_edited_after_it_was_handed_in_counts_from_the_edit(course, inbound):
    """Two honest hand-ins, made now; then bob rewrites his notebook in place (he knows his folder's name)
    and sets its times back with utime. With a change slack of 1 s, bob's counts from the rewrite;
    alice's, untouched, keeps its stated time."""
    import time

    for student in (ALICE, BOB):
        hand_in(inbound, student, datetime.now(UTC))
    bob = next(inbound.glob(f"{BOB}+*"))
    stated = intake.parse_time(bob.name.split("+")[2])
    time.sleep(1.5)
    before = os.stat(bob / NB)
    (bob / NB).write_text('{"answer": "edited"}')
    os.utime(bob / NB, ns=(before.st_atime_ns, before.st_mtime_ns))  # mtime back: the ctime still moves
    lines = collect(course, inbound, limits=intake.Limits(change_slack_s=1))
    assert len(lines) == 2 and lines[1].startswith(f"{bob.name}: stated ") and "handed in then" in lines[1]
    recorded = intake.parse_time((course / "submitted" / BOB / AID / "timestamp.txt").read_text())
    assert recorded >= stated + timedelta(seconds=1.5)
    alice = next(inbound.glob(f"{ALICE}+*"))
    assert (course / "submitted" / ALICE / AID / "timestamp.txt").read_text() == alice.name.split("+")[2]


# ------------------------------------------------------------------ formgrader's Collect button
FORMGRADER_CONFIG = ROOT / "jupyter" / "formgrader" / "nbgrader_config.py"


def formgrader_api(course: Path, inbound: Path, **collect_config):
    """NbGraderAPI as formgrader makes it for this course: jupyter/formgrader/nbgrader_config.py on top of the
    course's configuration (tests/browser/test_formgrader.py clicks Collect in the real server)."""
    from nbgrader.apps import NbGraderAPI
    from traitlets.config.loader import PyFileConfigLoader

    config = handin.load_config(course, inbound.parent.parent)
    config.merge(PyFileConfigLoader(FORMGRADER_CONFIG.name, str(FORMGRADER_CONFIG.parent)).load_config())
    for key, value in collect_config.items():
        setattr(config.HardenedCollect, key, value)
    return NbGraderAPI(config=config)


def links_garbage_and_an_honest_hand_in(course: Path, inbound: Path) -> tuple[Path, Path, Path]:
    honest = hand_in(inbound, ALICE, EARLIER)
    garbage = hand_in(inbound, ALICE, LATER, name=f"{ALICE}+{AID}+not-a-time+x")
    evil = hand_in(inbound, BOB, LATER)
    (evil / NB).unlink()
    (evil / NB).symlink_to(course / "source" / AID / NB)
    os.chown(evil / NB, uid(BOB), uid(BOB), follow_symlinks=False)
    return honest, garbage, evil


def test_formgrader_collect_runs_the_intake_refuses_by_name_and_collects_the_rest(course, inbound):
    from autograder.formgrader.collect import HardenedCollect

    honest, garbage, evil = links_garbage_and_an_honest_hand_in(course, inbound)
    api = formgrader_api(course, inbound)
    assert api.exchange.collect is HardenedCollect, "formgrader's config names the course's collect"
    result = api.collect(AID)
    assert result["success"] is True, result
    log = " ".join(result["log"].split())  # the dialog's lines are wrapped to fit
    assert (
        f"[WARNING] REFUSED {evil.name}: {evil.name}/{NB} is a symbolic link: only regular files are collected" in log
    ), log
    assert f"[WARNING] REFUSED {garbage.name}: timestamp 'not-a-time' cannot be read (ParserError)" in log, log
    assert f"[INFO] Hand-in intake of '{AID}': 1 may be collected, 2 refused (autograder.intake.inbound)" in log
    assert f"[INFO] Collecting submission: {ALICE} {AID}" in log, log
    assert "cheating attempt" not in log, "nbgrader's owner check is not run on the staging copy"
    assert collected(course, ALICE) == f'{{"answer": "{ALICE} at {stamp(EARLIER)}"}}'
    assert collected(course, BOB) is None, "the link is not collected"
    assert "THE SOLUTION" not in "".join(p.read_text() for p in (course / "submitted").rglob("*") if p.is_file())
    assert sorted(p.name for p in course.iterdir()) == ["gradebook.db", "nbgrader_config.py", "source", "submitted"], (
        "the staging folder is gone"
    )
    assert honest.is_dir() and garbage.is_dir() and (evil / NB).is_symlink(), "nothing in inbound/ is changed"


def test_nbgrader_s_own_collect_would_take_the_link_and_stop_at_the_garbage(course, inbound):
    """The control: without jupyter/formgrader/nbgrader_config.py formgrader's Collect runs nbgrader's class."""
    from nbgrader.apps import NbGraderAPI

    _, garbage, evil = links_garbage_and_an_honest_hand_in(course, inbound)
    plain = NbGraderAPI(config=handin.load_config(course, inbound.parent.parent))
    result = plain.collect(AID)
    assert result["success"] is False and "not-a-time" in result["error"], result
    assert not (course / "submitted").exists(), "one garbage name stops the whole class"
    shutil.rmtree(garbage)
    assert plain.collect(AID)["success"] is True
    assert collected(course, BOB) == SOLUTION, "nbgrader's own collect copies the solution through the link"
    assert (evil / NB).is_symlink()


def test_formgrader_collect_applies_the_limits_and_owner_mapping_of_its_options(course, inbound):
    hand_in(inbound, "aemon", LATER, owner=ALICE, answer="y" * 3000)  # student aemon is Unix user daemon
    hand_in(inbound, "aemon", EARLIER, owner=ALICE)
    result = formgrader_api(course, inbound, student_user="d{student}", max_bytes=2000).collect(AID)
    assert result["success"] is True, result
    assert f"the hand-in is larger than 2000 bytes (at aemon+{AID}+{stamp(LATER)}" in " ".join(result["log"].split())
    assert collected(course, "aemon") == f'{{"answer": "aemon at {stamp(EARLIER)}"}}'


def test_formgrader_collect_refuses_before_duedate_with_a_message(course, inbound):
    hand_in(inbound, ALICE, EARLIER)
    result = formgrader_api(course, inbound, before_duedate=True).collect(AID)
    assert result["success"] is False, result
    assert "before_duedate is not supported by this course's collect" in result["log"], result
    assert not (course / "submitted").exists()
    assert sorted(p.name for p in course.iterdir()) == ["gradebook.db", "nbgrader_config.py", "source"]


def test_a_name_with_control_characters_cannot_forge_a_line_of_the_collect_log(course, inbound):
    forged = f"x\n[INFO] Collecting submission: {BOB} {AID}\x1b[2K"
    hand_in(inbound, ALICE, LATER, name=f"{ALICE}+{AID}+{forged}+r")
    hand_in(inbound, ALICE, EARLIER)
    shown = f"{ALICE}+{AID}+x\\n[INFO] Collecting submission: {BOB} {AID}\\x1b[2K+r"
    result = formgrader_api(course, inbound).collect(AID)
    assert result["success"] is True, result
    assert not any(line.startswith(f"[INFO] Collecting submission: {BOB}") for line in result["log"].splitlines())
    assert "\x1b" not in result["log"] and f"[WARNING] REFUSED {shown}:\n    timestamp " in result["log"], result
    lines = collect(course, inbound)
    assert lines[1].startswith(f"  REFUSED {shown}: timestamp 'x\\n[INFO] Collecting"), lines
    assert all(line.isprintable() for line in lines), lines


def test_a_compile_cache_in_a_hand_in_is_left_out_with_a_note_never_refused(course, inbound):
    """Submit of a notebook folder where an older `make lab` kept JAX's cache (work/.jax-cache): the notebook
    is collected, the cache is not (unread, counted in no bound: 300 entries under a 200-file limit), and the
    log says so in one note."""
    handed = hand_in(inbound, ALICE, LATER)
    cache = handed / "work" / ".jax-cache"
    cache.mkdir(parents=True)
    for i in range(300):
        (cache / f"jit_f-{i:03d}-cache").write_bytes(b"x")
    (handed / "__pycache__").mkdir()
    chown_tree(handed, ALICE)
    lines = collect(course, inbound, limits=intake.Limits(**BACKDATED, max_files=200))
    assert lines == [
        f"{AID}: 1 new or newer hand-in(s) ({ALICE}); 1 collected in all",
        f"{ALICE}: a compile cache in the hand-in (__pycache__, work) was left out: it is never graded",
    ]
    assert collected(course, ALICE) == f'{{"answer": "{ALICE} at {stamp(LATER)}"}}'
    assert sorted(p.name for p in (course / "submitted" / ALICE / AID).iterdir()) == [
        NB,
        "submission_secret.txt",
        "timestamp.txt",
    ]
