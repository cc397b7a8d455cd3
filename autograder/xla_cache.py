"""The XLA compilation cache that the reference run fills and student kernels reuse.

Only the trusted reference kernel writes it. Published, it is read-only and
not listable: a kernel can open an entry only if it already knows its name (a
hash of the compiled program), i.e. reuse a compilation of exactly the program
it is compiling, and cannot read the compiled solution otherwise.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

__all__ = ["xla_prelude", "publish_xla_cache", "remove_protected", "REFERENCE_ENV"]

# The reference kernel's environment while it fills the cache.
REFERENCE_ENV = {
    # keep the folder's path out of the cache keys (it is renamed after the run)
    "JAX_PERSISTENT_CACHE_ENABLE_XLA_CACHES": "none",
    "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
    "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
}


def xla_prelude(folder: str) -> str:
    """Trusted code run before the first cell: reuse the reference run's compiled programs."""
    if not folder:
        return ""
    return (f"import jax as _j\n_j.config.update('jax_persistent_cache_enable_xla_caches', 'none')\n"
            f"_j.config.update('jax_compilation_cache_dir', {folder!r})\ndel _j\n")


def remove_protected(folder: Path) -> None:
    """rmtree for a published XLA cache folder (which we made unreadable)."""
    if not folder.exists():
        return
    try:
        os.chmod(folder, 0o700)
    except OSError:
        pass
    shutil.rmtree(folder, ignore_errors=True)


def publish_xla_cache(tmp: Path, final: Path) -> None:
    """Make the reference run's XLA cache searchable but not listable, read-only, and put it in place.

    Inside the sandbox the kernel's user owns these files (its user namespace maps
    it to us), so the owner bits are the ones that count: a folder with only the
    search bit lets it open an entry whose name it already knows, nothing more.
    """
    (tmp / ".complete").write_text("")
    for entry in tmp.iterdir():
        os.chmod(entry, 0o400)
    os.chmod(tmp, 0o100)
    assignment = final.name.rsplit("-", 1)[0]
    for old in final.parent.glob(f"{assignment}-*"):   # caches of older versions of this assignment
        if old.name.rsplit("-", 1)[0] == assignment and not old.name.endswith(".tmp"):
            remove_protected(old)
    os.replace(tmp, final)
