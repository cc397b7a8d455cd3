"""Set up the sandbox for one grading run: what student kernels may see, and with which limits."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

from ..course.discovery import package_dir, repo_root
from ..records import Batch
from .cgroups import sweep_stale
from .launch import Sandbox

__all__ = ["build_sandbox", "mpl_cache", "compile_bytecode", "warn", "GRADING_XLA_FLAGS", "grading_xla_flags"]


# One XLA CPU thread per computation while grading: the pool already runs one kernel (and one
# scorer) per core, and XLA's own thread pools on top of that oversubscribe the cores. Measured
# with `make bench-grade` (8 students x 4 notebooks, -j 2 on 2 cores): 89.6 -> 68.9 s with a cold
# reference cache, 75.3 -> 58.1 s warm. Kernels, the reference run and the scorers all inherit it
# (the reference cache key counts XLA_FLAGS as grading will set it). The kernels also compile as the scorer
# compiles (`namedaxes.judging.COMPILER_OPTIONS`): XLA's backend optimization level 0, none of LLVM's
# expensive passes. The programs a notebook compiles are small, so their compile time is almost all the
# cost, and running them slower costs nothing measurable (issue 46: about 8 % of a notebook's grading).
GRADING_XLA_FLAGS = (
    "--xla_cpu_multi_thread_eigen=false",
    "intra_op_parallelism_threads=1",
    "--xla_backend_optimization_level=0",
    "--xla_llvm_disable_expensive_passes=true",
)


# The course's packages a student kernel imports: the kernel package and the ground floor it stands on
# (courseinfo: the language list). Each is shown to the kernel read-only, nothing else of the checkout.
KERNEL_PACKAGES = ("courseinfo", "namedaxes")


def grading_xla_flags(current: str) -> str:
    flags = current.split()
    named = {f.split("=", 1)[0] for f in flags}
    return " ".join(flags + [f for f in GRADING_XLA_FLAGS if f.split("=", 1)[0] not in named])


def warn(msg: str) -> None:
    bar = "!" * 78
    sys.stderr.write(f"\n{bar}\n{msg}\n{bar}\n\n")
    sys.stderr.flush()


def build_sandbox(batch: Batch) -> tuple[Sandbox, str]:
    """The Sandbox for this run, and why isolation is unavailable ('' if it works).

    The view is an allow-list (see view.py): the kernel is shown the Python
    environment, the course helper package and the XLA cache folder, read-only,
    plus its own working copy; the course, the grades, the reference cache, the
    other working copies and everything else of the host stay out of it. Each
    protection is probed here; missing ones are printed loudly now and listed
    in the summary and results.json by the caller (`sandbox.protections()`).
    """
    opts = batch.opts
    exposed = [sys.prefix, sys.base_prefix]  # the Python the kernel runs, and the course's kernel packages
    for name in KERNEL_PACKAGES:
        pkg = package_dir(name)
        if pkg is not None:
            exposed.append(str(pkg))
            compile_bytecode(pkg)  # kernels import it read-only: without this, each compiles it again
    compile_bytecode(Path(__file__).resolve().parents[1])  # the scorers' own modules (autograder)
    exposed.append(str(batch.xla_root))  # read-only, search-only (xla_cache.py)
    # Nothing else is bound; these stay hidden even if an exposed folder happens to contain them.
    hidden = [str(batch.course), str(batch.out), str(batch.cache), str(batch.work_root), str(repo_root() / "solutions")]
    if opts.submissions is not None:
        hidden.append(str(opts.submissions if opts.submissions.is_dir() else opts.submissions.parent))
    cpu = opts.cpu_seconds or int(max(600, 30 * opts.timeout))
    sandbox = Sandbox(
        isolate=opts.isolate,
        python=sys.executable,
        hidden=hidden,
        exposed=exposed,
        cpu_seconds=cpu,
        memory_bytes=opts.memory_mb * 2**20,
    )
    sandbox.setup(batch.work_root)
    if sandbox.cgroups is not None:
        sweep_stale(sandbox.cgroups)  # groups left by a grader that was killed
    missing = [p for p in sandbox.protections() if not p.available]
    if opts.isolate and sandbox.isolate and missing:
        warn(
            "warning: some protections are not available on this machine; student kernels run without:\n"
            + "\n".join(f"  - {p.title}: {p.detail}" for p in missing)
        )
    why = "" if sandbox.isolate or not opts.isolate else sandbox.why.get("allow_list_view", "")
    return sandbox, why


def compile_bytecode(folder: Path) -> None:
    """Write the bytecode of a package the grader trusts (namedaxes, autograder) beside its source, once.

    Student kernels see the package read-only and run with PYTHONDONTWRITEBYTECODE, as do the
    scorers; in a fresh clone nobody else has written it, so every kernel compiled the whole
    course package from source (about 0.1 s of CPU per kernel on 2 cores). Only the grader writes
    it, before any kernel starts; a folder it cannot write (a read-only install) is left alone."""
    import compileall

    try:
        compileall.compile_dir(str(folder), quiet=2, workers=1)
    except OSError:
        pass


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
        subprocess.run(
            [sys.executable, "-c", "import matplotlib.font_manager"],
            env=env,
            timeout=120,
            capture_output=True,
            check=True,
        )
        (tmp / ".complete").write_text("")
        shutil.rmtree(target, ignore_errors=True)
        os.replace(tmp, target)
    except Exception:  # noqa: BLE001 - kernels then build their own font cache
        shutil.rmtree(tmp, ignore_errors=True)
        return None
    return target
