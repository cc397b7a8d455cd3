"""What the grader's judge checks for every graded test cell of the course: a Markdown table, read from the
reference observations themselves, not from a list written by hand.

    python -m tools.judged_table                              # runs every solution notebook (minutes)
    python -m tools.judged_table --save DIR                   # ... and keeps their observations in DIR
    python -m tools.judged_table --observations DIR           # reads them back (seconds per notebook)
    python -m tools.judged_table --observations build/autograder/references   # the grader's own cache
    python -m tools.judged_table --notebooks 09 10            # some notebooks only

1. The observations: each solution notebook runs as the grader's reference run runs it (`tools.export_references`'s
   `run_reference`, without its second export for a TPU), or they are read from a folder: `DIR/<notebook>/`
   (what `--save` writes), else the grader's reference cache `DIR/<notebook>-<key>/` of this checkout and
   environment (`autograder.run.references`: `reference_key`, `load_references`, which verifies it).
2. For each test cell, what the judge requires is read where the judge reads it:
   - a cell of exported programs (`namedaxes.grading.PROGRAMS_KEY`): `autograder.judge.programs.Judge.required`
     compiles each case's reference program as the judge compiles it and says which communication the cell
     needs; each case's entry says whether its values are compared on hidden inputs and with which tolerance
     (`values`, `rtol`, `atol`), whether its results must live where the reference's do (`out_layout`), and
     which facts of one device's work are judged with which factor (`work`, `namedaxes.judging.WORK_FACTS`);
     the reference's own figures are read from its compiled program (`Compiled.work`, and its sends,
     `namedaxes.judging.collective_sends`, where the schedule is judged);
   - the known mistakes the judge names (`namedaxes.grading.MISTAKES_KEY`): the keys the exercise module's
     `known_mistakes` lists on the cases' hidden inputs, as `autograder.judge.mistakes.diagnose` asks it (only a
     case with one output is diagnosed);
   - a formula cell (`namedaxes.grading.FORMULA_KEY`): the cases `autograder.judge.formulas` draws from a run's
     secret, and the figures it compares (`compare`'s tolerance).
3. The statement check: each exercise's "*How it is graded:*" paragraph in solutions/ must name every property
   the table says is judged for its test cells (words per property, `SAID`; English only: the Chinese edition
   is translated from it). A missing paragraph or property is listed under the table. This is a reading of
   words, a reviewer's aid: it cannot tell a true sentence from a false one.

The table and the statement gaps go to stdout, the time it took to stderr; the exit status is 1 when a statement
names less than is judged.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from courseinfo.course import SOLUTIONS, notebook_ids
from namedaxes.grading import FORMULA_KEY, PROGRAMS_KEY

__all__ = [
    "RefFacts",
    "CaseJudged",
    "CellJudged",
    "COLUMNS",
    "reference_facts",
    "case_judged",
    "program_cell",
    "formula_cell",
    "judged_cells",
    "row",
    "render",
    "judged_properties",
    "statement_gaps",
    "statement_report",
    "graded_paragraphs",
    "exercise_statement",
    "main",
]

_GRADED = "How it is graded"
# Seeds the hidden inputs and formula cases this table draws, so that two runs print the same table (which known
# mistakes a case lists can depend on its inputs). The grader draws its own from each run's secret.
TABLE_SECRET = b"tools.judged_table: a fixed secret of its own"
_MISTAKE_KEY = re.compile(r"[a-z_][a-z0-9_]{0,63}")  # a key the judge names (`autograder.judge.mistakes`)
_NONE = "—"
_BYTES = ("peak_bytes", "largest_bytes", "sent_bytes", "reduced_bytes")


# ---------------------------------------------------------------- the records
@dataclass(frozen=True)
class RefFacts:
    """What the reference's program of one case is, compiled as the judge compiles it (`reference_facts`)."""

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


# ---------------------------------------------------------------- reading the observations
def run_observations(notebook: str, save: Path | None = None) -> tuple[dict, float]:
    """Run `solutions/<notebook>.ipynb` as the grader's reference run does: (grade id -> observation, seconds)."""
    from tools.export_references import observations, run_reference

    with tempfile.TemporaryDirectory(prefix="judged-table-") as folder:
        seconds = run_reference(notebook, Path(folder), "", platforms=())
        found = observations(notebook, Path(folder))
        if save is not None:
            target = save / notebook
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(folder, target)
    return found, seconds


