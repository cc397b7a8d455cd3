"""What the grader's judge checks for every graded test cell of the course: a Markdown table, read from the
reference observations themselves, not from a list written by hand.

`python -m tools.judged_table` (the package's docstring): the table and the statement gaps to stdout, the time it
took to stderr; the exit status is 1 when a statement names less than is judged.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from courseinfo.course import notebook_ids

from .cells import CellJudged, judged_cells
from .observed import read_observations, run_observations
from .statements import statement_report
from .table import render

__all__ = ["main"]


def _notebooks(wanted: list[str]) -> list[str]:
    known = notebook_ids()
    if not wanted:
        return list(known)
    chosen = [nb for nb in known if any(nb == w or nb.startswith(w) for w in wanted)]
    if not chosen:
        raise SystemExit(f"no notebook matches {' '.join(wanted)} (known: {', '.join(known)})")
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.judged_table", description=__doc__.split("\n\n")[0])
    parser.add_argument("--notebooks", nargs="*", default=[], help="notebook ids or their numbers (default: all)")
    parser.add_argument(
        "--observations", type=Path, help="read the observations: DIR/<notebook>/ (--save) or the grader's cache DIR"
    )
    parser.add_argument("--save", type=Path, help="keep the observations of the run in DIR/<notebook>/")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    from autograder.sandbox import grading_xla_flags

    os.environ["XLA_FLAGS"] = grading_xla_flags(os.environ.get("XLA_FLAGS", ""))  # as the grader compiles
    started = time.monotonic()
    observed = {}
    for notebook in _notebooks(args.notebooks):  # read (their cache keys) before this process sets up devices
        if args.observations is not None:
            observed[notebook] = read_observations(args.observations, notebook)
    from namedaxes.devices import setup_devices

    setup_devices(quiet=True)
    ran = 0.0
    cells: list[CellJudged] = []
    for notebook in _notebooks(args.notebooks):
        if notebook not in observed:
            observed[notebook], seconds = run_observations(notebook, args.save)
            ran += seconds
        cells += judged_cells(notebook, observed[notebook])
    print(render(cells))
    gaps = statement_report(cells)
    if gaps:
        print("Statements that name less than is judged:\n\n" + "\n".join(f"- {g}" for g in gaps))
    total = time.monotonic() - started
    print(
        f"{len(cells)} test cells of {len(observed)} notebook(s) in {total:.1f} s"
        + (f" ({ran:.1f} s of it running the solution notebooks)" if ran else ""),
        file=sys.stderr,
    )
    return 1 if gaps else 0
