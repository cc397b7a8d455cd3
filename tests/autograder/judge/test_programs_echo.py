"""Hidden-case feedback echoes nothing computed on hidden inputs and nothing unbounded (issue 16, part 4).

The scorer's reasons may name what a student's program *is* (its signature, its mesh, the custom calls it
makes, the error it raised while compiling) but every such echo is bounded in count and length
(`autograder.limits.MAX_ECHO_ITEMS`, `MAX_ECHO_CHARS`, `MAX_ERROR_CHARS`); an error raised while the
program ran on the hidden inputs is reported by its type alone; recorded axis names are bounded too.
"""

import judge_helpers
import numpy as np
import pytest
from jax import lax
from judge_helpers import judge_observations, said

from autograder.judge import compare, differences, exported, judged_cases
from autograder.publish.words import say
from namedaxes import DEVICES
from namedaxes.exercises import scaled_sum as q

LONG = "k" * 5000


def ref_scaled_sum(x):
    return lax.psum(x * 2.0, axis_name=DEVICES)


@pytest.fixture(scope="module")
def reference():
    return q.scaled_sum.observe(ref_scaled_sum)


def test_echo_is_bounded_in_count_and_length():
    text = say(differences.echo([LONG] * 1000), "en")
    assert len(text) < (differences.MAX_ECHO_CHARS + 2) * differences.MAX_ECHO_ITEMS + 40
    assert text.count("…") == differences.MAX_ECHO_ITEMS and "994 more" in text
    assert differences.cut("a\x1b[31mb\nc") == "a?[31mb?c"  # no terminal escapes, one line


def test_a_student_pytree_key_is_not_echoed_whole(reference):
    """A program that returns a dict under a 5000-character key (thousands of them would do the same)."""
    observed = q.scaled_sum.observe(lambda x: {LONG + str(i): lax.psum(x * 2.0, DEVICES) for i in range(50)})
    verdict = judge_observations(reference, observed)
    assert not verdict.passed
    reason = verdict.reason(limit=100)
    assert "returns a different structure" in reason and LONG not in reason
    assert max(len(d) for d in verdict.differences) < 600 and "more" in reason


def test_runtime_error_text_never_reaches_the_reason(reference, monkeypatch):
    real = judged_cases.hidden_outputs
    theirs = {
        exported.fingerprint(exported.load_program(np.asarray(v, np.uint8).tobytes()))
        for k, v in reference.items()
        if k.startswith(exported.PROGRAM_PREFIX)
    }

    def student_fails(prog, exp, draw, r):  # the reference's programs run; the student's fail
        if exported.fingerprint(exp) not in theirs:
            raise FloatingPointError("the hidden input 0.73125 at index 3 overflowed")
        return real(prog, exp, draw, r)

    monkeypatch.setattr(judge_helpers, "_judges", {})
    monkeypatch.setattr(judged_cases, "hidden_outputs", student_fails)
    verdict = judge_observations({**reference}, q.scaled_sum.observe(lambda x: lax.psum(x * 3.0, DEVICES)))
    reason = verdict.reason(limit=100)
    assert not verdict.passed and "failed while it ran on the hidden inputs (FloatingPointError" in reason
    assert "0.73125" not in reason and "index 3" not in reason


def test_recorded_axis_names_are_bounded():
    reference = {"axes": [DEVICES]}
    verdict = said(compare.compare(reference, {"axes": [LONG + str(i) for i in range(300)]}))
    reason = verdict.reason()
    assert not verdict.passed and LONG not in reason and len(reason) < 600 and "294 more" in reason


def test_differences_never_print_values(reference):
    """Values cells say which output differs, never by how much or what was expected."""
    verdict = judge_observations(reference, q.scaled_sum.observe(lambda x: lax.psum(x * 2.0, DEVICES) + 0.5))
    assert not verdict.passed
    for difference in verdict.differences:
        assert difference.endswith("values differ") and not any(ch.isdigit() for ch in difference.split(":")[-1])


SENTENCE = "'The judge says you all cheated <b>now</b>'"


def test_a_name_the_program_chose_is_shown_only_as_one_token_of_program_text():
    """Mesh axes, pytree paths, custom calls: a verdict's words are the judge's (the class's map shows them
    under its name), so a name that is not one token of program text is said by its length (issue 46)."""
    for token in ("'devices'", "['w'][0]", "xla_python_cpu_callback", ".params['layer_1']"):
        assert differences.name(token) == token
    for text in (SENTENCE, "['a key with spaces']", "k" * (differences.MAX_ECHO_CHARS + 1), "<b>x</b>"):
        assert say(differences.name(text), "en") == f"a name of {len(text)} characters", text
    listed = say(differences.names(["'batch'", SENTENCE] * 5), "en")
    assert listed.startswith("'batch', a name of 43 characters") and "and 4 more" in listed and "cheated" not in listed
    mesh = say(differences.mesh_names((("devices", SENTENCE), ("Explicit", "Auto"))), "en")
    assert mesh == "'devices': Explicit, a name of 45 characters: Auto"
    layout = say(differences.layout_phrase((("devices",), (SENTENCE,))), "en")
    assert "along dimension 0 over 'devices'" in layout and "cheated" not in layout and "<b>" not in layout
