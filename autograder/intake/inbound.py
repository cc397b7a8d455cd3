"""Hand-in intake: the exchange's inbound/ -> a private staging copy that nbgrader's collect may read.

    stage(inbound, staging_inbound, assignment, Limits(), student_user="{student}") -> Staged

Used by both ways an instructor collects: `make collect` (tools/handin.py collect) and formgrader's
Collect button (autograder/formgrader/collect.py, an nbgrader exchange collect class). Both then run
nbgrader's own collect on the staging copy.

Threat model
- On a JupyterHub every student is a Unix user and nbgrader's exchange lets each of them create
  folders in `inbound/` (mode 0733: anyone may write, nobody but the instructor may list). The
  instructor collects, often as root. Everything in inbound/ is therefore hostile: its names,
  its types, its owners, its sizes, and it may change while collect runs.
- nbgrader 0.9.6's own collect copies with `shutil.copytree` (it follows symlinks: a link to the
  instructor's source notebook is collected as the solution), has no bound on what it copies
  (two `a -> .` links make an endless tree), parses every folder name before copying anything
  (one garbage timestamp aborts the whole class), takes the student id from the first `+` field
  and only logs an owner mismatch (a folder named `bob+...` replaces bob's hand-in), and lets a
  future date win over every real hand-in.

Design
- Nothing here follows a link or opens a path twice. The inbound folder, every hand-in folder and
  every file in it are opened relative to their parent's file descriptor with O_NOFOLLOW
  (a link fails with ELOOP), after an lstat that refuses anything but folders and regular files
  (no FIFO or device is ever opened); the opened descriptor is fstat-ed and must be the inode the
  lstat saw. Its content is read from that descriptor, so a file swapped for a link while collect
  runs is either refused (swapped before the open) or read as the file that was checked.
- Bounds: at most `Limits.max_files` entries and `Limits.max_bytes` bytes (counted as read, not
  as claimed by st_size) per hand-in, folders at most `Limits.max_depth` deep. A hand-in over a
  bound is refused as a whole, never truncated.
- Every entry of inbound/ for the assignment is judged on its own: a bad one is reported by name
  with the reason and the rest go on. Refused hand-ins stay in inbound/ untouched (nothing here
  deletes a submission).
- Owners: the hand-in folder must belong to the Unix user of the student it names (`student_user`,
  default the student id itself: the hub's user name), and everything in it to the folder's owner.
  The one other owner taken is the class's one OS user (the user running collect, or
  `class_user`): a one-machine class (`make lab STUDENT=...`), where every student is that user.
  That user is trusted (the instructor, or all students at once), and no other user can make a
  file it owns; but such a hand-in proves only that no other OS user planted it, not which
  student made it, and `Staged.notes` says so for every student collected that way.
- Timestamps: the folder name's must parse (nbgrader's parse_utc), must not be later than now
  (plus `Limits.future_slack_s` for clocks that differ a little) and must equal the hand-in's
  timestamp.txt, which nbgrader later compares collected hand-ins by. A timestamp is the
  student's word, and deadlines (course/deadlines.py) are judged by it, so it must not be earlier
  than the hand-in's last change either: the newest inode change time (ctime) of its folder and
  files, which no unprivileged call can set (utime sets only atime and mtime). A hand-in whose
  files changed more than `Limits.change_slack_s` after its stated time is staged under the time of
  that change (folder name and timestamp.txt), and `Staged.notes` says so: a back-dated
  hand-in, or one edited after it was handed in, counts from when its content was last changed.
- A compile cache in a hand-in (a folder named in `CACHE_FOLDERS`, or one holding only such folders: an older
  `make lab` put JAX's cache in the notebook's folder) is left out unread, counted in no bound, and
  `Staged.notes` says so: it is never graded, and refusing a hand-in for it would punish a tool's mistake.
- Names a student chose (folders, files) are reported through `printable`, never raw.
- Per student only the newest acceptable hand-in is copied: the newest is read first, and an
  older one only when the newer is refused, at most `Limits.max_tries` of them (a student's
  thousand hostile folders cost the class ten reads, not a thousand). The staging folder (the caller
  makes it, mode 0700) then holds only regular files written by this process; nbgrader's collect copies from it.
"""

