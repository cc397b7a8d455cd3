"""Run every solved notebook on this machine as a student's Run-All would, and record what happened.

    python -m tools.run_notebooks_here [--out FILE] [--edition en|zh] [--cache DIR] [NOTEBOOK ...]

For a machine where Jupyter cannot run (the project's TPU machine admits no sockets, so no kernel): each
notebook's code cells run in order in a fresh Python process of their own (one process at a time, since a
TPU admits one), in one namespace, with matplotlib drawing off screen. The record says, per notebook, whether
every cell ran, the first cell that failed and its error's last line, the device line `setup_devices()`
printed, and the wall time; with its provenance (the machine's accelerator as JAX reports it, JAX's version,
the date, the command). The course's documentation quotes the recorded table (docs/students.md).
With `--cache DIR`, the notebooks share a student's own JAX compilation cache in DIR (`compile_cache.private`):
run twice, the second run shows what a warm cache saves.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tools import compile_cache

REPO = Path(__file__).resolve().parents[1]
LIMIT_S = 600  # one notebook, at most

CELL_RUNNER = r"""
import json, sys, time, traceback
cells = json.load(open(sys.argv[1], encoding="utf-8"))
ns = {"__name__": "__main__"}
for i, source in cells:
    start = time.perf_counter()
    try:
        exec(compile(source, f"<cell {i}>", "exec"), ns)
    except BaseException as err:  # the record says which cell failed and why
        last = traceback.format_exception_only(type(err), err)[-1].strip()
        print(json.dumps({"failed_cell": i, "error": last[:500]}), flush=True)
        sys.exit(3)
    print(json.dumps({"cell": i, "s": round(time.perf_counter() - start, 3)}), flush=True)
"""


def code_cells(path: Path) -> list[tuple[int, str]]:
    notebook = json.loads(path.read_text(encoding="utf-8"))
    return [(i, "".join(c["source"])) for i, c in enumerate(notebook["cells"]) if c["cell_type"] == "code"]


def run_one(path: Path, scratch: Path, cache: Path | None = None) -> dict:
    """One notebook in a fresh process: its result, first failing cell, device line and time."""
    cells = scratch / (path.stem + ".cells.json")
    cells.write_text(json.dumps(code_cells(path)), encoding="utf-8")
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONUNBUFFERED="1")
    env |= compile_cache.private(cache, env) if cache else {}
    start = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, "-c", CELL_RUNNER, str(cells)],
            cwd=path.parent,
            env=env,
            capture_output=True,
            text=True,
            timeout=LIMIT_S,
        )
        out, code = done.stdout, done.returncode
    except subprocess.TimeoutExpired as err:
        out, code = (err.stdout or b"").decode() if isinstance(err.stdout, bytes) else (err.stdout or ""), -1
    seconds = time.perf_counter() - start
    failure = next((json.loads(ln) for ln in out.splitlines() if ln.startswith('{"failed_cell"')), None)
    device_line = next((ln for ln in out.splitlines() if ln.startswith("namedaxes:")), "")
    result = "ok" if code == 0 else ("timeout" if code == -1 else "failed")
    return {"notebook": path.name, "result": result, "seconds": round(seconds, 1), "devices": device_line} | (
        failure or {}
    )


def provenance(argv: list[str]) -> dict:
    probe = (
        "import jax; d = jax.devices()[0]; "
        "print(d.platform, '|', d.device_kind, '|', jax.device_count(), '|', jax.__version__)"
    )
    seen = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300).stdout.strip()
    return {
        "accelerator": seen,
        "python": sys.version.split()[0],
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d"),
        "command": "python -m tools.run_notebooks_here " + " ".join(argv),
    }


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="notebooks to run (default: every solved notebook)")
    parser.add_argument("--edition", default="en", choices=("en", "zh"))
    parser.add_argument("--out", type=Path, help="where the record goes (default: print it)")
    parser.add_argument("--cache", type=Path, help="a compilation cache for the notebooks (a student's own)")
    args = parser.parse_args(argv)
    folder = REPO / "solutions" if args.edition == "en" else REPO / "solutions" / "zh"
    paths = args.notebooks or sorted(folder.glob("[0-9][0-9]_*.ipynb"))
    scratch = Path(os.environ.get("TMPDIR", "/tmp"))
    record = {"provenance": provenance(argv), "notebooks": []}
    for path in paths:
        row = run_one(path.resolve(), scratch, args.cache)
        record["notebooks"].append(row)
        print(json.dumps(row, ensure_ascii=False), flush=True)
    text = json.dumps(record, indent=1, ensure_ascii=False) + "\n"
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
    return 0 if all(r["result"] == "ok" for r in record["notebooks"]) else 1


if __name__ == "__main__":
    sys.exit(main())
