"""The Markdown table of what the judge checks: one row per test cell (`COLUMNS`), its legend."""

from __future__ import annotations

import re

from .cells import CaseJudged, CellJudged, written_number

__all__ = ["COLUMNS", "LEGEND", "row", "render"]

_NONE = "—"
_BYTES = ("peak_bytes", "largest_bytes", "sent_bytes", "reduced_bytes")


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


def _small(value: float) -> str:
    """A tolerance as people write it: 1e-5, 0.001."""
    return re.sub(r"e([+-])0*(\d)", lambda m: "e" + m.group(1).replace("+", "") + m.group(2), f"{value:g}")


def _figure(fact: str, value) -> str:
    if fact in _BYTES:
        return f"{written_number(value)} B"
    if fact == "overlap" and value >= 1 << 20:
        return "a loop that sends and multiplies"
    return written_number(value)


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
    head = [cell.notebook[:2], f"`{cell.grade_id}` ({written_number(cell.points)})"]
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
