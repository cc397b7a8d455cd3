"""Feedback HTML for one student x assignment: inert, without hidden tests, with the grader's verdicts.

Threat model: the page is opened by the student and by the instructor (from
formgrader's folders, in the browser that holds the Jupyter token), and most of
what it shows was produced by the student's code. So:

- the notebook passes through `inert.make_inert` first (no student HTML, JS,
  SVG, rendered markdown, attachments or metadata survive; see that module);
- the page is rendered by nbconvert's lab template with every script block
  emptied (require.js, MathJax, mermaid, widget state), and carries
  `inert.CSP` as its first `<head>` element, so even a bug in the above could
  not run or load anything;
- every id and reason the grader writes is escaped for markdown and HTML
  (`inert.md_text`); grade ids come from the source notebook. A test is named by its
  exercise (the answer cell before it, from the source's metadata, never a student's cell),
  and a check's reason is shown without its exception name (`CheckFailed: `, `NotAttempted: `: the
  message itself says "not written yet"; the instructor's report keeps the name, wrong or not started).

The grader's own words are the only formatted text in the page: a banner with
the score, and a verdict after each test cell. A test's message is shown whole: its first sentences, the
rest one click away (`<details>`, which needs no script), never cut inside a word; `code` in it shows as
code, and its *emphasis* as emphasis where the words are the judge's, as the plain word where a kernel
raised them. Student markdown and outputs can only appear as literal text (a fenced block labelled as the
submission's text, or an output area), so a student's "**Score: 7 / 7**" is visibly not the banner.

Hidden test regions are removed with nbgrader's own `ClearHiddenTests`; error
tracebacks (in test cells they would quote hidden lines; everywhere they show the
grading machine's paths and library internals) become one line, `ename: evalue`.
"""

from __future__ import annotations

import copy
import functools
import re

from nbformat import NotebookNode
from nbformat.v4 import new_markdown_cell, new_notebook

from courseinfo.nbgrader_metadata import nbgrader_cell

from ..messages import current, speaking, text
from ..records import CellResult, Row, Status
from .inert import CSP_META, make_inert, md_text, md_text_with_code
from .words import say, say_late

__all__ = ["FeedbackWriter", "TEMPLATE"]

_CHECK_FAILED = ("CheckFailed: ", "NotAttempted: ")  # namedaxes.checking's failure kinds: wrong, not started

# nbconvert's lab template with every block that emits a <script> emptied, and the CSP first in <head>.
TEMPLATE = (
    """{%- extends 'index.html.j2' -%}
{%- block html_head -%}"""
    + CSP_META
    + """
{{ super() }}
{%- endblock html_head -%}
{%- block html_head_js -%}{%- endblock html_head_js -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block footer_js -%}{%- endblock footer_js -%}
"""
)
TEMPLATE_NAME = "autograder_feedback.html.j2"


def shown_reason(reason: str) -> str:
    """A reason as the page shows it: a check's message without the exception's name (`CheckFailed: `)."""
    for name in _CHECK_FAILED:
        if reason.startswith(name):
            return reason[len(name) :]
    return reason


def exercise_names(nb: NotebookNode | None, grade_ids: list[str]) -> dict[str, tuple[str, int, int]]:
    """grade_id of each test cell -> (exercise, k, n): the exercise is the answer cell before the test
    (its grade_id without `_answer`, e.g. `scaled_sum`), the test its k-th of n. Read from the source
    notebook (or the notebook rebuilt from it: its nbgrader metadata is the source's); a test cell
    with no answer cell before it keeps its grade id."""
    owner: dict[str, str] = {}
    if nb is not None:
        answer = None
        for cell in nb.cells:
            meta = nbgrader_cell(cell)
            if meta.grade_id is None:
                continue
            if meta.solution:
                answer = meta.grade_id.removesuffix("_answer")
            elif meta.grade and answer:
                owner[meta.grade_id] = answer
    names, counts = {}, {}
    for gid in grade_ids:
        ex = owner.get(gid, gid)
        counts[ex] = counts.get(ex, 0) + 1
        names[gid] = (ex, counts[ex])
    return {gid: (ex, k, counts[ex]) for gid, (ex, k) in names.items()}


SHOWN_CHARS = 280  # of a message, shown at once: its whole sentences up to this long (at least the first one)
_SENTENCE_END = re.compile(r"(?<=[.!?])(?<!e\.g\.)(?<!i\.e\.)\s+(?=\S)|(?<=[。！？])")