from __future__ import annotations

import errno
import os
import pwd
import re
import stat
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from ..limits import (
    HANDIN_CHANGE_SLACK,
    HANDIN_FUTURE_SLACK,
    HANDIN_MAX_BYTES,
    HANDIN_MAX_DEPTH,
    HANDIN_MAX_FILES,
    HANDIN_MAX_TRIES,
)

STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]*$")
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CHUNK = 1 << 20
# Folders that are a program's cache, never a student's work: left out of a hand-in (collect) and of grading (placement)
CACHE_FOLDERS = frozenset({".jax-cache", "jax-cache", "__pycache__", ".cache"})


@dataclass(frozen=True)
class Limits:
    max_files: int = HANDIN_MAX_FILES  # files and folders in one hand-in
    max_bytes: int = HANDIN_MAX_BYTES  # bytes of one hand-in
    max_depth: int = HANDIN_MAX_DEPTH  # folders inside the hand-in folder
    future_slack_s: float = HANDIN_FUTURE_SLACK  # a hand-in dated later than now + this is refused
    max_tries: int = HANDIN_MAX_TRIES  # a student's hand-ins read, newest first, before giving up
    change_slack_s: float = HANDIN_CHANGE_SLACK  # files changed later than the stated time + this: counted from then


@dataclass(frozen=True)
class Refusal:
    entry: str  # the folder's name in inbound/
    reason: str


@dataclass(frozen=True)
class HandIn:
    entry: str  # the folder's name in inbound/
    student: str
    timestamp: datetime  # validated: the stated time, or its files' last change when that is later
    files: int
    bytes: int
    stated: datetime | None = None  # the stated time, where the files changed later (None: it is `timestamp`)
    caches: tuple[str, ...] = ()  # compile cache folders left out (their paths in the hand-in)


@dataclass
class Staged:
    """What one `stage` did: the hand-ins copied into staging, the refused ones and why, and notes for the
    instructor (the class's `placement.Intake` is another thing: the notebooks found for grading)."""

    staged: list[HandIn] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class Refused(Exception):
    """One hand-in is not taken; the message says why."""


@dataclass
class _Budget:
    limits: Limits
    files: int = 0
    bytes: int = 0
    changed_ns: int = 0  # the newest inode change time seen (st_ctime_ns)
    caches: list[str] = field(default_factory=list)  # compile cache folders left out

    def saw(self, st: os.stat_result) -> None:
        self.changed_ns = max(self.changed_ns, st.st_ctime_ns)


def _user(uid: int) -> str:
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


class Owners:
    """Which uid must own a hand-in named for `student` (see the module docstring)."""

    def __init__(self, student_user: str = "{student}", class_user: str | None = None):
        self.student_user = student_user
        if class_user:
            try:
                self.collector_uid = pwd.getpwnam(class_user).pw_uid
            except KeyError:
                raise ValueError(f"class user {class_user!r} is no Unix user here") from None
            self.shared_label = f"the class's OS user, {_user(self.collector_uid)}"
        else:
            self.collector_uid = os.geteuid()
            self.shared_label = f"the user running collect, {_user(self.collector_uid)}"
        self.unix, self.shared = {}, set()

    def allowed(self, student: str) -> tuple[int, ...]:
        """The named student's Unix user, and the class's one OS user (the collector, trusted)."""
        name = self.student_user.format(student=student)
        try:
            uid = pwd.getpwnam(name).pw_uid
        except KeyError:
            return (self.collector_uid,)
        self.unix[student] = (name, uid)
        return (uid,) if uid == self.collector_uid else (uid, self.collector_uid)

    def expected(self, student: str) -> str:
        if student in self.unix:
            name, uid = self.unix[student]
            own = f"{student}'s Unix user {name} (uid {uid})"
            return own if uid == self.collector_uid else f"{own} nor to {self.shared_label}"
        return f"{self.shared_label} ({student} is no Unix user here)"

    def taken(self, student: str, uid: int) -> None:
        """A hand-in of `student` owned by `uid` was taken: remember the ones no student account made."""
        if uid == self.collector_uid and self.unix.get(student, (None, None))[1] != uid:
            self.shared.add(student)

    def notes(self) -> list[str]:
        if not self.shared:
            return []
        shared = sorted(self.shared)
        names = ", ".join(shared[:8]) + (f" and {len(shared) - 8} more" if len(shared) > 8 else "")
        # one line: a one-machine class meets it on every collect (and return-feedback, which collects first)
        return [
            f"owner check: {names} handed in as {self.shared_label}: on one machine the name on a hand-in "
            f"is not proven (make hub: one Unix user per student)"
        ]


