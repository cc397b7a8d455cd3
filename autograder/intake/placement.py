"""Find the submissions and map each notebook to (student, assignment), reporting the rest.

Two layouts are accepted:

- nbgrader's course folder: `submitted/<student>/<assignment>/<notebook>.ipynb`;
- a submissions folder (or a .zip of one) with one folder per student (the
  folder name is the student id: any name), holding the notebooks under their
  released file names, either directly (`<student>/02_scaled_sum.ipynb`) or
  in nbgrader's layout (`<student>/02_scaled_sum/02_scaled_sum.ipynb`); a
  student's folder may also be a `<student>.zip`.

Every file that cannot be placed becomes an `Unplaced` entry with a reason;
nothing is dropped silently except editor/OS clutter (`.ipynb_checkpoints`,
`.DS_Store`, `__MACOSX`, nbgrader's `timestamp.txt`), which is counted.

Threat model: folder and zip names are chosen by students (or their tools)
and become ids, output paths (`feedback/<id>/`, `autograded/<id>/`) and CSV
cells. So an id is exact:

- it is the name in Unicode NFC (a macOS zip names the same student the same);
- names that are not usable ids are rejected with a reason, never graded:
  empty, `.` or `..` (a zip named `...zip`), containing a path separator
  (`/`, `\\`) or a control / format character (C0, C1, bidirectional
  overrides, zero-width marks);
- a name an LMS export reserves for a row of its own (`Points Possible`, Canvas's
  row of maxima: `RESERVED_IDS`) is rejected the same way;
- two entries whose ids are equal after NFC, *case folding and trimming the
  spaces around them* (`José` in NFC and NFD, `Ann` and `ann`, `alice` and
  `alice `, `bob/` and `bob.zip`) are a conflict: both get a
  `conflict` entry and neither is graded, so nobody is graded as someone else
  and no output folder is shared (case-insensitive file systems included).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
import unicodedata
import zipfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath

from ..limits import MAX_ZIP_BYTES, MAX_ZIP_MEMBERS
from ..records import Late
from .inbound import CACHE_FOLDERS, Refused, parse_time

__all__ = [
    "Placed",
    "Unplaced",
    "Intake",
    "place_course",
    "place_submissions",
    "handed_in_times",
    "safe_extract",
    "MAX_ZIP_BYTES",
    "MAX_ZIP_MEMBERS",
]

# (timestamp.txt and submission_secret.txt: nbgrader's own bookkeeping in every collected hand-in)
CLUTTER = {
    ".ds_store",
    "__macosx",
    ".ipynb_checkpoints",
    "thumbs.db",
    "timestamp.txt",
    "submission_secret.txt",
    "desktop.ini",
}


@dataclass(frozen=True)
class Placed:
    student: str
    assignment: str
    path: Path  # the file on disk (possibly inside an extracted zip)
    origin: str  # where it came from, for messages (relative to the input)
    late: Late | None = None  # handed in after its due date (the runner sets it from the course's deadlines)


@dataclass(frozen=True)
class Unplaced:
    student: str  # "" when the file is not inside a student folder
    origin: str
    reason: str
    assignment: str = ""  # the assignment it probably belongs to, when recognisable


@dataclass
class Intake:
    """What was found: students, placed notebooks, unplaceable files."""

    students: set[str] = field(default_factory=set)
    placed: dict[tuple[str, str], Placed] = field(default_factory=dict)
    unplaced: list[Unplaced] = field(default_factory=list)
    empty: set[str] = field(default_factory=set)  # students whose folder held nothing
    conflicts: list[Unplaced] = field(default_factory=list)  # entries naming the same student: none graded
    clutter: int = 0
    caches: list[str] = field(default_factory=list)  # compile cache folders found in hand-ins: not graded
    tmpdirs: list[tempfile.TemporaryDirectory] = field(default_factory=list)

    def close(self) -> None:
        for tmp in self.tmpdirs:
            tmp.cleanup()
        self.tmpdirs.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def student_id(name: str) -> str:
    """A folder name as a student id (Unicode NFC, so macOS zips name the same student)."""
    return unicodedata.normalize("NFC", name)


# rows an LMS gradebook export writes itself: a student of that name would be a second such row (casefolded)
RESERVED_IDS = ("points possible",)


def id_key(sid: str) -> str:
    """Ids with the same key name the same student (NFC, then case folded, then NFC again, spaces around trimmed:
    an LMS trims them, so `alice` and `alice ` would be one student there and two here)."""
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", sid).casefold()).strip()


def _shown_name(name: str) -> str:
    """A name as it may be printed or shown (control and format characters escaped)."""
    if all(unicodedata.category(c) not in ("Cc", "Cf", "Cs", "Co", "Zl", "Zp") for c in name):
        return name
    return ascii(name)[1:-1]


def id_problem(sid: str) -> str:
    """Why `sid` cannot be a student id ('' when it can)."""
    if not sid.strip():
        return "the name is empty or blank"
    if sid in (".", ".."):
        return f"{sid!r} is not a usable student id"
    if "/" in sid or "\\" in sid:
        return "the name contains a path separator"
    if any(c in sid for c in "<>&\"'`"):  # formgrader shows ids unescaped (autograder.publish.inert, issue 8)
        return "the name contains a character that is markup in a web page (< > & \" ' `)"
    for c in sid:
        if unicodedata.category(c) in ("Cc", "Cf", "Cs", "Co", "Zl", "Zp"):
            return f"the name contains a control or format character (U+{ord(c):04X})"
    if len(sid.encode("utf-8", "surrogatepass")) > 200:
        return "the name is longer than 200 bytes"
    if id_key(sid) in RESERVED_IDS:
        return f"{sid.strip()!r} is the name of a row the LMS exports write themselves (Canvas's row of maxima)"
    return ""


def _is_clutter(name: str) -> bool:
    return name.lower() in CLUTTER or name.startswith("._") or name.startswith(".~")


def _visible(path: Path) -> list[Path]:
    try:
        return sorted(path.iterdir(), key=lambda p: p.name)
    except OSError:
        return []


def _guess_assignment(name: str, notebooks: dict[str, str]) -> str:
    """The assignment a misnamed file probably belongs to ('' if none)."""
    stem = name.rsplit(".", 1)[0].lower()
    known = sorted((f.rsplit(".", 1)[0].lower(), a) for f, a in notebooks.items())
    for k, assignment in known:
        if k in stem:
            return assignment
    number = re.match(r"(\d+)[_\- .]", stem)
    if number:
        for k, assignment in known:
            if re.split(r"[_\- .]", k)[0] == number.group(1):
                return assignment
    return ""


class _Placer:
    def __init__(self, notebooks: dict[str, str], intake: Intake, root_label: str):
        self.notebooks = notebooks  # released file name -> assignment id
        self.assignments = set(notebooks.values())
        self.intake = intake
        self.root_label = root_label

    def expected(self) -> str:
        return ", ".join(sorted(self.notebooks))

    def unplaced(self, student: str, origin: str, reason: str, assignment: str = "") -> None:
        self.intake.unplaced.append(Unplaced(student, origin, reason, assignment))

    def place(self, student: str, path: Path, origin: str, assignment_hint: str | None = None) -> None:
        name = path.name
        assignment = self.notebooks.get(name)
        if assignment_hint is not None and assignment != assignment_hint:
            guess = assignment_hint if assignment_hint in self.assignments else ""
            want = [f for f, a in self.notebooks.items() if a == assignment_hint]
            reason = (
                f"file name does not match the assignment folder: expected {' or '.join(want)}"
                if want
                else "unexpected file"
            )
            self.unplaced(student, origin, reason, guess)
            return
        if assignment is None:
            guess = _guess_assignment(name, self.notebooks)
            if name.lower().endswith(".ipynb"):
                if guess:
                    want = [f for f, a in self.notebooks.items() if a == guess][0]
                    reason = f"notebook was renamed: it must be called {want} to be graded"
                else:
                    reason = f"notebook name matches no assignment (expected one of: {self.expected()})"
            elif name.lower().endswith(".zip"):
                reason = "a zip inside a student's folder is not unpacked: put the notebooks in the folder"
            else:
                ext = os.path.splitext(name)[1] or "no extension"
                reason = f"not a notebook ({ext}): only {self.expected()} are graded"
            self.unplaced(student, origin, reason, guess)
            return
        key = (student, assignment)
        if key in self.intake.placed:
            self.unplaced(
                student, origin, f"second copy of {name} (graded: {self.intake.placed[key].origin})", assignment
            )
            return
        self.intake.placed[key] = Placed(student, assignment, path, origin)

    def student_folder(self, student: str, folder: Path, label: str) -> None:
        self.intake.students.add(student)
        before = (len(self.intake.unplaced), sum(1 for k in self.intake.placed if k[0] == student))
        self._walk(student, folder, label, depth=0)
        after = (len(self.intake.unplaced), sum(1 for k in self.intake.placed if k[0] == student))
        if before == after:
            self.intake.empty.add(student)

    def _walk(self, student: str, folder: Path, label: str, depth: int, hint: str | None = None) -> None:
        for entry in _visible(folder):
            origin = f"{label}/{entry.name}"
            if _is_clutter(entry.name):
                self.intake.clutter += 1
                continue
            try:
                st = entry.lstat()
            except OSError as err:
                self.unplaced(student, origin, f"cannot read it ({err.strerror})")
                continue
            if stat.S_ISLNK(st.st_mode):
                self.unplaced(student, origin, "symbolic link: submit the notebook file itself")
            elif stat.S_ISDIR(st.st_mode):
                if _is_cache(entry):
                    self.intake.caches.append(f"{label}/{_shown_name(entry.name)}")
                elif depth == 0 and entry.name in self.assignments:
                    self._walk(student, entry, origin, depth + 1, hint=entry.name)
                elif depth == 0 and _visible_count(entry) == 0:
                    self.intake.clutter += 1
                else:
                    self.unplaced(
                        student, origin, "unexpected folder: put the notebooks directly in the student's folder", ""
                    )
            elif stat.S_ISREG(st.st_mode):
                self.place(student, entry, origin, hint)
            else:
                self.unplaced(student, origin, "not a regular file")


def _is_cache(folder: Path) -> bool:
    """A compile cache (inbound.CACHE_FOLDERS), or a folder holding only such folders (older `make lab`s
    wrote work/.jax-cache next to the notebook): never a student's work."""
    if folder.name in CACHE_FOLDERS:
        return True
    inside = _visible(folder)
    return bool(inside) and all(e.name in CACHE_FOLDERS and e.is_dir() and not e.is_symlink() for e in inside)


