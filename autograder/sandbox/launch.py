"""How a student's kernel is launched: an allow-list sandbox, a dedicated user, and limits that count everything.

Threat model: the code in a submission is hostile and runs on the instructor's
machine, often as root. It may try to read secrets (`/etc/shadow`, other copies
of the course with `solutions/` and hidden tests, the gradebook, other
students' work), to write outside its working copy, to reach the network, or
to exhaust memory, processes, disk or CPU so that classmates lose points.

The view (bubblewrap, an *allow-list*, nothing of the host unless named):

    /usr (+ the /bin /lib /lib64 /sbin links)       read-only
    the Python environment (venv, base prefix)      read-only
    the course helper package, the XLA cache        read-only (`exposed`)
    /etc                                            generated: passwd, group, hosts, hostname,
                                                    nsswitch.conf; plus ld.so.cache, localtime,
                                                    fonts (no secrets)
    /sys/devices/system/cpu                         read-only (CPU count for XLA)
    /proc                                           of the sandbox's own pid namespace, Docker's
                                                    masked paths (/proc/keys, /proc/kcore, ...) empty
    /dev                                            minimal (null, zero, random, tty, pts)
    /tmp, /dev/shm                                  private tmpfs, `tmp_bytes` / `shm_bytes`
    WORK                                            its own working copy, the only host path it
                                                    may write (it also holds the IPC sockets)

plus new pid, network (loopback only), IPC, UTS and cgroup namespaces,
`--die-with-parent`, `--new-session`, and a seccomp allow-list at least as
strict as Docker's default profile (seccomp.py): keyrings (not namespaced: the
one channel between kernels of the same uid that the namespaces leave open),
io_uring, bpf, perf events, userfaultfd, ptrace, mount, namespaces, kexec and
the rest fail with EPERM, foreign ABIs and `clone3` with ENOSYS. Without
libseccomp a hand-assembled filter still refuses new user namespaces
(`unshare`/`clone` with CLONE_NEWUSER, `clone3`, foreign ABIs), and the
protections report says the allow-list is missing.

The identity: when the grader is root, bubblewrap (privileged) builds the view
and `setpriv` then drops to a *dedicated* host uid/gid (`uid`, default 65534)
with no supplementary groups, no capabilities (bounding set empty) and
no_new_privs, so host file permissions protect as well: the working copy is a
mode-0700 folder of that uid, the published XLA cache is search-only. When the
grader is not root, bubblewrap maps the grader's uid to uid 1000 inside an
unprivileged user namespace (`--disable-userns` forbids nesting another) — the
dedicated-uid protection is then missing and `protections()` says so.

Limits: a memory cgroup (shared mappings, /dev/shm, /tmp and working-copy pages
count) and a pids cgroup per kernel (cgroups.py), a size- and file-count-limited
tmpfs per working copy (workcopy.py), RLIMIT_CPU, RLIMIT_FSIZE, RLIMIT_NOFILE,
RLIMIT_DATA (kept as a first, friendlier line: a too-big array raises
MemoryError), no core files. Fallbacks where the machine lacks a mechanism:
without a memory cgroup only RLIMIT_DATA (not counting shared memory or
tmpfs); without a pids cgroup RLIMIT_NPROC for the dedicated uid (all of the
run's kernels together); without root, no per-copy disk quota (RLIMIT_FSIZE
per file only); without bubblewrap no view at all. `setup()` finds out what
works here and `protections()` lists each protection as available or missing
with the reason, for the grader's summary and report.
"""

from __future__ import annotations

import functools
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..limits import (
    KERNEL_CPU_SECONDS,
    KERNEL_FILE_BYTES,
    KERNEL_MEMORY_BYTES,
    KERNEL_OPEN_FILES,
    KERNEL_SHM_BYTES,
    KERNEL_TMP_BYTES,
    WORKCOPY_BYTES,
    WORKCOPY_FILES,
)
from . import seccomp, workcopy
from .cgroups import CgroupSupport, KernelCgroup, LimitHit, detect
from .protections import Protection

