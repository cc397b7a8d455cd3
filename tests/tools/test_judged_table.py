"""tools/judged_table/: the table of what the judge checks for each test cell, and the statement check.

Unit tests: the formatting, on a test cell's metadata written by hand in the format `namedaxes.grading.programs`
records (its cases' entries), the reference's facts given (test_judged_table_observed.py reads a real notebook's)."""

from __future__ import annotations

from autograder.course.notebooks import TestCell as GradedCell
from autograder.judge.formulas import FormulaRun
from autograder.judge.programs import Required
from tools import judged_table as jt

# A test cell's metadata as `namedaxes.grading.programs` records it (`PROGRAMS_KEY`), notebook 09's GPipe cell.
META = {
    "format": "namedaxes-exported-1",
    "cases": {
        "k8": {"draw": {"kind": "normal"}, "values": True, "rtol": 1e-4, "atol": 1e-4, "work": {"flops": 1.5}},
        "k2": {
            "draw": {"kind": "normal"},
            "values": True,
            "rtol": 1e-4,
            "atol": 1e-4,
            "work": {"flops": 1.5, "sent_bytes": 2.0},
        },
        "structure": {"draw": {"kind": "normal"}, "values": False, "only_collectives": True, "out_layout": False},
    },
    "mistakes": {"module": "namedaxes.exercises.large_models", "exercise": "pipeline_loss"},
}
FACTS = {
    "k8": jt.RefFacts("8", True, ("P()",), ("'stages'",), {"flops": 1928.0, "sent_bytes": 484}),
    "k2": jt.RefFacts(
        "2", True, ("P()",), ("'stages'",), {"flops": 264.0, "sent_bytes": 68}, ("ppermute over 'stages' 4× ≤ 16 B",)
    ),
    "structure": jt.RefFacts("8", True, ("P()",), ("'stages'",), {"flops": 1928.0}),
}
REQUIRED = Required(
    cases=META["cases"],
    programs={},
    structure=True,
    collectives=("ppermute over 'stages'", "psum over 'stages'"),
    axes=("stages",),
    only_axes=False,
    only_collectives=True,
)


def _cell() -> jt.CellJudged:
    test = GradedCell("pipeline_loss_gpipe", 3.0, 18)
    return jt.program_cell("09_large_models", test, REQUIRED, FACTS, ("pipe_sum",))


def test_a_row_says_each_judged_property_of_the_metadata():
    row = dict(zip(jt.COLUMNS, jt.row(_cell()), strict=True))
    assert row["notebook"] == "09" and row["test cell (points)"] == "`pipeline_loss_gpipe` (3)"
    assert row["cases, by mesh"] == "3: 8 (`k8`, `structure`), 2 (`k2`)"
    assert row["values on hidden inputs"] == "k8, k2: yes, rtol 0.0001, atol 0.0001; structure: no (structure only)"
    assert row["communication"] == (
        "the reference's collectives: ppermute over 'stages', psum over 'stages' (structure cell); no other collective"
    )
    assert row["result layout (the reference's)"] == (
        "k8, k2: P(), per-device region over ('stages'); structure: open, per-device region over ('stages')"
    )
    assert row["per-device work judged (`Case(work=...)`)"] == (
        "`flops` ≤ 1.5× ref (k8 1,928, k2 264); `sent_bytes` ≤ 2× ref (k2 68 B)"
    )
    assert row["schedule"] == "every send counted as often as it runs (ref k2: ppermute over 'stages' 4× ≤ 16 B)"
    assert row["formula cases"] == "—" and row["known mistakes named"] == "`pipe_sum`"
    table = jt.render([_cell()])
    assert table.startswith("| notebook | test cell (points) |") and "| 09 | `pipeline_loss_gpipe` (3) |" in table


def test_a_formula_cell_says_its_drawn_cases_and_named_mistakes():
    marker = {"module": "namedaxes.exercises.training_at_scale", "exercise": "step_costs", "answers": ["step_costs"]}
    run = FormulaRun(  # a run's draw: two cases, the reference's figures, the usual mistakes' figures per case
        cases={"namedaxes.exercises.training_at_scale:step_costs": [{"batch": 4}, {"batch": 8}]},
        expected={"step_costs_formulas": {"flops": [1.0, 2.0], "state_bytes": [3.0, 4.0]}},
        mistakes={"step_costs_formulas": ("training_at_scale", {"flops": [[(2.0, "costs_whole")], [(4.0, "other")]]})},
    )
    cell = jt.formula_cell("10_training_at_scale", GradedCell("step_costs_formulas", 3.0, 28), marker, run)
    row = dict(zip(jt.COLUMNS, jt.row(cell), strict=True))
    assert row["formula cases"] == (
        "`step_costs`: 2 cases drawn from the run's secret; `flops`, `state_bytes` compared (rtol 1e-5, atol 1e-5)"
    )
    assert row["known mistakes named"] == "`costs_whole`, `other`" and row["cases, by mesh"] == "—"
    assert jt.judged_properties(cell) == ["formula cases"]


def test_a_statement_must_name_what_is_judged():
    cell = _cell()
    assert jt.judged_properties(cell) == [
        "hidden inputs",
        "communication",
        "only these collectives or axes",
        "result layout",
        "per-device region",
        "flops",
        "sent_bytes",
    ]
    task = "Write `pipeline_loss(params, x, y, mesh)` with `jax.shard_map`; the loss whole on every device."
    graded = (
        "*How it is graded:* the grader runs it on its own secret inputs; the values, the `ppermute`s and nothing "
        "else, and one device's FLOPs and the bytes it receives, each within a factor of the reference's, decide."
    )
    assert jt.statement_gaps(cell, f"{task}\n\n{graded}") == []
    assert jt.statement_gaps(cell, f"{task}\n\n{graded.replace('FLOPs', 'work')}") == ["flops"]
    assert jt.statement_gaps(cell, f"{task.replace('whole on every device', 'its loss')}\n\n{graded}") == [
        "result layout"
    ]
    assert jt.statement_gaps(cell, task) == ["no 'How it is graded' paragraph"]
