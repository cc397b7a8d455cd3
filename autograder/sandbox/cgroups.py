"""One control group per student kernel: memory (shared mappings and tmpfs included) and processes.

Threat model: student code inside the kernel is hostile. RLIMIT_DATA does not
count `MAP_SHARED` mappings or tmpfs pages (`/dev/shm`, `/tmp`, the working
copy), and RLIMIT_NPROC does not apply to root and counts a whole uid, so a
kernel could hold far more memory than its limit or start thousands of
processes and slow every classmate down. A cgroup per kernel counts all of it:

- memory: cgroup v1 `memory.limit_in_bytes` (+ `memory.memsw.limit_in_bytes`,
  so swap does not extend it) or v2 `memory.max` (+ `memory.swap.max = 0`).
  Both charge anonymous memory, shared mappings, page cache and tmpfs pages to
  the group of the process that touched them. Over the limit, the kernel's OOM
  killer kills a process *of that group* only;
- processes: `pids.max` (v1 and v2) counts processes and threads; a fork or
  thread creation beyond it fails with EAGAIN.

Afterwards `post_mortem()` says whether a limit was hit (v1 `memory.oom_control`
/ v2 `memory.events`: `oom_kill`; `pids.events`: `max`), so the grader can give
the row status `memory` or `processes` with a reason instead of a vague
"the kernel died".

Where the groups live: below the grader's *own* group in each hierarchy (the
path in /proc/self/cgroup), named `agr-<pid>-<n>-<label>`, so the limits of
whatever runs the grader still apply on top, and a group is never put where the
grader was not put itself. The machine may mount v1 controllers, v2, or both
(a hybrid: v1 controllers plus an empty v2 tree): each controller is taken from
the v1 hierarchy that has it, else from v2 if the v2 tree offers it. Nothing is
assumed; `detect()` creates and removes a probe group and says why a controller
is unusable (not mounted, not delegated, read-only, not root).

A kernel joins its groups before anything of it runs: its command is prefixed
with a tiny `sh` that writes its own pid into each `cgroup.procs` and then
execs the rest, so no child escapes by forking early.

Clean-up (`remove()`) kills whatever is left in the groups, then removes them
bottom-up. It never raises, never follows a symlink (cgroupfs has none, and the
kernel cannot create sub-groups: it runs without privileges and cgroupfs is not
mounted in its sandbox), and a group that cannot be removed now is left for
`sweep_stale()` of a later run (groups whose grader process is gone).

Documented fallback (see rlimits.py): without a memory cgroup only RLIMIT_DATA
bounds memory (shared mappings and tmpfs pages are then not counted); without a
pids cgroup RLIMIT_NPROC bounds processes, which works because the kernel runs
as a dedicated non-root uid, but counts every process of that uid together.
"""

from __future__ import annotations

import errno
import itertools
import os
import re
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..reasons import Phrase, phrase
from ..records import Status

__all__ = ["CgroupSupport", "KernelCgroup", "LimitHit", "detect", "sweep_stale", "LIMIT_MESSAGES", "limit_message"]

CGROUP_ROOT = Path("/sys/fs/cgroup")
_PREFIX = "agr-"
_COUNTER = itertools.count(1)

# What a student reads when a limit ended (part of) their run: the kind of its sentence (reasons.Kind, a key
# of autograder.messages.TEXT); {limit} is a field, the words come when publishing (autograder.publish.words).
LIMIT_MESSAGES = {Status.MEMORY: "limit_memory", Status.PROCESSES: "limit_processes", Status.DISK: "limit_disk"}


def limit_message(status: Status, limit: str | int) -> Phrase:
    return phrase(LIMIT_MESSAGES[status], limit=limit)


@dataclass(frozen=True)
class LimitHit:
    """A limit a kernel ran into: `status` is the row status, `reason` what the student reads, as data."""

    status: Status  # MEMORY | PROCESSES | DISK
    reason: Phrase


def _mib(n: int) -> str:
    return f"{n / 2**20:g} MiB"


# ---------------------------------------------------------------- finding the hierarchies
def _unescape(s: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), s)


