"""The statement check (the package's docstring, step 3): each exercise's "*How it is graded:*" paragraph must name
every property the table says is judged for its test cells (`SAID`). A reading of words, a reviewer's aid: it
cannot tell a true sentence from a false one.
"""

from __future__ import annotations

import re

from courseinfo.course import SOLUTIONS

from .cells import CellJudged

__all__ = [
    "SAID",
    "ANYWHERE",
    "judged_properties",
    "exercise_statement",
    "graded_paragraphs",
    "statement_gaps",
    "statement_report",
]

_GRADED = "How it is graded"

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
