"""Formula exercises: their hidden cases drawn here from the run's secret, the reference's observations
computed here on them.

A formula exercise (notebook 10's `step_costs` and `choose_layout`) answers with plain numbers, and its
formula runs only in a kernel. Before issue 46 its hidden cases were fixed (a seed from the grade id, a
list in the kernel's package), so a table of right figures, filled once from any right answer and then
circulated, scored full marks with no formula. Now:

- the reference's observation of such a test cell names its exercise (`namedaxes.grading.FORMULA_KEY`:
  the exercise module, the exercise, the solution's answers it needs); the reference is authenticated by
  the cache's MAC, so only the instructor's run decides which cells are formula cells and which module
  draws them (and only a module of `namedaxes.exercises`);
- for each grading run the cases are drawn *here*, from the run's secret (`hidden_inputs.hidden_rng`,
  the secret the programs' hidden inputs come from), by the exercise module's `draw_hidden_cases` with the
  solution notebook's own answers (the layout cases need its cost model to have one cheapest layout);
- the kernel is handed the cases by the grader's trusted prelude (`prelude`: the environment variable
  `namedaxes.grading.HIDDEN_CASES_ENV`), before the first cell; no number computed on them goes in;
- the reference's observation is computed here, once per run, assignment and worker, by the same
  module's `observation_on` with the solution's answers: the cached reference run's own figures (on the
  visible cases) are not used. The student's recorded figures are compared with it (`compare`); the
  cases the kernel echoes are never read, so a kernel that swaps them for cases its table holds scores 0.

Knowing the cases in the kernel helps no one: they are fresh every run, and their figures need a formula.

The solution's answers are the instructor's own code (the source notebook's `imports` cell and the answer
cells named), run here in the worker as `tools.answer_tables` runs them, never a student's. It costs about
1.3 s (jax and the notebook's imports) once per worker and run.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace

import numpy as np

from courseinfo.nbgrader_metadata import nbgrader_cell
from namedaxes.exercises import exercise_module
from namedaxes.grading import FORMULA_KEY, HIDDEN_CASES_ENV

from ..reasons import Kind, Verdict, phrase
from .compare import ATOL, RTOL, compare
from .hidden_inputs import hidden_rng

__all__ = [
    "FormulaRun",
    "formula_run",
    "formula_prelude",
    "solution_answers",
    "is_formula_observation",
    "named_figures",
]

_MODULES = "namedaxes.exercises."  # the only modules a reference may name
_RUNS: dict = {}  # (secret, source digest) -> FormulaRun


@dataclass(frozen=True)
class FormulaRun:
    """One run's hidden cases of an assignment's formula exercises, and the reference's observations."""

    cases: dict = field(default_factory=dict)  # "<module>:<exercise>" -> [case, ...] (JSON), what the kernel gets
    expected: dict = field(default_factory=dict)  # grade_id -> the reference's observation on those cases
    mistakes: dict = field(default_factory=dict)  # grade_id -> (module, the usual mistakes' figures on them)

    def verdict(self, gid: str, observed: dict) -> Verdict:
        """The student's figures compared with the reference's on this run's cases, a wrong figure named where
        it is one of the usual mistakes (`named_figures`)."""
        module, listed = self.mistakes.get(gid, ("", {}))
        return named_figures(compare(self.expected[gid], observed), self.expected[gid], observed, listed, module)

    def prelude(self) -> str:
        """Trusted code for the kernel, before its first cell: the cases, in the environment."""
        if not self.cases:
            return ""
        text = json.dumps(self.cases, sort_keys=True, separators=(",", ":"))
        return f"import os as _o\n_o.environ[{HIDDEN_CASES_ENV!r}] = {text!r}\ndel _o\n"


def is_formula_observation(observation) -> bool:
    marker = observation.get(FORMULA_KEY) if isinstance(observation, dict) else None
    return isinstance(marker, dict) and str(marker.get("module", "")).startswith(_MODULES)


