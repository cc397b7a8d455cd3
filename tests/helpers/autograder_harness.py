"""Helpers for the autograder tests: build the fixture class, grade it, read the results."""

from __future__ import annotations

import csv
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import autograder_specs as specs
import machine
import tamper_specs

from autograder.course.classroom import grade_command, make_course

specs.SPECS.extend(tamper_specs.SPECS)  # one graded class: the fixtures and the tamper corpus

REPO = specs.REPO
# The fixture class's per-cell timeout. Its two never-ending fixtures (a Python loop, an XLA while loop) each
# run for this long, then past it (the grace of an interrupt), so it is most of what they cost. Measured:
# the slowest honest cell of the class is 2.5 s while an exercise file runs beside the batch on 2 cores
# (a multi-process cluster's start). Notebook 09's test cells are heavier: pipeline_loss's (its check and its
# observation, gradients compiled on 3 meshes) took 7.5 s in a kernel of its own with the machine's load at 11
# on 2 cores, and its reference run went past 8 s in the class, so 20 s leaves more than twice that.
CELL_TIMEOUT = 20


@dataclass
class GradedClass:
    root: Path
    course: Path
    submissions: Path
    out: Path
    cache: Path
    returncode: int
    stdout: str
    stderr: str
    rows: list[dict]
    results: list[dict]
    points: dict[str, dict[str, float]]  # assignment -> grade_id -> points
    context: dict
    reference_dirs: list[str]  # the reference cache folders right after the run
    canary: dict[str, bytes]  # the host folder attack links point at, as it was built

    def row(self, student: str, assignment: str = specs.A02) -> dict:
        found = [r for r in self.rows if r["student"] == student and r["assignment"] == assignment]
        assert len(found) == 1, f"{len(found)} rows for {student!r} / {assignment}: {self.rows}"
        return found[0]

    def result(self, student: str, assignment: str = specs.A02) -> dict:
        return [r for r in self.results if r["student"] == student and r["assignment"] == assignment][0]


def grade_cmd(course: Path, submissions: Path, out: Path, cache: Path, *extra: str) -> list[str]:
    return grade_command(course, *extra, submissions=submissions, out=out, cache=cache, timeout=CELL_TIMEOUT)


def start_grading(cmd: list[str], tmp: Path) -> subprocess.Popen:
    """`cmd` (a grade_command) started from the repository as from a terminal (Ctrl-C reaches it), its output
    captured, its working copies in `tmp`."""
    tmp.mkdir(exist_ok=True)
    return subprocess.Popen(
        machine.as_from_a_terminal(cmd),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": str(tmp)},
    )


def run_grading(cmd: list[str], tmp: Path, *, quiet_s: float, what: str) -> subprocess.CompletedProcess:
    """`cmd` (a grade_command) run to its end from the repository, its output captured, its working copies in
    `tmp`, within `machine.limit(quiet_s)` (a busy machine's limit says so when it runs out)."""
    return machine.run(
        cmd,
        cwd=REPO,
        capture_output=True,
        text=True,
        quiet_s=quiet_s,
        what=what,
        env={**os.environ, "TMPDIR": str(tmp)},
    )


def read_csv(path: Path) -> list[dict]:
    """The rows of a CSV file the grader wrote, with its formula neutralization undone."""
    from autograder.publish.outputs import csv_value

    with open(path, newline="", encoding="utf-8") as fh:
        return [{k: csv_value(v) for k, v in row.items()} for row in csv.DictReader(fh)]


def refused_syscalls() -> dict[str, int]:
    """Calls the sandbox_probe student makes with zero arguments, each to be refused with EPERM (none where
    this machine has no seccomp allow-list: the protections report says so, sandbox/test_seccomp.py checks it)."""
    from autograder.sandbox import seccomp

    if seccomp.kernel_filter()[1]:
        return {}
    names = (
        "add_key",
        "keyctl",
        "request_key",
        "io_uring_setup",
        "bpf",
        "perf_event_open",
        "userfaultfd",
        "unshare",
        "mount",
        "setns",
    )
    return {n: nr for n in names if (nr := seccomp.syscall_number(n)) is not None}


def build_and_grade(root: Path) -> dict:
    import nbformat

    assignments = sorted({s.assignment for s in specs.SPECS})
    course = root / "course"
    cache = REPO / "build" / "autograder" / "references"  # keyed by content: safe to share with `make grade`
    sources = {}
    points = {}
    make_course(course, assignments)
    for aid in assignments:
        nb = nbformat.read(REPO / "solutions" / f"{aid}.ipynb", as_version=4)
        sources[aid] = nb
        points[aid] = {
            c.metadata["nbgrader"]["grade_id"]: float(c.metadata["nbgrader"]["points"])
            for c in nb.cells
            if c.metadata.get("nbgrader", {}).get("grade") and not c.metadata["nbgrader"].get("solution")
        }
    from autograder.course.discovery import discover_sources
    from autograder.run.references import reference_key

    ref = f"{specs.A02}-{reference_key(discover_sources(course, [specs.A02])[specs.A02])[:16]}"
    tamper_specs.point_links_at(str(cache / ref))  # the symlink attack aims at this reference
    context = {
        "forbidden": [
            str(REPO / "solutions" / f"{specs.A02}.ipynb"),
            str(course / "source" / specs.A02 / f"{specs.A02}.ipynb"),
            str(root / "class" / "correct" / f"{specs.A02}.ipynb"),
            str(cache / ref / "meta.json"),
        ],
        "writable": [
            str(REPO / "pwned.txt"),
            str(root / "class" / "pwned.txt"),
            "/etc/pwned",
            str(cache.parent / "xla-cache" / "pwned"),
        ],
        "xla_root": str(cache.parent / "xla-cache"),
        "canary": str(root / "canary"),
        "refused_syscalls": refused_syscalls(),
    }
    canary = specs.build_canary(root / "canary", cache / ref)
    sub = specs.build_class(specs.SPECS, root / "class", sources, context)
    out = root / "out"
    t0 = time.monotonic()
    tmp = root / "tmp"  # the grader's working copies: must all be gone afterwards
    tmp.mkdir()
    proc = run_grading(
        grade_cmd(course, sub, out, cache, "--max-output-chars", str(specs.MAX_OUTPUT_CHARS)),
        tmp,
        quiet_s=900,
        what="building and grading the course",
    )
    refs = sorted(f"{aid}-{reference_key(src)[:16]}" for aid, src in discover_sources(course, []).items())
    return {
        "reference_dirs": refs,
        "course": str(course),
        "submissions": str(sub),
        "out": str(out),
        "cache": str(cache),
        "returncode": proc.returncode,
        "stdout": proc.stdout,
        "stderr": proc.stderr,
        "points": points,
        "context": context,
        "seconds": time.monotonic() - t0,
        "canary": {k: v.decode("latin-1") for k, v in canary.items()},
    }
