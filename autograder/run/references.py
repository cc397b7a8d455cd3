"""Reference observations: what the solution notebook records, run once, cached, and failing closed.

The cache folder of an assignment is named by `reference_key`, a hash of
everything that shapes the results: the source notebook, the `namedaxes`
package, the grader's own code, the JAX/jaxlib/numpy versions, the platform
and device count the kernels will use, and the `XLA_FLAGS` / `JAX_*`
environment. Writing is atomic (a temporary folder renamed into place), so a
half-written reference is never read.

Threat model: a reference that silently went missing or empty would compare
equal to anything (or a deleted folder would hand out full marks), so loading
**fails closed**. `meta.json` lists every file with its SHA-256 and is
authenticated with an HMAC under the grader's cache key; a folder whose meta is
missing is simply not cached yet (the reference runs again), but a folder with
a meta and a missing, changed, extra-empty or unauthenticated file raises
`ReferenceCacheError`, which stops grading with a message that says which
folder to delete. Every test cell must have a non-empty observation.

Two secrets, for two jobs:

- the cache key (`.secret` next to the cache folders, mode 0600, created once)
  only authenticates `meta.json`; it never seeds an input;
- the run secret (`new_run_secret()`: fresh random bytes, made once per grading
  run in memory and never written anywhere) seeds the hidden inputs the scorer
  draws. Student kernels never see it, and the next run draws other inputs, so
  an output learned from one run (feedback, a guess confirmed by a score) is
  worth nothing in the next: a hard-coded constant scores 0.

What is cached is therefore only what does not depend on the hidden inputs: the
reference *programs* (exported by the solution notebook's run) and the
observations of its test cells. Outputs on hidden inputs are computed by the
scorer, per run, and kept in that run's memory only (`programs.Judge`).
"""

from __future__ import annotations

import hashlib
import hmac
import importlib.metadata
import json
import os
import secrets
import shutil
from pathlib import Path

from ..course.discovery import package_dir, repo_root
from ..course.notebooks import SourceNotebook
from ..judge.compare import load_observations
from ..records import GraderError, ReferenceTimes
from ..sandbox.build import KERNEL_PACKAGES, grading_xla_flags

__all__ = [
    "CACHE_FORMAT",
    "References",
    "ReferenceCacheError",
    "reference_key",
    "load_references",
    "save_references",
    "grading_secret",
    "new_run_secret",
    "SECRET_NAME",
    "RUN_SECRET_BYTES",
]

CACHE_FORMAT = "autograder-references-2"
SECRET_NAME = ".secret"
RUN_SECRET_BYTES = 32
_ENV_PREFIXES = ("JAX_", "XLA_", "NAMEDAXES_")
_ENV_NAMES = ("CUDA_VISIBLE_DEVICES", "TPU_VISIBLE_CHIPS")


class ReferenceCacheError(GraderError):
    """A cached reference is missing a file, changed, empty or not authentic: grading stops."""


class References(dict):
    """grade_id -> loaded observation, plus the recorded bytes (`pairs`), this run's `secret`
    (the run secret that seeds the hidden inputs, never the cache key) and what the reference's run
    took on this machine (`times`, run/time_limits.py; None where none was recorded)."""

    def __init__(self, loaded: dict, pairs: dict, secret: bytes, times: ReferenceTimes | None = None):
        super().__init__(loaded)
        self.pairs = pairs
        self.secret = secret
        self.times = times


def _environment() -> list[str]:
    from namedaxes.devices import count_accelerators

    platform, n = count_accelerators()
    names = sorted(k for k in os.environ if k.startswith(_ENV_PREFIXES) or k in _ENV_NAMES)
    names = [k for k in names if k not in ("NAMEDAXES_OBSERVE_DIR",)]
    env = dict(os.environ)
    env["XLA_FLAGS"] = grading_xla_flags(env.get("XLA_FLAGS", ""))  # as grading sets it, in or out of grade()
    names = sorted(set(names) | {"XLA_FLAGS"})
    return [f"accelerators={platform}:{n}"] + [f"{k}={env[k]}" for k in names]


CODE_AND_DATA = (".py", ".json")  # what of a package shapes a result: its code, and its checks' tables


def reference_key(source: SourceNotebook) -> str:
    """Hash of everything that shapes the reference results (see the module docstring)."""
    h = hashlib.sha256(CACHE_FORMAT.encode())
    h.update(source.raw)
    for name in (*KERNEL_PACKAGES, "autograder"):
        pkg = package_dir(name) if name != "autograder" else repo_root() / "autograder"
        if pkg is not None:
            for f in sorted(f for f in pkg.rglob("*") if f.suffix in CODE_AND_DATA):
                h.update(f"{name}/{f.relative_to(pkg)}".encode())
                h.update(f.read_bytes())
    for dist in ("jax", "jaxlib", "numpy", "flatbuffers"):
        try:
            h.update(f"{dist}={importlib.metadata.version(dist)}".encode())
        except importlib.metadata.PackageNotFoundError:
            pass
    for line in _environment():
        h.update(line.encode() + b"\0")
    return h.hexdigest()


def new_run_secret() -> bytes:
    """A fresh secret for one grading run (seeds its hidden inputs; kept in memory only)."""
    return secrets.token_bytes(RUN_SECRET_BYTES)


