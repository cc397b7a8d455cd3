"""run/namespace_guard.py: a test cell's visible and hidden parts."""

from __future__ import annotations

import autograder_specs as specs

from autograder.run.namespace_guard import split_hidden


def test_split_hidden_separates_visible_and_hidden_parts(source):
    visible, hidden = split_hidden(
        next(c for c in source.nb.cells if specs.nb_meta(c).get("grade_id") == "scaled_sum_total").source
    )
    assert "q.scaled_sum.check(scaled_sum)" in visible and "record(" not in visible
    assert hidden.startswith("### BEGIN HIDDEN TESTS") and 'record("scaled_sum_total"' in hidden
    assert split_hidden("x = 1") == ("x = 1", "")