def _visible_count(folder: Path) -> int:
    return sum(1 for e in _visible(folder) if not _is_clutter(e.name))


# ---------------------------------------------------------------- zips
def safe_extract(archive: Path, target: Path) -> None:
    """Extract a zip without leaving `target` (no absolute paths, `..`, links, bombs)."""
    with zipfile.ZipFile(archive) as zf:
        members = zf.infolist()
        if len(members) > MAX_ZIP_MEMBERS:
            raise ValueError(f"too many files in the zip ({len(members)})")
        if sum(m.file_size for m in members) > MAX_ZIP_BYTES:
            raise ValueError("the zip unpacks to more than 2 GiB")
        for m in members:
            name = m.filename.replace("\\", "/")
            parts = [p for p in PurePosixPath(name).parts if p not in ("", ".", "/")]
            if not parts or any(p == ".." for p in parts) or name.startswith("/") or ":" in parts[0]:
                continue
            mode = (m.external_attr >> 16) & 0o170000
            if mode == stat.S_IFLNK:
                continue
            dest = target.joinpath(*parts)
            if m.is_dir():
                dest.mkdir(parents=True, exist_ok=True)
                continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(m) as src, open(dest, "wb") as out:
                shutil.copyfileobj(src, out, 2**20)


def _extract(intake: Intake, archive: Path) -> Path:
    tmp = tempfile.TemporaryDirectory(prefix="autograder-zip-")
    intake.tmpdirs.append(tmp)
    target = Path(tmp.name) / "x"
    target.mkdir()
    safe_extract(archive, target)
    return target