def printable(text: str) -> str:
    """`text` with every character that is not printable (newline, escape, bidi overrides...) as its escape:
    a name a student chose can neither forge a line of the collect log nor restyle a terminal."""
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)


def parse_entry(name: str, assignment: str) -> tuple[str, str, str | None]:
    """(student, timestamp text, error): nbgrader's `student+assignment+timestamp[+random]`."""
    fields = name.split("+")
    if len(fields) not in (3, 4) or fields[1] != assignment:
        return "", "", f"not a hand-in folder name (student+{assignment}+timestamp[+random])"
    if not STUDENT_ID.match(fields[0]):
        return fields[0], fields[2], (f"student id {fields[0]!r} is not a valid id (letters, digits and . _ - @ only)")
    return fields[0], fields[2], None


def parse_time(text: str) -> datetime:
    from nbgrader.utils import parse_utc

    try:
        ts = parse_utc(text)
    except Exception as err:  # noqa: BLE001 - dateutil raises ValueError, OverflowError, TypeError, ...
        raise Refused(f"timestamp {text!r} cannot be read ({type(err).__name__})") from None
    if not isinstance(ts, datetime):
        raise Refused(f"timestamp {text!r} cannot be read")
    return ts if ts.tzinfo else ts.replace(tzinfo=UTC)


def _check_owner(st: os.stat_result, uid: int, what: str) -> None:
    """Everything in a hand-in belongs to whoever owns its folder."""
    if st.st_uid != uid:
        raise Refused(f"{what} belongs to {_user(st.st_uid)}, not to {_user(uid)}, who owns the hand-in folder")


def _check_folder_owner(st: os.stat_result, owners: Owners, student: str) -> None:
    if st.st_uid not in owners.allowed(student):
        raise Refused(f"the folder belongs to {_user(st.st_uid)}, not to {owners.expected(student)}")


def _open_checked(parent_fd: int, name: str, rel: str, flags: int) -> tuple[int, os.stat_result]:
    """lstat, refuse what is not a folder or regular file, open without following, same inode."""
    try:
        before = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
    except OSError as err:
        raise Refused(f"{rel} cannot be read ({err.strerror})") from None
    if not (stat.S_ISDIR(before.st_mode) or stat.S_ISREG(before.st_mode)):
        raise Refused(f"{rel} is {_kind(before.st_mode)}: only regular files are collected")
    if stat.S_ISDIR(before.st_mode):
        flags = _DIR
    try:
        fd = os.open(name, flags, dir_fd=parent_fd)
    except OSError as err:
        if err.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENXIO):
            raise Refused(f"{rel} changed while being collected (now a link or not a regular file)") from None
        raise Refused(f"{rel} cannot be read ({err.strerror})") from None
    after = os.fstat(fd)
    if (after.st_dev, after.st_ino, stat.S_IFMT(after.st_mode)) != (
        before.st_dev,
        before.st_ino,
        stat.S_IFMT(before.st_mode),
    ):
        os.close(fd)
        raise Refused(f"{rel} changed while being collected")
    return fd, after


