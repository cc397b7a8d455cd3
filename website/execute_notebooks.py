"""Execute every solved notebook, both editions, on 8 simulated devices, once per content.

    .venv/bin/python -m website.execute_notebooks [-j JOBS]     (build_site.py calls `execute`)

Design: the pages show what the solved notebook prints *today*, so each solution
(solutions/NN_x.ipynb, solutions/zh/NN_x.ipynb) runs top to bottom in a fresh kernel of the
course's own venv (jax, the namedaxes package), in its own folder like nbval and nbgrader run
it, with `NAMEDAXES_LANG` removed from its environment (a student's kernel has none either: the
notebook's set-up cell says its language, namedaxes/i18n.py, so the Chinese pages show the
Chinese messages because the Chinese notebook asks for them) and
`--xla_force_host_platform_device_count=8` appended to XLA_FLAGS (the notebooks' set-up cell
asks for 8 devices itself). A cell that raises fails the build, naming the notebook and the
cell: the solutions raise nowhere (their deliberate errors are caught and printed by
`show_error`), so an error means the course is broken, and a broken course is not published.

Cache: the executed notebook is stored as build/site-cache/<edition>/<id>.<key>.ipynb, where
`key` hashes everything its outputs depend on: the source notebook, every file of the
namedaxes package (checks, plots, translations), this Python's lock, the Python version and
how this file runs them (`RUN_KEY`: bump it when a change here changes what a notebook
prints). Unchanged inputs are never executed again (a cached `make site` runs no kernel); a
stale entry of the same notebook is deleted when its new execution is stored. Notebooks run JOBS
at a time (default: the CPU count), each in its own worker process, the English edition first, all
of them with one JAX compilation cache (tools/compile_cache.py, unless the caller has one): the
Chinese edition's code is the English code, so its kernels read their compiled programs back
instead of compiling them again.

These executions are also the test suite's run of the solved notebooks
(tests/notebooks/test_solved_notebooks.py: nbval on solutions/ would execute the same notebooks in the same
venv again, and compare nothing, solutions/ keep no outputs). So two builds at once (`make site`
from the website's test and that test, on two pytest workers) never execute a notebook twice:
each entry is made under its own lock (`<id>.lock` next to it), and whoever gets the lock second
finds the entry made.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import nbformat

from tools import compile_cache
from website import settings

DEVICE_FLAG = "--xla_force_host_platform_device_count=8"
CELL_TIMEOUT_S = 300
RUN_KEY = f"nbclient, fresh kernel, no NAMEDAXES_LANG (the set-up cell decides), {DEVICE_FLAG}, v2"


@dataclass(frozen=True)
class Execution:
    """One solved notebook of one edition, executed (or found in the cache)."""

    edition: str
    notebook_id: str
    source: Path
    executed: Path
    cached: bool
    seconds: float


def _lock() -> Path:
    return settings.ROOT / "requirements" / f"py{sys.version_info[0]}{sys.version_info[1]}.txt"


def dependencies_digest() -> str:
    """The hash of what every execution depends on besides its own notebook."""
    digest = hashlib.sha256()
    digest.update(sys.version.encode() + RUN_KEY.encode())
    package = settings.ROOT / "namedaxes"
    for path in sorted(p for p in package.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes())
    lock = _lock()
    digest.update(lock.read_bytes() if lock.exists() else b"(no lock)")
    return digest.hexdigest()


def cache_path(edition: str, notebook_id: str, source: Path, deps: str) -> Path:
    key = hashlib.sha256(source.read_bytes() + deps.encode()).hexdigest()[:20]
    return settings.CACHE / edition / f"{notebook_id}.{key}.ipynb"


def _run(edition: str, source: Path, target: Path) -> float:
    """Execute `source` in a fresh kernel (in this worker process); write it to `target`."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    os.environ.pop("NAMEDAXES_LANG", None)  # the notebook's set-up cell says its language
    flags = os.environ.get("XLA_FLAGS", "")
    if DEVICE_FLAG not in flags.split():
        os.environ["XLA_FLAGS"] = f"{flags} {DEVICE_FLAG}".strip()
    nb = nbformat.read(source, as_version=4)
    started = time.monotonic()
    client = NotebookClient(
        nb,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        allow_errors=False,
        extra_arguments=["--IPKernelApp.log_level=ERROR"],
        resources={"metadata": {"path": str(source.parent)}},
    )
    try:
        client.execute()
    except CellExecutionError as err:
        shown = source.relative_to(settings.ROOT) if source.is_relative_to(settings.ROOT) else source
        raise RuntimeError(
            f"{shown} raised while it was executed for the site (a solved notebook must run without an error):\n{err}"
        ) from None
    took = time.monotonic() - started
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    nbformat.write(nb, partial)
    partial.replace(target)
    for stale in target.parent.glob(f"{target.name.split('.')[0]}.*.ipynb"):
        if stale != target:
            stale.unlink()
    return took


def _run_once(edition: str, source: Path, target: Path) -> float | None:
    """`_run`, unless another build made `target` while this one waited for its lock (then None)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f"{target.name.split('.')[0]}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.exists():
            return None
        return _run(edition, source, target)


def execute(jobs: int | None = None, log=print) -> list[Execution]:
    """Every solved notebook of every edition, executed or taken from the cache (see the docstring)."""
    deps = dependencies_digest()
    wanted = []
    for notebook_id in settings.notebook_ids():
        for edition in settings.EDITIONS:
            source = settings.folder(settings.SOLUTIONS, edition) / f"{notebook_id}.ipynb"
            if not source.exists():
                raise SystemExit(
                    f"{source.relative_to(settings.ROOT)} is missing: `make notebooks` writes the "
                    f"Chinese editions of solutions/"
                )
            wanted.append((edition, notebook_id, source, cache_path(edition, notebook_id, source, deps)))
    # English first: the other editions' code is the same (tools/generate_notebooks.py checks it), so each
    # of them reads its programs back from the compile cache the English run filled (tools/compile_cache.py)
    todo = sorted((w for w in wanted if not w[3].exists()), key=lambda w: w[0] != "en")
    results = {(w[0], w[1]): Execution(w[0], w[1], w[2], w[3], True, 0.0) for w in wanted if w[3].exists()}
    if todo:
        jobs = max(1, min(jobs or os.cpu_count() or 1, len(todo)))
        log(
            f"Executing {len(todo)} solved notebooks on 8 simulated devices ({jobs} at a time; "
            f"{len(wanted) - len(todo)} found in {settings.CACHE.relative_to(settings.ROOT)}/)..."
        )
        with compile_cache.shared("namedaxes-site-jax-cache-"), ProcessPoolExecutor(max_workers=jobs) as pool:
            futures = {
                (edition, nid): (pool.submit(_run_once, edition, source, target), source, target)
                for edition, nid, source, target in todo
            }
            for (edition, nid), (future, source, target) in futures.items():
                took = future.result()
                log(f"  {edition} {nid}: " + ("made by another build meanwhile" if took is None else f"{took:.1f} s"))
                results[(edition, nid)] = Execution(edition, nid, source, target, took is None, took or 0.0)
    return [results[(w[0], w[1])] for w in wanted]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-j", "--jobs", type=int, default=None)
    args = parser.parse_args(argv)
    done = execute(args.jobs)
    print(f"{len(done)} executed notebooks, {sum(e.cached for e in done)} from the cache")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
