"""Notebook 11's wrong answers as the class report shows them (issue 61): the grader's judge on the answers of
test_step_anatomy.py's matrices, its verdict made the feedback page's sentence and the misconception map's
finding. Each says what to fix: the dtype that is wrong (not two lists of every result), which input and
dimension and axis a layout is about, and one group for one misconception (a reduction per microbatch, in a
Python loop or in a `lax.scan`)."""

import jax
import pytest
from judge_helpers import judge_observations, observe

from autograder.publish.misconceptions import finding
from namedaxes import zero as zr
from namedaxes.exercises import step_anatomy as q
from tests.namedaxes.exercises import test_step_anatomy as answers


@pytest.fixture(scope="module")
def references():
    return {
        "mixed": observe(q.mixed_train_step, answers.ref_mixed_train_step),
        "zero": observe(q.zero_specs, answers.ref_zero_specs),
        "accumulate": observe(q.accumulate_grads, answers.ref_accumulate_grads),
    }


def _judged(references, which: str, exercise, wrong):
    said = judge_observations(references[which], observe(exercise, wrong))
    assert not said.passed
    return said.reason(), finding(said.verdict)


def test_bf16_master_weights_say_which_dtype_not_every_shape(references):
    wrong = answers.MIXED_WRONG["bf16 master weights"][0]
    feedback, found = _judged(references, "mixed", q.mixed_train_step, wrong)
    assert "the program returns 30 of its 31 results as bfloat16, expected float32 (their shapes are right)" in (
        feedback
    )
    assert "float32[1, 64, 16]" not in feedback and len(feedback) < 600, feedback
    assert found["en"].startswith("the program returns … of its … results as bfloat16, expected float32")


def test_the_optimizer_state_kept_whole_names_the_input_the_dimension_and_the_axis(references):
    wrong = answers.ZERO_WRONG["optimizer state whole"][0]
    feedback, found = _judged(references, "zero", q.zero_specs, wrong)
    label = (
        "layout: the program takes input 2['w1'] whole on every device (replicated); the exercise's takes it "
        "split along dimension 0 over 'fsdp_axis'"
    )
    assert label in feedback and found["en"] == label


def test_a_reduction_per_microbatch_is_one_misconception_in_a_loop_or_a_scan(references):
    loop = _judged(references, "accumulate", q.accumulate_grads, zr.accumulate_naive)[1]
    scan = _judged(references, "accumulate", q.accumulate_grads, answers._acc_reduce_in_scan)[1]
    assert loop["key"] == scan["key"] and loop["kind"] == "work_reduced"
    assert jax.device_count() == 8
