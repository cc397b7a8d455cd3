"""One exercise (`Exercise`: check, hints, observe, judge), and how an exercise module makes its own.

An exercise module binds itself explicitly, at its top:

    exercise = exercises_for(__package__, text)   # this package's Exercise maker, bound to its text.py

and makes each exercise with `exercise("scaled_sum", _check_scaled_sum, observe=...)`: its words are data in the
package's `text.py` (`TEXT`, the sentences; `HINTS[name]`, its hints; `MISTAKE_HINTS[name]`, the hint of each
known mistake), which imports without JAX, so the class report and the catalog tool read them by importing it.

Known mistakes: an exercise whose check diagnoses a wrong answer's values by the results of the usual
mistakes names them, each with the hint that addresses it: `MISTAKE_HINTS[name] = {"weighted_from_one": 3, ...}`
(keys of its package's `TEXT`, the very sentence the check adds). Its module (a notebook's package, whose
`__init__` re-exports it) then has `known_mistakes(exercise, case, inputs)`: those mistakes' results on
one graded case's inputs, as `(values, key, fields)`. The check and the grader's judge both call it (the
judge on its hidden inputs, `autograder/judge/mistakes.py`), so the class's misconception map says what the
check said.
Nothing inspects the caller's frame: the module an exercise belongs to (its progress list, its
`q.<attr>` in hints) is the one it names.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterable

from ..grading import MISTAKES_KEY, PROGRAMS_KEY, judged_outside
from ..i18n import gettext
from .course_devices import expect_course_devices
from .explaining import explain_error, explained
from .failures import CheckFailed, NotAttempted
from .registry import FAILED, JUDGED, NOT_ATTEMPTED, PASSED, LastCheck, record_check, register
from .rendering import GREEN, color
from .text import TEXT

__all__ = ["Exercise", "exercises_for"]


def _say(text: str) -> None:
    print(text)


class Exercise:
    """One exercise: `check(answer)` raises with a specific message, `hint()` nudges.

    `observe(answer)` (optional) returns the observations the autograder
    compares with the reference solution's: a dict of arrays / JSON values
    computed on seeded random inputs. It must be deterministic.

    `check` runs the module's check inside `explained(name)`, so crashes the module
    does not translate itself still read as feedback; then, once the hidden test's first program
    exports (`_expect_recordable`), `judge(answer)` if given (the grader's judging steps that need an
    exportable program: layout, communication that matters); it records its last check for
    `progress`. Several `Exercise` objects may share a `name` (one per test cell of an
    exercise): the exercise passes when all of them do.

    In a kernel the grader runs (`namedaxes.grading.judged_outside()`), `check` only makes sure the answer
    exports (so an unwritten or crashing answer still reads as its message) and leaves the rest to the
    grader's judge: the judge decides every test cell outside the kernel, on hidden inputs, and runs the
    same judgement as this check (each exercise's tests prove the two agree: `agreement_test`). A check run
    there again would only cost the class's grading time (most of a graded kernel's CPU) and could never
    add a point, since nothing a kernel says is a fact the grade may rest on.
    """

    def __init__(
        self,
        name: str,
        check: Callable,
        hints: Iterable[str] = (),
        observe: Callable | None = None,
        *,
        module: str,
        judge: Callable | None = None,
        mistakes: dict[str, int] | None = None,
    ):
        self.name = name
        self.module = module  # the exercise module it belongs to (its progress list, its `q.<attr>`)
        self._check = check
        self._judge = judge  # the grader's steps on the answer's program, once it is known to export
        self._hints = list(hints)
        self._observe = observe
        self.mistakes = dict(mistakes or {})  # a known mistake (a key of the module's TEXT) -> its hint's number
        self._shown = 0
        # Keyed by what the exercise is, so re-importing the module replaces it rather than adding a copy.
        code = getattr(check, "__code__", None)
        self.key = (self.module, name, getattr(check, "__qualname__", repr(check)), getattr(code, "co_firstlineno", 0))
        register(self)

    def _attr(self) -> str:
        """The name this exercise has in its module (`q.<attr>` in the notebook)."""
        module = sys.modules.get(self.module)
        for attr in dir(module) if module else ():  # a package's face shows its exercises lazily (`notebook_face`)
            if getattr(module, attr, None) is self:
                return attr
        return self.name

    def check(self, *answer) -> None:
        __tracebackhide__ = True  # pytest: report the caller's line
        judged = judged_outside()
        try:
            expect_course_devices()
            if judged:
                self._exports(answer)
            else:
                self._check_here(answer)
        except CheckFailed as err:
            kind = NotAttempted if isinstance(err, NotAttempted) else CheckFailed
            record_check(self, LastCheck(NOT_ATTEMPTED if kind is NotAttempted else FAILED, str(err), answer))
            # A fresh exception without the checker's internal frames; IPython shows only its message.
            failure = kind(str(err))
            failure.hint_line = TEXT["hint_line"].format(attr=self._attr()) if self._hints else ""
            raise failure from None
        except BaseException as err:
            record_check(self, LastCheck(FAILED, f"{type(err).__name__}: {err}", answer))
            raise
        record_check(self, LastCheck(JUDGED if judged else PASSED, "", answer))
        _say(
            TEXT["judged_outside"].format(name=self.name)
            if judged
            else color(GREEN, TEXT["passed"].format(name=self.name))
        )

    def _check_here(self, answer: tuple) -> None:
        """The visible check itself: the module's rules, the export, the judge's steps on the exported program."""
        with explained(self.name):
            self._check(*answer)
        self._expect_recordable(answer)
        if self._judge is not None:
            with explained(self.name):
                self._judge(*answer)

    def _exports(self, answer: tuple) -> None:
        """While grading: the hidden test's first program exports (an unwritten answer raises `NotAttempted`,
        a crash its message); what it computes is the judge's to say. Without `observe` nothing is judged
        outside: the check runs here."""
        if self._observe is None:
            self._check_here(answer)
            return
        with explained(self.name):
            self._observe_first_case(answer)

    def _observe_first_case(self, answer: tuple) -> None:
        """The hidden test's export of the answer, on its first case only (`grading.one_case`)."""
        from ..grading import one_case

        with one_case():
            self._observe(*answer)

    def _expect_recordable(self, answer: tuple) -> None:
        """The grader judges the program the hidden test exports: an answer that passes here but cannot be
        exported (a traced value turned into a Python number, say) would get 0 there, so it fails here."""
        if self._observe is None:
            return
        try:
            self._observe_first_case(answer)
        except CheckFailed:
            raise
        except Exception as err:  # noqa: BLE001 - translated for the student
            why = explain_error(err, self.name) or TEXT["raised"].format(
                name=self.name, error=f"`{type(err).__name__}: {(str(err).strip().splitlines() or [''])[0][:300]}`"
            )
            raise CheckFailed(TEXT["not_recordable"].format(name=self.name, why=why)) from None

    def hint(self) -> None:
        if not self._hints:
            print(TEXT["no_hint"])
            return
        i = min(self._shown, len(self._hints) - 1)
        self._shown += 1
        more = TEXT["hint_more"] if i + 1 < len(self._hints) else ""
        print(TEXT["hint"].format(i=i + 1, n=len(self._hints), name=self.name, more=more, text=gettext(self._hints[i])))

    def observe(self, *answer) -> dict:
        if self._observe is None:
            raise NotImplementedError(f"{self.name} has no observe()")
        found = self._observe(*answer)
        meta = found.get(PROGRAMS_KEY) if self.mistakes and isinstance(found, dict) else None
        if isinstance(meta, dict):  # the judge may ask this module which known mistake wrong values are
            found[PROGRAMS_KEY] = {**meta, MISTAKES_KEY: {"module": self.module, "exercise": self.name}}
        return found

    def __repr__(self) -> str:
        return f"<Exercise {self.name}: .check(...), .hint()>"


def exercises_for(module: str, text=None) -> Callable[..., Exercise]:
    """The `Exercise` maker of one notebook's package, bound to it and to its words: `exercise =
    exercises_for(__package__, text)` (`text`, the package's `text.py`), then `scaled_sum = exercise("scaled_sum",
    _check_scaled_sum, observe=...)` takes its hints from `text.HINTS["scaled_sum"]` and its known mistakes' hints
    from `text.MISTAKE_HINTS` (none when absent). A second test cell of one exercise whose hints differ names its
    own entry: `exercise("scaled_sum", _check_psum, text="scaled_sum_uses_psum")`. Without `text` (tests), the
    maker takes `hints=` and `mistakes=` as given."""
    if text is None:
        return functools.partial(Exercise, module=module)

    def exercise(name: str, check: Callable, observe: Callable | None = None, **given) -> Exercise:
        key = given.pop("text", name)
        hints, mistakes = text.HINTS[key], text.MISTAKE_HINTS.get(key, {})
        return Exercise(name, check, hints, observe, module=module, mistakes=mistakes, **given)

    return exercise