def solution_answers(nb, names) -> dict:
    """The solution notebook's functions `names`, defined by its `imports` cell and their answer cells."""
    wanted = {"imports", *(f"{name}_answer" for name in names)}
    cells = [(nbgrader_cell(c).grade_id, c.source) for c in nb.cells if c.cell_type == "code"]
    cells = [(grade_id, text) for grade_id, text in cells if grade_id in wanted]  # in the notebook's order
    if {grade_id for grade_id, _ in cells} != wanted:
        raise LookupError(f"the solution notebook has no cell {sorted(wanted - {g for g, _ in cells})}")
    namespace: dict = {"__name__": "solution_answers"}
    for grade_id, text in cells:
        exec(compile(text, f"solution:{grade_id}", "exec"), namespace)  # the instructor's own code
    return {name: namespace[name] for name in names}


def _draw(source, refs, secret: bytes) -> FormulaRun:
    marked = {gid: refs[gid][FORMULA_KEY] for gid in refs if is_formula_observation(refs[gid])}
    if not marked:
        return FormulaRun()
    names = sorted({str(n) for marker in marked.values() for n in marker.get("answers", ())})
    answers = solution_answers(source.nb, names)
    cases, expected, mistakes = {}, {}, {}
    for gid, marker in sorted(marked.items()):
        module = exercise_module(str(marker["module"]))
        exercise = str(marker["exercise"])
        drawn = module.draw_hidden_cases(exercise, hidden_rng(secret, gid, "formula cases"), answers)
        cases[f"{module.__name__}:{exercise}"] = drawn
        expected[gid] = module.observation_on(exercise, drawn, answers)
        if callable(getattr(module, "mistakes_on", None)):
            mistakes[gid] = (module.__name__.removeprefix(_MODULES), module.mistakes_on(exercise, drawn, answers))
    return FormulaRun(cases, expected, mistakes)


def named_figures(verdict: Verdict, expected: dict, observed: dict, listed: dict, module: str) -> Verdict:
    """`verdict` with each wrong figure named where it is one of the usual mistakes: `listed` gives, for each
    figure, one list of `(value, message key)` pairs per case (`mistakes_on`, computed here by the solution's
    answers on this run's cases). A figure is a mistake's when on every case where it differs from the
    reference's it is that mistake's value there (within the comparison's tolerance; a 0 is the check's own
    rule, not a mistake's); the first such mistake, in the list's order, is the finding `known_mistake` (the
    figure's key, the module, the mistake's key in its `TEXT`) in place of "values differ", said in the check's
    words when publishing. Nothing computed on the hidden cases is echoed: only the key of a course sentence."""
    if verdict.passed or not listed:
        return verdict
    out = []
    for d in verdict.differences:
        key = str(d.get("key")) if d.kind is Kind.VALUES_DIFFER else ""
        mistake = _mistake_of(expected.get(key), observed.get(key), listed.get(key)) if key in listed else None
        out.append(phrase("known_mistake", key=key, module=module, mistake=mistake) if mistake else d)
    return replace(verdict, differences=tuple(out))


def _mistake_of(want, got, per_case) -> str | None:
    """The first mistake whose value every differing case's figure is (None: none is, the shapes differ, or what
    was recorded is no array of numbers)."""
    try:
        want, got = np.asarray(want, np.float64), np.asarray(got, np.float64)
    except (TypeError, ValueError):
        return None
    if want.ndim != 1 or got.shape != want.shape or len(per_case or ()) != len(want):
        return None
    differ = [i for i in range(len(want)) if not np.isclose(got[i], want[i], rtol=RTOL, atol=ATOL)]
    order = list(dict.fromkeys(k for case in per_case for _, k in case))
    for mistake in order:
        if differ and all(
            any(k == mistake and v and np.isclose(got[i], v, rtol=RTOL, atol=ATOL) for v, k in per_case[i])
            for i in differ
        ):
            return str(mistake)
    return None


def formula_run(source, refs) -> FormulaRun:
    """This run's formula cases and reference observations for `source` (drawn once per process and run)."""
    secret = getattr(refs, "secret", b"")
    if not secret or source is None:
        return FormulaRun()
    key = (secret, hashlib.sha256(source.raw).hexdigest())
    if key not in _RUNS:
        _RUNS[key] = _draw(source, refs, secret)
    return _RUNS[key]


def formula_prelude(source, refs) -> str:
    """The kernel's prelude piece that hands it this run's formula cases ("" where there are none)."""
    return formula_run(source, refs).prelude()
