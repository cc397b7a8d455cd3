"""What the judge checks for each test cell of a notebook, read where the judge reads it (the package's docstring,
step 2): the records of the table (`RefFacts`, `CaseJudged`, `CellJudged`) and how each is read from a reference
observation: `Judge.required` for a cell of exported programs, the exercise module's `known_mistakes` on the
cases' hidden inputs for the mistakes the judge names, `formulas.formula_run` for a formula cell.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from autograder.limits import MAX_MISTAKE_OUTPUTS, MAX_MISTAKE_RESULTS
from courseinfo.course import SOLUTIONS
from namedaxes.grading import FORMULA_KEY, PROGRAMS_KEY

__all__ = [
    "TABLE_SECRET",
    "RefFacts",
    "CaseJudged",
    "CellJudged",
    "judged_facts",
    "case_judged",
    "program_cell",
    "formula_cell",
    "judged_cells",
    "written_number",
]

# Seeds the hidden inputs and formula cases this table draws, so that two runs print the same table (which known
# mistakes a case lists can depend on its inputs). The grader draws its own from each run's secret.
TABLE_SECRET = b"tools.judged_table: a fixed secret of its own"
_MISTAKE_KEY = re.compile(r"[a-z_][a-z0-9_]{0,63}")  # a key the judge names (`autograder.judge.mistakes`)


@dataclass(frozen=True)
class RefFacts:
    """What the reference's program of one case is, compiled as the judge compiles it (`judged_facts`)."""

    mesh: str  # "8", "2×4": the mesh it runs on
    on_mesh: bool = False  # its inputs carry a mesh's shardings: the answer itself decides where results live
    layouts: tuple[str, ...] = ()  # where its results live, as PartitionSpecs ("scalar": a 0-d result)
    regions: tuple[str, ...] = ()  # the mesh axes of each of its per-device regions ("'devices'")
    work: dict = field(default_factory=dict)  # fact of `WORK_FACTS` -> its figure
    sends: tuple[str, ...] = ()  # its schedule: "ppermute over 'stages' 10× ≤ 48 B" (`collective_sends`)


@dataclass(frozen=True)
class CaseJudged:
    """One case of a test cell as the judge runs it: its entry in the reference's metadata, and the reference."""

    name: str
    ref: RefFacts
    values: bool = True  # its outputs on hidden inputs are compared with the reference's
    rtol: float | None = None
    atol: float | None = None
    out_layout: bool = True  # its results must live where the reference's do
    work: dict = field(default_factory=dict)  # fact -> factor (`Case(work=...)`)


@dataclass(frozen=True)
class CellJudged:
    """What the judge checks for one test cell."""

    notebook: str
    grade_id: str
    points: float
    cases: tuple[CaseJudged, ...] = ()
    structure: bool = False  # the reference's collectives themselves, else communication over its axes
    collectives: tuple[str, ...] = ()
    axes: tuple[str, ...] = ()
    only_axes: bool = False
    only_collectives: bool = False
    mistakes: tuple[str, ...] = ()
    formula: str = ""  # the formula exercise this cell records (`FORMULA_KEY`)
    formula_keys: tuple[str, ...] = ()  # the figures compared
    formula_cases: int = 0  # how many cases a run draws
    other: tuple[str, ...] = ()  # recorded keys the judge compares directly (neither programs nor formula)


def written_number(value: float) -> str:
    """A figure as the table writes it: 1,024 or 0.5."""
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:g}"


def _spec(layout) -> str:
    """A layout (per dimension, the mesh axes it is split over) as a PartitionSpec."""
    dims = [None if not axes else axes[0] if len(axes) == 1 else tuple(axes) for axes in layout or ()]
    while dims and dims[-1] is None:
        dims.pop()
    return "P(" + ", ".join(repr(d) for d in dims) + ")"


def judged_facts(ref_case) -> RefFacts:
    """The facts of one case's reference program (`Required.programs`: its program, compiled as the judge compiles
    it, and its mesh)."""
    from autograder.judge import judged_work
    from namedaxes.judging import WORK_FACTS, collective_sends

    shape = tuple(ref_case.shape)  # every fact read, the reductions of the types too (`judged_work`)
    compiled = judged_work(ref_case.compiled, ref_case.program, tuple(ref_case.names), shape, {"reduced_bytes": 1})
    text = compiled.compiled.as_text()
    sends = collective_sends(text, tuple(ref_case.names), shape, ref_case.program.exp.nr_devices)
    return RefFacts(
        mesh="×".join(str(n) for n in shape) if len(shape) > 1 else str(shape[0] if shape else 1),
        on_mesh=ref_case.program.mesh is not None,
        layouts=tuple(
            dict.fromkeys(
                _spec(layout) if len(aval.shape) else "scalar"
                for layout, aval in zip(compiled.out_layouts, ref_case.program.exp.out_avals, strict=False)
            )
        ),
        regions=tuple(dict.fromkeys(", ".join(repr(a) for a in region[0]) for region in compiled.regions)),
        work={f: getattr(compiled.work, f) for f in WORK_FACTS} if compiled.work is not None else {},
        sends=tuple(f"{desc} {n.runs}× ≤ {written_number(n.largest)} B" for desc, n in sends.items() if n.runs),
    )


def case_judged(name: str, entry: dict, ref: RefFacts) -> CaseJudged:
    """One case from its entry in the reference's metadata (`namedaxes.grading.programs`: `draw`, `values`, `rtol`,
    `atol`, `out_layout`, `work`...) and its reference's facts."""
    return CaseJudged(
        name=name,
        ref=ref,
        values=bool(entry.get("values", True)),
        rtol=entry.get("rtol"),
        atol=entry.get("atol"),
        out_layout=bool(entry.get("out_layout", True)),
        work={str(k): float(v) for k, v in (entry.get("work") or {}).items()},
    )


