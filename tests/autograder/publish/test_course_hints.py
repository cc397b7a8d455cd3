"""Which hint addresses a misconception: the exercises' hints read from their modules' source (never
imported), in both languages, and the choice made from the judge's finding, not from any student text."""

from __future__ import annotations

import re

import pytest

from autograder.publish.course_hints import Hint, addressing, hints_of, mistake_text, mistakes_of
from namedaxes.exercises import scaled_sum as q_scaled_sum


def test_the_hints_are_the_modules_own_in_order_and_translated():
    hints = hints_of("scaled_sum")["global_max_share"]
    assert [h.en for h in hints] == q_scaled_sum.global_max_share._hints
    assert [h.number for h in hints] == [1, 2, 3] and {h.of for h in hints} == {3}
    assert all(re.search(r"[\u4e00-\u9fff]", h.zh) for h in hints)  # the catalog's Chinese


def test_a_notebooks_package_gives_the_hints_of_all_its_exercises():
    from namedaxes.exercises import collectives

    hints = hints_of("collectives")
    assert set(hints) == {"median_centered", "sum_scatter_columns", "ring_all_reduce", "fsdp_step"}
    assert [h.en for h in hints["ring_all_reduce"]] == collectives.ring_all_reduce._hints


@pytest.mark.parametrize("module", ["no_such_module", "../solutions", "scaled_sum.py", "", "Scaled"])
def test_an_unknown_or_path_like_module_has_no_hints(module):
    assert hints_of(module) == {}


HINTS = (
    Hint(1, 3, "Think about what each device holds.", "一"),
    Hint(2, 3, "Use `lax.psum` over `DEVICES`.", "二"),
    Hint(3, 3, "`lax.pmean` divides by the device count; `lax.psum` does not.", "三"),
)


@pytest.mark.parametrize(
    ("key", "number"),
    [
        ("values_differ(key=f(x))|comm_missing(missing=psum,seen=pmean)", 3),  # what was done counts twice
        ("values_differ(key=f(x))|comm_missing(missing=psum,seen=none)", 2),  # the expected collective
        ("values_differ(key=f(x))", 1),  # no names: the most general hint
        ("work_flops(case=x)", 1),
    ],
)
def test_the_hint_that_shows_the_findings_names_addresses_it(key, number):
    assert addressing({"key": key}, HINTS).number == number


def test_no_hints_no_choice():
    assert addressing({"key": "comm_missing(missing=psum,seen=pmean)"}, ()) is None


def test_a_known_mistake_is_addressed_by_the_hint_its_exercise_names():
    """Issue 48: the exercise names the hint for each of its known mistakes (`exercise(..., mistakes={...})`),
    read from the module's source like the hints; a number outside the hints falls back to the names' choice."""
    from namedaxes.exercises import axis_names, large_models, scaled_sum, step_anatomy

    assert mistakes_of("axis_names")["rank_weighted_sum"] == axis_names.rank_weighted_sum.mistakes
    assert mistakes_of("large_models")["causal_ring_attention"] == large_models.causal_ring_attention.mistakes
    # two exercises of one name (scaled_sum's values and its psum): the one that names mistakes
    assert mistakes_of("scaled_sum")["scaled_sum"] == scaled_sum.scaled_sum.mistakes != {}
    assert mistakes_of("step_anatomy") == {
        "mixed_train_step": step_anatomy.mixed_train_step.mistakes,
        "accumulate_grads": step_anatomy.accumulate_grads.mistakes,  # issue 61: the sum for the mean
    }
    assert mistakes_of("multi_process_none") == {} and mistakes_of("no_such_module") == {}
    declared = {"pmean_twice": 2, "out_of_range": 9}
    found = {"key": "known_mistake(module=m,mistake=pmean_twice)", "mistake": "pmean_twice"}
    assert addressing(found, HINTS, declared).number == 2
    assert addressing({**found, "mistake": "out_of_range"}, HINTS, declared).number == 1
    assert addressing(found, HINTS).number == 1  # no declaration: the names' choice (none here: the first)


def test_a_known_mistakes_sentence_is_the_checks_own_and_only_a_listed_mistakes():
    from namedaxes.exercises import large_models

    assert mistake_text("large_models", "ring_local_mask") == large_models.TEXT.english("ring_local_mask")
    assert mistake_text("large_models", "ring_holds_all") == ""  # a sentence of TEXT, but no known mistake
    assert mistake_text("no_such_module", "ring_local_mask") == mistake_text("../x", "y") == ""
