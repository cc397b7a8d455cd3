"""Reasons as data: a closed set of kinds, each with its sentence; a finding names what failed; a verdict
crosses the scorer's pipe parsed once, bounded, into the same record."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from autograder.judge.compare import compare, normalize
from autograder.messages import TEXT
from autograder.reasons import Kind, Phrase, Property, Verdict, Words, phrase


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


def test_whatever_the_judge_puts_in_a_finding_the_pipe_reads_it_back():
    """Issue 34: "the grader could not judge this cell (unreadable verdict)" came from a verdict whose findings
    the pipe refused. Flags, None, NumPy numbers, tuples, long word lists, deep nesting and many fields are
    written as what the parser accepts, so every verdict the judge makes crosses the pipe."""
    import json

    deep = phrase("no_comm")
    for _ in range(12):
        deep = phrase("comm_missing", missing=Words((deep,), ", "), seen="x")
    awkward = phrase(
        "work_flops",
        case="k8",
        ratio=np.float32(4.5),
        factor=np.int64(2),
        got=True,
        want=None,
        **{f"extra{i}": (i, "t") for i in range(20)},
    )
    many = phrase("comm_missing", missing=Words(tuple(f"p{i}" for i in range(500)), ", "), seen=deep)
    verdict = Verdict(False, (awkward, many))
    back = Verdict.from_json(json.loads(json.dumps(verdict.to_json())))
    assert not back.passed and [d.kind for d in back.differences] == [Kind.WORK_FLOPS, Kind.COMM_MISSING]
    first, second = back.differences
    assert first.get("ratio") == 4.5 and first.get("factor") == 2 and first.get("got") == "True"
    assert first.get("want") == "None" and len(first.fields) == 12
    words = second.get("missing")
    assert isinstance(words, Words) and len(words.parts) == 64 and words.parts[-1] == "…"