def _copy_file(fd: int, st: os.stat_result, dest: Path, rel: str, budget: _Budget) -> None:
    if st.st_nlink == 0:
        raise Refused(f"{rel} changed while being collected (it was removed or replaced)")
    if st.st_nlink != 1:
        raise Refused(f"{rel} has {st.st_nlink} hard links: only files of the hand-in's own are collected")
    room = budget.limits.max_bytes - budget.bytes
    if st.st_size > room:
        raise Refused(f"the hand-in is larger than {budget.limits.max_bytes} bytes (at {rel})")
    out = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        while True:
            chunk = os.read(fd, min(_CHUNK, room + 1))
            if not chunk:
                break
            room -= len(chunk)
            if room < 0:
                raise Refused(f"the hand-in is larger than {budget.limits.max_bytes} bytes (at {rel})")
            os.write(out, chunk)
    finally:
        os.close(out)
    budget.bytes = budget.limits.max_bytes - room


def _is_dir(dfd: int, name: str) -> bool:
    try:
        return stat.S_ISDIR(os.stat(name, dir_fd=dfd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def is_cache(dfd: int, name: str) -> bool:
    """A folder (never followed) that is a compile cache: named so, or holding nothing but such folders."""
    if not _is_dir(dfd, name):
        return False
    if name in CACHE_FOLDERS:
        return True
    try:
        fd = os.open(name, _DIR, dir_fd=dfd)
    except OSError:
        return False
    try:
        inside = os.listdir(fd)
        return bool(inside) and all(n in CACHE_FOLDERS and _is_dir(fd, n) for n in inside)
    finally:
        os.close(fd)


def _copy_dir(dfd: int, dest: Path, rel: str, depth: int, uid: int, budget: _Budget) -> None:
    os.mkdir(dest, 0o755)
    for name in sorted(os.listdir(dfd)):
        child = f"{rel}/{name}"
        if is_cache(dfd, name):
            budget.caches.append(child.split("/", 1)[1])
            continue
        budget.files += 1
        if budget.files > budget.limits.max_files:
            raise Refused(f"the hand-in has more than {budget.limits.max_files} files and folders")
        fd, st = _open_checked(dfd, name, child, _FILE)
        budget.saw(st)
        try:
            _check_owner(st, uid, child)
            if stat.S_ISDIR(st.st_mode):
                if depth >= budget.limits.max_depth:
                    raise Refused(f"{child} is nested more than {budget.limits.max_depth} folders deep")
                _copy_dir(fd, dest / name, child, depth + 1, uid, budget)
            else:
                _copy_file(fd, st, dest / name, child, budget)
        finally:
            os.close(fd)


def _remove(path: Path) -> None:
    import shutil

    if path.exists() or path.is_symlink():
        shutil.rmtree(path)


def _take(
    inbound_fd: int, entry: str, student: str, ts: datetime, dest: Path, owners: Owners, limits: Limits
) -> HandIn:
    fd, st = _open_checked(inbound_fd, entry, entry, _DIR)
    budget = _Budget(limits)
    try:
        if not stat.S_ISDIR(st.st_mode):
            raise Refused(f"{entry} is a file, not a hand-in folder")
        _check_folder_owner(st, owners, student)
        budget.saw(st)
        _copy_dir(fd, dest, entry, 0, st.st_uid, budget)
    except OSError as err:  # a folder that cannot be listed, a read that fails
        _remove(dest)
        raise Refused(f"it cannot be read ({err.strerror or err})") from None
    except BaseException:
        _remove(dest)
        raise
    finally:
        os.close(fd)
    recorded = dest / "timestamp.txt"
    if recorded.is_file():
        text = recorded.read_text(encoding="utf-8", errors="replace").strip()
        try:
            inner = parse_time(text)
        except Refused:
            inner = None
        if inner != ts:
            _remove(dest)
            raise Refused(f"its timestamp.txt says {text[:60]!r}, its folder name {ts.isoformat(' ')}")
    owners.taken(student, st.st_uid)
    changed = datetime.fromtimestamp(budget.changed_ns / 1e9, UTC)
    caches = tuple(budget.caches)
    if (changed - ts).total_seconds() <= limits.change_slack_s:
        return HandIn(entry, student, ts, budget.files, budget.bytes, caches=caches)
    staged = _restamp(dest, entry, changed)
    return HandIn(staged.name, student, changed, budget.files, budget.bytes, stated=ts, caches=caches)


def _restamp(dest: Path, entry: str, changed: datetime) -> Path:
    """The staged copy of a hand-in whose files changed after its stated time, renamed and stamped with
    that change (nbgrader's format), so that nbgrader's collect and the grader count it from then."""
    text = changed.strftime("%Y-%m-%d %H:%M:%S.%f UTC")
    fields = entry.split("+")
    fields[2] = text
    staged = dest.with_name("+".join(fields))
    os.rename(dest, staged)
    (staged / "timestamp.txt").unlink(missing_ok=True)
    (staged / "timestamp.txt").write_text(text, encoding="utf-8")
    return staged


def stage(
    inbound: Path,
    staging: Path,
    assignment: str,
    limits: Limits = Limits(),
    student_user: str = "{student}",
    now: datetime | None = None,
    class_user: str | None = None,
) -> Staged:
    """Copy the newest acceptable hand-in of each student of `assignment` from `inbound` into `staging`."""
    now = now or datetime.now(UTC)
    owners = Owners(student_user, class_user)
    latest = now + timedelta(seconds=limits.future_slack_s)
    intake = Staged()
    inbound_fd = os.open(inbound, _DIR)
    try:
        candidates: dict[str, list[tuple[datetime, str]]] = {}
        for entry in sorted(os.listdir(inbound_fd)):
            if f"+{assignment}+" not in entry:
                continue  # another assignment's (nbgrader's own pattern: *+ID+*)
            student, ts_text, problem = parse_entry(entry, assignment)
            reasons = [problem] if problem else []
            if not problem:
                try:
                    ts = parse_time(ts_text)
                    if ts > latest:
                        reasons.append(
                            f"dated {ts.isoformat(' ')}, in the future (now {now.isoformat(' ', 'seconds')})"
                        )
                except Refused as why:
                    reasons.append(str(why))
                try:
                    st = os.stat(entry, dir_fd=inbound_fd, follow_symlinks=False)
                except OSError as err:  # removed since the listing, or unreadable
                    intake.refused.append(Refusal(entry, f"it cannot be read ({err.strerror})"))
                    continue
                if not stat.S_ISDIR(st.st_mode):
                    reasons.append(
                        f"it is {'a file' if stat.S_ISREG(st.st_mode) else _kind(st.st_mode)}, not a hand-in folder"
                    )
                else:
                    try:
                        _check_folder_owner(st, owners, student)
                    except Refused as why:
                        reasons.append(str(why))
            if reasons:
                intake.refused.append(Refusal(entry, "; ".join(reasons)))
                continue
            candidates.setdefault(student, []).append((ts, entry))
        staging.mkdir(parents=True, exist_ok=True)
        for student in sorted(candidates):
            ordered = sorted(candidates[student], reverse=True)
            for tried, (ts, entry) in enumerate(ordered):
                if tried == limits.max_tries:
                    left = ", ".join(e for _, e in ordered[tried : tried + 3]) + (
                        " ..." if len(ordered) > tried + 3 else ""
                    )
                    intake.refused.append(
                        Refusal(
                            ordered[tried][1],
                            f"not examined: the {tried} newer hand-ins of "
                            f"{student} were refused, and so are the {len(ordered) - tried} "
                            f"older ones without a look ({left})",
                        )
                    )
                    break
                try:
                    taken = _take(inbound_fd, entry, student, ts, staging / entry, owners, limits)
                    intake.staged.append(taken)
                    if taken.stated is not None:
                        intake.notes.append(_restamped(taken, entry))
                    if taken.caches:
                        intake.notes.append(_cache_left_out(taken))
                    break
                except Refused as why:
                    intake.refused.append(Refusal(entry, str(why)))
    finally:
        os.close(inbound_fd)
    intake.notes = owners.notes() + intake.notes
    return intake


def _restamped(taken: HandIn, entry: str) -> str:
    return (
        f"{printable(entry)}: stated {taken.stated.isoformat(' ', 'seconds')}, but its files last changed "
        f"{taken.timestamp.isoformat(' ', 'seconds')}: collected as handed in then"
    )


def _cache_left_out(taken: HandIn) -> str:
    folders = ", ".join(printable(c) for c in taken.caches)
    return f"{printable(taken.student)}: a compile cache in the hand-in ({folders}) was left out: it is never graded"
