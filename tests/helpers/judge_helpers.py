"""Test-only: the autograder's verdict on two `observe(...)` results, judged in the test process.

The exercise tests (tests/namedaxes/exercises/test_*.py, each with its one-judge test, `agreement_test`, and
tests/autograder/judge/test_programs.py) prove each exercise's RIGHT / WRONG / EQUIVALENT matrix
against the grader's own judge. Grading
never uses this module: it lives in tests/ so that the grader's code holds no test secret and no
test-only helper (and `autograder.judge.compare` does not import `autograder.judge.programs`).

Observations are normalized the way `namedaxes.grading.record` saves them; exported programs are
judged by `autograder.judge.programs.Judge` with a fixed test secret (the test process is a clean
process too: no student code runs in it), everything else by `autograder.judge.compare.compare`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from types import SimpleNamespace

import pytest

from autograder.judge.compare import compare, normalize
from autograder.judge.exported import is_program_observation
from autograder.judge.formulas import is_formula_observation, named_figures
from autograder.judge.programs import Judge
from autograder.publish.words import SHOWN, say
from autograder.reasons import Kind, Verdict
from namedaxes.checking import CheckFailed, proving
from namedaxes.grading import FORMULA_KEY

__all__ = [
    "judge_observations",
    "derived",
    "observations_match",
    "Said",
    "said",
    "visible",
    "assert_check_passes",
    "assert_check_fails",
    "observe",
    "agreement_test",
    "named_mistakes",
    "judged_mistakes",
    "compared_values",
    "matrix_rows",
    "judging_formulas_of",
]

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
    """The autograder's verdict on raw `observe(...)` results (normalized the way `record` saves them).
    Judged once per process for two observations that both came from `observe` (see there)."""
    key = (id(reference), id(observed), grade_id)
    memo = key[0] in _OBSERVED and key[1] in _OBSERVED
    if memo and key in _VERDICTS:
        return _VERDICTS[key]
    said = _judged(reference, observed, grade_id)
    if memo:
        _VERDICTS[key] = said
    return said


def _judged(reference: dict, observed: dict, grade_id: str) -> Said:
    reference, observed = normalize(reference), normalize(observed)
    if is_program_observation(reference):
        return Said(_judge().judge_observations(grade_id, reference, observed))
    verdict = compare(reference, observed)
    marker = reference.get(FORMULA_KEY) if is_formula_observation(reference) else None
    module, listed = _FORMULA_MISTAKES.get(
        f"{marker.get('module')}:{marker.get('exercise')}" if marker else "", ("", {})
    )
    return Said(named_figures(verdict, reference, observed, listed, module) if listed else verdict)


# ---------------------------------------------------------------- formula exercises: one grading run's mistakes
_FORMULA_MISTAKES: dict = {}  # "<module>:<exercise>" -> (module, its mistakes' figures on the run's cases)


@contextmanager
def judging_formulas_of(refs: dict, run):
    """Within: formula observations are judged as the grader judges them in the run `run` (`formula_run_of`),
    a wrong figure named where it is one of the usual mistakes on the run's cases. The observations must be made
    on those cases (the kernel handed them, `namedaxes.grading.HIDDEN_CASES_ENV`)."""
    added = {}
    for gid, (module, listed) in run.mistakes.items():
        marker = refs[gid][FORMULA_KEY]
        added[f"{marker['module']}:{marker['exercise']}"] = (module, listed)
    _FORMULA_MISTAKES.update(added)
    _VERDICTS.clear()
    try:
        yield
    finally:
        for key in added:
            _FORMULA_MISTAKES.pop(key, None)
        _VERDICTS.clear()


def derived(observation: dict, grade_id: str = "test") -> dict:
    """What the grader computes from an `observe(...)` of exported programs (outputs of every case on
    the hidden inputs, `axes` and `communication` read from the compiled programs)."""
    return _judge().derive(grade_id, normalize(observation))


def observations_match(reference: dict, observed: dict) -> bool:
    """Does `observed` pass against `reference`? (`judge_observations(...).passed`)"""
    return judge_observations(reference, observed).passed


# ---------------------------------------------------------------- one run per answer and process
# The matrices (RIGHT / EQUIVALENT / WRONG answers with their messages), the observe() stability tests
# and the one-judge test (`agreement_test`) of an exercise ask the same questions of the same answers:
# what the visible check says, what observe() records, what the grader's judge decides. Each is
# computed once per test process and answer; the tests of one file run in one process (make test's
# `--dist loadfile`), so a file's agreement test, written after its matrices, costs little more than
# its grader half for the answers no matrix observed. Nothing is cached across processes or runs.
_CHECKS: dict = {}  # (check, args) -> None (passed) or the CheckFailed it raised
_OBSERVATIONS: dict = {}  # (exercise, answer) -> ("ok", observation) or ("raised", exception)
_OBSERVED: dict = {}  # id -> an observation made by observe() (kept alive: its id stays its own)
_VERDICTS: dict = {}  # (id(reference), id(observed), grade_id) -> Said


def _hashable(key) -> bool:
    try:
        hash(key)
    except TypeError:
        return False
    return True


def _outcome(check: Callable, args: tuple) -> CheckFailed | None:
    """The CheckFailed `check(*args)` raised, or None when it passed: run once per process and arguments
    (when they can be remembered). Any other exception is the checker's own bug and propagates."""
    key = (check, args)
    remembered = _hashable(key)
    if remembered and key in _CHECKS:
        return _CHECKS[key]
    try:
        check(*args)
        outcome = None
    except CheckFailed as err:
        outcome = err
    if remembered:
        _CHECKS[key] = outcome
    return outcome


