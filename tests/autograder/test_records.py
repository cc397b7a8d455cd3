"""The records at the grader's boundaries: a closed set of kinds, each with its sentence; rows made in
one place; what crosses a pipe or a JSON file is parsed once, bounded, into the same records."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from autograder.judge.compare import compare, normalize
from autograder.messages import TEXT
from autograder.records import (
    CellResult,
    Kind,
    Phrase,
    Property,
    Row,
    Verdict,
    Words,
    make_row,
    phrase,
    zero_cells,
)


class _Test:
    def __init__(self, grade_id: str, points: float):
        self.grade_id, self.points = grade_id, points


class _Source:
    max_score = 3.0
    test_cells = (_Test("a_test", 1), _Test("b_test", 2))


def test_every_kind_has_its_sentence_and_an_unknown_kind_is_refused():
    assert all(kind.value in TEXT for kind in Kind)
    with pytest.raises(ValueError):
        phrase("no such kind")


def test_a_finding_says_which_variable_which_property_what_was_expected_and_seen():
    v = compare(
        normalize({"out": np.zeros(2, np.float32), "total": np.zeros(3)}),
        normalize({"out": np.zeros(2, np.float16), "total": np.ones(3)}),
    )
    assert not v.passed
    dtype, values = v.differences
    assert (dtype.kind, dtype.failed, dtype.variable) == (Kind.EXPECTED_GOT, Property.DTYPE, "out")
    assert dtype.expected == phrase("shape_dtype", shape="(2,)", dtype="float32")
    assert dtype.seen == phrase("shape_dtype", shape="(2,)", dtype="float16")
    assert (values.kind, values.failed, values.variable) == (Kind.VALUES_DIFFER, Property.VALUES, "total")
    shape = compare(normalize({"out": np.zeros(2)}), normalize({"out": np.zeros(3)})).differences[0]
    assert shape.failed is Property.SHAPE
    axes = compare({"axes": ["devices"]}, {"axes": []}).differences[0]
    assert (axes.kind, axes.failed) == (Kind.AXES_MISSING, Property.COMMUNICATION)


def test_a_verdict_crosses_the_scorer_pipe_as_data_and_comes_back_equal():
    verdict = Verdict(
        False,
        (
            phrase("layout_output", case="k2", n=1, got=phrase("layout_replicated"), want=phrase("layout_unstated")),
            phrase("comm_missing", missing=Words(("psum over 'devices'", "x"), ", "), seen=phrase("no_comm")),
            phrase("expected_got", prop=Property.SHAPE, key="out", want="a", got="b"),
        ),
    )
    assert Verdict.from_json(verdict.to_json()) == verdict
    assert pickle.loads(pickle.dumps(verdict)) == verdict  # the pool's pipe


@pytest.mark.parametrize(
    "reply",
    [
        None,
        [],
        {"passed": True, "differences": [{"kind": "not a kind"}]},
        {"passed": False, "differences": [{"kind": "values_differ", "fields": [["key", {"eval": 1}]]}]},
        {"passed": False, "differences": [{"kind": "values_differ", "fields": [["key", True]]}]},
        {"passed": False, "differences": [{"kind": "values_differ", "fields": [["k", "v"]] * 100}]},
    ],
)
def test_a_malformed_verdict_from_the_pipe_is_refused(reply):
    with pytest.raises(ValueError):
        Verdict.from_json(reply)


def test_a_verdict_from_the_pipe_is_bounded_and_passes_only_without_findings():
    long = {"kind": "values_differ", "fields": [["key", "x" * 100_000]]}
    parsed = Verdict.from_json({"passed": True, "differences": [long] * 500})
    assert not parsed.passed and len(parsed.differences) == 50
    assert len(parsed.differences[0].get("key")) <= 400
    deep: dict = {"kind": "values_differ", "fields": [["key", "x"]]}
    for _ in range(20):
        deep = {"kind": "axes_seen", "fields": [["axes", {"phrase": deep}]]}
    with pytest.raises(ValueError):
        Phrase.from_json(deep)
    assert Verdict.from_json({"passed": 1, "differences": []}).passed is False  # only `true` passes


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