def read_observations(root: Path, notebook: str) -> dict:
    """grade id -> observation of `notebook` from `root/<notebook>/` (`--save`), else from the grader's reference
    cache `root/<notebook>-<key>/` of this checkout (verified as the grader verifies it)."""
    from autograder.course import SourceNotebook
    from tools.export_references import observations

    saved = root / notebook
    if saved.is_dir():
        return observations(notebook, saved)
    from autograder.run import load_references, reference_key

    source = SourceNotebook.load(notebook, SOLUTIONS / f"{notebook}.ipynb")
    folder = root / f"{notebook}-{reference_key(source)[:16]}"
    refs = load_references(folder, source)
    if refs is None:
        raise SystemExit(
            f"{notebook}: neither {saved} nor this checkout's reference {folder} holds its observations "
            "(run without --observations, or `make grade` first)"
        )
    return dict(refs)


# ---------------------------------------------------------------- what the judge requires
def _spec(layout) -> str:
    """A layout (per dimension, the mesh axes it is split over) as a PartitionSpec."""
    dims = [None if not axes else axes[0] if len(axes) == 1 else tuple(axes) for axes in layout or ()]
    while dims and dims[-1] is None:
        dims.pop()
    return "P(" + ", ".join(repr(d) for d in dims) + ")"


def reference_facts(ref_case) -> RefFacts:
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
        sends=tuple(f"{desc} {n.runs}× ≤ {_number(n.largest)} B" for desc, n in sends.items() if n.runs),
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
    from autograder.limits import MAX_MISTAKE_OUTPUTS

    if not isinstance(values, Mapping):
        return len(shapes) == 1 and next(iter(shapes.values())) == np.shape(values)
    return 0 < len(values) <= MAX_MISTAKE_OUTPUTS and all(shapes.get(p) == np.shape(v) for p, v in values.items())


def _mistake_keys(observation: dict, required, grade_id: str, secret: bytes) -> tuple[str, ...]:
    """The keys of the known mistakes the judge may name for this cell: those the exercise module lists on a value
    case's hidden inputs with results shaped like that case's outputs, as `autograder.judge.mistakes.diagnose`
    asks it (a key None, another answer's values, is never named)."""
    from autograder.judge import draw_inputs, hidden_rng, mistake_source
    from autograder.limits import MAX_MISTAKE_OUTPUTS, MAX_MISTAKE_RESULTS
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
            facts = {name: reference_facts(ref_case) for name, ref_case in req.programs.items()}
            cells.append(program_cell(notebook, test, req, facts, _mistake_keys(obs, req, gid, secret)))
        elif is_formula_observation(obs):
            if formulas is None:
                formulas = formula_run(source, References(observations, {}, secret))
            cells.append(formula_cell(notebook, test, obs[FORMULA_KEY], formulas))
        else:
            cells.append(CellJudged(notebook, gid, test.points, other=tuple(sorted(obs))))
    return cells


# ---------------------------------------------------------------- the table
COLUMNS = (
    "notebook",
    "test cell (points)",
    "cases, by mesh",
    "values on hidden inputs",
    "communication",
    "result layout (the reference's)",
    "per-device work judged (`Case(work=...)`)",
    "schedule",
    "formula cases",
    "known mistakes named",
)


def _number(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:g}"


def _small(value: float) -> str:
    """A tolerance as people write it: 1e-5, 0.001."""
    return re.sub(r"e([+-])0*(\d)", lambda m: "e" + m.group(1).replace("+", "") + m.group(2), f"{value:g}")


def _figure(fact: str, value) -> str:
    if fact in _BYTES:
        return f"{_number(value)} B"
    if fact == "overlap" and value >= 1 << 20:
        return "a loop that sends and multiplies"
    return _number(value)


