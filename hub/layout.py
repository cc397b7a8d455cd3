"""The deployment's folders and their permissions (who may read what is decided here, and only here).

    python -m hub.layout apply      # folders, the exchange, the hub's courses, the checkout (idempotent)
    python -m hub.layout own        # give the hub's course folders back to their graders (after `make grade`)
    python -m hub.layout restore    # the checkout's permissions as they were before `apply` (`make hub-clean`)
    python -m hub.layout built COURSE   # exit 1 (saying why) when build/'s course is older than solutions/

Design
- The exchange is nbgrader's, with nbgrader's documented modes, created in advance by root and
  owned by each course's grader (nbgrader then finds them "self owned" and keeps them). Its root
  is 0777 as nbgrader insists, plus the sticky bit: no one renames another's course folder away.
      exchange/<course>/            0755   grader
        outbound/                   0755   grader   released assignments: everyone reads
        inbound/                    3733   grader   hand-ins: everyone may add, no one may list;
                                                     nbgrader's setgid, plus the sticky bit (added
                                                     here): no one renames or deletes another's entry
        feedback/                   0711   grader   feedback files named by a hash of the submission's
                                                     secret: each student finds only their own
- The hub's course folders courses/<course>/ are copies of build/course and build/zh/course
  (source, release, gradebook), made once (a gradebook with grades is never overwritten), 0700
  and owned by the course's grader: the formgrader service runs as that account; students
  cannot read the source, the submissions or the gradebook.
- The checkout: a student's server runs the course venv, imports the course packages (courseinfo, the
  ground floor every other package and the jupyter configs read, and namedaxes) and reads
  the course's jupyter config from it, and the formgrader services (as the graders) load
  formgrader's guard `autograder.formgrader.guard` and its collect `autograder.formgrader.collect`
  (no secret: the grader's secrets are made per grading run), so those stay readable (`OPEN`);
  the checkout's root
  becomes 0711 (passable, not listable) and everything else in it (solutions/, tests/, build/,
  .git, ...) loses every permission for others. The old modes go to /var/lib/namedaxes-hub/
  (one record for every deployment of the machine), and `restore` puts them back when the last
  deployment is cleaned up.
- Every folder the students' servers need must be passable by others up to `/`: `problems()`
  names the first one that is not, instead of letting servers fail later.

Threat model: students are hostile and run arbitrary code as their own uid. Nothing under a
student's control is followed here: this module only creates and chmods paths it names itself,
never walks into the exchange or a home.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
from pathlib import Path

from courseinfo.course import COURSES, built_course, edition_folder, edition_of
from courseinfo.course import SOLUTIONS as _SOLUTIONS
from hub.deployment import ROOT, Deployment

# top-level entries of the checkout that students' servers must read (everything else is closed)
OPEN = (".venv", "courseinfo", "namedaxes", "autograder", "jupyter", "hub", "tools")
# each course's build (copied into the hub) and the solutions it is built from (courseinfo.course)
BUILT_COURSE = {course: built_course(edition_of(course)) for course in COURSES}
SOLUTIONS = {course: edition_folder(_SOLUTIONS, edition_of(course)) for course in COURSES}
EXCHANGE_MODES = {"": 0o755, "outbound": 0o755, "inbound": 0o3733, "feedback": 0o711}


class LayoutError(Exception):
    pass


def blocked(dep: Deployment) -> list[Path]:
    """Folders above the venv, its Python and HUB_DIR that other users cannot pass (the checkout and
    HUB_DIR themselves aside: apply() sets those)."""
    base = _base_python(dep.venv)
    out: list[Path] = []
    for target in (dep.venv, dep.hub_dir, *([base] if base else [])):
        for folder in reversed(target.parents):
            if (
                folder.exists()
                and not (folder.stat().st_mode & stat.S_IXOTH)
                and folder not in (ROOT, dep.hub_dir)
                and folder not in out
            ):
                out.append(folder)
    return out


def problems(dep: Deployment) -> list[str]:
    """What stops the deployment before anything is changed (empty: nothing)."""
    out = []
    if not (dep.venv / "bin" / "jupyterhub-singleuser").exists():
        out.append(f"{dep.venv}/bin/jupyterhub-singleuser is missing: `make venv` installs the lock with JupyterHub")
    return out


def _base_python(venv: Path) -> Path | None:
    """The folder of the interpreter a venv runs (pyvenv.cfg's home), resolved."""
    try:
        for line in (venv / "pyvenv.cfg").read_text().splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "home":
                return Path(value.strip()).resolve()
    except OSError:
        pass
    return None


def _mkdir(path: Path, mode: int, owner: str | None = None) -> None:
    path.mkdir(parents=True, exist_ok=True)
    if path.is_symlink():
        raise LayoutError(f"{path} is a symbolic link; the hub's folders must be real folders")
    if owner is not None:
        entry = pwd.getpwnam(owner)
        os.chown(path, entry.pw_uid, entry.pw_gid)
    else:
        os.chown(path, 0, 0)
    os.chmod(path, mode)


def _chown_tree(path: Path, owner: str) -> None:
    """Give `owner` what it does not own yet; what it owns is left untouched (a chown changes ctime,
    which tools/handin.py return-feedback reads as "when collect placed the hand-in")."""
    entry = pwd.getpwnam(owner)
    want = (entry.pw_uid, entry.pw_gid)
    for dirpath, dirnames, filenames in os.walk(path):  # the course folder: no student writes here
        for name in [*dirnames, *filenames]:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            if (st.st_uid, st.st_gid) != want:
                os.lchown(p, *want)
    st = os.lstat(path)
    if (st.st_uid, st.st_gid) != want:
        os.chown(path, *want)


def stale_build(course: str) -> list[str]:
    """Why build/course (or build/zh/course) is not the course that solutions/ makes today ([] when it is).

    The hub copies its courses from these builds, and a build left by an older checkout (a notebook reworked
    since) once gave the hub an old source: `make grade` then refused it ("the reference solution does not
    run cleanly"). `build_courses` rebuilds whatever this names before `make hub` and `make bench-hub` start."""
    built, solutions = BUILT_COURSE[course], SOLUTIONS[course]
    if not (built / "gradebook.db").is_file():
        return [f"{built.relative_to(ROOT)} is not laid out"]
    want = {p.stem: p for p in solutions.glob("*.ipynb")}
    have = {p.name for p in (built / "source").iterdir() if p.is_dir()} if (built / "source").is_dir() else set()
    out = [f"{aid}: not in {built.relative_to(ROOT)}" for aid in sorted(set(want) - have)]
    out += [
        f"{aid}: {built.relative_to(ROOT)}/source differs from {solutions.relative_to(ROOT)}"
        for aid in sorted(want)
        if aid in have and (built / "source" / aid / f"{aid}.ipynb").read_bytes() != want[aid].read_bytes()
    ]
    out += [
        f"{aid}: in {built.relative_to(ROOT)}, no longer in {solutions.relative_to(ROOT)}"
        for aid in sorted(have - set(want))
    ]
    return out


def lay_out_courses(dep: Deployment) -> list[str]:
    lines = []
    _mkdir(dep.hub_dir / "courses", 0o711)
    for course, grader in dep.graders.items():
        built, dest = built_course(edition_of(course)), dep.course_dir(course)
        if not (built / "gradebook.db").is_file():
            raise LayoutError(
                f"{built} is not laid out (`make hub` does it first, build_courses: "
                f"`make notebooks`, or python -m tools.handin layout --edition zh)"
            )
        if not dest.is_dir():
            dest.mkdir()
            for name in ("source", "release"):
                shutil.copytree(built / name, dest / name)
            for name in ("gradebook.db", "nbgrader_config.py"):
                shutil.copy2(built / name, dest / name)
            lines.append(f"course {course}: laid out in {dest} from {built.relative_to(ROOT)}")
        else:
            added = []
            for name in ("source", "release"):
                for aid in sorted(p.name for p in (built / name).iterdir() if p.is_dir()):
                    if not (dest / name / aid).exists():
                        shutil.copytree(built / name / aid, dest / name / aid)
                        added.append(aid)
            lines.append(
                f"course {course}: {dest} kept" + (f" (added {', '.join(sorted(set(added)))})" if added else "")
            )
            changed = [
                aid
                for aid in sorted(p.name for p in (built / "source").iterdir() if p.is_dir())
                if aid not in added
                and (dest / "source" / aid / f"{aid}.ipynb").is_file()
                and (dest / "source" / aid / f"{aid}.ipynb").read_bytes()
                != (built / "source" / aid / f"{aid}.ipynb").read_bytes()
            ]
            if changed:  # its gradebook and releases go with that source: never replaced behind the instructor
                lines.append(
                    f"WARNING: course {course}: the hub's source of {', '.join(changed)} is older than "
                    f"{built.relative_to(ROOT)}'s (solutions/ changed since the hub was laid out); kept, "
                    f"with its gradebook. A new term: make hub-clean, then make hub"
                )
        _chown_tree(dest, grader)
        os.chmod(dest, 0o700)
    return lines


def lay_out_exchange(dep: Deployment) -> None:
    _mkdir(dep.exchange, 0o1777)
    for course, grader in dep.graders.items():
        for sub, mode in EXCHANGE_MODES.items():
            _mkdir(dep.exchange / course / sub if sub else dep.exchange / course, mode, grader)


SHARED = Path("/var/lib/namedaxes-hub")  # root's: the live deployments and the modes they changed


@contextlib.contextmanager
def _shared_record():
    """{"deployments": [HUB_DIR, ...], "modes": {path: mode before the first deployment}} under a lock.

    Several deployments may share a checkout and a Python (a `make hub` and the tests' own, or two
    test modules at once): the modes are restored only when the last of them is cleaned up."""
    import fcntl

    SHARED.mkdir(mode=0o700, parents=True, exist_ok=True)
    with open(SHARED / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        path = SHARED / "permissions.json"
        record = json.loads(path.read_text()) if path.is_file() else {"deployments": [], "modes": {}}
        yield record
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(record, indent=1) + "\n")
        os.chmod(tmp, 0o600)
        tmp.replace(path)


def close_checkout(dep: Deployment) -> list[str]:
    """Checkout root 0711, OPEN readable by others, the rest closed to others; the way to the venv's
    Python passable. The modes before are kept (once, machine-wide) for restore_checkout."""
    with _shared_record() as record:
        saved = record["modes"]
        if str(dep.hub_dir) not in record["deployments"]:
            record["deployments"].append(str(dep.hub_dir))
        changed = []
        keep = set(OPEN)  # and every live deployment's HUB_DIR inside the checkout (hub-data/)
        keep.update(Path(d).name for d in record["deployments"] if Path(d).parent == ROOT)
        for entry in sorted(ROOT.iterdir()):
            st = entry.lstat()
            if stat.S_ISLNK(st.st_mode):
                continue
            mode = stat.S_IMODE(st.st_mode)
            if entry.name in keep:
                if entry.name in OPEN and not (mode & stat.S_IROTH and (mode & stat.S_IXOTH or not entry.is_dir())):
                    saved.setdefault(str(entry), mode)
                    subprocess.run(["chmod", "-R", "o+rX", str(entry)], check=True)
                    changed.append(f"opened {entry.name}")
                continue
            if mode & 0o007:
                saved.setdefault(str(entry), mode)
                os.chmod(entry, mode & ~0o007)
                changed.append(entry.name)
        root_mode = stat.S_IMODE(ROOT.stat().st_mode)
        if root_mode != 0o711:
            saved.setdefault(str(ROOT), root_mode)
            os.chmod(ROOT, (root_mode & 0o700) | 0o011)
        lines = [
            f"checkout {ROOT}: passable by others, closed to them except {', '.join(OPEN)}"
            + (f" (closed now: {', '.join(changed)})" if changed else "")
        ]
        # the way to the venv's Python (e.g. pyenv in root's home): passable (o+x), never listable
        for folder in blocked(dep):
            mode = stat.S_IMODE(folder.stat().st_mode)
            saved.setdefault(str(folder), mode)
            os.chmod(folder, mode | stat.S_IXOTH)
            lines.append(
                f"WARNING: {folder} was {stat.filemode(folder.stat().st_mode & ~stat.S_IXOTH)}: made passable "
                f"by other users (o+x, not listable) so that the students' servers can run {dep.venv}'s "
                f"Python; world-readable files in it are now readable by name. `make hub-clean` restores "
                f"it; build the venv from a Python outside it (make venv PYTHON=..., HUB_VENV=...) to avoid this"
            )
    return lines


def restore_checkout(dep: Deployment) -> list[str]:
    """Forget this deployment; when no other live one is left, put every recorded mode back."""
    with _shared_record() as record:
        live = [d for d in record["deployments"] if d != str(dep.hub_dir) and (Path(d) / "state").is_dir()]
        record["deployments"] = live
        if live:
            return [f"checkout and paths: left as they are for the other live deployment(s): {', '.join(live)}"]
        saved, record["modes"] = record["modes"], {}
        for name, mode in saved.items():
            path = Path(name)
            if path.exists() and not path.is_symlink():
                os.chmod(path, mode)
    return [f"checkout {ROOT} and the way to its Python: permissions restored ({len(saved)} entries)"]


def make_roots(dep: Deployment) -> None:
    """The hub's own folders: its root (0711), its state (0700, root's only) and the students' homes (0711)."""
    _mkdir(dep.hub_dir, 0o711)
    _mkdir(dep.state, 0o700)
    _mkdir(dep.homes, 0o711)


def apply(dep: Deployment) -> list[str]:
    if os.geteuid() != 0:
        raise LayoutError("laying out the hub's folders needs root (chown to the course accounts)")
    bad = problems(dep)
    if bad:
        raise LayoutError("\n".join(bad))
    make_roots(dep)
    lay_out_exchange(dep)
    lines = lay_out_courses(dep)
    lines += close_checkout(dep)
    return lines


def own(dep: Deployment) -> list[str]:
    """After root wrote into a hub course (make grade): the grader owns it all again."""
    for course, grader in dep.graders.items():
        if dep.course_dir(course).is_dir():
            _chown_tree(dep.course_dir(course), grader)
    return [f"hub courses owned by their graders again ({', '.join(dep.graders.values())})"]


def build_courses() -> None:
    """Rebuild build/course and build/zh/course, which the hub's courses are copied from, when solutions/ changed
    since they were built (never a leftover of an older checkout): `make hub` and `make bench-hub` start here."""
    from tools import handin

    for course, built in BUILT_COURSE.items():
        why = stale_build(course)
        print(
            "\n".join(f"hub layout: out of date, rebuilding: {line}" for line in why) or "hub layout: build/ is current"
        )
        if why:
            try:
                handin.lay_out(built, edition_of(course))
            except handin.HandinError as err:
                raise LayoutError(str(err)) from err


def main(argv=None) -> int:
    argv = argv or sys.argv[1:] or ["apply"]
    cmd = argv[0]
    if cmd == "built":
        why = [line for course in (argv[1:] or BUILT_COURSE) for line in stale_build(course)]
        print(
            "\n".join(f"hub layout: out of date, rebuilding: {line}" for line in why) or "hub layout: build/ is current"
        )
        return 1 if why else 0
    if cmd == "build":
        try:
            build_courses()
        except LayoutError as err:
            print(f"hub layout: {err}", file=sys.stderr)
            return 1
        return 0
    dep = Deployment.from_env()
    try:
        lines = {"apply": apply, "own": own, "restore": restore_checkout}[cmd](dep)
    except LayoutError as err:
        print(f"hub layout: {err}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
