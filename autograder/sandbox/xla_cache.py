"""The XLA compilation cache that a trusted run fills and student kernels reuse.

What is in it: the programs of the release exactly as students get it (answers
as released stubs, test cells without their hidden part; course/notebooks.py
`shared_cache_run`, run by the worker after the reference). Never a program compiled from the
solution's answers or its hidden tests: a kernel sees its cache hits (JAX
reports them as monitoring events, and a hit is faster than a compile), so a
cache of the solution's programs answered "is this exactly the solution?" (8
hits for the solution's text, 0 for an equivalent form). Now both count the same.

Only the trusted kernel writes it. Published, it is read-only and
not listable: a kernel can open an entry only if it already knows its name (a
hash of the compiled program), i.e. reuse a compilation of exactly the program
it is compiling.

Permission bits, for both identities a kernel can have (identity.py):
- a dedicated uid (grader is root): the published folder belongs to root with
  mode 0111 and its entries with 0444 — the kernel is "other", so the search
  bit lets it open an entry by name, the missing read bit stops `listdir`;
- a user namespace mapping the grader's own uid (grader not root): the owner
  bits count, and they are the same 0111 / 0444;
in both cases the folder is bound read-only, so nobody inside can chmod it.
While the reference runs, its `.tmp` folder (mode 0300: write and search, no
listing) is handed to the kernel's user by Kernel.start and taken back here.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ..limits import KEEP_VERSIONS
from . import workcopy

__all__ = [
    "xla_prelude",
    "reference_xla_prelude",
    "keep_reference_cache",
    "publish_xla_cache",
    "protect_published",
    "remove_protected",
    "REFERENCE_CACHE",
]

# The reference kernel's JAX settings while it fills the cache: every program, and the folder's path kept
# out of the cache keys (the entries are copied out and the folder renamed after the run).
REFERENCE_CONFIG = {
    "jax_persistent_cache_enable_xla_caches": "none",
    "jax_persistent_cache_min_compile_time_secs": 0,
    "jax_persistent_cache_min_entry_size_bytes": 0,
}
REFERENCE_CACHE = ".xla-cache"  # where in its own working copy the reference kernel writes the entries


def reference_xla_prelude(folder: str) -> str:
    """Trusted code run in the reference kernel before the first cell: write every compiled program to
    `folder`, inside its own working copy (so a kernel forked in a zygote's slot can run references too)."""
    return _config_prelude({**REFERENCE_CONFIG, "jax_compilation_cache_dir": folder})


def keep_reference_cache(workdir: Path, staging: Path) -> None:
    """Copy the entries the reference kernel wrote (`REFERENCE_CACHE` in its working copy; plain files,
    no link followed) into the run's staging folder, before the working copy is emptied."""
    src = workdir / REFERENCE_CACHE
    if not os.path.isdir(src) or os.path.islink(src):
        return  # nothing was compiled
    workcopy.seed(src, staging, os.geteuid(), os.getegid())


def xla_prelude(folder: str) -> str:
    """Trusted code run before the first cell: reuse the reference run's compiled programs."""
    if not folder:
        return ""
    return _config_prelude({"jax_persistent_cache_enable_xla_caches": "none", "jax_compilation_cache_dir": folder})


def _config_prelude(settings: dict) -> str:
    """Code that sets these JAX options, in this order, before the first cell compiles anything."""
    return f"import jax as _j\nfor _k, _v in {settings!r}.items():\n    _j.config.update(_k, _v)\ndel _j, _k, _v\n"


def remove_protected(folder: Path) -> None:
    """rmtree for a published XLA cache folder (which we made unreadable)."""
    if not os.path.lexists(folder) or os.path.islink(folder):
        return
    try:
        os.chmod(folder, 0o700)
    except OSError:
        pass
    shutil.rmtree(folder, ignore_errors=True)


def protect_published(xla_root: Path) -> None:
    """Give every published cache below `xla_root` the modes above (caches of older versions of the
    grader used owner-only bits, 0100/0400, which a kernel with its own uid cannot use); folders
    without `.complete` are made unlistable and left for the pool to replace."""
    try:
        entries = list(os.scandir(xla_root))
    except OSError:
        return
    for entry in entries:
        if entry.name.endswith(".tmp") or not entry.is_dir(follow_symlinks=False):
            continue
        try:
            if os.path.exists(os.path.join(entry.path, ".complete")):
                _protect(Path(entry.path))
            else:
                os.chmod(entry.path, 0o100)
        except OSError:
            pass


def _protect(folder: Path) -> None:
    me_uid, me_gid = os.geteuid(), os.getegid()
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        for entry in os.scandir(fd):
            if not entry.is_file(follow_symlinks=False):
                continue  # JAX writes plain files only; nothing else is opened
            if me_uid == 0:  # the reference kernel's user wrote them: take them back
                os.chown(entry.name, me_uid, me_gid, dir_fd=fd, follow_symlinks=False)
            os.chmod(entry.name, 0o444, dir_fd=fd)
        if me_uid == 0:
            os.fchown(fd, me_uid, me_gid)
        os.fchmod(fd, 0o111)
    finally:
        os.close(fd)


def publish_xla_cache(tmp: Path, final: Path) -> None:
    """Make the reference run's XLA cache search-only and read-only, owned by us, and put it in place."""
    (tmp / ".complete").write_text("")
    _protect(tmp)
    if os.path.exists(final / ".complete"):
        # another run published this very version meanwhile (or its references were recomputed while
        # the cache survived): same programs, same entries; keep that one and drop ours
        remove_protected(tmp)
    else:
        remove_protected(final)  # an incomplete leftover, if any
        os.replace(tmp, final)
    # Older versions of this assignment: keep the newest few, so that two runs grading different
    # versions at once (another copy of the course, an edited solution) do not delete each other's.
    assignment = final.name.rsplit("-", 1)[0]
    versions = [
        d
        for d in final.parent.glob(f"{assignment}-*")
        if d.name.rsplit("-", 1)[0] == assignment and not d.name.endswith(".tmp") and d != final
    ]
    versions.sort(key=_mtime, reverse=True)
    for old in versions[KEEP_VERSIONS - 1 :]:
        remove_protected(old)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:  # removed meanwhile by another run
        return 0.0