def grading_secret(cache_root: Path) -> bytes:
    """The cache key (created once, 0600): authenticates cache metadata; it seeds no input."""
    cache_root.mkdir(parents=True, exist_ok=True)
    path = cache_root / SECRET_NAME
    if not os.path.lexists(path):
        # written whole under a private name, then linked into place: a second grading run
        # starting at the same moment reads either no secret or the complete one, never half
        tmp = cache_root / f"{SECRET_NAME}.tmp{os.getpid()}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            with os.fdopen(fd, "w") as fh:
                fh.write(secrets.token_hex(32))
            os.link(tmp, path)
        except FileExistsError:
            pass
        finally:
            os.unlink(tmp)
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd) as fh:
        text = fh.read(200).strip()
    try:
        secret = bytes.fromhex(text)
    except ValueError:
        secret = b""
    if len(secret) < 16:
        raise ReferenceCacheError(
            f"the grader's secret {path} is damaged: delete it and the reference folders next to it, then grade again"
        )
    return secret


def _mac(secret: bytes, info: dict) -> str:
    body = json.dumps({k: v for k, v in info.items() if k != "mac"}, sort_keys=True).encode()
    return hmac.new(secret, body, hashlib.sha256).hexdigest()


def _damaged(folder: Path, why: str) -> ReferenceCacheError:
    return ReferenceCacheError(
        f"the cached reference {folder} is damaged ({why}); grading {folder.name.rsplit('-', 1)[0]} "
        f"stops here. Delete that folder to run the reference solution again."
    )


def load_references(folder: Path, source: SourceNotebook, run_secret: bytes | None = None) -> References | None:
    """The verified references, or None when this folder was never completed (run the reference).

    `run_secret` is this grading run's secret (`new_run_secret()`, one per run, shared by its
    workers); without one, the references get a fresh one of their own, never the cache key.

    Raises `ReferenceCacheError` for a folder that was completed and is not intact any more.
    """
    meta = folder / "meta.json"
    if not folder.is_dir() and not folder.is_symlink():
        return None
    if folder.is_symlink():
        raise _damaged(folder, "it is a link")
    if not meta.is_file():
        if any(folder.iterdir()):
            raise _damaged(folder, "meta.json is missing")
        return None
    key = grading_secret(folder.parent)
    try:
        info = json.loads(meta.read_text())
    except (OSError, ValueError, UnicodeDecodeError) as err:
        raise _damaged(folder, f"meta.json cannot be read: {err}") from None
    if not isinstance(info, dict) or not hmac.compare_digest(str(info.get("mac", "")), _mac(key, info)):
        raise _damaged(folder, "meta.json is not authentic")
    if sorted(info.get("tests", [])) != sorted(source.test_ids()):
        raise _damaged(folder, "it lists other test cells than the source notebook")
    files = info.get("files")
    if not isinstance(files, dict):
        raise _damaged(folder, "meta.json lists no files")
    loaded, pairs = {}, {}
    for gid in source.test_ids():
        got = []
        for suffix in (".npz", ".json"):
            name = gid + suffix
            want = files.get(name)
            path = folder / name
            if want is None:
                if path.exists():
                    raise _damaged(folder, f"{name} is not listed")
                got.append(None)
                continue
            try:
                data = path.read_bytes()
            except OSError:
                raise _damaged(folder, f"{name} is missing") from None
            if hashlib.sha256(data).hexdigest() != want:
                raise _damaged(folder, f"{name} changed")
            got.append(data)
        try:
            obs = load_observations(*got)
        except (ValueError, OSError) as err:
            raise _damaged(folder, f"the observation of {gid} cannot be read: {err}") from None
        if not obs:
            raise _damaged(folder, f"the observation of {gid} is empty")
        loaded[gid], pairs[gid] = obs, (got[0], got[1])
    if run_secret is not None and len(run_secret) < 16:
        raise ValueError("a run secret needs at least 16 bytes")
    secret = run_secret if run_secret is not None else new_run_secret()
    if hmac.compare_digest(secret, key):
        raise ValueError("the run secret must not be the cache key")
    return References(loaded, pairs, secret, ReferenceTimes.from_json(info.get("times")))


def save_references(
    folder: Path, source: SourceNotebook, observations: dict, times: ReferenceTimes | None = None
) -> None:
    """Write the reference run's observations with their hashes, and what its run took (`times`, in the
    authenticated meta.json: the time limits follow it), atomically; empty observations are an error."""
    missing = [gid for gid in source.test_ids() if not any(observations.get(gid) or ())]
    if missing:
        raise ReferenceCacheError(
            f"the reference solution of {source.assignment} recorded nothing for {', '.join(missing)}: not caching it"
        )
    secret = grading_secret(folder.parent)
    tmp = folder.with_name(folder.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    files = {}
    for gid, (npz, js) in observations.items():
        if gid not in source.test_ids():
            continue
        for suffix, data in ((".npz", npz), (".json", js)):
            if data is not None:
                (tmp / f"{gid}{suffix}").write_bytes(data)
                files[f"{gid}{suffix}"] = hashlib.sha256(data).hexdigest()
    info = {
        "assignment": source.assignment,
        "source": source.path.name,
        "tests": source.test_ids(),
        "files": files,
        "format": CACHE_FORMAT,
    }
    if times is not None:
        info["times"] = times.as_json()
    info["mac"] = _mac(secret, info)
    (tmp / "meta.json").write_text(json.dumps(info, indent=1, sort_keys=True))
    if folder.is_symlink():
        folder.unlink()
    else:
        shutil.rmtree(folder, ignore_errors=True)
    os.replace(tmp, folder)