def sentences_cut(message: str, limit: int = SHOWN_CHARS) -> tuple[str, str]:
    """(what is shown at once, the rest): `message` cut after its last whole sentence within `limit`
    characters (after its first sentence if that alone is longer), never inside a sentence; ("", "") parts
    stripped. A message within `limit`: (message, "")."""
    message = " ".join(str(message).split())
    if len(message) <= limit:
        return message, ""
    ends = [m.end() for m in _SENTENCE_END.finditer(message)]
    within = [e for e in ends if e <= limit]
    cut = within[-1] if within else (ends[0] if ends else len(message))
    return message[:cut].rstrip(), message[cut:].strip()


def whole_message(c: CellResult) -> str:
    """A cell's reason as the page shows it, whole: its first sentences, the rest a click away (a `<details>`,
    no script). The judge's words (a verdict) keep their *emphasis*; a message a kernel raised shows the words
    plainly (`md_text_with_code`)."""
    judge = not isinstance(c.reason, str)
    head, rest = sentences_cut(shown_reason(say(c.reason)))
    shown = md_text_with_code(head, emphasis=judge)
    if not rest:
        return shown
    return f"{shown} <details><summary>{text('page_more')}</summary>{md_text_with_code(rest, emphasis=judge)}</details>"


def _points(c: CellResult) -> str:
    return text(
        "points_one" if c.max_points == 1 else "points_many",
        points=f"{c.points:g}",
        max_points=f"{c.max_points:g}",
    )


MEMO_ENTRIES = 1024  # clean_html results kept per writer ...
MEMO_MAX_CHARS = 16_384  # ... for inputs up to this size: at most ~2 x 16 MiB, whatever students submit


def _memo_clean_html():
    """nbconvert's `clean_html` (bleach: a third of a page's CPU), memoized. It is a pure function of its
    input, and most of its inputs are the instructor's cells, the same on every page of an assignment:
    each distinct small input is sanitized once per worker. Same input, same output: the page is unchanged."""
    from nbconvert.filters import clean_html

    cached = functools.lru_cache(maxsize=MEMO_ENTRIES)(clean_html)

    def memo(html):
        return cached(html) if isinstance(html, str) and len(html) <= MEMO_MAX_CHARS else clean_html(html)

    return memo


NO_ALT = "No description has been provided for this image"  # nbconvert's own words for it
# The only markup nbconvert's HTMLExporter changes after rendering (its BeautifulSoup pass): images get an alt
# text, input wrappers and output areas a tabindex. Student text reaches the page escaped (inert.py, the
# template's escape_html), so these tags can only be the template's own.
_FOCUSABLE = re.compile(r'<div class="(jp-Cell-inputWrapper|[^"<>]*\bjp-OutputArea-output\b[^"<>]*)"')
_IMG_WITHOUT_ALT = re.compile(r"<img (?![^<>]*\balt=)")


def accessible(html: str) -> str:
    """What HTMLExporter's BeautifulSoup pass adds, without parsing and re-serializing the page (a fifth of a
    page's CPU): `alt` on every image without one, `tabindex="0"` on input wrappers and output areas."""
    html = _FOCUSABLE.sub(lambda m: f'<div class="{m.group(1)}" tabindex="0"', html)
    return _IMG_WITHOUT_ALT.sub(f'<img alt="{NO_ALT}" ', html)


def _exporter_class():
    from nbconvert import HTMLExporter
    from nbconvert.exporters.templateexporter import TemplateExporter
    from nbconvert.filters.highlight import Highlight2HTML
    from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter

    class FeedbackExporter(HTMLExporter):
        """HTMLExporter.from_notebook_node with `accessible` in place of its BeautifulSoup round trip."""

        def from_notebook_node(self, nb, resources=None, **kw):
            langinfo = nb.metadata.get("language_info", {})
            lexer = langinfo.get("pygments_lexer", langinfo.get("name", None))
            self.register_filter(
                "highlight_code", self.filters.get("highlight_code", Highlight2HTML(pygments_lexer=lexer, parent=self))
            )
            resources = self._init_resources(resources)
            self.register_filter(
                "filter_data_type",
                WidgetsDataTypeFilter(notebook_metadata=self._nb_metadata, parent=self, resources=resources),
            )
            html, resources = TemplateExporter.from_notebook_node(self, nb, resources, **kw)
            return accessible(html), resources

    return FeedbackExporter