def _mounts(mountinfo: str) -> list[tuple[str, str, str, set[str]]]:
    """(fstype, mount point, root inside the fs, super options) of every cgroup mount."""
    found = []
    for line in mountinfo.splitlines():
        pre, sep, post = line.partition(" - ")
        if not sep:
            continue
        fields, tail = pre.split(), post.split()
        if len(fields) < 5 or len(tail) < 3 or tail[0] not in ("cgroup", "cgroup2"):
            continue
        found.append((tail[0], _unescape(fields[4]), _unescape(fields[3]), set(tail[2].split(","))))
    return found


def _own_paths(proc_cgroup: str) -> tuple[dict[str, str], str | None]:
    """This process's group per v1 controller, and its v2 group (None if not in a v2 tree)."""
    v1, v2 = {}, None
    for line in proc_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        hier, controllers, path = parts
        if hier == "0" and controllers == "":
            v2 = path
        else:
            for c in controllers.split(","):
                v1[c] = path
    return v1, v2


def _inside(mount_point: str, mount_root: str, own: str) -> Path | None:
    """The directory of group `own` in a hierarchy mounted at `mount_point` (showing `mount_root`)."""
    own = own.rstrip("/") or "/"
    root = mount_root.rstrip("/") or "/"
    if root != "/":
        if own != root and not own.startswith(root + "/"):
            return None
        own = own[len(root) :] or "/"
    path = Path(mount_point) / own.lstrip("/")
    return path if path.is_dir() else None


@dataclass(frozen=True)
class Controller:
    name: str  # memory | pids
    version: int  # 1 | 2
    parent: Path  # the grader's own group: kernel groups are made below it


@dataclass
class CgroupSupport:
    """What this machine offers; `why` says, per controller, why it is not usable ('' if it is)."""

    memory: Controller | None = None
    pids: Controller | None = None
    why: dict[str, str] = field(default_factory=dict)

    def describe(self, name: str) -> str:
        c = getattr(self, name)
        if c is None:
            return self.why.get(name, "not detected")
        return f"cgroup v{c.version} ({c.parent})"


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _probe_dir(parent: Path, name: str, needed_file: str) -> str:
    """'' if a child group with `needed_file` can be made below `parent` (and is removed again)."""
    probe = parent / f"{_PREFIX}probe-{os.getpid()}-{name}"
    try:
        probe.mkdir()
    except FileExistsError:
        pass
    except OSError as err:
        return f"cannot create a group below {parent} ({err.strerror})"
    try:
        if not (probe / needed_file).exists():
            return f"a group below {parent} has no {needed_file} (controller not enabled there)"
        try:
            with open(probe / needed_file, "w") as f:
                f.write("max" if needed_file.endswith(".max") else str(2**40))
        except OSError as err:
            return f"cannot set {needed_file} below {parent} ({err.strerror})"
        return ""
    finally:
        try:
            probe.rmdir()
        except OSError:
            pass


def detect(root: Path = CGROUP_ROOT, proc: Path = Path("/proc/self")) -> CgroupSupport:
    """Find a usable memory and pids controller (v1 or v2) below this process's own groups."""
    support = CgroupSupport()
    mounts = _mounts(_read(proc / "mountinfo"))
    v1_own, v2_own = _own_paths(_read(proc / "cgroup"))
    if not mounts:
        support.why = {
            c: f"no cgroup file system is mounted (looked in {proc / 'mountinfo'})" for c in ("memory", "pids")
        }
        return support
    needed = {"memory": {1: "memory.limit_in_bytes", 2: "memory.max"}, "pids": {1: "pids.max", 2: "pids.max"}}
    for name in ("memory", "pids"):
        why = ""
        v1 = [m for m in mounts if m[0] == "cgroup" and name in m[3]]
        v2 = [m for m in mounts if m[0] == "cgroup2"]
        if v1:
            fstype, point, mroot, _ = v1[0]
            own = v1_own.get(name)
            parent = _inside(point, mroot, own) if own is not None else None
            if parent is None:
                why = f"cgroup v1 {name}: this process's group ({own}) is not visible under {point}"
            else:
                why = _probe_dir(parent, name, needed[name][1])
                if not why:
                    setattr(support, name, Controller(name, 1, parent))
                    continue
                why = f"cgroup v1 {name}: {why}"
        elif v2 and v2_own is not None:
            parent = None
            for _, point, mroot, _ in v2:
                parent = _inside(point, mroot, v2_own)
                if parent is not None:
                    break
            if parent is None:
                why = f"cgroup v2: this process's group ({v2_own}) is not visible"
            elif name not in _read(parent / "cgroup.controllers").split():
                why = f"cgroup v2: the {name} controller is not available in {parent} (not delegated)"
            else:
                if name not in _read(parent / "cgroup.subtree_control").split():
                    try:
                        (parent / "cgroup.subtree_control").write_text(f"+{name}")
                    except OSError as err:
                        why = (
                            f"cgroup v2: cannot enable the {name} controller below {parent} ({err.strerror}; "
                            f"a group with processes in it cannot delegate: run the grader in its own "
                            f"delegated group, e.g. `systemd-run --scope -p Delegate=yes make grade`)"
                        )
                if not why:
                    why = _probe_dir(parent, name, needed[name][2])
                    if not why:
                        setattr(support, name, Controller(name, 2, parent))
                        continue
                    why = f"cgroup v2: {why}"
        else:
            why = f"no cgroup hierarchy offers the {name} controller here"
        support.why[name] = why
    return support