def _grouped(cases, text) -> str:
    """`text(case)` for each case, cases with the same text said once: "k8, k4: ...; structure: ..."."""
    groups: dict[str, list[str]] = {}
    for case in cases:
        groups.setdefault(text(case), []).append(case.name)
    if len(groups) == 1:
        return next(iter(groups))
    return "; ".join(f"{', '.join(names)}: {said}" for said, names in groups.items())


_MAX_NAMES = 6  # case names listed per mesh


def _cases_text(cell: CellJudged) -> str:
    """How many cases, by mesh: "5: 8 (`k8`, `structure`), 4 (`k4`), 2 (`k2`)"."""
    meshes: dict[str, list[str]] = {}
    for case in cell.cases:
        meshes.setdefault(case.ref.mesh, []).append(f"`{case.name}`")
    parts = []
    for mesh, names in meshes.items():
        more = f", … {len(names) - _MAX_NAMES} more" if len(names) > _MAX_NAMES else ""
        parts.append(f"{mesh} ({', '.join(names[:_MAX_NAMES])}{more})")
    return f"{len(cell.cases)}: " + ", ".join(parts)


def _tolerance(case: CaseJudged) -> str:
    from namedaxes.judging import ATOL, RTOL

    rtol = RTOL if case.rtol is None else case.rtol
    atol = ATOL if case.atol is None else case.atol
    return f"yes, rtol {_small(rtol)}, atol {_small(atol)}" if case.values else "no (structure only)"


def _communication(cell: CellJudged) -> str:
    if cell.structure:
        said = "the reference's collectives: " + ", ".join(cell.collectives) if cell.collectives else "none"
        said += " (structure cell)"
    elif cell.axes:
        said = "real communication over " + ", ".join(repr(a) for a in cell.axes) + " (value cell)"
    else:
        said = "none required (value cell)"
    if cell.only_collectives:
        said += "; no other collective"
    if cell.only_axes:
        said += "; no other axis"
    return said


def _layout(cell: CellJudged) -> str:
    """Where the results must live (the reference's layouts, or open), and the per-device regions required."""

    def said(case: CaseJudged) -> str:
        where = ", ".join(case.ref.layouts) if case.out_layout else "open"
        regions = " and ".join(f"({r})" for r in case.ref.regions)
        return f"{where}, per-device region over {regions}" if regions else where

    return _grouped(cell.cases, said)


def _work(cell: CellJudged) -> str:
    """Each fact of `Case(work=...)` with its factor and the reference's figure on each case it judges."""
    parts = []
    for fact in dict.fromkeys(f for c in cell.cases for f in c.work):
        judged = [c for c in cell.cases if fact in c.work]
        factors = "/".join(f"{f:g}" for f in sorted({c.work[fact] for c in judged}))
        refs = ", ".join(f"{c.name} {_figure(fact, c.ref.work.get(fact, 0))}" for c in judged)
        bound = f"≥ ref / {factors}" if fact == "overlap" else f"≤ {factors}× ref"
        parts.append(f"`{fact}` {bound} ({refs})")
    return "; ".join(parts) or _NONE


def _schedule(cell: CellJudged) -> str:
    """What of the reference's schedule the judged facts hold the answer to: its matmuls before its last ppermute
    (`overlap`), its sends counted as often as they run (`sent_bytes`)."""
    parts = []
    if any("overlap" in c.work for c in cell.cases):
        parts.append("matmuls while the blocks travel (`overlap`: matmuls scheduled before the last ppermute)")
    sends = [c for c in cell.cases if "sent_bytes" in c.work and c.ref.sends]
    if sends:
        refs = "; ".join(f"{c.name}: {', '.join(c.ref.sends)}" for c in sends)
        parts.append(f"every send counted as often as it runs (ref {refs})")
    return "; ".join(parts) or _NONE


def _formula_text(cell: CellJudged) -> str:
    from namedaxes.judging import ATOL, RTOL

    keys = ", ".join(f"`{k}`" for k in cell.formula_keys)
    return (
        f"`{cell.formula}`: {cell.formula_cases} cases drawn from the run's secret; {keys} compared "
        f"(rtol {_small(RTOL)}, atol {_small(ATOL)})"
    )