def program_cell(notebook: str, test, required, facts: dict, mistakes: tuple[str, ...] = ()) -> CellJudged:
    """A test cell of exported programs: `test` its `TestCell` (grade id, points), `required` what the judge
    requires of it (`autograder.judge.programs.Required`), `facts` case -> `RefFacts`."""
    return CellJudged(
        notebook,
        test.grade_id,
        test.points,
        tuple(case_judged(name, entry, facts[name]) for name, entry in required.cases.items()),
        required.structure,
        tuple(required.collectives),
        tuple(required.axes),
        required.only_axes,
        required.only_collectives,
        mistakes,
    )


def _output_shapes(exp) -> dict:
    """Each output of an exported program by its path (`jax.tree_util.keystr`, as `hidden_outputs` keys it)."""
    import jax

    tree = jax.tree_util.tree_unflatten(exp.out_tree, list(range(len(exp.out_avals))))
    leaves = jax.tree_util.tree_flatten_with_path(tree)[0]
    return {jax.tree_util.keystr(path): tuple(exp.out_avals[i].shape) for path, i in leaves}


def _nameable(values, shapes: dict) -> bool:
    """Can the judge name a mistake whose results are `values` on a case with these outputs (`mistakes._matches`:
    one array for a case with one output, or {path: array} for some of its outputs, shaped as they are)?"""
    if not isinstance(values, Mapping):
        return len(shapes) == 1 and next(iter(shapes.values())) == np.shape(values)
    return 0 < len(values) <= MAX_MISTAKE_OUTPUTS and all(shapes.get(p) == np.shape(v) for p, v in values.items())


def _mistake_keys(observation: dict, required, grade_id: str, secret: bytes) -> tuple[str, ...]:
    """The keys of the known mistakes the judge may name for this cell: those the exercise module lists on a value
    case's hidden inputs with results shaped like that case's outputs, as `autograder.judge.mistakes.diagnose`
    asks it (a key None, another answer's values, is never named)."""
    from autograder.judge import draw_inputs, hidden_rng, mistake_source
    from namedaxes.exercises import exercise_module

    source = mistake_source(observation.get(PROGRAMS_KEY))
    listed = getattr(exercise_module(source[0]), "known_mistakes", None) if source else None
    if not callable(listed):
        return ()
    keys: dict[str, None] = {}
    for name, entry in required.cases.items():
        exp = required.programs[name].program.exp
        shapes = _output_shapes(exp)
        if not entry.get("values", True) or not 1 <= len(shapes) <= MAX_MISTAKE_OUTPUTS:
            continue  # the judge diagnoses only a value case of at most MAX_MISTAKE_OUTPUTS outputs
        draw = entry["draw"]
        inputs = draw_inputs(exp, draw, hidden_rng(secret, grade_id, str(draw.get("share", name))))
        try:
            found = list(listed(source[1], name, inputs))[:MAX_MISTAKE_RESULTS]
        except Exception:  # noqa: BLE001 - the judge skips a case its module cannot diagnose
            continue
        keys.update(
            (str(key), None)
            for values, key, _ in found
            if _MISTAKE_KEY.fullmatch(str(key)) and _nameable(values, shapes)
        )
    return tuple(keys)


def formula_cell(notebook: str, test, marker: dict, run) -> CellJudged:
    """A formula test cell: `marker` its reference's `FORMULA_KEY` value, `run` a `formulas.FormulaRun` (this
    table's draw of the hidden cases, the reference's figures on them and the usual mistakes' figures)."""
    gid = test.grade_id
    drawn = run.cases.get(f"{marker['module']}:{marker['exercise']}", ())
    _, listed = run.mistakes.get(gid, ("", {}))
    mistakes = dict.fromkeys(str(k) for per_case in listed.values() for case in per_case for _, k in case)
    return CellJudged(
        notebook,
        gid,
        test.points,
        mistakes=tuple(mistakes),
        formula=str(marker["exercise"]),
        formula_keys=tuple(sorted(run.expected.get(gid, {}))),
        formula_cases=len(drawn),
    )


def judged_cells(notebook: str, observations: dict, secret: bytes = TABLE_SECRET) -> list[CellJudged]:
    """What the judge checks for each test cell of `notebook`, from its reference observations (grade id ->
    observation), in the notebook's order. `secret` seeds the hidden inputs the known mistakes are listed on and
    the formula cases drawn (`TABLE_SECRET`: the same table every run)."""
    from autograder.course import SourceNotebook
    from autograder.judge import Judge, formula_run, is_formula_observation, is_program_observation
    from autograder.run import References

    source = SourceNotebook.load(notebook, SOLUTIONS / f"{notebook}.ipynb")
    judge = Judge(secret)
    formulas = None
    cells = []
    for test in source.test_cells:
        gid, obs = test.grade_id, observations[test.grade_id]
        if is_program_observation(obs):
            req = judge.required(obs)
            facts = {name: judged_facts(ref_case) for name, ref_case in req.programs.items()}
            cells.append(program_cell(notebook, test, req, facts, _mistake_keys(obs, req, gid, secret)))
        elif is_formula_observation(obs):
            if formulas is None:
                formulas = formula_run(source, References(observations, {}, secret))
            cells.append(formula_cell(notebook, test, obs[FORMULA_KEY], formulas))
        else:
            cells.append(CellJudged(notebook, gid, test.points, other=tuple(sorted(obs))))
    return cells
