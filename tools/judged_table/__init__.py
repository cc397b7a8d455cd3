"""What the grader's judge checks for every graded test cell of the course: a Markdown table, read from the
reference observations themselves, not from a list written by hand.

    python -m tools.judged_table                              # runs every solution notebook (minutes)
    python -m tools.judged_table --save DIR                   # ... and keeps their observations in DIR
    python -m tools.judged_table --observations DIR           # reads them back (seconds per notebook)
    python -m tools.judged_table --observations build/autograder/references   # the grader's own cache
    python -m tools.judged_table --notebooks 09 10            # some notebooks only

1. The observations: each solution notebook runs as the grader's reference run runs it (`tools.export_references`'s
   `run_reference`, without its second export for a TPU), or they are read from a folder: `DIR/<notebook>/`
   (what `--save` writes), else the grader's reference cache `DIR/<notebook>-<key>/` of this checkout and
   environment (`autograder.run.references`: `reference_key`, `load_references`, which verifies it).
2. For each test cell, what the judge requires is read where the judge reads it:
   - a cell of exported programs (`namedaxes.grading.PROGRAMS_KEY`): `autograder.judge.programs.Judge.required`
     compiles each case's reference program as the judge compiles it and says which communication the cell
     needs; each case's entry says whether its values are compared on hidden inputs and with which tolerance
     (`values`, `rtol`, `atol`), whether its results must live where the reference's do (`out_layout`), and
     which facts of one device's work are judged with which factor (`work`, `namedaxes.judging.WORK_FACTS`);
     the reference's own figures are read from its compiled program (`Compiled.work`, and its sends,
     `namedaxes.judging.collective_sends`, where the schedule is judged);
   - the known mistakes the judge names (`namedaxes.grading.MISTAKES_KEY`): the keys the exercise module's
     `known_mistakes` lists on the cases' hidden inputs, as `autograder.judge.mistakes.diagnose` asks it (only a
     case with one output is diagnosed);
   - a formula cell (`namedaxes.grading.FORMULA_KEY`): the cases `autograder.judge.formulas` draws from a run's
     secret, and the figures it compares (`compare`'s tolerance).
3. The statement check: each exercise's "*How it is graded:*" paragraph in solutions/ must name every property
   the table says is judged for its test cells (words per property, `SAID`; English only: the Chinese edition
   is translated from it). A missing paragraph or property is listed under the table. This is a reading of
   words, a reviewer's aid: it cannot tell a true sentence from a false one.

The table and the statement gaps go to stdout, the time it took to stderr; the exit status is 1 when a statement
names less than is judged.

It is a report on the grader, never a stage of it, and it never grades: it asks the judge what the judge requires
of each test cell (through the judge's face, as the grader's scorer would ask it of a reference) and writes that
down; it judges no student's program, gives no verdict or score and writes no file of the grader's. Its hidden
inputs and formula cases come from a fixed secret of its own (`TABLE_SECRET`), never a run's.

Its modules, one job each: `observed` (step 1), `cells` (step 2: the records and how each is read), `table` (the
Markdown), `statements` (step 3), `command` (`main`).
"""

from __future__ import annotations

from .cells import (
    TABLE_SECRET,
    CaseJudged,
    CellJudged,
    RefFacts,
    case_judged,
    formula_cell,
    judged_cells,
    judged_facts,
    program_cell,
)
from .command import main
from .observed import read_observations, run_observations
from .statements import (
    ANYWHERE,
    SAID,
    exercise_statement,
    graded_paragraphs,
    judged_properties,
    statement_gaps,
    statement_report,
)
from .table import COLUMNS, LEGEND, render, row

__all__ = [
    "TABLE_SECRET",
    "RefFacts",
    "CaseJudged",
    "CellJudged",
    "COLUMNS",
    "LEGEND",
    "SAID",
    "ANYWHERE",
    "run_observations",
    "read_observations",
    "judged_facts",
    "case_judged",
    "program_cell",
    "formula_cell",
    "judged_cells",
    "row",
    "render",
    "judged_properties",
    "statement_gaps",
    "statement_report",
    "graded_paragraphs",
    "exercise_statement",
    "main",
]