def _has_notebooks(folder: Path) -> bool:
    return any(e.is_file() and e.name.lower().endswith(".ipynb") and not _is_clutter(e.name) for e in _visible(folder))


def _content_root(folder: Path) -> Path:
    """Skip wrapper folders: a zip that holds just `class/` or `alice/` (and clutter)."""
    while True:
        entries = [e for e in _visible(folder) if not _is_clutter(e.name)]
        if (
            len(entries) == 1
            and entries[0].is_dir()
            and not entries[0].is_symlink()
            and not _has_notebooks(folder)
            and not _has_notebooks(entries[0])
            and any(e.is_dir() for e in _visible(entries[0]) if not _is_clutter(e.name))
        ):
            folder = entries[0]
            continue
        return folder


# ---------------------------------------------------------------- entry points
def place_course(course: Path, notebooks: dict[str, str], students: list[str] | None = None) -> Intake:
    """nbgrader's layout: <course>/submitted/<student>/<assignment>/<notebook>.ipynb."""
    intake = Intake()
    placer = _Placer(notebooks, intake, "submitted")
    entries = []
    for entry in _visible(Path(course) / "submitted"):
        if _is_clutter(entry.name):
            intake.clutter += 1
            continue
        origin = f"submitted/{_shown_name(entry.name)}"
        if entry.is_dir() and not entry.is_symlink():
            entries.append((entry, origin, "folder"))
        elif not students:
            placer.unplaced("", origin, "not a student folder")
    for entry, origin, sid, _ in _checked_ids(intake, entries, students):
        placer.student_folder(sid, entry, origin)
    return intake


