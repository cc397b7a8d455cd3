"""JAX's persistent compilation cache: one shared by the processes of a test run, and a student's own.

Used where many kernels run the same code: the test run (conftest.py: the workers and every kernel they
start) and the solved notebooks' executions for the website (website/execute_notebooks.py: the Chinese
edition's code is the English code). The cache lives in a fresh temporary folder, named in the
environment that the processes started meanwhile inherit, and is removed afterwards, so nothing is
reused across runs. Compiling from it gives the same executable, so no output changes.

JAX writes an entry in place: a process that reads one half-written warns and compiles the program
itself, which is what it would have done without the cache. That warning is turned off in the
processes given this environment, since a kernel would print it into a notebook's outputs (and the
website's pages). The grader's sandboxed kernels never get any of this (`Sandbox.blocked_env`).

A student's own cache (`private`): the programs a student's notebooks compile are kept between sessions,
so a notebook run again compiles little (about 40 % of a Run-All is XLA compiling 65-105 small programs).
JAX's documentation warns never to share one between users: a cache entry is trusted code. So each student's
is a folder only they can read (mode 0700), outside the course's folders so that the file browser never shows
it and Submit never hands it in: `make lab`'s under the user's cache directory (`for_workspace`: one per
workspace, $XDG_CACHE_HOME/namedaxes-jax/, default ~/.cache), the hub's in the student's home.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Iterator, Mapping

__all__ = ["HALF_WRITTEN", "environment", "shared", "private", "for_workspace", "configure_loaded_jax"]

HALF_WRITTEN = "Error reading persistent compilation cache entry"


def _options(folder: str) -> dict:
    """JAX's options for the cache in `folder`, every program kept (each option's variable is its name in capitals)."""
    return {
        "jax_compilation_cache_dir": folder,
        "jax_persistent_cache_min_compile_time_secs": 0,
        "jax_persistent_cache_min_entry_size_bytes": 0,
    }


def environment(folder: str, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The variables that give a process started with them the cache in `folder`: every program is kept,
    and the half-written-entry warning is off (added to `environ`'s own PYTHONWARNINGS)."""
    env = {name.upper(): str(value) for name, value in _options(folder).items()}
    env["PYTHONWARNINGS"] = ",".join(filter(None, (environ.get("PYTHONWARNINGS"), f"ignore:{HALF_WRITTEN}")))
    return env


def configure_loaded_jax() -> None:
    """The same options in this process, whose JAX read its environment before `shared` named the cache."""
    import jax

    for name, value in _options(os.environ["JAX_COMPILATION_CACHE_DIR"]).items():
        jax.config.update(name, value)


@contextlib.contextmanager
def shared(prefix: str) -> Iterator[None]:
    """A fresh cache for the processes started inside (`environment` in os.environ), removed afterwards with
    os.environ as it was. Nothing changes when os.environ already names a cache: the caller's is shared."""
    if "JAX_COMPILATION_CACHE_DIR" in os.environ:
        yield
        return
    with tempfile.TemporaryDirectory(prefix=prefix) as folder:
        settings = environment(folder)
        saved = {key: os.environ.get(key) for key in settings}
        os.environ.update(settings)
        try:
            yield
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


def private(folder: str | os.PathLike, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The variables that give a student's kernels their own cache in `folder`, made (mode 0700) if missing.
    A folder that exists with more open permissions is closed to the owner (another user's kernels could
    otherwise plant entries in it)."""
    os.makedirs(folder, mode=0o700, exist_ok=True)
    os.chmod(folder, 0o700)
    return environment(os.fspath(folder), environ)


def for_workspace(workspace: str | os.PathLike, environ: Mapping[str, str] = os.environ) -> str:
    """The absolute folder of the cache of the `make lab` workspace `workspace`: under the user's cache
    directory ($XDG_CACHE_HOME, default ~/.cache), named after the workspace and its absolute path (two
    checkouts' work/ never share one). Never relative: a kernel runs in the notebook's folder."""
    where = os.path.abspath(workspace)
    base = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    key = hashlib.sha256(where.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    parent = os.path.join(os.path.abspath(base), "namedaxes-jax")
    os.makedirs(parent, mode=0o700, exist_ok=True)
    return os.path.join(parent, f"{os.path.basename(where)}-{key}")