__all__ = ["Sandbox", "Launch", "KERNEL_ARGS", "WORK_SUBDIRS", "kernel_filter", "userns_filter"]

# Modules imported while the kernel boots (before it reports ready, so a prestarted kernel
# has paid for them): only imports that do not initialise JAX's backends, so the notebook's
# locked set-up cell still decides the device count. The user namespace stays empty.
WARM_MODULES = (
    "numpy",
    "jax",
    "jax.numpy",
    "jax.lax",
    "namedaxes",
    "namedaxes.checking",
    "namedaxes.grading",
    "matplotlib.figure",
    "namedaxes.plots",
)
_WARM_CODE = (
    f"import importlib as _i\nfor _m in {WARM_MODULES!r}:\n    try:\n        _i.import_module(_m)\n"
    "    except Exception:\n        pass\ndel _i, _m"
)
KERNEL_ARGS = [
    "-m",
    "ipykernel_launcher",
    "--HistoryManager.enabled=False",
    "--IPKernelApp.quiet=True",
    "--IPKernelApp.exec_lines=" + repr([f"exec({_WARM_CODE!r})"]),
]

WORK_SUBDIRS = ("observe", "tmp", ".ipython", ".runtime", ".jupyter", ".matplotlib", ".cache")
USERNS_UID = 1000  # the uid inside the user namespace when the grader is not root
DEDICATED_UID = 65534  # default dedicated host uid/gid when the grader is root ("nobody")
HOSTNAME = "autograder"
STUDENT = "student"  # the kernel's user name in the generated /etc/passwd
RUN_MARKER = ".agr-run"  # in the run's folder of working copies while the run lasts

# /etc entries bound read-only from the host when they exist (none holds a secret)
ETC_FROM_HOST = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "fonts", "alternatives", "mime.types")
SYS_FROM_HOST = ("/sys/devices/system/cpu",)
# Docker's masked /proc paths (moby's oci defaults): host-wide state a kernel has no business reading.
# /proc/keys lists the keys of every keyring the uid can view (descriptions of other kernels' keys).
PROC_MASKED = (
    "/proc/asound",
    "/proc/acpi",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/proc/scsi",
)


def _real(p: str | Path) -> str:
    return os.path.realpath(str(p))


def _default_pids() -> int:
    return 256 + 8 * (os.cpu_count() or 1)  # XLA's thread pools grow with the core count


