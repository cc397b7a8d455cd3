"""Write the tables some visible checks compare with, computed by the solution notebook's own answers.

    python -m tools.answer_tables            # write them
    python -m tools.answer_tables --check    # fail if one differs from what the solutions compute

Why a table: an exercise whose answer is a formula (notebook 10's cost model, layout choice and time model) is
judged by its values, and the student's kernel must hold no function that computes the right ones, or an
answer could call it. So the kernel package ships only the visible cases' expected figures, as data
(the `ANSWERS` file each table's module names, beside it).

One source of truth: the figures come from the answer cells of `solutions/<id>.ipynb` (run here after
the notebook's `imports` cell, never its set-up cell: no devices are needed), passed to the exercise
module's `expected_figures`. `make check-notebooks` (and so `make test`) fails on drift, and the solved
notebook's own visible checks (nbval) prove the solution agrees with what was written. The hidden cases are
in no table: the grader draws them for each run and runs the same answer cells on them
(`autograder.judge.formulas`).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat

from autograder.judge import solution_answers
from courseinfo.course import SOLUTIONS
from namedaxes.exercises import exercise_module


@dataclass(frozen=True)
class Table:
    """One notebook's table: the exercise module that reads it and the answers that compute it."""

    notebook: str
    module: str
    answers: tuple[str, ...]

    @property
    def path(self) -> Path:
        return Path(exercise_module(self.module).ANSWERS)


TABLES = (
    Table("10_training_at_scale", "namedaxes.exercises.training_at_scale.cases", ("step_costs", "choose_layout")),
    Table("10_training_at_scale", "namedaxes.exercises.training_at_scale.timing", ("step_costs", "step_time")),
)


def read_solution_answers(notebook: str, names: tuple[str, ...]) -> dict:
    """The solution notebook's functions `names`, defined by its `imports` cell and their answer cells (run
    as the grader runs them to compute the reference's figures on a run's hidden cases)."""
    return solution_answers(nbformat.read(SOLUTIONS / f"{notebook}.ipynb", as_version=4), names)


def render(table: Table) -> str:
    answers = read_solution_answers(table.notebook, table.answers)
    figures = exercise_module(table.module).expected_figures(*(answers[n] for n in table.answers))
    return json.dumps(figures, indent=1, sort_keys=True) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if a table differs from what the solutions compute")
    args = parser.parse_args(argv)
    stale = []
    for table in TABLES:
        text = render(table)
        current = table.path.read_text(encoding="utf-8") if table.path.exists() else None
        if current == text:
            continue
        if args.check:
            stale.append(table.path.name)
        else:
            table.path.write_text(text, encoding="utf-8")
            print(f"wrote {table.path.name} from solutions/{table.notebook}.ipynb")
    if stale:
        print(f"stale (run `make notebooks`): {', '.join(stale)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
