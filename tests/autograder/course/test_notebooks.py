"""Unit tests of course/notebooks.py.

The source notebook's tests, answers and stubs; merging a submission into the graded notebook (answers from
the student, everything else from the source); unreadable submissions say why.
"""

from __future__ import annotations

import autograder_specs as specs
import nbformat
import pytest

from autograder.course.notebooks import (
    UnreadableNotebook,
    build_graded,
    json_values,
    parse_submission,
    shared_cache_run,
)
from autograder.limits import MAX_NOTEBOOK_VALUES
from autograder.run.executor import guard_index


def student(source, answers=None, tamper=()):
    spec = specs.Spec("x", "ok", answers=answers or {}, tamper=tuple(tamper))
    return nbformat.reads(specs.notebook_for(spec, source.nb, {}).decode(), as_version=4)


def by_gid(nb, gid):
    return [c for c in nb.cells if specs.nb_meta(c).get("grade_id") == gid]


def test_source_notebook_lists_tests_answers_and_stubs(source):
    assert source.test_ids() == [
        "scaled_sum_total",
        "scaled_sum_uses_psum",
        "scaled_mean_value",
        "global_max_share_value",
    ]
    assert source.answer_ids == ["scaled_sum_answer", "scaled_mean_answer", "global_max_share_answer"]
    assert "raise NotImplementedError()" in source.stubs["scaled_sum_answer"]
    assert "lax.psum" not in source.stubs["scaled_sum_answer"]


def test_graded_notebook_takes_answers_from_student_and_everything_else_from_source(source):
    nb = student(
        source,
        {"scaled_sum_answer": "def scaled_sum(x):\n    return 'mine'\n"},
        tamper=[specs.edit_test_cell("scaled_sum_total", "pass"), specs.change_points("scaled_mean_value", 99)],
    )
    graded, report = build_graded(source, nb)
    assert by_gid(graded, "scaled_sum_answer")[0].source.endswith("return 'mine'\n")
    assert by_gid(graded, "scaled_sum_total")[0].source == by_gid(source.nb, "scaled_sum_total")[0].source
    assert "### BEGIN HIDDEN TESTS" in by_gid(graded, "scaled_sum_total")[0].source
    assert by_gid(graded, "scaled_mean_value")[0].metadata["nbgrader"]["points"] == 2
    assert [c.source for c in graded.cells if c.cell_type == "markdown"] == [
        c.source for c in source.nb.cells if c.cell_type == "markdown"
    ]
    assert report.answers_missing == [] and report.added_cells == 0


def test_deleted_duplicated_and_retagged_test_cells_are_the_sources(source):
    nb = student(
        source,
        tamper=[
            specs.delete_cells("scaled_sum_total"),
            specs.duplicate_cell("scaled_mean_value", 2),
            specs.retag_test_cell("scaled_sum_uses_psum"),
        ],
    )
    graded, report = build_graded(source, nb)
    tests = [specs.nb_meta(c)["grade_id"] for c in graded.cells if specs.nb_meta(c).get("grade")]
    assert tests == source.test_ids()
    # the retagged cell (new id, new grade_id) is kept as a student cell, without nbgrader metadata
    added = [c for c in graded.cells if c.metadata.get("autograder", {}).get("student_added")]
    assert [c.source for c in added] == ["print('all good')"]
    assert "nbgrader" not in added[0].metadata
    assert report.duplicates == 2  # the two copies


def test_missing_answer_gets_the_released_stub_and_first_duplicate_wins(source):
    nb = student(
        source,
        {"scaled_mean_answer": "def scaled_mean(x):\n    return 1\n"},
        tamper=[specs.delete_cells("scaled_sum_answer"), specs.duplicate_cell("scaled_mean_answer")],
    )
    for c in nb.cells:  # make the copies differ
        if c.id.startswith("scaled-mean-answer-copy"):
            c.source = "def scaled_mean(x):\n    return 2\n"
    graded, report = build_graded(source, nb)
    assert report.answers_missing == ["scaled_sum_answer"]
    assert by_gid(graded, "scaled_sum_answer")[0].source == source.stubs["scaled_sum_answer"]
    assert by_gid(graded, "scaled_mean_answer")[0].source.endswith("return 1\n")
    assert len(by_gid(graded, "scaled_mean_answer")) == 1