def row(cell: CellJudged) -> list[str]:
    """One test cell's row, in `COLUMNS`' order."""
    head = [cell.notebook[:2], f"`{cell.grade_id}` ({_number(cell.points)})"]
    if cell.formula:
        named = ", ".join(f"`{m}`" for m in cell.mistakes) or _NONE
        return head + [_NONE, "yes (the figures)", _NONE, _NONE, _NONE, _NONE, _formula_text(cell), named]
    if not cell.cases:
        return head + [_NONE, "compared directly: " + ", ".join(cell.other), _NONE, _NONE, _NONE, _NONE, _NONE, _NONE]
    return head + [
        _cases_text(cell),
        _grouped(cell.cases, _tolerance),
        _communication(cell),
        _layout(cell),
        _work(cell),
        _schedule(cell),
        _NONE,
        ", ".join(f"`{m}`" for m in cell.mistakes) or _NONE,
    ]


LEGEND = """\
Every program case, besides its row: the grader exports nothing itself; it reads the program the hidden test \
exported (no host callbacks, no effects, the reference's signature), feeds it inputs drawn from the run's secret \
with the reference's input layouts, requires each per-device region of the reference to have a counterpart that \
splits each input at least as the reference's does, and counts a collective only when the data it sends reaches \
the results. `ref` figures are the reference's, read from its program compiled as the judge compiles it (8 CPU \
devices); a factor bounds the student's figure by that factor times the reference's (`overlap`: at least the \
reference's divided by it)."""


def render(cells: list[CellJudged]) -> str:
    """The Markdown table of `cells`, with its legend."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for cell in cells:
        lines.append("| " + " | ".join(text.replace("|", "\\|") for text in row(cell)) + " |")
    return "\n".join(lines) + "\n\n" + LEGEND + "\n"


# ---------------------------------------------------------------- the statements
# property -> words, any of which names it (lower case) in an exercise's "How it is graded" paragraph
SAID = {
    "hidden inputs": ("secret", "its own inputs", "own data", "draws", "drawn", "random"),
    "communication": (
        "communicat",
        "collective",
        "psum",
        "pmean",
        "ppermute",
        "all_gather",
        "all-gather",
        "all_to_all",
        "psum_scatter",
        "all-reduce",
        "reduction",
        "averaging",
    ),
    "only these collectives or axes": ("only", "nothing else", "no other"),
    "result layout": ("layout", "split", "sharding", "whole on every device", "replicated", "out_specs", "out_axes"),
    "per-device region": ("shard_map", "per-device", "pmap", "each device's share"),
    "flops": ("flop",),
    "peak_bytes": ("peak",),
    "largest_bytes": ("largest array", "reference's largest"),
    "sent_bytes": ("bytes",),
    "arithmetic_flops": ("arithmetic", "its own rows", "own share"),
    "reduced_bytes": ("reduction", "reduces", "reduced once"),
    "overlap": ("schedule", "overlap", "interleav"),
    "formula cases": ("secret", "drawn", "draws", "random"),
}
# Said anywhere in the exercise's statement: where the results live and which code runs per device are part of
# what the exercise asks for (its bullets say "split over DEVICES", "computed with `jax.shard_map`"); for a pmap
# or a per-device function the course wraps, they are not the student's choice at all.
ANYWHERE = ("result layout", "per-device region")


def judged_properties(cell: CellJudged) -> list[str]:
    """The properties of `SAID` the table says are judged for `cell`."""
    if cell.formula:
        return ["formula cases"]
    if not cell.cases:
        return []
    found = ["hidden inputs"] if any(c.values for c in cell.cases) else []
    if cell.collectives or cell.axes:
        found.append("communication")
    if cell.only_axes or cell.only_collectives:
        found.append("only these collectives or axes")
    if any(c.out_layout and c.ref.on_mesh and set(c.ref.layouts) - {"scalar"} for c in cell.cases):
        found.append("result layout")
    if any(c.ref.regions and c.ref.on_mesh for c in cell.cases):
        found.append("per-device region")
    found += list(dict.fromkeys(f for c in cell.cases for f in c.work))
    return found


def exercise_statement(nb, index: int) -> str:
    """The markdown of the exercise whose test cell is cell `index` of `nb`: its cells from the last heading before
    the test cell to the next heading after it."""
    heading = re.compile(r"^#{1,4} ", re.MULTILINE)

    def is_heading(i: int) -> bool:
        return nb.cells[i].cell_type == "markdown" and bool(heading.search(nb.cells[i].source))

    start, end = index, index + 1
    while start > 0 and not is_heading(start):
        start -= 1
    while end < len(nb.cells) and not is_heading(end):
        end += 1
    return "\n\n".join(c.source for c in nb.cells[start:end] if c.cell_type == "markdown")


def graded_paragraphs(statement: str) -> str:
    """The "How it is graded" paragraphs of an exercise's statement."""
    return "\n\n".join(p for p in re.split(r"\n\s*\n", statement) if _GRADED in p)


