"""How a student's kernel is launched: bubblewrap isolation plus resource limits.

The kernel runs as

    prlimit --cpu --data --fsize --nofile --core -- \\
    bwrap --unshare-user --uid 1000 --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp
          (hidden paths: empty, read-only tmpfs) (needed paths bound back read-only)
          --bind WORK WORK --unshare-net --unshare-pid --unshare-ipc --unshare-uts
          --die-with-parent --new-session -- python -m ipykernel_launcher -f WORK/k0.json

so it runs as an unprivileged user without capabilities, sees a read-only
system, no network (only its own loopback), no `solutions/`, `build/`,
gradebook, output folder or other students' work, and can write only to its
own working copy `WORK` (which also holds the ZeroMQ IPC sockets the grader
talks to it over). The XLA compilation cache filled by the reference run is
bound read-only; its folders are searchable but not listable, so a kernel can
only open an entry whose name (a hash of the compiled program) it already
knows, i.e. reuse a compilation of exactly the program it is compiling. Memory is bounded with RLIMIT_DATA (an
address-space limit, RLIMIT_AS, breaks XLA's large virtual reservations), CPU
time with RLIMIT_CPU, file size with RLIMIT_FSIZE.

Where bubblewrap is missing or cannot create namespaces, `probe()` says why and
the grader warns loudly and runs kernels without isolation (limits still apply).
"""
from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Sandbox", "probe_bwrap", "KERNEL_ARGS"]

# Modules imported while the kernel boots (before it reports ready, so a prestarted kernel
# has paid for them): only imports that do not initialise JAX's backends, so the notebook's
# locked set-up cell still decides the device count. The user namespace stays empty.
WARM_MODULES = ("numpy", "jax", "jax.numpy", "jax.lax", "namedaxes", "namedaxes.checking",
                "namedaxes.grading", "matplotlib.figure", "namedaxes.plots")
_WARM_CODE = ("import importlib as _i\nfor _m in %r:\n    try:\n        _i.import_module(_m)\n"
              "    except Exception:\n        pass\ndel _i, _m" % (WARM_MODULES,))
KERNEL_ARGS = [
    "-m", "ipykernel_launcher",
    "--HistoryManager.enabled=False",
    "--IPKernelApp.quiet=True",
    "--IPKernelApp.exec_lines=" + repr(["exec(%r)" % _WARM_CODE]),
]

SANDBOX_UID = 1000          # the unprivileged user the kernel runs as (in its own user namespace)

# always hidden inside the sandbox (when they exist); /tmp gets its own empty tmpfs
SYSTEM_HIDDEN = ["/root", "/home", "/var/tmp", "/mnt", "/media", "/srv", "/run/user"]


def _real(p: str | Path) -> str:
    return os.path.realpath(str(p))


@dataclass
class Sandbox:
    """Everything needed to launch one kernel: isolation settings and rlimits."""

    isolate: bool = True
    userns: bool = True             # run as an unprivileged user with no capabilities (--unshare-user)
    python: str = sys.executable
    hidden: list[str] = field(default_factory=list)      # folders that must look empty
    exposed: list[str] = field(default_factory=list)     # folders to bind back read-only (venv, packages)
    cpu_seconds: int = 900
    memory_bytes: int = 4 * 2**30
    file_bytes: int = 512 * 2**20
    open_files: int = 1024
    passthrough_env: tuple[str, ...] = ("JAX_", "XLA_", "TF_CPP_", "LANG", "LC_ALL", "TZ")
    use_prlimit: bool = field(default_factory=lambda: shutil.which("prlimit") is not None)

    def limits_prefix(self) -> list[str]:
        if not self.use_prlimit:
            return []
        return ["prlimit", f"--cpu={self.cpu_seconds}:{self.cpu_seconds}",
                f"--data={self.memory_bytes}:{self.memory_bytes}",
                f"--fsize={self.file_bytes}:{self.file_bytes}",
                f"--nofile={self.open_files}:{self.open_files}", "--core=0:0", "--"]

    def preexec(self):
        """Fallback when `prlimit` is missing: set the limits in the child before exec."""
        if self.use_prlimit:
            return None
        limits = [(resource.RLIMIT_CPU, self.cpu_seconds), (resource.RLIMIT_DATA, self.memory_bytes),
                  (resource.RLIMIT_FSIZE, self.file_bytes), (resource.RLIMIT_NOFILE, self.open_files),
                  (resource.RLIMIT_CORE, 0)]

        def apply():
            for which, value in limits:
                resource.setrlimit(which, (value, value))
        return apply

    def bwrap_args(self, workdir: Path, writable: tuple = ()) -> list[str]:
        args = ["bwrap"]
        if self.userns:
            args += ["--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]
        args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        work = _real(workdir)
        hidden = []
        for path in sorted({_real(p) for p in SYSTEM_HIDDEN + self.hidden}):
            if path in ("/", "/tmp", work) or path.startswith("/tmp/"):
                continue                     # /tmp is an empty tmpfs already; WORK is bound below
            if os.path.isdir(path):
                hidden.append(path)
                args += ["--tmpfs", path]
            elif os.path.exists(path):
                args += ["--ro-bind", "/dev/null", path]
        needed = [sys.prefix, sys.base_prefix, os.path.dirname(_real(self.python))]
        for path in sorted({_real(p) for p in self.exposed + needed}):
            if os.path.isdir(path):
                args += ["--ro-bind", path, path]
        for path in hidden:                  # empty *and* read-only (after binding the exposed paths in)
            args += ["--remount-ro", path]
        for path in writable:                # the XLA cache, for the trusted reference run only
            args += ["--bind", _real(path), _real(path)]
        args += ["--bind", work, work]
        # The /tmp tmpfs is private to the sandbox; read-only as well, so "its own working copy" is
        # the only writable place even when the repository or the work folder lives under /tmp.
        args += ["--remount-ro", "/tmp", "--chdir", work,
                 "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                 "--hostname", "autograder", "--die-with-parent", "--new-session", "--"]
        return args

    def command(self, workdir: Path, connection_file: Path, writable: tuple = ()) -> list[str]:
        kernel = [self.python, *KERNEL_ARGS, "-f", str(connection_file)]
        wrap = self.bwrap_args(workdir, writable) if self.isolate else []
        return self.limits_prefix() + wrap + kernel

    def env(self, workdir: Path, observe_dir: Path) -> dict[str, str]:
        """A small, explicit environment: nothing of the grader's leaks into the kernel."""
        bindir = os.path.dirname(self.python)
        env = {
            "PATH": f"{bindir}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(workdir),
            "TMPDIR": str(workdir / "tmp"),
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


def probe_bwrap(sandbox: Sandbox) -> str | None:
    """None if bubblewrap works here with these settings, else why not."""
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    with tempfile.TemporaryDirectory(prefix="agr-probe-") as tmp:
        cmd = sandbox.bwrap_args(Path(tmp)) + [sandbox.python, "-c", "import os; open('ok', 'w').write('1')"]
        try:
            proc = subprocess.run(cmd, capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as err:
            return f"bwrap failed to run: {err}"
        if proc.returncode != 0 or not (Path(tmp) / "ok").exists():
            msg = proc.stderr.decode(errors="replace").strip().splitlines()
            return f"bwrap cannot create the sandbox here: {msg[-1] if msg else f'exit code {proc.returncode}'}"
    return None
