"""tools/judged_table/ on one notebook's real observations: 01's hidden test cells, run in this process on its
solution's answers, record what its reference run records; the table reads from them what the judge requires
(`Judge.required`: each reference program compiled as the judge compiles it), and 01's statements name all of it.
It compiles 14 programs (about 2 s), so it is not a unit test (conftest.py's `KINDS`)."""

from __future__ import annotations

import nbformat

from autograder.judge.compare import normalize
from autograder.judge.formulas import solution_answers
from courseinfo.course import SOLUTIONS
from courseinfo.nbgrader_metadata import nbgrader_cell
from tools import judged_table as jt


def test_notebook_01_from_its_real_observations():
    """01's hidden test cells run here on its solution's answers record what its reference run records; the table
    reads from them what the judge requires, and 01's statements name all of it."""
    nb = nbformat.read(SOLUTIONS / "01_axis_names.ipynb", as_version=4)
    answers = solution_answers(nb, ["rank_weighted_sum", "last_device_value", "center"])
    from namedaxes.exercises import axis_names as q

    recorded: dict = {}
    for cell in nb.cells:
        if nbgrader_cell(cell).grade:
            hidden = cell.source.split("### BEGIN HIDDEN TESTS")[1].split("### END HIDDEN TESTS")[0]
            exec(hidden, {"q": q, **answers, "record": lambda gid, obs: recorded.__setitem__(gid, normalize(obs))})
    cells = jt.judged_cells("01_axis_names", recorded)
    assert [c.grade_id for c in cells] == [
        "rank_weighted_sum_values",
        "last_device_value_values",
        "center_pmap_and_vmap",
    ]
    row = dict(zip(jt.COLUMNS, jt.row(cells[0]), strict=True))
    assert row["cases, by mesh"] == "4: 2 (`pmap_2`), 4 (`pmap_4`), 8 (`pmap_8`), 1 (`vmap_5`)"
    assert row["communication"] == "real communication over 'devices' (value cell)"
    assert row["values on hidden inputs"] == "yes, rtol 1e-5, atol 1e-5"
    assert "`weighted_own_term`" in row["known mistakes named"]
    assert jt.statement_report(cells) == []
