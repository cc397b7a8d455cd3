"""The judge's data become words only here, in the reader's language, and read as they always did."""

from __future__ import annotations

import numpy as np

from autograder.judge.compare import compare, normalize
from autograder.messages import translate
from autograder.publish.words import say
from autograder.reasons import Property, Verdict, Words, phrase


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


def test_a_difference_that_ends_a_sentence_is_joined_to_the_next_without_its_full_stop():
    last = phrase("known_mistake", key="pmap_2", module="axis_names", mistake="last_nobody", arg_last=1)
    both = Verdict(False, (last, phrase("values_differ", key="pmap_5")))
    said = say(both, "en")
    assert ".;" not in said and "; pmap_5: values differ)" in said, said
    assert "。；" not in say(both, "zh") and ".;" not in say(both, "zh")


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


def _run_time_phrases():
    """What run/ records when a cell ran too long, when output was capped, when the pool did not run a
    notebook: data, with numbers as numbers."""
    label = phrase("cell_grade_id", grade_id="scaled_sum_total")
    return {
        "interrupted": phrase("cell_interrupted", label=label, how=phrase("ran_longer", seconds=30.0)),
        "budget": phrase(
            "ran_out_of", what=phrase("budget_left", total=18.0, left=5.6), n=3
        ),  # (6 s): rounded when said
        "capped": phrase("output_notebook_cap", label=label, limit=100000),
        "spent": phrase("budget_spent_elsewhere", seconds=600.0),
    }


def test_a_run_time_phrase_reads_as_the_run_always_wrote_it():
    said = {name: say(p, "en") for name, p in _run_time_phrases().items()}
    assert said == {
        "interrupted": "cell 'scaled_sum_total' ran longer than 30 s and was interrupted",
        "budget": "the notebook ran out of what was left of this submission's time budget of 18 s (6 s); "
        "3 cell(s) were not run",
        "capped": "the notebook's output passed 100,000 characters at cell 'scaled_sum_total'; "
        "further output was dropped",
        "spent": "not run: this submission's time budget of 600 s went to its other notebooks",
    }


def test_a_run_time_phrase_is_said_in_chinese_from_the_catalog():
    p = _run_time_phrases()
    label = translate("cell '{grade_id}'", "zh").format(grade_id="scaled_sum_total")
    how = translate("ran longer than {seconds} s", "zh").format(seconds="30")
    assert say(p["interrupted"], "zh") == translate("{label} {how} and was interrupted", "zh").format(
        label=label, how=how
    )
    assert say(p["spent"], "zh") == translate(
        "not run: this submission's time budget of {seconds} s went to its other notebooks", "zh"
    ).format(seconds="600")
    for name, phr in p.items():
        assert say(phr, "zh") != say(phr, "en"), f"the catalog translates {name}"
    assert (
        "100,000" in say(p["capped"], "zh") and "18" in say(p["budget"], "zh") and "（6 秒）" in say(p["budget"], "zh")
    )


def test_a_known_mistake_says_the_exercises_own_sentence_for_it_in_the_readers_language():
    """The visible check's words for the mistake (the exercise module's TEXT, through the course's catalog), its
    fields put in once; a module or mistake without such a sentence reads as plain "values differ"."""
    found = phrase(
        "known_mistake", key="pmap_2, pmap_5", module="axis_names", mistake="last_first", arg_last=4, arg_j="{0}"
    )
    assert say(found, "en") == (
        "pmap_2, pmap_5: values differ. That is the `x` of the first device (position 0). The last device is at "
        "position 4 here: `lax.psum(1, DEVICES) - 1`."
    )
    assert say(found, "zh").startswith("pmap_2, pmap_5：值不同。") and "4" in say(found, "zh")
    ring = phrase("known_mistake", key="k8", module="large_models", mistake="ring_local_mask")
    assert "Compare *global* positions" in say(ring, "en")
    for module, mistake in (("axis_names", "no_such_mistake"), ("../etc", "last_first"), ("scaled_sum", "center")):
        odd = phrase("known_mistake", key="k8", module=module, mistake=mistake)
        assert say(odd, "en") == "k8: values differ" and say(odd, "zh") == "k8：值不同"
    missing_field = phrase("known_mistake", key="k8", module="axis_names", mistake="last_first")  # no arg_last
    assert say(missing_field, "en") == "k8: values differ"
