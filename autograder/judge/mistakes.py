"""Known mistakes: which usual mistake a wrong program's values are, named as the visible check names it.

    source = mistake_source(meta)                       # ("namedaxes.exercises.axis_names", "center") | None
    found = diagnose(source, case, inputs, outputs, rtol, atol)   # Phrase known_mistake | None

A visible check tells a student more than "values differ": it compares their values with the results of the
exercise's usual mistakes (a mean per position, positions counted from 1, a ring masked by positions inside
each block) and adds that mistake's sentence. The judge does the same on its hidden inputs, so the class's
misconception map groups two different mistakes of one exercise apart, each under the words the check gave
and the hint that addresses it. The exercise module that names its mistakes (`Exercise(mistakes=...)`) has
`known_mistakes(exercise, case, inputs)`: the mistakes' results `(values, key, fields)` on one case's inputs,
the NumPy code its check uses. Here the program's outputs on the hidden inputs are compared with them, with
the case's tolerance; the first that matches is the finding `known_mistake` (the case's key, the module, the
mistake's key in its `TEXT`, and the sentence's fields as `arg_<name>`), in place of "values differ". Its
words are the module's own sentence, in the reader's language, written when publishing (`publish/words.py`).

Which module: the **reference**'s observation names it (`namedaxes.grading.MISTAKES_KEY`; the reference is
the instructor's run, authenticated by the reference cache), only a module of `namedaxes.exercises`, imported
here in the clean scorer process (the checkout's own code, as `formulas.py` imports it). What a student's
observation says about it is never read. Nothing computed on hidden inputs is echoed: a mistake's key and
its fields (names of the exercise, small numbers such as a device count) are the course's, and say only which
known wrong computation the values are, as the visible check says of its own inputs.
"""

from __future__ import annotations

import importlib
import re

import numpy as np

from namedaxes.grading import MISTAKES_KEY

from ..limits import MAX_MISTAKE_FIELD_CHARS, MAX_MISTAKE_FIELDS, MAX_MISTAKE_RESULTS
from ..reasons import MISTAKE_ARG, Phrase, phrase

__all__ = ["mistake_source", "diagnose", "MODULES"]

MODULES = "namedaxes.exercises."  # the only modules a reference may name
_NAME = re.compile(r"[a-z_][a-z0-9_]{0,63}")


def mistake_source(meta) -> tuple[str, str] | None:
    """(module, exercise) of a reference's programs metadata, when it names known mistakes of a course module."""
    named = meta.get(MISTAKES_KEY) if isinstance(meta, dict) else None
    if not isinstance(named, dict):
        return None
    module, exercise = str(named.get("module", "")), str(named.get("exercise", ""))
    short = module.removeprefix(MODULES)
    if not module.startswith(MODULES) or not all(_NAME.fullmatch(p) for p in short.split(".")):
        return None
    return (module, exercise) if _NAME.fullmatch(exercise) else None


def _fields(fields) -> dict:
    """A mistake's sentence fields as finding fields: short text and numbers only."""
    out = {}
    for name, value in list(dict(fields or {}).items())[:MAX_MISTAKE_FIELDS]:
        if not _NAME.fullmatch(str(name)):
            continue
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            value = str(value)
        out[MISTAKE_ARG + str(name)] = value[:MAX_MISTAKE_FIELD_CHARS] if isinstance(value, str) else value
    return out


def diagnose(source, case: str, inputs: list, outputs: dict, rtol=None, atol=None) -> Phrase | None:
    """The known mistake whose results the program's `outputs` (one case, on the hidden `inputs`) are, as a
    finding keyed like the values it replaces (`<case><path>`); None when none is, or the case has several
    outputs, or the module has no such list."""
    if source is None or len(outputs) != 1:
        return None
    ((path, got),) = outputs.items()
    module = importlib.import_module(source[0])
    listed = getattr(module, "known_mistakes", None)
    if not callable(listed):
        return None
    got = np.asarray(got)
    rtol, atol = (1e-5 if rtol is None else rtol), (1e-5 if atol is None else atol)
    for values, key, fields in list(listed(source[1], case, inputs))[:MAX_MISTAKE_RESULTS]:
        values = np.asarray(values)
        if values.shape != got.shape or not _NAME.fullmatch(str(key)):
            continue
        if np.allclose(got.astype(np.float64), values, rtol=rtol, atol=atol, equal_nan=True):
            short = source[0].removeprefix(MODULES)
            return phrase("known_mistake", key=f"{case}{path}", module=short, mistake=str(key), **_fields(fields))
    return None
