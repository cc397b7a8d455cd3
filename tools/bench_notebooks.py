"""Time Run-All of every notebook, with a student's compilation cache cold and warm, and the whole nbval suite.

    python -m tools.bench_notebooks [--skip-suite] [--skip-cache]

Per notebook: a fresh kernel executes the solved source notebook top to bottom
(what a student's Run-All costs, kernel start included), then the student
release (exercises unanswered, errors allowed). The floor for comparison is a
notebook that only imports jax. Then every solved notebook twice with a student's own
compilation cache (one folder for the kernels run one after another, as `make lab` and the hub give a
student theirs: `tools.compile_cache.private`): cold (empty) and warm (the same cache, the second Run-All).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook

from tools import compile_cache

ROOT = Path(__file__).resolve().parents[1]
BUDGET_S = 15.0
# the capstone trains a transformer three ways and compiles it for five layouts: its issue (38) allows 30 s
BUDGETS_S = {"10_training_at_scale": 30.0, "11_step_anatomy": 30.0}  # 11 (issue 50): 30 s as well


def _seconds_to_run(nb, cwd: Path, allow_errors: bool = False) -> float:
    start = time.perf_counter()
    NotebookClient(
        nb,
        extra_arguments=["--IPKernelApp.log_level=ERROR"],
        timeout=300,
        kernel_name="python3",
        allow_errors=allow_errors,
        resources={"metadata": {"path": str(cwd)}},
    ).execute()
    return time.perf_counter() - start


def cold_and_warm() -> None:
    """Run-All of every solved notebook with a student's cache: first empty, then as the first run left it."""
    sources = sorted((ROOT / "solutions").glob("*.ipynb"))
    with compile_cache.shared("student-cache-"):  # fresh and empty, as a student's first run finds theirs
        times = {run: [_seconds_to_run(nbformat.read(s, 4), s.parent) for s in sources] for run in ("cold", "warm")}
    print(f"{'notebook':28} {'cold':>8} {'warm':>8}   (a student's own compilation cache)")
    for i, source in enumerate(sources):
        print(f"{source.stem:28} {times['cold'][i]:7.1f}s {times['warm'][i]:7.1f}s")
    cold, warm = sum(times["cold"]), sum(times["warm"])
    print(f"{'all':28} {cold:7.1f}s {warm:7.1f}s   warm is {100 * (1 - warm / cold):.0f} % faster", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--skip-suite", action="store_true", help="only the per-notebook times")
    parser.add_argument("--repeat", type=int, default=1, help="runs per notebook (median is printed)")
    parser.add_argument("--skip-cache", action="store_true", help="no cold and warm runs with a student's cache")
    args = parser.parse_args()

    floor = _seconds_to_run(new_notebook(cells=[new_code_cell("import jax\njax.devices()")]), ROOT)
    print(f"floor (fresh kernel + import jax): {floor:5.1f} s")
    print(f"{'notebook':28} {'solved':>8} {'student':>8}   (budget {BUDGET_S:.0f} s solved, unless named in BUDGETS_S)")
    over = []
    for source in sorted((ROOT / "solutions").glob("*.ipynb")):
        solved = statistics.median(_seconds_to_run(nbformat.read(source, 4), source.parent) for _ in range(args.repeat))
        release = ROOT / "notebooks" / source.name
        student = (
            _seconds_to_run(nbformat.read(release, 4), release.parent, allow_errors=True)
            if release.exists()
            else float("nan")
        )
        flag = "  OVER BUDGET" if solved > BUDGETS_S.get(source.stem, BUDGET_S) else ""
        over += [source.stem] if flag else []
        print(f"{source.stem:28} {solved:7.1f}s {student:7.1f}s{flag}", flush=True)

    if not args.skip_cache:
        cold_and_warm()
    if not args.skip_suite:
        jobs = os.cpu_count() or 2
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-n",
            str(jobs),
            "--dist",
            "loadfile",
            "--nbval",
            "--nbval-current-env",
            "solutions",
            "notebooks",
        ]
        start = time.perf_counter()
        res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        wall = time.perf_counter() - start
        last = (res.stdout.strip().splitlines() or ["?"])[-1]
        print(f"nbval suite (solutions + notebooks, -n {jobs}): {wall:5.1f} s wall  [{last}]")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