def visible(check: Callable, *args) -> str | None:
    """What the visible check `check(*args)` says: None when it passes, else its CheckFailed message."""
    outcome = _outcome(check, args)
    return None if outcome is None else str(outcome)


def _remembered(check: Callable) -> Callable:
    """`check` run through `_outcome`: the CheckFailed it raised for these arguments is raised again."""

    def replay(*args) -> None:
        outcome = _outcome(check, args)
        if outcome is not None:
            raise outcome

    return replay


def assert_check_fails(check: Callable, *args, match: str | None = None) -> str:
    """`namedaxes.checking.assert_check_fails` on `check` run once per process and answer (`visible`)."""
    return proving.assert_check_fails(_remembered(check), *args, match=match)


def assert_check_passes(check: Callable, *args) -> None:
    """`namedaxes.checking.assert_check_passes` on `check` run once per process and answer (`visible`)."""
    proving.assert_check_passes(_remembered(check), *args)


def observe(exercise, answer) -> dict:
    """`exercise.observe(answer)`, run once per process and answer (the same object each time: never
    mutate it); an exception it raised is raised again."""
    key = (exercise, answer)
    if key not in _OBSERVATIONS:
        try:
            observation = exercise.observe(answer)
        except Exception as err:  # noqa: BLE001 - remembered and raised again, as the grader sees it
            _OBSERVATIONS[key] = ("raised", err)
        else:
            _OBSERVATIONS[key] = ("ok", observation)
            _OBSERVED[id(observation)] = observation
    how, what = _OBSERVATIONS[key]
    if how == "raised":
        raise what
    return what


def _template_regex(template: str) -> re.Pattern:
    """A sentence template as a pattern its filled-in text matches (each `{field}` any text)."""
    parts = re.split(r"\{[a-z_]+\}", template)
    return re.compile(".*?".join(re.escape(p) for p in parts), re.S)


def named_mistakes(exercise, message: str) -> set[str]:
    """The known mistakes of `exercise` (`Exercise.mistakes`) whose sentence the check's `message` says."""
    import importlib

    module = importlib.import_module(exercise.module)  # a notebook's package keeps its TEXT in the package
    text = getattr(module, "TEXT", None) or importlib.import_module(exercise.module.rsplit(".", 1)[0]).TEXT
    return {key for key in exercise.mistakes if _template_regex(text.english(key)).search(message or "")}


