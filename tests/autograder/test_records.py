"""The records at the grader's boundaries: rows made in one place; a previous results.json parsed once,
bounded, into the same records (reasons: test_reasons.py)."""

from __future__ import annotations

import pytest

from autograder.reasons import phrase
from autograder.records import STATUSES, CellResult, Row, Status, make_row, zero_cells


class _Test:
    def __init__(self, grade_id: str, points: float):
        self.grade_id, self.points = grade_id, points


class _Source:
    max_score = 3.0
    test_cells = (_Test("a_test", 1), _Test("b_test", 2))


def test_rows_are_made_in_one_place_and_their_score_is_the_sum_of_their_cells():
    cells = (CellResult("a_test", 1.0, 1.0, True), CellResult("b_test", 0.0, 2.0, False, phrase("cell_not_run")))
    row = make_row("ann", "01_x", "ann/01_x.ipynb", _Source(), "ok", "", cells, "zh")
    assert (row.score, row.max_score, row.language, row.seconds) == (1.0, 3.0, "zh", None)
    assert row.timed(seconds=2.5).seconds == 2.5 and row.seconds is None  # frozen: a new record
    zeros = zero_cells(_Source(), phrase("notebook_unreadable"))
    assert [(c.grade_id, c.points, c.max_points, c.passed) for c in zeros] == [
        ("a_test", 0.0, 1.0, False),
        ("b_test", 0.0, 2.0, False),
    ]
    unplaced = make_row("bob", "", "bob/x", None, "unplaceable", "bob/x: not a notebook")
    assert unplaced.score == unplaced.max_score == 0.0 and isinstance(unplaced.score, float)
    with pytest.raises(AttributeError):
        row.score = 3.0  # type: ignore[misc]


def test_a_previous_results_row_is_parsed_at_the_edge():
    data = {
        "student": "ann",
        "assignment": "01_x",
        "origin": "o",
        "score": 1,
        "max_score": 3,
        "status": "ok",
        "reason": "failed: b_test",
        "language": "zh",
        "cells": [{"grade_id": "a_test", "points": 1, "max_points": 1, "passed": True, "reason": ""}],
    }
    row = Row.from_json(data)
    assert row.cells == (CellResult("a_test", 1.0, 1.0, True, ""),) and row.language == "zh"
    with pytest.raises(ValueError):
        Row.from_json({"score": "lots"})


def test_a_rows_status_is_one_of_the_graders_and_reads_as_its_text():
    """`Status` is the closed set (each said in `STATUSES`); a row always holds one, whether made from a member or
    from its text, and it writes and compares as its text (grades.csv, results.json, the report)."""
    assert set(STATUSES) == set(Status) and all(STATUSES.values())
    row = make_row("ann", "01_x", "", _Source(), "timeout", "", ())
    assert row.status is Status.TIMEOUT and row.status == "timeout" and f"{row.status}" == "timeout"
    assert Row.from_json({"student": "ann", "status": "missing"}).status is Status.MISSING
    with pytest.raises(ValueError):
        Row.from_json({"student": "ann", "status": "graded-by-me"})  # a previous results.json is parsed at the edge


def test_records_are_frozen_but_the_three_a_stage_fills_as_it_goes():
    import dataclasses

    from autograder import records

    classes = [obj for obj in vars(records).values() if isinstance(obj, type) and dataclasses.is_dataclass(obj)]
    mutable = {cls.__name__ for cls in classes if not cls.__dataclass_params__.frozen}
    assert len(classes) >= 12 and mutable == {"Task", "RunResult", "BatchResults"}, mutable
