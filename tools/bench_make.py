"""Time the make targets whose times the docs state: `make test-fast`, and the notebook check of `make release`.

    python -m tools.bench_make [--skip-tests]

- `make test-fast`: the unit tests (`pytest -m unit`, as the Makefile runs them, on every core), wall time.
- the check `make roster` (first run) and `make release` make that notebooks/ is what solutions/ generates:
  the full check (`tools.generate_notebooks --check`: nbgrader's generate_assignment of every notebook), and
  the content stamp it leaves (tools/stamp.py), which later runs read instead while nothing changed.

Say what else ran on the machine when quoting a figure: these are wall times.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from courseinfo.course import ROOT


def _timed(cmd: list[str]) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    return time.perf_counter() - start, proc


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skip-tests", action="store_true", help="only the notebook check")
    args = parser.parse_args(argv)
    cores = os.cpu_count() or 2
    print(f"on {cores} cores, load average {os.getloadavg()[0]:.1f} at the start")
    full, proc = _timed([sys.executable, "-m", "tools.generate_notebooks", "--check"])
    print(f"notebook check, full (generate_notebooks --check):  {full:6.1f} s  [rc {proc.returncode}]")
    check = "from tools.stamp import notebooks_stamp; import sys; sys.exit(0 if notebooks_stamp().fresh() else 1)"
    stamped, proc = _timed([sys.executable, "-c", check])
    print(f"notebook check, stamp fresh (tools/stamp.py):       {stamped:6.1f} s  [fresh: {proc.returncode == 0}]")
    if not args.skip_tests:
        wall, proc = _timed([sys.executable, "-m", "pytest", "-q", "-n", str(cores), "-m", "unit", "tests"])
        last = (proc.stdout.strip().splitlines() or ["?"])[-1]
        print(f"make test-fast (pytest -m unit -n {cores}):             {wall:6.1f} s  [{last}]")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
