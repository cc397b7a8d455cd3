"""Benchmark: how long one visible check takes, over every exercise (target: <= 2 s on 2 cores).

Runs the exercise test matrices' `accepts` / `rejects` tests (each calls a visible check on one RIGHT,
EQUIVALENT or WRONG answer) under pytest, with this module as a pytest plugin that times every call of
`Exercise.check` one by one: wall time, CPU time (user + system of the test process's threads, of its
child processes and of notebook 06's long-lived cluster workers, `_tree_cpu`), so a run on a loaded
machine still says what a check costs, and how many XLA compiles it made. It prints one row per graded
check (exercise) of notebooks 01-08: how many answers were checked, the median and maximum wall time,
CPU time and compile count; then the totals, the load average before and after, and every single
check over the target. A benchmark reports; it fails nothing (no timed tests).

    python -m tools.bench_checks [--target 2.0] [-k EXTRA] [--json FILE] [tests/namedaxes/exercises/test_x.py ...]

The first check of a test process also pays for JAX's start-up (backend, first compiles); it is
reported on its own line and left out of the per-check rows.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SELECT = "(accepts or rejects) and not observ"  # the visible checks; observe tests are the grader's
OUT_ENV = "NAMEDAXES_BENCH_CHECKS_OUT"  # set by `main` for the pytest process: where the plugin writes


def _tree_cpu() -> float:
    """CPU seconds (user + system) of this process, of its children that ended, and of those still running
    (notebook 06's checks run a cluster of worker processes that live across checks), from /proc."""
    own = time.process_time()
    ended = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = own + ended.ru_utime + ended.ru_stime
    me, parents, ticks = os.getpid(), {}, {}
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry)] = int(fields[1])
        ticks[int(entry)] = int(fields[11]) + int(fields[12])  # utime, stime
    for pid, tick in ticks.items():
        p, seen = parents.get(pid), 0
        while p and p != me and seen < 64:
            p, seen = parents.get(p), seen + 1
        if p == me and pid != me:
            total += tick / os.sysconf("SC_CLK_TCK")
    return total


def _count_compiles() -> list:
    """A counter of XLA compiles in this process (JAX's `backend_compile_and_load`), [0] when unknown."""
    count = [0]
    try:
        from jax._src import compiler
    except ImportError:
        return count
    original = getattr(compiler, "backend_compile_and_load", None)
    if original is None:
        return count

    def counted(*args, **kwargs):
        count[0] += 1
        return original(*args, **kwargs)

    compiler.backend_compile_and_load = counted
    return count


# ---------------------------------------------------------------- the pytest plugin (`-p tools.bench_checks`)
def pytest_collection_finish(session) -> None:
    """Wrap `Exercise.check` (after conftest.py set up the devices) so each call is timed."""
    path = os.environ.get(OUT_ENV)
    if not path:
        return
    from namedaxes.checking import CheckFailed, Exercise

    original = Exercise.check
    compiles = _count_compiles()
    sink = open(path, "a", encoding="utf-8")  # noqa: SIM115 - kept open for the whole session

    def timed_check(self, *answer):
        t0, c0, n0 = time.perf_counter(), _tree_cpu(), compiles[0]
        verdict = "passed"
        try:
            return original(self, *answer)
        except CheckFailed:
            verdict = "failed"
            raise
        except BaseException:
            verdict = "raised"
            raise
        finally:
            row = {
                "module": self.module.rsplit(".", 1)[-1],
                "name": self.name,
                "attr": self._attr(),
                "wall": time.perf_counter() - t0,
                "cpu": _tree_cpu() - c0,
                "compiles": compiles[0] - n0,
                "verdict": verdict,
                "test": os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" ", 1)[0],
            }
            sink.write(json.dumps(row) + "\n")
            sink.flush()

    Exercise.check = timed_check


# ---------------------------------------------------------------- the benchmark
def _run_pytest(paths: list[str], extra: str | None, out: Path) -> int:
    select = f"({SELECT})" + (f" and ({extra})" if extra else "")
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tools.bench_checks", "-k", select]
    env = dict(os.environ, **{OUT_ENV: str(out)})
    done = subprocess.run([*cmd, *paths], cwd=REPO, env=env, capture_output=True, text=True)
    if done.returncode not in (0, 1):  # 1: some test failed; the times are still real
        print(done.stdout[-3000:], done.stderr[-3000:])
    return done.returncode


def _row(label: str, rows: list[dict]) -> str:
    wall = sorted(r["wall"] for r in rows)
    cpu = sorted(r["cpu"] for r in rows)
    compiles = sorted(r.get("compiles", 0) for r in rows)
    return (
        f"{label:44s} {len(rows):4d}  {statistics.median(wall):6.2f} {wall[-1]:6.2f}"
        f"  {statistics.median(cpu):6.2f} {cpu[-1]:6.2f}  {statistics.median(compiles):5.1f} {compiles[-1]:3d}"
    )


def _print_report(rows: list[dict], target: float, load: tuple, wall_total: float, cpu_total: float) -> None:
    first, rest = rows[:1], rows[1:]
    header = (
        f"{'check (module.attr)':44s} {'n':>4s}  {'wall s: median max':>13s}  {'cpu s: median max':>13s}"
        f"  {'compiles: median max'}"
    )
    print(header)
    groups: dict[str, list[dict]] = {}
    for r in rest:
        groups.setdefault(f"{r['module']}.{r['attr']}", []).append(r)
    for label, group in groups.items():
        print(_row(label, group))
    if rest:
        print(_row("all checks", rest))
    for r in first:
        label = f"{r['module']}.{r['attr']}"
        print(f"first check (pays JAX's start-up): {label} wall {r['wall']:.2f} s cpu {r['cpu']:.2f} s")
    print(f"pytest process: wall {wall_total:.1f} s, cpu (user+sys) {cpu_total:.1f} s")
    print(f"load average before: {load[0]}  after: {load[1]}")
    slow = sorted((r for r in rest if r["wall"] > target), key=lambda r: -r["wall"])
    print(f"over the {target:g} s target (wall): {len(slow)}; by CPU time: {sum(r['cpu'] > target for r in rest)}")
    for r in slow:
        print(f"  {r['wall']:6.2f} s wall {r['cpu']:6.2f} s cpu  {r['module']}.{r['attr']}  {r['test']}")


def _load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "paths",
        nargs="*",
        help="test modules (default: every tests/namedaxes/exercises/test_*.py)",
    )
    ap.add_argument("--target", type=float, default=2.0, help="seconds one check may take")
    ap.add_argument("-k", dest="extra", help="a further pytest -k expression")
    ap.add_argument("--json", type=Path, help="also write every timed check (one JSON object a line) here")
    args = ap.parse_args(argv)
    paths = args.paths or sorted(
        str(p.relative_to(REPO)) for p in (REPO / "tests" / "namedaxes" / "exercises").glob("test_*.py")
    )
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "checks.jsonl"
        out.touch()
        before = _load()
        t0, usage0 = time.perf_counter(), os.times()
        _run_pytest(paths, args.extra, out)
        usage1 = os.times()
        wall = time.perf_counter() - t0
        cpu = (usage1.children_user - usage0.children_user) + (usage1.children_system - usage0.children_system)
        text = out.read_text(encoding="utf-8")
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    if args.json:
        args.json.write_text(text, encoding="utf-8")
    if not rows:
        print("no checks ran")
        return 1
    _print_report(rows, args.target, (before, _load()), wall, cpu)
    return 0


if __name__ == "__main__":
    sys.exit(main())
