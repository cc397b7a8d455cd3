"""Benchmark: how long one visible check takes, over every exercise (target: <= 2 s on 2 cores).

Runs the exercise test matrices' `accepts_equivalent` / `rejects_wrong` tests (each calls one visible
check on one RIGHT, EQUIVALENT or WRONG answer) under pytest with `--durations=0` and reports, per
test module and overall, how many checks ran and the median, 95th percentile and maximum of their
call times, then every check over the target. A benchmark reports; it fails nothing (no timed tests).

    python -m tools.bench_checks [--target 2.0] [-k EXTRA] [tests/namedaxes/exercises/test_scaled_sum.py ...]
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SELECT = "(accepts or rejects) and not observ"  # the visible checks; observe tests are the grader's
_LINE = re.compile(r"^\s*([\d.]+)s call\s+(\S+?)::(.+?)\s*$")


def run(paths: list[str], extra: str | None) -> list[tuple[str, str, float]]:
    select = f"({SELECT})" + (f" and ({extra})" if extra else "")
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "--durations=0",
        "--durations-min=0",
        "-k",
        select,
        *paths,
    ]
    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True).stdout
    found = []
    for line in out.splitlines():
        m = _LINE.match(line)
        if m:
            found.append((m.group(2), m.group(3), float(m.group(1))))
    if not found:
        print(out[-3000:])
    return found


def _summary(times: list[float]) -> str:
    times = sorted(times)
    p95 = times[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))]
    return f"{len(times):4d} checks  median {statistics.median(times):5.2f} s  p95 {p95:5.2f} s  max {times[-1]:5.2f} s"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "paths",
        nargs="*",
        help="test modules (default: every tests/namedaxes/exercises/test_*.py but test_one_judge.py)",
    )
    ap.add_argument("--target", type=float, default=2.0, help="seconds one check may take")
    ap.add_argument("-k", dest="extra", help="a further pytest -k expression")
    args = ap.parse_args(argv)
    paths = args.paths or sorted(
        str(p.relative_to(REPO))
        for p in (REPO / "tests" / "namedaxes" / "exercises").glob("test_*.py")
        if p.name != "test_one_judge.py"
    )
    found = run(paths, args.extra)
    if not found:
        print("no checks ran")
        return 1
    by_module: dict[str, list[float]] = {}
    for module, _, seconds in found:
        by_module.setdefault(module, []).append(seconds)
    for module, times in sorted(by_module.items()):
        print(f"{Path(module).stem:40s} {_summary(times)}")
    print(f"{'all exercises':40s} {_summary([t for *_, t in found])}")
    slow = sorted(((t, f"{Path(m).stem}::{n}") for m, n, t in found if t > args.target), reverse=True)
    print(f"over the {args.target:g} s target: {len(slow)}")
    for seconds, name in slow:
        print(f"  {seconds:6.2f} s  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
