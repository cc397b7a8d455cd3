"""Feedback HTML for one student x assignment, without hidden tests.

Hidden test regions are removed with nbgrader's own `ClearHiddenTests`; error
tracebacks (in test cells they would quote hidden lines; everywhere they show the
grading machine's paths and library internals) become one line, `ename: evalue`. A banner with the score and a verdict line after each test
cell say what passed and why not.
"""
from __future__ import annotations

import copy
import html
import re

from nbformat import NotebookNode
from nbformat.v4 import new_markdown_cell, new_notebook

__all__ = ["FeedbackWriter", "scrub_text"]

_ADDR = re.compile(r"0x[0-9a-fA-F]{6,}")


def scrub_text(text: str, workdir: str | None = None) -> str:
    """Make a message stable across runs: no memory addresses, no temporary paths."""
    if workdir:
        text = text.replace(workdir, "<work>")
    text = _ADDR.sub("0x…", text)
    return text


def _md(text: str) -> str:
    """Student-influenced text, safe inside a markdown cell (no raw HTML)."""
    return html.escape(text, quote=False).replace("\n", " ").replace("|", "\\|")


class FeedbackWriter:
    """Reused by one worker for all its submissions (nbconvert's exporter is slow to create)."""

    def __init__(self):
        from nbconvert import HTMLExporter
        from nbgrader.preprocessors import ClearHiddenTests
        self.exporter = HTMLExporter(template_name="lab")
        self.exporter.exclude_input_prompt = False
        self.clear_hidden = ClearHiddenTests()

    def html(self, nb: NotebookNode | None, title: str, row: dict, cells: list[dict]) -> str:
        if nb is None:
            nb = new_notebook()
        else:
            nb = copy.deepcopy(nb)
            nb, _ = self.clear_hidden.preprocess(nb, {})
        verdicts = {c["grade_id"]: c for c in cells}
        out_cells = [new_markdown_cell(self._banner(title, row, cells))]
        for cell in nb.cells:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            gid = meta.get("grade_id") if isinstance(meta, dict) else None
            if cell.cell_type == "code":
                cell.metadata.pop("autograder", None)
                for out in cell.get("outputs", []):
                    if out.get("output_type") == "error":
                        out["traceback"] = [f"{out.get('ename', 'Error')}: {out.get('evalue', '')}"]
            if gid in verdicts and meta.get("grade") and not meta.get("solution"):
                out_cells.append(cell)
                out_cells.append(new_markdown_cell(self._verdict(verdicts[gid])))
            else:
                out_cells.append(cell)
        nb.cells = out_cells
        nb.metadata["title"] = title
        body, _ = self.exporter.from_notebook_node(nb, resources={"metadata": {"name": title}})
        return body

    @staticmethod
    def _verdict(c: dict) -> str:
        pts = f"{c['points']:g} / {c['max_points']:g} point{'s' if c['max_points'] != 1 else ''}"
        if c["passed"]:
            return f"> **✔ `{c['grade_id']}`: {pts}.** Passed."
        return f"> **✘ `{c['grade_id']}`: {pts}.** {_md(c['reason'])}"

    @staticmethod
    def _banner(title: str, row: dict, cells: list[dict]) -> str:
        lines = [f"# Feedback: {_md(title)}", "",
                 f"**Student:** {_md(row['student'])} &nbsp; **Score: {row['score']:g} / {row['max_score']:g}**"]
        if row["status"] != "ok":
            lines += ["", f"**Status: {row['status']}.** {_md(row['reason'])}"]
        if cells:
            lines += ["", "| test | points | result |", "|---|---|---|"]
            for c in cells:
                result = "passed" if c["passed"] else _md(c["reason"])
                lines.append(f"| `{c['grade_id']}` | {c['points']:g} / {c['max_points']:g} | {result} |")
        return "\n".join(lines)