def handed_in_times(course: Path, keys) -> dict[tuple[str, str], datetime]:
    """When each collected hand-in (student, assignment) was made: the timestamp.txt nbgrader's collect
    kept in submitted/<student>/<assignment>/, which `inbound.stage` validated. Read without following a
    link and with a bound; a hand-in without a readable one is left out (it is never judged late)."""
    times = {}
    for student, assignment in keys:
        path = Path(course) / "submitted" / student / assignment / "timestamp.txt"
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            text = os.read(fd, 200).decode("utf-8", "replace").strip() if stat.S_ISREG(os.fstat(fd).st_mode) else ""
        finally:
            os.close(fd)
        try:
            times[(student, assignment)] = parse_time(text)
        except Refused:
            continue
    return times


def _checked_ids(intake: Intake, entries: list[tuple[Path, str, str]], students: list[str] | None):
    """(entry, origin, id, kind) of the student entries whose id is usable and unique.

    Unusable names become unplaceable entries (with the reason); entries whose ids
    collide become conflicts, all of them."""
    by_key: dict[str, list] = {}
    for entry, origin, kind in entries:
        name = entry.name[:-4] if kind == "zip" else entry.name
        sid = student_id(name)
        if students and sid not in students and not any(id_key(s) == id_key(sid) for s in students):
            continue
        problem = id_problem(sid)
        if problem:
            intake.unplaced.append(Unplaced("", origin, f"not a usable student id: {problem}; not graded"))
            continue
        by_key.setdefault(id_key(sid), []).append((entry, origin, sid, kind))
    for group in by_key.values():
        if len(group) == 1:
            yield group[0]
            continue
        names = " and ".join(ascii(e.name) for e, _, _, _ in group)
        for _, origin, sid, _ in group:
            intake.conflicts.append(
                Unplaced(
                    sid,
                    origin,
                    f"the folders {names} name the same student (they differ only in Unicode "
                    f"normalization, letter case or spaces around the name): neither is graded; "
                    f"rename one and grade again",
                )
            )


def place_submissions(root: Path, notebooks: dict[str, str], students: list[str] | None = None) -> Intake:
    """A folder (or .zip) with one folder (or .zip) per student."""
    intake = Intake()
    root = Path(root)
    label = root.name
    try:
        if root.is_file() and root.suffix.lower() == ".zip":
            extracted = _content_root(_extract(intake, root))
            if _has_notebooks(extracted):  # a single student's zip
                sid = student_id(root.stem if extracted.name == "x" else extracted.name)
                problem = id_problem(sid)
                if problem:
                    intake.unplaced.append(
                        Unplaced("", _shown_name(label), f"not a usable student id: {problem}; not graded")
                    )
                elif not students or sid in students:
                    _Placer(notebooks, intake, _shown_name(label)).student_folder(sid, extracted, _shown_name(label))
                return intake
            root = extracted
        elif not root.is_dir():
            raise FileNotFoundError(f"submissions folder not found: {root}")
    except (zipfile.BadZipFile, ValueError, OSError) as err:
        if isinstance(err, FileNotFoundError):
            intake.close()
            raise
        intake.unplaced.append(Unplaced("", label, f"cannot unpack the zip ({err})"))
        return intake
    label = _shown_name(label)
    placer = _Placer(notebooks, intake, label)
    entries = []
    for entry in _visible(root):
        origin = f"{label}/{_shown_name(entry.name)}"
        if _is_clutter(entry.name):
            intake.clutter += 1
            continue
        if entry.is_symlink():
            if not students:
                placer.unplaced("", origin, "symbolic link: not followed")
        elif entry.is_dir():
            entries.append((entry, origin, "folder"))
        elif entry.is_file() and entry.name.lower().endswith(".zip") and len(entry.name) > 4:
            entries.append((entry, origin, "zip"))
        elif not students:
            placer.unplaced(
                "",
                origin,
                "file at the top level: put each student's notebooks in a folder named after the student",
                _guess_assignment(entry.name, notebooks),
            )
    for entry, origin, sid, kind in _checked_ids(intake, entries, students):
        if kind == "folder":
            placer.student_folder(sid, entry, origin)
        else:
            try:
                folder = _extract(intake, entry)
            except (zipfile.BadZipFile, ValueError, OSError) as err:
                intake.students.add(sid)
                placer.unplaced(sid, origin, f"cannot unpack the zip ({err})")
                continue
            inner = [e for e in _visible(folder) if not _is_clutter(e.name)]
            if (
                len(inner) == 1
                and inner[0].is_dir()
                and not _has_notebooks(folder)
                and inner[0].name not in placer.assignments
            ):
                folder = inner[0]
            placer.student_folder(sid, folder, origin)
    return intake