def statement_gaps(cell: CellJudged, statement: str) -> list[str]:
    """The judged properties of `cell` its exercise's statement does not name (`SAID`): in its "How it is graded"
    paragraphs, or anywhere in it for the properties of `ANYWHERE`."""
    graded = graded_paragraphs(statement)
    if not graded.strip():
        return [f"no '{_GRADED}' paragraph"]

    def names(prop: str) -> bool:
        text = " ".join((statement if prop in ANYWHERE else graded).lower().split())
        return any(word in text for word in SAID[prop])

    return [p for p in judged_properties(cell) if not names(p)]


def statement_report(cells: list[CellJudged]) -> list[str]:
    """ "<notebook> <grade id>: <gap>, ..." for each cell whose statement names less than is judged."""
    import nbformat

    from courseinfo.nbgrader_metadata import nbgrader_cell

    out, books = [], {}
    for cell in cells:
        if cell.notebook not in books:
            books[cell.notebook] = nbformat.read(SOLUTIONS / f"{cell.notebook}.ipynb", as_version=4)
        nb = books[cell.notebook]
        index = next(i for i, c in enumerate(nb.cells) if nbgrader_cell(c).grade_id == cell.grade_id)
        gaps = statement_gaps(cell, exercise_statement(nb, index))
        if gaps:
            out.append(f"{cell.notebook} `{cell.grade_id}`: {', '.join(gaps)}")
    return out


# ---------------------------------------------------------------- the command
def _notebooks(wanted: list[str]) -> list[str]:
    known = notebook_ids()
    if not wanted:
        return list(known)
    chosen = [nb for nb in known if any(nb == w or nb.startswith(w) for w in wanted)]
    if not chosen:
        raise SystemExit(f"no notebook matches {' '.join(wanted)} (known: {', '.join(known)})")
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notebooks", nargs="*", default=[], help="notebook ids or their numbers (default: all)")
    parser.add_argument(
        "--observations", type=Path, help="read the observations: DIR/<notebook>/ (--save) or the grader's cache DIR"
    )
    parser.add_argument("--save", type=Path, help="keep the observations of the run in DIR/<notebook>/")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    from autograder.sandbox import grading_xla_flags

    os.environ["XLA_FLAGS"] = grading_xla_flags(os.environ.get("XLA_FLAGS", ""))  # as the grader compiles
    started = time.monotonic()
    observed = {}
    for notebook in _notebooks(args.notebooks):  # read (their cache keys) before this process sets up devices
        if args.observations is not None:
            observed[notebook] = read_observations(args.observations, notebook)
    from namedaxes.devices import setup_devices

    setup_devices(quiet=True)
    ran = 0.0
    cells: list[CellJudged] = []
    for notebook in _notebooks(args.notebooks):
        if notebook not in observed:
            observed[notebook], seconds = run_observations(notebook, args.save)
            ran += seconds
        cells += judged_cells(notebook, observed[notebook])
    print(render(cells))
    gaps = statement_report(cells)
    if gaps:
        print("Statements that name less than is judged:\n\n" + "\n".join(f"- {g}" for g in gaps))
    total = time.monotonic() - started
    print(
        f"{len(cells)} test cells of {len(observed)} notebook(s) in {total:.1f} s"
        + (f" ({ran:.1f} s of it running the solution notebooks)" if ran else ""),
        file=sys.stderr,
    )
    return 1 if gaps else 0


if __name__ == "__main__":
    sys.exit(main())
