"""Test-only: the autograder's verdict on two `observe(...)` results, judged in the test process.

The exercise tests (tests/namedaxes/exercises/test_*.py, test_one_judge.py among them, and
tests/autograder/judge/test_programs.py) prove each exercise's RIGHT / WRONG / EQUIVALENT matrix
against the grader's own judge. Grading
never uses this module: it lives in tests/ so that the grader's code holds no test secret and no
test-only helper (and `autograder.judge.compare` does not import `autograder.judge.programs`).

Observations are normalized the way `namedaxes.grading.record` saves them; exported programs are
judged by `autograder.judge.programs.Judge` with a fixed test secret (the test process is a clean
process too: no student code runs in it), everything else by `autograder.judge.compare.compare`.
"""

from __future__ import annotations

from dataclasses import dataclass

from autograder.judge.compare import compare, normalize
from autograder.judge.exported import is_program_observation
from autograder.judge.programs import Judge
from autograder.publish.words import SHOWN, say
from autograder.records import Verdict

__all__ = ["judge_observations", "derived", "observations_match", "Said", "said"]

_TEST_SECRET = b"observations_match: exercise tests only"
_judges: dict = {}


def _judge() -> Judge:
    return _judges.get("judge") or _judges.setdefault("judge", Judge(_TEST_SECRET))


@dataclass(frozen=True)
class Said:
    """A verdict (data, `verdict`) with the words a student would read, in English: `differences` (one
    sentence per finding) and `reason()` (what the feedback page shows), as `publish.words` writes them."""

    verdict: Verdict

    @property
    def passed(self) -> bool:
        return self.verdict.passed

    @property
    def differences(self) -> list[str]:
        return [say(d, "en") for d in self.verdict.differences]

    def reason(self, limit: int = SHOWN) -> str:
        return say(self.verdict, "en", shown=limit)


def said(verdict: Verdict) -> Said:
    return Said(verdict)


def judge_observations(reference: dict, observed: dict, grade_id: str = "test") -> Said:
    """The autograder's verdict on raw `observe(...)` results (normalized the way `record` saves them)."""
    reference, observed = normalize(reference), normalize(observed)
    if is_program_observation(reference):
        return Said(_judge().judge_observations(grade_id, reference, observed))
    return Said(compare(reference, observed))


def derived(observation: dict, grade_id: str = "test") -> dict:
    """What the grader computes from an `observe(...)` of exported programs (outputs of every case on
    the hidden inputs, `axes` and `communication` read from the compiled programs)."""
    return _judge().derive(grade_id, normalize(observation))


def observations_match(reference: dict, observed: dict) -> bool:
    """Does `observed` pass against `reference`? (`judge_observations(...).passed`)"""
    return judge_observations(reference, observed).passed