# ---------------------------------------------------------------- one kernel's groups
def _safe_label(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", label)[:40] or "k"


def _write(path: Path, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


def _counter(text: str, key: str) -> int:
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == key:
            try:
                return int(parts[1])
            except ValueError:
                return 0
    return 0


class KernelCgroup:
    """The memory and/or pids group of one kernel. Create with `KernelCgroup.create`."""

    def __init__(self, groups: dict[str, tuple[Controller, Path]], memory_bytes: int, pids_max: int):
        self.groups = groups  # controller name -> (controller, group directory)
        self.memory_bytes = memory_bytes
        self.pids_max = pids_max
        self.removed = False
        self._verdict: LimitHit | None = None

    @classmethod
    def create(cls, support: CgroupSupport, label: str, memory_bytes: int, pids_max: int) -> KernelCgroup | None:
        """Make the groups (None when no controller is usable). Raises OSError if setting a limit fails."""
        name = f"{_PREFIX}{os.getpid()}-{next(_COUNTER)}-{_safe_label(label)}"
        groups: dict[str, tuple[Controller, Path]] = {}
        made = cls(groups, memory_bytes, pids_max)
        try:
            for ctl in (support.memory, support.pids):
                if ctl is None:
                    continue
                path = ctl.parent / name
                if not any(p == path for _, p in groups.values()):  # one v1 hierarchy may hold both
                    path.mkdir()
                groups[ctl.name] = (ctl, path)
                if ctl.name == "memory" and ctl.version == 1:
                    _write(path / "memory.limit_in_bytes", str(memory_bytes))
                    if (path / "memory.memsw.limit_in_bytes").exists():
                        _write(path / "memory.memsw.limit_in_bytes", str(memory_bytes))
                elif ctl.name == "memory":
                    _write(path / "memory.max", str(memory_bytes))
                    if (path / "memory.swap.max").exists():
                        _write(path / "memory.swap.max", "0")
                else:
                    _write(path / "pids.max", str(pids_max))
        except OSError:
            made.remove()
            raise
        return made if groups else None

    def procs_files(self) -> list[str]:
        return sorted({str(path / "cgroup.procs") for _, path in self.groups.values()})

    def move_in(self, pid: int) -> None:
        """Move the process `pid` (all its threads) into the groups; raises OSError if the kernel refuses."""
        for procs in self.procs_files():
            _write(Path(procs), str(pid))

    def attach_prefix(self) -> list[str]:
        """argv prefix that joins the groups, then execs the rest of the command line."""
        script = (
            'while [ "$1" != -- ]; do echo $$ > "$1" || { echo "autograder: cannot join the cgroup $1" >&2; '
            'exit 125; }; shift; done; shift; exec "$@"'
        )
        return ["/bin/sh", "-c", script, "sh", *self.procs_files(), "--"]

    # -------------------------------------------------------------- afterwards
    def post_mortem(self) -> LimitHit | None:
        """Which limit (if any) the kernel hit. Readable while the groups exist; kept after `remove()`."""
        if self.removed:
            return self._verdict
        verdict = None
        mem = self.groups.get("memory")
        if mem is not None:
            ctl, path = mem
            if ctl.version == 1:
                text = _read(path / "memory.oom_control")
                hit = _counter(text, "oom_kill") > 0
                if "oom_kill" not in text:  # kernels before 4.13: no counter; failcnt at the limit
                    hit = (
                        _counter("x " + _read(path / "memory.failcnt"), "x") > 0
                        and _counter("x " + _read(path / "memory.max_usage_in_bytes"), "x") >= 0.98 * self.memory_bytes
                    )
            else:
                hit = _counter(_read(path / "memory.events"), "oom_kill") > 0
            if hit:
                verdict = LimitHit(Status.MEMORY, limit_message(Status.MEMORY, _mib(self.memory_bytes)))
        pids = self.groups.get("pids")
        if verdict is None and pids is not None and _counter(_read(pids[1] / "pids.events"), "max") > 0:
            verdict = LimitHit(Status.PROCESSES, limit_message(Status.PROCESSES, self.pids_max))
        return verdict

    def cpu_seconds(self) -> float:
        """CPU its processes have used so far, for timings (0 if unknown): cgroup v2's cpu.stat (present without
        the cpu controller), else the sum over its live processes (/proc/PID/stat; read it before killing them)."""
        for ctl, path in self.groups.values():
            if ctl.version == 2:
                return _counter(_read(path / "cpu.stat"), "usage_usec") / 1e6
        total = 0
        for pid in self.pids():
            try:
                fields = _read(Path(f"/proc/{pid}/stat")).rsplit(")", 1)[1].split()
                total += int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])
            except (IndexError, ValueError):
                pass
        return total / os.sysconf("SC_CLK_TCK")

    def pids(self) -> list[int]:
        found: set[int] = set()
        for _, path in self.groups.values():
            for tok in _read(path / "cgroup.procs").split():
                if tok.isdigit():
                    found.add(int(tok))
        return sorted(found)

    def kill(self, timeout: float = 5.0) -> bool:
        """SIGKILL everything in the groups until they are empty (True) or `timeout` passes."""
        for ctl, path in self.groups.values():
            if ctl.version == 2 and (path / "cgroup.kill").exists():
                try:
                    _write(path / "cgroup.kill", "1")
                except OSError:
                    pass
        deadline = time.monotonic() + timeout
        while True:
            pids = self.pids()
            if not pids:
                return True
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)

    def remove(self) -> bool:
        """Kill what is left, remove the groups; never raises. True when nothing is left behind."""
        if self.removed:
            return True
        try:
            self._verdict = self.post_mortem()
        except Exception:  # noqa: BLE001 - a verdict we cannot read is no verdict
            self._verdict = None
        self.removed = True
        try:
            self.kill()
        except Exception:  # noqa: BLE001 - never raises: the groups are removed below all the same
            pass
        ok = True
        for path in {path for _, path in self.groups.values()}:
            ok = _rmdir_group(path) and ok
        return ok