@functools.cache
def _bwrap_options() -> frozenset[str]:
    try:
        out = subprocess.run(["bwrap", "--help"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return frozenset()
    return frozenset(tok for tok in (out.stdout + out.stderr).split() if tok.startswith("--"))


# seccomp: refuse new user namespaces (unshare/clone with CLONE_NEWUSER, and clone3, whose flags a
# classic BPF filter cannot read: glibc then falls back to clone). Syscalls of another ABI (i386, x32)
# are refused too, so they cannot be used to get around it. Per architecture: audit arch, clone, clone3,
# unshare.
_SECCOMP_ARCH = {"x86_64": (0xC000003E, 56, 435, 272), "aarch64": (0xC00000B7, 220, 435, 97)}
_CLONE_NEWUSER = 0x10000000


def userns_filter() -> bytes | None:
    """The compiled BPF program (for `bwrap --seccomp`), or None on an architecture we have no table for."""
    import platform
    import struct

    spec = _SECCOMP_ARCH.get(platform.machine())
    if spec is None:
        return None
    arch, clone, clone3, unshare = spec
    allow, eperm, enosys = 0x7FFF0000, 0x00050000 | 1, 0x00050000 | 38
    ld, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    prog = [
        (ld, 0, 0, 4),  # 0  A = arch
        (jeq, 0, 10, arch),  # 1  another ABI -> ENOSYS (12)
        (ld, 0, 0, 0),  # 2  A = syscall number
        (jge, 8, 0, 0x40000000),  # 3  x32 -> ENOSYS
        (jeq, 7, 0, clone3),  # 4  clone3 -> ENOSYS
        (jeq, 2, 0, unshare),  # 5  unshare -> check flags (8)
        (jeq, 1, 0, clone),  # 6  clone -> check flags (8)
        (ret, 0, 0, allow),  # 7
        (ld, 0, 0, 16),  # 8  A = low word of the first argument (the flags)
        (jset, 1, 0, _CLONE_NEWUSER),  # 9  CLONE_NEWUSER -> EPERM (11)
        (ret, 0, 0, allow),  # 10
        (ret, 0, 0, eperm),  # 11
        (ret, 0, 0, enosys),  # 12
    ]
    return b"".join(struct.pack("<HBBI", *ins) for ins in prog)


@functools.cache
def kernel_filter() -> tuple[bytes | None, str]:
    """(program, '') with the allow-list of seccomp.py, or (fallback program or None, why the allow-list is
    missing). Compiled once per grader process."""
    try:
        return seccomp.compile_filter(), ""
    except seccomp.FilterUnavailable as err:
        return userns_filter(), str(err)


def _memfd(name: str, data: bytes, fds: list[int]) -> int:
    fd = os.memfd_create(name)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    fds.append(fd)
    return fd


@dataclass
class Launch:
    """A ready command line: argv, the descriptors it needs (generated /etc files), its cgroup."""

    argv: list[str]
    pass_fds: tuple[int, ...] = ()
    cgroup: KernelCgroup | None = None

    def close_fds(self) -> None:
        for fd in self.pass_fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self.pass_fds = ()


@dataclass
class Sandbox:
    """Everything needed to launch one kernel: view, identity and limits. Call `setup()` once per run."""

    isolate: bool = True
    userns: bool = True  # run as an unprivileged user: dedicated uid (root) or a user namespace
    python: str = sys.executable
    hidden: list[str] = field(default_factory=list)  # folders inside exposed ones that must look empty
    exposed: list[str] = field(default_factory=list)  # folders to bind read-only (venv, packages, caches)
    cpu_seconds: int = KERNEL_CPU_SECONDS
    memory_bytes: int = KERNEL_MEMORY_BYTES
    file_bytes: int = KERNEL_FILE_BYTES
    open_files: int = KERNEL_OPEN_FILES
    pids_max: int = field(default_factory=_default_pids)
    disk_bytes: int = WORKCOPY_BYTES  # one working copy (when it can have its own tmpfs)
    max_files: int = WORKCOPY_FILES
    tmp_bytes: int = KERNEL_TMP_BYTES  # the private /tmp
    shm_bytes: int = KERNEL_SHM_BYTES  # the private /dev/shm
    uid: int = DEDICATED_UID  # the dedicated host user when the grader is root
    gid: int = DEDICATED_UID
    passthrough_env: tuple[str, ...] = ("JAX_", "XLA_", "TF_CPP_", "LANG", "LC_ALL", "TZ")
    use_prlimit: bool = field(default_factory=lambda: shutil.which("prlimit") is not None)
    # found out by setup(); the defaults launch without cgroups or quota
    dedicated: bool = False  # kernels run as `uid` (needs root, setpriv, privileged bwrap)
    cgroups: CgroupSupport | None = None
    quota: bool = False
    why: dict[str, str] = field(default_factory=dict)  # protection key -> why it is missing
    work_base: str = ""  # this run's folder of working copies (set by setup)

    # ------------------------------------------------------------ set-up for a run
    def setup(self, work_base: Path | str | None = None) -> Sandbox:
        """Find out which protections work on this machine (probing each once); returns self.

        `work_base`: the folder of this run's working copies. It gets a marker file; once the run
        removes the folder, a late worker that recreates it cannot mount a working copy there.
        """
        base = Path(work_base or tempfile.gettempdir())
        self.why = {}
        if work_base is not None:
            base.mkdir(parents=True, exist_ok=True)
            (base / RUN_MARKER).write_text("")
            self.work_base = str(base)
        if self.isolate and shutil.which("bwrap") is None:
            self.isolate = False
            self.why["allow_list_view"] = (
                "bubblewrap (bwrap) is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
            )
        if self.isolate and self.userns:
            self.dedicated = False
            why = ""
            if os.geteuid() != 0:
                why = f"the grader is not root (uid {os.geteuid()}), so it cannot switch kernels to another user"
            elif shutil.which("setpriv") is None:
                why = "setpriv (util-linux) is not installed"
            else:
                self.dedicated = True
                why = self._probe(base) or ""
                if why:
                    self.dedicated = False
            if why:
                self.why["dedicated_uid"] = why
                userns_why = self._probe(base)
                if userns_why:
                    self.userns = False
                    self.why["dedicated_uid"] = f"{why}; a user namespace does not work either ({userns_why})"
        if self.isolate and not self.userns:
            why = self._probe(base)
            if why:
                self.isolate = False
                self.why["allow_list_view"] = why
        elif not self.isolate and "allow_list_view" not in self.why:
            self.why["allow_list_view"] = "isolation was switched off (--no-isolation)"
        self.cgroups = detect()
        for name in ("memory", "pids"):
            if getattr(self.cgroups, name) is None:
                self.why[f"{name}_cgroup"] = self.cgroups.why.get(name, "not available")
        why = workcopy.probe_quota(base, *self.owner_ids())
        self.quota = not why
        if why:
            self.why["disk_quota"] = why
        return self

    def owner_ids(self) -> tuple[int, int]:
        """uid, gid that own a working copy on the host."""
        if self.isolate and self.dedicated:
            return self.uid, self.gid
        return os.geteuid(), os.getegid()

    @property
    def owner(self) -> tuple[int, int] | None:
        """The kernel's host uid/gid when it differs from the grader's (files are handed over to it)."""
        return (self.uid, self.gid) if self.isolate and self.dedicated else None

    def _probe(self, base: Path) -> str | None:
        """None if a sandboxed Python starts here with the current settings, else why not."""
        base.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix="agr-probe-", dir=base))
        try:
            work = tmp / "w"
            work.mkdir()
            workcopy.prepare(work, None, *self.owner_ids())
            code = "import os; open('ok', 'w').write(str(os.getuid()))"
            launch = self.wrap(work, [self.python, "-c", code])
            try:
                proc = subprocess.run(
                    launch.argv,
                    capture_output=True,
                    timeout=60,
                    stdin=subprocess.DEVNULL,
                    pass_fds=launch.pass_fds,
                    env=self.env(work, work / "observe"),
                    preexec_fn=self.preexec(),
                )
            except (OSError, subprocess.TimeoutExpired) as err:
                return f"bwrap failed to run: {err}"
            finally:
                launch.close_fds()
            ok = work / "ok"
            if proc.returncode != 0 or not ok.exists():
                msg = proc.stderr.decode(errors="replace").strip().splitlines()
                return f"bwrap cannot create the sandbox here: {msg[-1] if msg else f'exit code {proc.returncode}'}"
            if self.dedicated and ok.read_text() != str(self.uid):
                return f"the kernel ran as uid {ok.read_text()!r}, not {self.uid}"
            return None
        finally:
            workcopy.remove_tree(tmp)

    # ------------------------------------------------------------ limits
    def _rlimits(self) -> list[tuple[str, int, int]]:
        limits = [
            ("cpu", resource.RLIMIT_CPU, self.cpu_seconds),
            ("data", resource.RLIMIT_DATA, self.memory_bytes),
            ("fsize", resource.RLIMIT_FSIZE, self.file_bytes),
            ("nofile", resource.RLIMIT_NOFILE, self.open_files),
            ("core", resource.RLIMIT_CORE, 0),
        ]
        if self.owner is not None and (self.cgroups is None or self.cgroups.pids is None):
            limits.append(("nproc", resource.RLIMIT_NPROC, self.pids_max))  # fallback: counts the whole uid
        return limits

    def limits_prefix(self) -> list[str]:
        if not self.use_prlimit:
            return []
        return ["prlimit", *(f"--{name}={v}:{v}" for name, _, v in self._rlimits()), "--"]

    def preexec(self):
        """Fallback when `prlimit` is missing: set the limits in the child before exec."""
        if self.use_prlimit:
            return None
        limits = [(which, v) for _, which, v in self._rlimits()]

        def apply():
            for which, value in limits:
                resource.setrlimit(which, (value, value))

        return apply

    def new_cgroup(self, label: str) -> KernelCgroup | None:
        if self.cgroups is None or (self.cgroups.memory is None and self.cgroups.pids is None):
            return None
        return KernelCgroup.create(self.cgroups, label, self.memory_bytes, self.pids_max)

    # ------------------------------------------------------------ the working copy
    def prepare_workdir(self, workdir: Path) -> None:
        """Make `workdir` the kernel's own working copy (quota mount where possible) with its sub-folders."""
        quota = workcopy.Quota(self.disk_bytes, self.max_files) if self.quota else None
        if (
            quota is not None
            and self.work_base
            and _real(workdir).startswith(_real(self.work_base) + "/")
            and not os.path.exists(os.path.join(self.work_base, RUN_MARKER))
        ):
            raise OSError(f"the grading run that owned {self.work_base} is over (its folder was removed)")
        workcopy.prepare(workdir, quota, *self.owner_ids())
        workcopy.make_dirs(workdir, WORK_SUBDIRS, self.owner)

    def hand_over(self, path: Path) -> None:
        """Give a file the grader wrote into the working copy (the connection file) to the kernel's user."""
        workcopy.hand_over(path, self.owner)

    def disk_full(self, workdir: Path) -> LimitHit | None:
        quota = workcopy.Quota(self.disk_bytes, self.max_files) if self.quota else None
        return workcopy.full(workdir, quota)

    # ------------------------------------------------------------ the command line
    def _etc_files(self, workdir: Path) -> dict[str, bytes]:
        if self.dedicated:
            uid, gid = self.uid, self.gid
        else:
            uid = gid = USERNS_UID if self.userns else os.geteuid()
        users = [("root", 0, 0, "/root")]
        if uid != 0:
            users.append((STUDENT, uid, gid, str(workdir)))
        passwd = "".join(f"{n}:x:{u}:{g}:{n}:{h}:/usr/sbin/nologin\n" for n, u, g, h in users)
        group = "root:x:0:\n" + (f"{STUDENT}:x:{gid}:\n" if gid != 0 else "")
        return {
            "passwd": passwd.encode(),
            "group": group.encode(),
            "hosts": f"127.0.0.1\tlocalhost {HOSTNAME}\n::1\tlocalhost ip6-localhost\n".encode(),
            "hostname": f"{HOSTNAME}\n".encode(),
            "nsswitch.conf": b"passwd: files\ngroup: files\nshadow: files\nhosts: files\n",
        }

    def bwrap_args(self, workdir: Path, writable: tuple = (), fds: list[int] | None = None) -> list[str]:
        """The bwrap part of the command line. Generated /etc files are memfds appended to `fds`."""
        opts = _bwrap_options()
        work = _real(workdir)
        args = ["bwrap"]
        if self.userns and not self.dedicated:
            args += ["--unshare-user", "--uid", str(USERNS_UID), "--gid", str(USERNS_UID)]
            if "--disable-userns" in opts:
                args.append("--disable-userns")
        args += [
            "--unshare-pid",
            "--unshare-net",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try" if "--unshare-cgroup-try" in opts else "--unshare-cgroup",
            "--hostname",
            HOSTNAME,
            "--die-with-parent",
            "--new-session",
        ]
        if self.dedicated:
            args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]  # for setpriv only
        elif os.geteuid() == 0 and not self.userns:
            args += ["--cap-drop", "ALL"]
        # the system: /usr, and the merged-/usr links (or the real folders on older layouts)
        args += ["--ro-bind", "/usr", "/usr"]
        for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
            if os.path.islink(top):
                args += ["--symlink", os.readlink(top), top]
            elif os.path.isdir(top):
                args += ["--ro-bind", top, top]
        args += [
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--perms",
            "1777",
            "--size",
            str(self.tmp_bytes),
            "--tmpfs",
            "/tmp",
            "--perms",
            "1777",
            "--size",
            str(self.shm_bytes),
            "--tmpfs",
            "/dev/shm",
            "--perms",
            "0755",
            "--dir",
            "/etc",
        ]
        # /etc: generated (no secrets) plus a few harmless host files
        if fds is not None:
            for name, data in self._etc_files(Path(work)).items():
                fd = _memfd(f"agr-etc-{name}", data, fds)
                args += ["--perms", "0644", "--ro-bind-data", str(fd), f"/etc/{name}"]
            bpf, _ = kernel_filter()
            if bpf is not None and "--seccomp" in opts:
                args += ["--seccomp", str(_memfd("agr-seccomp", bpf, fds))]
            for path in PROC_MASKED:  # an empty read-only file or folder over each (as Docker does)
                if os.path.isdir(path):
                    args += ["--tmpfs", path, "--remount-ro", path]
                elif os.path.exists(path):
                    args += ["--perms", "0444", "--ro-bind-data", str(_memfd("agr-mask", b"", fds)), path]
        for name in ETC_FROM_HOST:
            src = f"/etc/{name}"
            if os.path.exists(src):
                args += ["--ro-bind", src, src]
        # the allow-list: Python, the course package, caches (read-only), then the working copy
        needed = [
            sys.prefix,
            sys.base_prefix,
            os.path.dirname(_real(self.python)),
            os.path.dirname(os.path.dirname(_real(self.python))),
        ]
        ro = sorted({_real(p) for p in self.exposed + needed if os.path.isdir(p)}, key=lambda p: (p.count("/"), p))
        ro = [p for p in ro if p != "/" and not any(p == q or p.startswith(q + "/") for q in ("/usr",))]
        ro = [p for p in SYS_FROM_HOST if os.path.isdir(p)] + ro
        rw = [_real(p) for p in writable] + [work]
        made = {"/", "/usr", "/tmp", "/dev", "/etc", "/proc"}  # parents bwrap would make are 0700: make them
        covered: list[str] = []
        for dest in ro + rw:
            parent, chain = os.path.dirname(dest), []
            while parent not in made and not any(parent == c or parent.startswith(c + "/") for c in covered):
                chain.append(parent)
                parent = os.path.dirname(parent)
            for d in reversed(chain):
                args += ["--perms", "0755", "--dir", d]
                made.add(d)
            if dest in rw:
                args += ["--bind", dest, dest]
            else:
                args += ["--ro-bind", dest, dest]
            covered.append(dest)
        for path in sorted({_real(p) for p in self.hidden}):
            if any(path.startswith(q + "/") for q in ro) and path not in rw and not work.startswith(path + "/"):
                if os.path.isdir(path):
                    args += ["--tmpfs", path, "--remount-ro", path]
                elif os.path.exists(path):
                    args += ["--ro-bind", "/dev/null", path]
        args += ["--chdir", work, "--"]
        if self.dedicated:
            args += [
                "setpriv",
                f"--reuid={self.uid}",
                f"--regid={self.gid}",
                "--clear-groups",
                "--inh-caps=-all",
                "--bounding-set=-all",
                "--no-new-privs",
                "--",
            ]
        return args

    def wrap(self, workdir: Path, argv: list[str], writable: tuple = (), label: str = "") -> Launch:
        """Any command, sandboxed and limited as a kernel would be (with a cgroup if `label`)."""
        fds: list[int] = []
        cgroup = self.new_cgroup(label) if label else None
        try:
            wrap = self.bwrap_args(workdir, writable, fds) if self.isolate else []
        except BaseException:
            for fd in fds:
                os.close(fd)
            if cgroup is not None:
                cgroup.remove()
            raise
        prefix = cgroup.attach_prefix() if cgroup is not None else []
        return Launch(prefix + self.limits_prefix() + wrap + list(argv), tuple(fds), cgroup)

    def launch(self, workdir: Path, connection_file: Path, writable: tuple = (), label: str = "k0") -> Launch:
        """The kernel's command line (close its fds once started, remove its cgroup once it is dead)."""
        return self.wrap(workdir, [self.python, *KERNEL_ARGS, "-f", str(connection_file)], writable, label)

    def env(self, workdir: Path, observe_dir: Path) -> dict[str, str]:
        """A small, explicit environment: nothing of the grader's leaks into the kernel."""
        bindir = os.path.dirname(self.python)
        env = {
            "PATH": f"{bindir}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(workdir),
            "USER": STUDENT if self.isolate else os.environ.get("USER", ""),
            "TMPDIR": "/tmp" if self.isolate else str(workdir / "tmp"),
            "IPYTHONDIR": str(workdir / ".ipython"),
            "JUPYTER_RUNTIME_DIR": str(workdir / ".runtime"),
            "JUPYTER_CONFIG_DIR": str(workdir / ".jupyter"),
            "MPLCONFIGDIR": str(workdir / ".matplotlib"),
            "XDG_CACHE_HOME": str(workdir / ".cache"),
            "PYTHONNOUSERSITE": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
            "NBGRADER_EXECUTION": "autograde",
            "NAMEDAXES_OBSERVE_DIR": str(observe_dir),
            "LANG": "C.UTF-8",
            # the shared XLA cache is read-only for student kernels: failed writes are expected
            "PYTHONWARNINGS": "ignore:Error writing persistent compilation cache entry",
        }
        for key, value in os.environ.items():
            if key.startswith(self.passthrough_env) and key not in env:
                env[key] = value
        return env

    # ------------------------------------------------------------ what is in force
    def protections(self) -> list[Protection]:
        """Each protection of this sandbox: in force, or missing and why (for the summary and report)."""
        mib = lambda n: f"{n / 2**20:g} MiB"  # noqa: E731
        w = self.why
        iso = self.isolate
        out = [
            Protection(
                "allow_list_view",
                "allow-list view of the file system",
                iso,
                "bubblewrap: only the Python environment and course package (read-only), a generated "
                "/etc, its own working copy, private /tmp and /dev/shm"
                if iso
                else w.get("allow_list_view", "no sandbox") + "; the kernel sees every file the grader's user can read",
            ),
            Protection(
                "dedicated_uid",
                "kernel runs as its own unprivileged user",
                iso and self.dedicated,
                f"host uid {self.uid}, gid {self.gid}, no groups, no capabilities, no_new_privs"
                if iso and self.dedicated
                else w.get("dedicated_uid", "no sandbox")
                + (
                    f"; kernels run as the grader's user (uid {os.geteuid()}) mapped to uid "
                    f"{USERNS_UID} in a user namespace, so only the allow-list view protects its files"
                    if iso and self.userns
                    else "; kernels run with the grader's user and its permissions"
                ),
            ),
            Protection(
                "network_off",
                "no network",
                iso,
                "own network namespace (loopback only)" if iso else "the kernel can reach the network",
            ),
            Protection(
                "private_tmp",
                "private, size-limited /tmp and /dev/shm",
                iso,
                f"tmpfs /tmp {mib(self.tmp_bytes)}, /dev/shm {mib(self.shm_bytes)}"
                if iso
                else "the kernel uses the host's /tmp and /dev/shm",
            ),
        ]
        cg = self.cgroups
        mem = cg is not None and cg.memory is not None
        out.append(
            Protection(
                "memory_cgroup",
                "memory limit counting shared memory and tmpfs",
                mem,
                f"{mib(self.memory_bytes)} per kernel, {cg.describe('memory')}"
                if mem
                else w.get("memory_cgroup", "cgroups were not set up")
                + f"; fallback: RLIMIT_DATA {mib(self.memory_bytes)}, which does not count shared mappings or "
                f"files in /tmp, /dev/shm and the working copy",
            )
        )
        pids = cg is not None and cg.pids is not None
        if pids:
            detail = f"pids.max {self.pids_max} per kernel (processes and threads), {cg.describe('pids')}"
        elif self.owner is not None:
            detail = (
                w.get("pids_cgroup", "cgroups were not set up") + f"; fallback: RLIMIT_NPROC "
                f"{self.pids_max} for uid {self.uid}, shared by all kernels running at once"
            )
        else:
            detail = (
                w.get("pids_cgroup", "cgroups were not set up") + "; no process limit (RLIMIT_NPROC "
                "would count the grader's own user)"
            )
        out.append(Protection("process_limit", "limit on processes and threads", pids, detail))
        out.append(
            Protection(
                "disk_quota",
                "disk and file-count quota per working copy",
                self.quota,
                f"own tmpfs per working copy: {mib(self.disk_bytes)}, {self.max_files} files"
                if self.quota
                else w.get("disk_quota", "not set up") + f"; fallback: RLIMIT_FSIZE {mib(self.file_bytes)} per file, "
                f"working copies share the host disk",
            )
        )
        out.append(Protection("cpu_time", "CPU-time limit", True, f"RLIMIT_CPU {self.cpu_seconds} s per kernel"))
        bpf, why_not = kernel_filter()
        seccomp_on = iso and bpf is not None and "--seccomp" in _bwrap_options()
        allow_list = seccomp_on and not why_not
        how = []
        if allow_list:
            how.append("the seccomp allow-list refuses unshare, setns, clone with namespace flags and clone3")
        elif seccomp_on:
            how.append("a seccomp filter refuses unshare/clone with CLONE_NEWUSER and clone3")
        if iso and self.userns and not self.dedicated and "--disable-userns" in _bwrap_options():
            how.append("bwrap --disable-userns")
        out.append(
            Protection(
                "no_new_namespaces",
                "kernel cannot create user namespaces",
                bool(how),
                "; ".join(how)
                if how
                else "not enforced: the kernel may create user namespaces where the host allows unprivileged ones "
                "(more kernel attack surface; it still sees only its view)",
            )
        )
        if allow_list:
            detail = (
                f"seccomp allow-list at least as strict as Docker's default profile (libseccomp "
                f"{seccomp.libseccomp_version()}): keyrings, io_uring, bpf, perf events, userfaultfd, ptrace, "
                f"mount, namespaces, kexec, modules and the rest fail with EPERM; foreign ABIs with ENOSYS"
            )
        elif not iso:
            detail = "no sandbox, so no seccomp filter: the kernel may make every system call"
        elif "--seccomp" not in _bwrap_options():
            detail = "this bubblewrap has no --seccomp option: the kernel may make every system call"
        else:
            detail = (
                why_not + "; the kernel may use keyrings (shared by every kernel of the same uid, across "
                "runs), io_uring, bpf and the rest of Docker's refused calls"
            )
        out.append(
            Protection(
                "syscall_filter",
                "system calls limited (keyrings, io_uring, bpf, ptrace, mount, ...)",
                allow_list,
                detail,
            )
        )
        return out
