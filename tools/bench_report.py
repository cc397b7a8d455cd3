"""Benchmark: the instructor's pages for a class of 1, 40 and 500 (the class report with its misconception
map and late hand-ins; the similarity report over every hand-in of notebook 04).

Each class is generated: every student hands in notebook 04 with a `train` answer drawn from a few ways
of writing it (with their own variable names), and the judge's verdicts put them in a handful of
misconception groups; every tenth hand-in is late. Prints, per class size, the wall time and the size of
report.html, and of similarity.html with the time it took. A benchmark reports; it fails nothing.

    python -m tools.bench_report [--sizes 1 40 500]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import nbformat

from autograder.course import SourceNotebook, repo_root
from autograder.intake import Intake, Placed
from autograder.publish import public, write_outputs, write_report, write_similarity
from autograder.reasons import Kind, Verdict, Words, phrase
from autograder.records import CellResult, Late, Status, make_row
from courseinfo.nbgrader_metadata import nbgrader_cell

AID = "04_gradient_averaging"
WAYS = (
    "def train(params, sharded_batch, steps):\n    {h} = []\n    for {i} in range(steps):\n"
    "        params, {l} = p_update_step(params, sharded_batch)\n        {h}.append({l})\n"
    "    {h}.append(p_update_step(params, sharded_batch)[1])\n    return params, jnp.stack({h})\n",
    "def train(params, sharded_batch, steps):\n    def {i}(c, _):\n        return p_update_step(c, sharded_batch)\n"
    "    params, {h} = lax.scan({i}, params, length=steps)\n"
    "    return params, jnp.append({h}, p_update_step(params, sharded_batch)[1])\n",
)
VERDICTS = (
    Verdict(False, (phrase(Kind.COMM_MISSING, missing=Words(("psum",)), seen="pmean"),)),
    Verdict(False, (phrase(Kind.VALUES_DIFFER, key="final_params"),)),
    Verdict(False, (phrase(Kind.WORK_FLOPS, case="x", ratio=4.5, factor=1.5, got=45.0, want=10.0),)),
    None,
)


def _class(folder: Path, n: int, source: SourceNotebook) -> tuple[Intake, list]:
    intake, rows = Intake(students=set()), []
    late = Late("2026-12-12T12:00:00+00:00", "2026-12-10T23:59:00+01:00", 1.0, 2, 0.2, 1.0)
    for k in range(n):
        student = f"student{k:04d}"
        intake.students.add(student)
        nb = nbformat.reads(source.raw.decode(), as_version=4)
        for cell in nb.cells:
            if nbgrader_cell(cell).grade_id == "train_answer":
                cell.source = WAYS[k % 2].format(h=f"h{k}", i=f"i{k}", l=f"l{k}")
        path = folder / f"{student}.ipynb"
        nbformat.write(nb, path)
        intake.placed[(student, AID)] = Placed(student, AID, path, path.name)
        verdict = VERDICTS[k % len(VERDICTS)]
        cells = tuple(
            CellResult(
                t.grade_id, 0.0 if verdict and i == 0 else t.points, t.points, not (verdict and i == 0), verdict or ""
            )
            for i, t in enumerate(source.test_cells)
        )
        rows.append(make_row(student, AID, path.name, source, Status.OK, "", cells, late=late if k % 10 == 9 else None))
    return intake, rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 40, 500])
    args = parser.parse_args(argv)
    source = SourceNotebook.load(AID, repo_root() / "solutions" / f"{AID}.ipynb")
    print(f"{'students':>8}  {'report':>14}  {'similarity':>18}")
    for n in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp)
            intake, rows = _class(out, n, source)
            write_outputs(out, [public(r) for r in rows], rows)
            t0 = time.perf_counter()
            write_similarity(out, {AID: source}, intake)
            t1 = time.perf_counter()
            report = write_report(out)
            t2 = time.perf_counter()
            similarity = out / "similarity.html"
            print(
                f"{n:>8}  {t2 - t1:5.2f} s {report.stat().st_size / 1024:5.0f} KiB"
                f"  {t1 - t0:5.2f} s {similarity.stat().st_size / 1024:5.0f} KiB"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
