"""The judge's data become words only here, in the reader's language, and read as they always did."""

from __future__ import annotations

import numpy as np

from autograder.judge.compare import compare, normalize
from autograder.messages import translate
from autograder.publish.words import say
from autograder.records import Property, Verdict, Words, phrase


def test_a_verdict_reads_as_the_feedback_always_said_it():
    v = compare(normalize({"out": np.zeros(2, np.float32)}), normalize({"out": np.zeros(2, np.float16)}))
    assert say(v, "en") == (
        "results differ from the reference on hidden inputs "
        "(out: expected shape (2,) and dtype float32, got shape (2,) and dtype float16)"
    )
    many = Verdict(False, tuple(phrase("values_differ", key=k) for k in "abcd"))
    assert (
        say(many, "en")
        == "results differ from the reference on hidden inputs (a: values differ; b: values differ; and 2 more)"
    )
    assert say(many, "en", shown=4).endswith("d: values differ)")
    timeout = Verdict(False, (phrase("scorer_timeout", seconds="20"),), on_hidden_inputs=False)
    assert say(timeout, "en") == "running the recorded programs took longer than 20 s (does one of them loop forever?)"
    assert say(Verdict(True), "en") == ""


def test_a_case_is_named_ahead_unless_the_sentence_names_it():
    assert say(phrase("sig_devices", case="k8", got=4, want=8), "en") == "k8: the program runs on 4 devices, expected 8"
    assert say(phrase("no_program", case="k8"), "en") == "k8: no program was recorded"
    layout = phrase("layout_split", dims=Words((phrase("layout_dim", dim=0, axes="'a' x 'b'"),), ", "))
    assert say(layout, "en") == "split along dimension 0 over 'a' x 'b'"


def test_the_same_data_in_chinese_come_from_the_catalog():
    p = phrase("values_differ", key="out")
    english, chinese = say(p, "en"), say(p, "zh")
    assert english == "out: values differ"
    assert chinese == translate("{key}: values differ", "zh").format(key="out")
    assert chinese != english, "the catalog translates this sentence"


def test_student_text_in_a_field_is_inserted_once_never_formatted():
    assert say(phrase("values_differ", key="{0}{key}"), "en") == "{0}{key}: values differ"
    assert phrase("expected_got", prop=Property.DTYPE, key="x", want="a", got="b").failed is Property.DTYPE
