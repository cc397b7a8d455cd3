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
