"""The failure kinds of a check, and the two ways exercise modules raise them.

- `CheckFailed`: the answer is wrong (or crashes); the message says what to fix. It is an
  `AssertionError`, so nbgrader counts it as a failed test; its `ename`/`evalue` are what the grader
  reads.
- `NotAttempted` (a `CheckFailed`, so every `except CheckFailed` and nbgrader treat it alike): the
  answer is not started yet: its body is still the stub's `raise NotImplementedError()` (or it calls a
  function that is), or the name it should define does not exist yet. `progress()` lists it as "not
  started", not as wrong, and the grader's feedback names it apart.

IPython shows `_render_traceback_()` instead of a traceback (`namedaxes.checking.rendering`): the
message in red, then how to get a hint. Those lines are also the `traceback` of the notebook's error
output, which is what nbgrader's Validate dialog and feedback show.
"""

from __future__ import annotations

import re
from typing import NoReturn

from .rendering import render_failure

__all__ = ["CheckFailed", "NotAttempted", "fail", "fail_paragraph"]


class CheckFailed(AssertionError):
    """A student-facing check failed; the message says what to fix.

    IPython shows `_render_traceback_()` instead of a traceback: the message in red,
    then how to get a hint. Those lines are also the `traceback` of the notebook's
    error output, which is what nbgrader's Validate dialog and feedback show;
    `ename` stays the class's name and `evalue` the plain message.
    """

    hint_line: str = ""

    def _render_traceback_(self) -> list[str]:
        return render_failure(str(self), self.hint_line)


class NotAttempted(CheckFailed):
    """The answer is not started yet (still the stub, or not defined): the message says how to begin.

    A `CheckFailed`, so nbgrader counts it as a failed test and every `except CheckFailed` catches it;
    `progress()` and the grader's feedback tell it from a wrong answer by its kind.
    """


_SPACE_AFTER_FULL_WIDTH = re.compile(r"(?<=[，。：；？！、）])[ \t]+")
_FULL_STOP_IN_QUOTE = re.compile(r"[.](?=[\"”']?[。，；：！？])")


def fail(msg: str, *, kind: type[CheckFailed] = CheckFailed) -> NoReturn:
    """Raise `CheckFailed` with `msg` as given (see `fail_paragraph` for the reflowing variant), with one rule of
    composition: a sentence appended to another starts with a space in English (" That is ..."), but
    full-width punctuation carries its own space, so a space after it (。 这是 ...) is dropped; and a quoted
    English text (JAX's error) that ends with a full stop, quoted in a Chinese sentence, loses that stop
    (`"... device."。` reads `"... device"。`). `kind=NotAttempted` for an answer that is not started."""
    raise kind(_FULL_STOP_IN_QUOTE.sub("", _SPACE_AFTER_FULL_WIDTH.sub("", msg)))


def fail_paragraph(msg: str, *, kind: type[CheckFailed] = CheckFailed) -> NoReturn:
    """Raise with the message as one paragraph (source indentation removed)."""
    fail(" ".join(line.strip() for line in msg.strip().splitlines() if line.strip()), kind=kind)
