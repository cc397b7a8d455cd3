"""How a student's kernel is launched: an allow-list sandbox, a dedicated user, and limits that count everything.

Threat model: the code in a submission is hostile and runs on the instructor's
machine, often as root. It may try to read secrets (`/etc/shadow`, other copies
of the course with `solutions/` and hidden tests, the gradebook, other
students' work), to write outside its working copy, to reach the network, or
to exhaust memory, processes, disk or CPU so that classmates lose points.

`Sandbox` holds everything needed to launch one kernel and `Launch` is one ready command line; the
parts, one module each: the view (bubblewrap, an *allow-list*, nothing of the host unless named:
view.py), the identity (a dedicated uid when the grader is root, else a user namespace:
identity.py), the system-call filter (seccomp.py), and the limits (rlimits.py, with cgroups.py and
workcopy.py). `setup()` finds out what works here (probing.py) and `protections()` lists each
protection as available or missing with the reason, for the grader's summary and report (protections.py).
"""

from __future__ import annotations

import os
import shutil
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
    KERNEL_SHM_FILES,
    KERNEL_TMP_BYTES,
    KERNEL_TMP_FILES,
    WORKCOPY_BYTES,
    WORKCOPY_FILES,
)
from . import mounts, workcopy
from .cgroups import CgroupSupport, KernelCgroup, LimitHit
from .identity import DEDICATED_UID, STUDENT
from .probing import find_out
from .protections import Protection, in_force
from .rlimits import before_exec, kernel_rlimits, prlimit_prefix
from .view import View, bwrap_args, real_path

__all__ = ["Sandbox", "Launch", "KERNEL_ARGS", "KERNEL_APP_ARGS", "ZYGOTE_MODULES", "WORK_SUBDIRS"]

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
KERNEL_APP_ARGS = [  # IPKernelApp's own (a zygote's child starts the app with these, without -m)
    "--HistoryManager.enabled=False",
    "--IPKernelApp.quiet=True",
    "--IPKernelApp.exec_lines=" + repr([f"exec({_WARM_CODE!r})"]),
]
KERNEL_ARGS = ["-m", "ipykernel_launcher", *KERNEL_APP_ARGS]
# What a zygote imports before it forks (run/zygote.py): the kernel's warm modules, the kernel itself, and
# what every notebook imports later (measured on 01-04: the exercise modules and the judge in the visible
# checks, and scipy.linalg, about 0.16 s, which JAX loads for LAPACK when it lowers an exported program).
# None may start a JAX backend at import (the notebook's set-up cell decides the device count): the
# exercise modules collectives, multi_process and shard_map make JAX arrays at import, so they are not
# here, and a zygote whose imports started a backend refuses to fork (zygote_main.py).
ZYGOTE_MODULES = (
    *WARM_MODULES,
    "ipykernel.kernelapp",
    "ipykernel.ipkernel",
    "ipykernel.zmqshell",
    "namedaxes.judging",
    "namedaxes.exercises",
    "namedaxes.exercises.axis_names",
    "namedaxes.exercises.scaled_sum",
    "namedaxes.exercises.nested_axes",
    "namedaxes.exercises.gradient_averaging",
    "namedaxes.exercises.compiler_sharding",
    "namedaxes.exercises.large_models",
    "namedaxes.exercises.training_at_scale",
    "namedaxes.exercises.step_anatomy",
    "jax.experimental.multihost_utils",
    "jaxlib.mlir.dialects.mhlo",
    "scipy.linalg.cython_blas",
    "scipy.linalg.cython_lapack",
)

WORK_SUBDIRS = ("observe", "tmp", ".ipython", ".runtime", ".jupyter", ".matplotlib", ".cache")
RUN_MARKER = ".agr-run"  # in the run's folder of working copies while the run lasts


