"""Set up the sandbox for one grading run: what student kernels may see, and with which limits."""
from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .discovery import package_dir, repo_root
from .records import Options
from .sandbox import Sandbox, probe_bwrap

__all__ = ["build_sandbox", "mpl_cache", "warn"]


def warn(msg: str) -> None:
    bar = "!" * 78
    sys.stderr.write(f"\n{bar}\n{msg}\n{bar}\n\n")
    sys.stderr.flush()


def build_sandbox(opts: Options, course: Path, out: Path, cache: Path, work_root: Path,
                  xla_root: Path) -> tuple[Sandbox, str]:
    """The Sandbox for this run, and why isolation is unavailable ('' if it works)."""
    root = repo_root()
    needed = [sys.prefix, sys.base_prefix]                  # the Python the kernel runs, and namedaxes
    pkg = package_dir("namedaxes")
    if pkg is not None:
        needed.append(str(pkg))
    exposed = needed + [str(xla_root)]                      # read-only (the XLA cache is also unlistable)
    keep = {os.path.realpath(p) for p in needed}
    hidden = [str(course), str(out), str(cache), str(work_root), tempfile.gettempdir()]
    if opts.submissions is not None:
        hidden.append(str(opts.submissions if opts.submissions.is_dir() else opts.submissions.parent))
    for child in root.iterdir():
        real = os.path.realpath(child)
        if child.is_dir() and not any(k == real or k.startswith(real + os.sep) for k in keep) \
                and not child.name.endswith(".egg-info"):
            hidden.append(str(child))
    timeout = opts.timeout
    cpu = opts.cpu_seconds or int(max(600, 30 * timeout))
    sandbox = Sandbox(isolate=opts.isolate, python=sys.executable, hidden=hidden, exposed=exposed,
                      cpu_seconds=cpu, memory_bytes=opts.memory_mb * 2**20)
    why = ""
    if opts.isolate:
        why = probe_bwrap(sandbox) or ""
        if why:                                  # no user namespaces? then bwrap as we are, still isolated
            sandbox.userns = False
            if probe_bwrap(sandbox) is None:
                warn(f"warning: the sandbox cannot switch to an unprivileged user ({why}); kernels run "
                     f"isolated but with this user's privileges, and without the shared XLA cache.")
                why = ""
            else:
                sandbox.isolate = False
    return sandbox, why


def mpl_cache(folder: Path) -> Path | None:
    """A prebuilt matplotlib font cache, copied into each kernel (saves a rebuild per kernel)."""
    if importlib.util.find_spec("matplotlib") is None:
        return None
    try:
        version = importlib.metadata.version("matplotlib")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    target = folder / f"mpl-cache-{version}"
    if (target / ".complete").exists():
        return target
    tmp = folder / f"mpl-cache-{version}.tmp{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    env = dict(os.environ, MPLCONFIGDIR=str(tmp))
    try:
        subprocess.run([sys.executable, "-c", "import matplotlib.font_manager"], env=env, timeout=120,
                       capture_output=True, check=True)
        (tmp / ".complete").write_text("")
        shutil.rmtree(target, ignore_errors=True)
        os.replace(tmp, target)
    except Exception:  # noqa: BLE001 - kernels then build their own font cache
        shutil.rmtree(tmp, ignore_errors=True)
        return None
    return target