def _rmdir_group(path: Path, timeout: float = 2.0) -> bool:
    """Remove a group (and any sub-groups) bottom-up; cgroupfs holds only directories and files."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            stack, order = [str(path)], []
            while stack:  # iterative: no recursion limit, no symlinks followed
                d = stack.pop()
                order.append(d)
                try:
                    with os.scandir(d) as it:
                        stack.extend(e.path for e in it if e.is_dir(follow_symlinks=False))
                except OSError:
                    pass
            for d in reversed(order):
                try:
                    os.rmdir(d)
                except FileNotFoundError:
                    pass
            return True
        except OSError as err:
            if err.errno not in (errno.EBUSY, errno.EAGAIN) or time.monotonic() > deadline:
                return False
            time.sleep(0.02)


def sweep_stale(support: CgroupSupport) -> int:
    """Remove empty `agr-<pid>-...` groups left by grader processes that no longer exist."""
    removed = 0
    for ctl in (support.memory, support.pids):
        if ctl is None:
            continue
        try:
            entries = list(os.scandir(ctl.parent))
        except OSError:
            continue
        for e in entries:
            m = re.match(rf"{_PREFIX}(?:probe-)?(\d+)-", e.name)
            if not m or not e.is_dir(follow_symlinks=False):
                continue
            pid = int(m.group(1))
            try:
                os.kill(pid, 0)
                continue  # its grader still runs
            except ProcessLookupError:
                pass
            except PermissionError:
                continue
            if not _read(Path(e.path) / "cgroup.procs").split() and _rmdir_group(Path(e.path), timeout=0.2):
                removed += 1
    return removed