def _default_pids() -> int:
    return 256 + 8 * (os.cpu_count() or 1)  # XLA's thread pools grow with the core count


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
    tmp_files: int = KERNEL_TMP_FILES  # inodes of a slot's /tmp (run/zygote.py)
    shm_files: int = KERNEL_SHM_FILES  # inodes of a slot's /dev/shm
    uid: int = DEDICATED_UID  # the dedicated host user when the grader is root
    gid: int = DEDICATED_UID
    passthrough_env: tuple[str, ...] = ("JAX_", "XLA_", "TF_CPP_", "LANG", "LC_ALL", "TZ")
    # ... except JAX's compilation-cache settings: the grader alone decides a kernel's cache (xla_cache.py's
    # preludes); a folder of the host named here would not be in the view, and a lower threshold would have
    # kernels try to write every compile into the read-only cache
    blocked_env: tuple[str, ...] = ("JAX_COMPILATION_CACHE_", "JAX_PERSISTENT_CACHE_", "JAX_ENABLE_COMPILATION_CACHE")
    use_prlimit: bool = field(default_factory=lambda: shutil.which("prlimit") is not None)
    # found out by setup(); the defaults launch without cgroups or quota
    dedicated: bool = False  # kernels run as `uid` (needs root, setpriv, privileged bwrap)
    cgroups: CgroupSupport | None = None
    quota: bool = False
    why: dict[str, str] = field(default_factory=dict)  # protection key -> why it is missing
    work_base: str = ""  # this run's folder of working copies (set by setup)

    # ------------------------------------------------------------ set-up for a run
    def setup(self, work_base: Path | str | None = None) -> Sandbox:
        """Find out which protections work on this machine (probing each once: probing.py); returns self.

        `work_base`: the folder of this run's working copies. It gets a marker file; once the run
        removes the folder, a late worker that recreates it cannot mount a working copy there.
        """
        base = Path(work_base or tempfile.gettempdir())
        if work_base is not None:
            base.mkdir(parents=True, exist_ok=True)
            (base / RUN_MARKER).write_text("")
            self.work_base = str(base)
        found = find_out(self, base)
        self.isolate, self.userns, self.dedicated = found.isolate, found.userns, found.dedicated
        self.cgroups, self.quota, self.why = found.cgroups, found.quota, found.why
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

    # ------------------------------------------------------------ limits
    def _rlimits(self):
        nproc = self.owner is not None and (self.cgroups is None or self.cgroups.pids is None)
        return kernel_rlimits(
            self.cpu_seconds, self.memory_bytes, self.file_bytes, self.open_files, self.pids_max if nproc else None
        )

    def limits_prefix(self) -> list[str]:
        return prlimit_prefix(self._rlimits()) if self.use_prlimit else []

    def preexec(self):
        """Fallback when `prlimit` is missing: set the limits in the child before exec."""
        return None if self.use_prlimit else before_exec(self._rlimits())

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
            and real_path(workdir).startswith(real_path(self.work_base) + "/")
            and not os.path.exists(os.path.join(self.work_base, RUN_MARKER))
        ):
            raise OSError(f"the grading run that owned {self.work_base} is over (its folder was removed)")
        workcopy.make_workcopy(workdir, quota, *self.owner_ids())
        workcopy.make_dirs(workdir, WORK_SUBDIRS, self.owner)

    def hand_over(self, path: Path) -> None:
        """Give a file the grader wrote into the working copy (the connection file) to the kernel's user."""
        workcopy.hand_over(path, self.owner)

    def disk_full(self, workdir: Path) -> LimitHit | None:
        quota = workcopy.Quota(self.disk_bytes, self.max_files) if self.quota else None
        return workcopy.full(workdir, quota)

    # ------------------------------------------------------------ the command line
    def fork_why(self) -> str:
        """'' if kernels may be forked from a zygote per slot (run/zygote.py), else why they start the plain way.

        A slot runs its kernels one after another in one sandbox, so everything a kernel could leave
        behind must be the grader's to clear: its processes (a cgroup per kernel, killed whole), its
        working copy, /tmp and /dev/shm (tmpfs mounts the grader empties, which needs root)."""
        if not self.isolate:
            return "kernels are not sandboxed"
        if not (self.dedicated and self.quota):
            return "the grader is not root (a slot's working copy, /tmp and /dev/shm are tmpfs mounts it empties)"
        if self.cgroups is None or self.cgroups.memory is None or self.cgroups.pids is None:
            return "no memory and pids cgroups (a slot's kernel is killed whole through its cgroup)"
        return ""

    def view(self, scratch: tuple[str, ...] = ()) -> View:
        """What the kernel's bubblewrap view is built from (view.py); `scratch`: a slot's /tmp and /dev/shm."""
        return View(
            self.userns,
            self.dedicated,
            self.uid,
            self.gid,
            self.python,
            tuple(self.exposed),
            tuple(self.hidden),
            self.tmp_bytes,
            self.shm_bytes,
            tuple(scratch),
        )

    def wrap(self, workdir: Path, argv: list[str], label: str = "", scratch: tuple[str, ...] = ()) -> Launch:
        """Any command, sandboxed and limited as a kernel would be (with a cgroup if `label`)."""
        fds: list[int] = []
        cgroup = self.new_cgroup(label) if label else None
        try:
            wrap = bwrap_args(self.view(scratch), workdir, fds) if self.isolate else []
        except BaseException:
            for fd in fds:
                os.close(fd)
            if cgroup is not None:
                cgroup.remove()
            raise
        prefix = cgroup.attach_prefix() if cgroup is not None else []
        return Launch(prefix + self.limits_prefix() + wrap + list(argv), tuple(fds), cgroup)

    def launch(self, workdir: Path, connection_file: Path, label: str = "k0") -> Launch:
        """The kernel's command line (close its fds once started, remove its cgroup once it is dead)."""
        argv = [self.python, *KERNEL_ARGS, "-f", str(connection_file)]
        return self.wrap(workdir, argv, label, scratch=self.scratch_for(workdir))

    def scratch_for(self, workdir: Path) -> tuple[str, ...]:
        """A plain kernel's /tmp and /dev/shm where the grader can mount them (root): tmpfs mounts beside
        its working copy (`mounts.scratch_of`, removed with it) with a slot's byte and inode caps;
        elsewhere () and bubblewrap makes them, bytes capped, inodes not (the protections report says so)."""
        if not (self.isolate and self.quota):
            return ()
        tmp, shm = mounts.scratch_of(workdir)
        mounts.mount_scratch(tmp, self.tmp_bytes, self.tmp_files)
        mounts.mount_scratch(shm, self.shm_bytes, self.shm_files)
        return str(tmp), str(shm)

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
            if key.startswith(self.passthrough_env) and not key.startswith(self.blocked_env) and key not in env:
                env[key] = value
        return env

    # ------------------------------------------------------------ what is in force
    def protections(self) -> list[Protection]:
        """Each protection of this sandbox: in force, or missing and why (for the summary and report)."""
        return in_force(self)
