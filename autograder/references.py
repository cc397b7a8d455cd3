"""Reference observations: what the solution notebook records, run once and cached.

The cache folder of an assignment is named by `reference_key`, a hash of
everything that shapes the results. Writing is atomic (a temporary folder
renamed into place), so a half-written reference is never read.
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import shutil
from pathlib import Path

from .compare import load_observations
from .discovery import package_dir
from .notebooks import SourceNotebook

__all__ = ["CACHE_FORMAT", "reference_key", "load_references", "save_references"]

CACHE_FORMAT = "autograder-references-1"


def reference_key(source: SourceNotebook) -> str:
    """Hash of the source notebook, the namedaxes sources and the versions that shape results."""
    h = hashlib.sha256(CACHE_FORMAT.encode())
    h.update(source.raw)
    pkg = package_dir("namedaxes")
    if pkg is not None:
        for f in sorted(pkg.rglob("*.py")):
            h.update(str(f.relative_to(pkg)).encode())
            h.update(f.read_bytes())
    for dist in ("jax", "jaxlib", "numpy"):
        try:
            h.update(f"{dist}={importlib.metadata.version(dist)}".encode())
        except importlib.metadata.PackageNotFoundError:
            pass
    return h.hexdigest()


def load_references(folder: Path, source: SourceNotebook) -> dict[str, dict] | None:
    meta = folder / "meta.json"
    if not meta.is_file():
        return None
    try:
        info = json.loads(meta.read_text())
        refs = {}
        for gid in source.test_ids():
            npz = folder / f"{gid}.npz"
            js = folder / f"{gid}.json"
            refs[gid] = load_observations(npz.read_bytes() if npz.exists() else None,
                                          js.read_bytes() if js.exists() else None)
        if sorted(info.get("tests", [])) != sorted(source.test_ids()):
            return None
        return refs
    except (OSError, ValueError):
        return None


def save_references(folder: Path, source: SourceNotebook, observations: dict) -> None:
    tmp = folder.with_name(folder.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for gid, (npz, js) in observations.items():
        if npz is not None:
            (tmp / f"{gid}.npz").write_bytes(npz)
        if js is not None:
            (tmp / f"{gid}.json").write_bytes(js)
    (tmp / "meta.json").write_text(json.dumps({"assignment": source.assignment, "source": source.path.name,
                                               "tests": source.test_ids()}, indent=1))
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(tmp, folder)
