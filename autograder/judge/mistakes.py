"""Known mistakes: which usual mistake a wrong program's values are, named as the visible check names it.

    source = mistake_source(meta)                       # ("namedaxes.exercises.axis_names", "center") | None
    found = diagnose(source, case, inputs, outputs, rtol, atol)   # {"<case><path>": (Phrase known_mistake, ...)}
    said = named({**found, ...})                        # {"<case><path>": Phrase}: the cell's cases decide

A visible check tells a student more than "values differ": it compares their values with the results of the
exercise's usual mistakes (a mean per position, positions counted from 1, a ring masked by positions inside
each block) and adds that mistake's sentence. The judge does the same on its hidden inputs, so the class's
misconception map groups two different mistakes of one exercise apart, each under the words the check gave
and the hint that addresses it. The exercise module that names its mistakes (`Exercise(mistakes=...)`) has
`known_mistakes(exercise, case, inputs)`: the mistakes' results `(values, key, fields)` on one case's inputs,
the NumPy code its check uses. `values` is one array where the case has one output, or `{path: array}` for
some outputs of a case with several (a training step's new parameters, not its loss; at most
`MAX_MISTAKE_OUTPUTS`): a mistake there names the outputs it covers. Here the program's outputs on the hidden
inputs are compared with them, with the case's tolerance; the mistake that matches an output is its finding
`known_mistake` (the case and output's key, the module, the mistake's key in its `TEXT`, and the sentence's
fields as `arg_<name>`), in place of "values differ". Where two mistakes give the same values on one case
(over 2 devices the mean is half the total), the one another case of the cell names alone is taken, else
neither (`named`). A key None lists another answer's values that are no known mistake (a divisor written by
hand, where it equals one): never named, they keep a mistake whose values they are from being named on that
case alone. Its words are the module's own sentence, in the reader's language, written when publishing
(`publish/words.py`).

Which module: the **reference**'s observation names it (`namedaxes.grading.MISTAKES_KEY`; the reference is
the instructor's run, authenticated by the reference cache), only a module of `namedaxes.exercises`, imported
here in the clean scorer process (the checkout's own code, as `formulas.py` imports it). What a student's
observation says about it is never read. Nothing computed on hidden inputs is echoed: a mistake's key and
its fields (names of the exercise, small numbers such as a device count) are the course's, and say only which
known wrong computation the values are, as the visible check says of its own inputs.

A mistake the program shows in its own text (a matmul of float32 arrays where the exercise asks for bf16) is
named the same way, by the module's `program_mistakes(exercise, case, text)` on the student's exported module
(`diagnose_program`): it stands for all of that case's wrong values, said once.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import numpy as np

from namedaxes.exercises import exercise_module
from namedaxes.grading import MISTAKES_KEY
from namedaxes.judging import ATOL, RTOL

from ..limits import MAX_MISTAKE_FIELD_CHARS, MAX_MISTAKE_FIELDS, MAX_MISTAKE_OUTPUTS, MAX_MISTAKE_RESULTS
from ..reasons import MISTAKE_ARG, Phrase, phrase

__all__ = ["mistake_source", "diagnose", "diagnose_program", "named", "MODULES"]

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


def _matches(values, outputs: dict, rtol: float, atol: float) -> tuple[str, ...]:
    """The output paths a mistake's results cover when the program's `outputs` are those results (() when they
    are not): one array for a case with one output, or {path: array} for some of a case's outputs."""
    if not isinstance(values, Mapping):
        if len(outputs) != 1:
            return ()
        values = {next(iter(outputs)): values}
    if not values or len(values) > MAX_MISTAKE_OUTPUTS:
        return ()
    for path, want in values.items():
        got = outputs.get(path) if isinstance(path, str) else None
        want = np.asarray(want)
        if got is None or np.shape(got) != want.shape:
            return ()
        if not np.allclose(np.asarray(got).astype(np.float64), want, rtol=rtol, atol=atol, equal_nan=True):
            return ()
    return tuple(values)


def diagnose(source, case: str, inputs: list, outputs: dict, rtol=None, atol=None) -> dict[str, tuple[Phrase, ...]]:
    """For each output path whose values (one case, on the hidden `inputs`) are a known mistake's results, keyed
    like the values it replaces (`<case><path>`): the findings of the mistakes that give them, in the list's
    order, each mistake once (with the fields it is first listed with), several where mistakes coincide on
    these inputs (over 2 devices the mean is half the total: `named` decides). {} when none is, the case has
    more than `MAX_MISTAKE_OUTPUTS` outputs, or the module has no such list."""
    if source is None or not 1 <= len(outputs) <= MAX_MISTAKE_OUTPUTS:
        return {}
    module = exercise_module(source[0])
    listed = getattr(module, "known_mistakes", None)
    if not callable(listed):
        return {}
    rtol, atol = (RTOL if rtol is None else rtol), (ATOL if atol is None else atol)
    short, found = source[0].removeprefix(MODULES), {}
    for values, key, fields in list(listed(source[1], case, inputs))[:MAX_MISTAKE_RESULTS]:
        mistake = "" if key is None else str(key)  # None: another answer's values, no known mistake (`named`)
        if mistake and not _NAME.fullmatch(mistake):
            continue
        for path in _matches(values, outputs, rtol, atol):
            if all(mistake != seen.get("mistake") for seen in found.get(path, ())):  # listed twice: the first's
                one = phrase("known_mistake", key=f"{case}{path}", module=short, mistake=mistake, **_fields(fields))
                found[path] = (*found.get(path, ()), one)
    return {f"{case}{path}": found[path] for path in found}


def diagnose_program(source, case: str, text: str) -> Phrase | None:
    """The known mistake a wrong program shows in its own text (its matmuls' element types, say), as the visible
    check reads it from the program it compiles: the exercise module's `program_mistakes(exercise, case, text)`
    (`(key, fields)` pairs, the first taken), a `known_mistake` finding keyed by the case; None when the module
    lists none. `text` is the student's exported module: the fields are read from the program, never from
    values computed on hidden inputs."""
    if source is None:
        return None
    listed = getattr(exercise_module(source[0]), "program_mistakes", None)
    if not callable(listed):
        return None
    for key, fields in list(listed(source[1], case, text))[:MAX_MISTAKE_RESULTS]:
        if _NAME.fullmatch(str(key)):
            return phrase(
                "known_mistake", key=case, module=source[0].removeprefix(MODULES), mistake=str(key), **_fields(fields)
            )
    return None


def named(candidates: dict[str, tuple[Phrase, ...]]) -> dict[str, Phrase]:
    """The known mistake each output's values are (`<case><path>` -> finding), from `diagnose`'s findings of
    one test cell's cases: the one mistake that gives them; where several coincide, the one of those that
    another output or case names alone (a mean taken over 2, 4 and 8 devices is named on all three), with the
    fields of this case; none when that does not decide (the values just differ there). Values the list gives
    as another answer's (key None: a divisor written by hand, a sum the check names in its own words) are never
    named, and keep a mistake they coincide with from being named unless another case names it alone."""
    alone = {found[0].get("mistake") for found in candidates.values() if len(found) == 1} - {""}
    out = {}
    for key, found in candidates.items():
        decided = [f for f in found if f.get("mistake") and (len(found) == 1 or f.get("mistake") in alone)]
        if len(decided) == 1:
            out[key] = decided[0]
    return out
