"""The worker says what a notebook's budget is as data; the words come when publishing."""

from __future__ import annotations

from autograder.publish.words import say
from autograder.reasons import phrase
from autograder.records import Task
from autograder.run.worker import budget_label


def test_what_is_left_of_a_submission_budget_is_a_phrase_with_numbers():
    assert budget_label(Task(0, "grade", "a01", budget=300.0)) is None  # the notebook's own budget
    left = budget_label(Task(0, "grade", "a02", budget=5.6, budget_of_submission=18.0))
    assert left == phrase("budget_left", total=18.0, left=5.6)
    assert say(left, "en") == "what was left of this submission's time budget of 18 s (6 s)"
    assert say(left, "zh") == "这份提交 18 秒时间预算的剩余部分（6 秒）"