class FeedbackWriter:
    """Reused by one worker for all its submissions (nbconvert's exporter is slow to create)."""

    def __init__(self):
        from jinja2 import DictLoader
        from nbgrader.preprocessors import ClearHiddenTests

        self.exporter = _exporter_class()(
            template_name="lab", extra_loaders=[DictLoader({TEMPLATE_NAME: TEMPLATE})], template_file=TEMPLATE_NAME
        )
        self.exporter.exclude_input_prompt = False
        # the notebook is validated once, after all of nbconvert's preprocessors, not after each of them
        # (12 validations a page, a tenth of its CPU); make_inert has validated it already
        self.exporter.optimistic_validation = True
        self.exporter.register_filter("clean_html", _memo_clean_html())
        self.clear_hidden = ClearHiddenTests()

    def html(self, nb: NotebookNode | None, title: str, row: Row, cells, source=None) -> str:
        """The page, in the row's language (none read: the current one). `source` (the assignment's
        SourceNotebook), when given, makes the markdown check exact."""
        with speaking(row.language or current()):
            return self._html(nb, title, row, tuple(cells), source)

    def _html(self, nb: NotebookNode | None, title: str, row: Row, cells, source) -> str:
        if nb is None:
            nb = new_notebook()
        else:
            nb = copy.deepcopy(nb)
            nb, _ = self.clear_hidden.preprocess(nb, {})
            nb = make_inert(nb, source)
        verdicts = {c.grade_id: c for c in cells}
        source_nb = source if isinstance(source, NotebookNode) else getattr(source, "nb", None)
        names = exercise_names(source_nb if source_nb is not None else nb, [c.grade_id for c in cells])
        out_cells = [new_markdown_cell(self._banner(title, row, cells, names))]
        for cell in nb.cells:
            meta = nbgrader_cell(cell)
            gid = meta.grade_id
            if cell.cell_type == "code":
                for out in cell.get("outputs", []):
                    if out.get("output_type") == "error":
                        out["traceback"] = [f"{out.get('ename', 'Error')}: {out.get('evalue', '')}"]
            cell.metadata.pop("autograder", None)
            out_cells.append(cell)
            if gid in verdicts and meta.is_test:
                out_cells.append(new_markdown_cell(self._verdict(verdicts[gid], names)))
        nb.cells = out_cells
        nb.metadata["title"] = title
        body, _ = self.exporter.from_notebook_node(nb, resources={"metadata": {"name": title}})
        return body

    @staticmethod
    def _verdict(c: CellResult, names: dict) -> str:
        exercise, k, n = names.get(c.grade_id, (c.grade_id, 1, 1))
        head = (
            text("verdict_head", exercise=exercise, points=_points(c))
            if n == 1
            else text("verdict_head_part", exercise=exercise, k=k, n=n, points=_points(c))
        )
        head = f"> **{'✔' if c.passed else '✘'} {head}**"
        return head + (f" {text('verdict_passed')}" if c.passed else f" {whole_message(c)}")

    @staticmethod
    def _banner(title: str, row: Row, cells, names: dict | None = None) -> str:
        names = names or {}
        score = text("page_score", score=f"{row.score:g}", max_score=f"{row.max_score:g}")
        lines = [
            f"# {text('page_title', title=md_text(title))}",
            "",
            f"> **{text('page_student')}** {md_text(row.student)} &nbsp; **{score}**",
        ]
        if row.status != Status.OK:
            lines += [">", f"> **{text('page_status', status=md_text(row.status))}** {md_text(say(row.reason))}"]
        if row.late is not None:
            lines += [">", f"> {md_text(say_late(row.late))}"]
        if cells:
            lines += [
                "",
                f"| {text('page_table_test')} | {text('page_table_points')} | {text('page_table_result')} |",
                "|---|---|---|",
            ]
            for c in cells:
                result = text("page_passed") if c.passed else whole_message(c)
                exercise, k, n = names.get(c.grade_id, (c.grade_id, 1, 1))
                name = f"`{exercise}`" if n == 1 else text("page_table_part", exercise=exercise, k=k, n=n)
                lines.append(f"| {name} | {c.points:g} / {c.max_points:g} | {result} |")
        lines += ["", f"*{text('page_below')}*", "", "---"]
        return "\n".join(lines)