def test_answer_cell_without_metadata_is_found_by_cell_id(source):
    nb = student(
        source,
        {"scaled_sum_answer": "def scaled_sum(x):\n    return 'by id'\n"},
        tamper=[specs.strip_answer_metadata("scaled_sum_answer")],
    )
    graded, report = build_graded(source, nb)
    assert by_gid(graded, "scaled_sum_answer")[0].source.endswith("return 'by id'\n")
    assert by_gid(graded, "scaled_sum_answer")[0].metadata["nbgrader"]["solution"] is True


def test_added_cells_keep_their_place_but_never_run_before_the_setup(source):
    nb = student(source, tamper=[specs.add_cell_after("scaled_sum_answer", "mine = 1")])
    nb.cells.insert(0, nbformat.v4.new_code_cell("import jax; jax.devices()"))
    graded, _ = build_graded(source, nb)
    ids = [c.get("id") for c in graded.cells]
    srcs = [c.source for c in graded.cells]
    assert srcs.index("mine = 1") == ids.index("scaled-sum-answer") + 1
    assert srcs.index("import jax; jax.devices()") == ids.index("imports") + 1
    assert guard_index(graded) == ids.index("imports")


def test_no_student_notebook_means_all_stubs(source):
    graded, report = build_graded(source, None)
    assert report.answers_missing == source.answer_ids
    assert len(graded.cells) == len(source.nb.cells)


@pytest.mark.parametrize(
    "data, reason",
    [
        (b'{"cells": [', "invalid JSON"),
        (b"\xff\xfe\x00garbage", "not UTF-8"),
        (b"[1, 2, 3]", "no list of cells"),
        (b'{"nbformat": 4}', "no list of cells"),
    ],
)
def test_unreadable_submissions_say_why(data, reason):
    with pytest.raises(UnreadableNotebook, match=reason):
        parse_submission(data)


@pytest.mark.parametrize(
    "text, values",
    [
        (b"7", 1),
        (b"[]", 1),
        (b"{}", 1),
        (b"[{}, [], 0]", 4),  # the list and its three items
        (b'{"a": [1, 2, {}], "b": "x,y:[{\\"}"}', 8),  # the object, two keys, the list, its 3 items, "x..."
        (b'{ "a" : [ ] , "b" : { } }', 5),  # whitespace before a closing bracket
        (b'"unterminated, [string', 1),  # runs to the end: nothing inside it counts
        (b'"\\\\", [1]', 3),  # an escaped backslash ends the string before the comma
    ],
)
def test_json_values_counts_what_a_parse_would_create(text, values):
    assert json_values(text, 100) == values


def test_json_values_stops_past_its_limit():
    assert json_values(b"[" + b"0," * 999 + b"0]", 10) == 11
    assert json_values(b"[" + b"0," * 999 + b"0]", 10_000) == 1001


def test_a_parse_bomb_is_unreadable_with_its_reason_before_anything_is_parsed():
    """Issue 33: a list of a million `{}` (3 MB) once took the worker about 600 bytes a value, three parses over."""
    bomb = b'{"cells": [], "x": [' + b"{}," * MAX_NOTEBOOK_VALUES + b"{}]}"
    with pytest.raises(UnreadableNotebook, match=f"too complex to read: more than {MAX_NOTEBOOK_VALUES:,} JSON values"):
        parse_submission(bomb)
    under = b'{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5, "x": [' + b"{}," * 1000 + b"{}]}"
    assert parse_submission(under).cells == []


def test_the_shared_cache_run_is_the_release(source):
    """What the students' XLA cache is filled from: each answer its released stub, each test cell its
    visible part, no solution and no hidden line."""
    nb = shared_cache_run(source)
    assert len(nb.cells) == len(source.nb.cells)
    by_gid = {specs.nb_meta(c).get("grade_id"): c for c in nb.cells}
    for gid in source.answer_ids:
        assert by_gid[gid].source == source.stubs[gid]
    for t in source.test_cells:
        visible = source.nb.cells[t.index].source.split("### BEGIN HIDDEN TESTS")[0].rstrip()
        assert by_gid[t.grade_id].source.rstrip() == visible
    text = "\n".join(c.source for c in nb.cells)
    for marker in ("BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "record("):
        assert marker not in text, marker