def judged_mistakes(verdict: Verdict) -> set[str]:
    """The known mistakes the judge named in `verdict` (`known_mistake` findings)."""
    return {str(d.get("mistake")) for d in verdict.differences if d.kind is Kind.KNOWN_MISTAKE}


def compared_values(verdict: Verdict) -> bool:
    """Did the judge compare the program's values (a `values_differ` or `known_mistake` finding)?"""
    return any(d.kind in (Kind.VALUES_DIFFER, Kind.KNOWN_MISTAKE) for d in verdict.differences)


def agreement_test(matrices: dict) -> Callable:
    """The one-judge test of a file's exercises (issue 16): every RIGHT / EQUIVALENT and WRONG answer goes
        through the visible check (`Exercise.check`, as in the student's kernel) and through the grader's
        path (the hidden test's `observe`, judged against the reference's programs by the grader's judge);
        both must say the same, pass or fail. Where the exercise names known mistakes (`Exercise.mistakes`, issue
        48), the check's is one the judge names too (the judge names each case's: the second-to-last device is
    "another device" on 8 devices and the first on 2), and neither names one alone: the class's misconception
    map groups by what the judge names. Where the judge compared no values (a program refused for its layout
    or its devices before it ran: the values of weights it never takes), its finding is that, and it names
    no mistake of values.

        `matrices`: name -> (exercise, reference, RIGHT answers, WRONG (answer, message) pairs). Bind the
        result to a module-level name that starts with `test_`, after the matrices' own tests."""
    cases = [(name, "right", i) for name, (_, _, right, _) in matrices.items() for i in range(len(right))]
    cases += [(name, "wrong", i) for name, (_, _, _, wrong) in matrices.items() for i in range(len(wrong))]

    def graded(exercise, reference, answer) -> Verdict | None:
        try:
            observed = observe(exercise, answer)
        except Exception:  # noqa: BLE001 - the hidden test raises: 0 points
            return None
        return judge_observations(observe(exercise, reference), observed).verdict

    @pytest.mark.parametrize("name, kind, index", cases, ids=[f"{n}-{k}{i}" for n, k, i in cases])
    def test_the_visible_check_and_the_grader_agree(name, kind, index):
        exercise, reference, right, wrong = matrices[name]
        answer = right[index] if kind == "right" else wrong[index][0]
        message = visible(exercise.check, answer)
        verdict = graded(exercise, reference, answer)
        passed, graded_passed = message is None, verdict is not None and verdict.passed
        assert passed == graded_passed == (kind == "right"), (passed, graded_passed)
        if verdict is not None and exercise.mistakes and compared_values(verdict):
            # the check names the mistake of its first wrong case; the judge, of each case whose values it compared
            named, judged = named_mistakes(exercise, message), judged_mistakes(verdict)
            assert named <= judged and bool(named) == bool(judged), (message, verdict)

    return test_the_visible_check_and_the_grader_agree


def matrix_rows(reference, equivalent: dict, wrong: dict) -> tuple:
    """(reference, RIGHT answers: the reference and every EQUIVALENT one, WRONG (answer, message) pairs)."""
    return reference, [reference, *(a for a in equivalent.values() if a is not reference)], list(wrong.values())


# ---------------------------------------------------------------- formula exercises: one grading run's draw
class FormulaReferences(dict):
    """What the worker's `References` give the judge: grade_id -> the cached reference observation, and the
    run's secret (what `autograder.judge.formulas.formula_run` reads)."""

    def __init__(self, loaded: dict, secret: bytes):
        super().__init__(loaded)
        self.secret, self.pairs = secret, {}


def formula_run_of(notebook: str, loaded: dict, secret: bytes):
    """(the references, this run's formula cases and reference observations) for the solution `notebook`,
    drawn as the grader draws them from `secret`."""
    import nbformat

    from autograder.judge.formulas import formula_run
    from courseinfo.course import SOLUTIONS

    raw = (SOLUTIONS / f"{notebook}.ipynb").read_bytes()
    source = SimpleNamespace(raw=raw, nb=nbformat.reads(raw.decode("utf-8"), as_version=4))
    refs = FormulaReferences(loaded, secret)
    return refs, formula_run(source, refs)
