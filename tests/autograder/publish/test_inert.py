"""Inert pages (issue 8): nothing a submission writes can run, load or pass for the grader's words,
in the autograded notebook formgrader renders, in feedback HTML and in report.html.

Each payload of `inert_payloads` is checked both ways: in a page made from the
raw notebook the checker finds it (the payload is live), in the grader's pages
it finds nothing. The browser proof is tests/browser/test_formgrader.py.
"""

from __future__ import annotations

import copy
import html
import html.parser
import re
import warnings

import inert_payloads as P
import pytest
from nbformat import from_dict
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from autograder.publish import inert
from autograder.publish.feedback import FeedbackWriter
from autograder.records import CellResult, Row

KERNEL_META = {
    "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
    "language_info": {"name": "python"},
}
INSTRUCTIONS = "# 02 — `scaled_sum`\n\nSome <b>instructor</b> text with `code`."


def _source():
    answer = new_code_cell(
        "def f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION",
        metadata={
            "nbgrader": {"grade_id": "f_answer", "solution": True, "grade": False, "locked": False, "schema_version": 3}
        },
    )
    test = new_code_cell(
        '"""`f` returns 1."""\nassert f() == 1',
        metadata={
            "nbgrader": {
                "grade_id": "f_test",
                "solution": False,
                "grade": True,
                "locked": True,
                "points": 1,
                "schema_version": 3,
            }
        },
    )
    return new_notebook(cells=[new_markdown_cell(INSTRUCTIONS), answer, test], metadata=KERNEL_META)


def _hostile():
    """What build_graded would make of a hostile submission: the source's cells plus the student's,
    the student's marked `student_added`, every output a payload (plus a few things build_graded would
    never copy: student metadata, attachments, widget state -- make_inert must not rely on that)."""
    src = _source()
    student = []
    for cell in P.markdown_cells():
        cell.metadata["autograder"] = {"student_added": True}
        student.append(cell)
    own = copy.deepcopy(src.cells)
    nb = new_notebook(
        cells=[own[0], *student, *P.output_cells(), *own[1:]],
        metadata=dict(
            KERNEL_META,
            widgets={
                "application/vnd.jupyter.widget-state+json": {"state": {}, "version_major": 2, "version_minor": 0}
            },
        ),
    )
    nb.cells[-1].outputs = [
        from_dict({"output_type": "error", "ename": "AssertionError", "evalue": P.PRINTED, "traceback": [P.PRINTED]})
    ]
    return src, nb


def _formgrade(nb) -> str:
    """The page formgrader serves for a submission (nbgrader's own exporter and template)."""
    from nbconvert import HTMLExporter
    from nbgrader.server_extensions.formgrader import handlers

    exporter = HTMLExporter(template_name="formgrade", extra_template_basedirs=[handlers.template_path])
    resources = {
        "assignment_id": "a",
        "notebook_id": "n",
        "submission_id": "s",
        "index": 0,
        "total": 1,
        "base_url": "",
        "student": "s",
        "last_name": "l",
        "first_name": "f",
        "notebook_path": "/n",
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "element ... is not able to be represented" (the controls)
        page, _ = exporter.from_notebook_node(nb, resources=resources)
    return page


def _lab(nb) -> str:
    from nbconvert import HTMLExporter

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return HTMLExporter(template_name="lab").from_notebook_node(nb)[0]


def _feedback(nb, source=None, reason=P.REASON, student="ann") -> str:
    cells = (CellResult("f_test", 0.0, 1.0, False, reason),)
    row = Row(student, "02_scaled_sum", "", 0.0, 1.0, "error", reason, cells)
    return FeedbackWriter().html(nb, "02_scaled_sum", row, cells, source=source)


LIVE = set(P.ACTIVE_TAGS) - P.SCRIPT_ONLY_TAGS


@pytest.mark.parametrize("render", [_lab, _formgrade], ids=["nbconvert-lab", "formgrade"])
def test_the_payloads_are_live_in_pages_made_from_the_raw_notebook(render):
    """The control: without make_inert every payload shows up as active content."""
    _, nb = _hostile()
    assert P.tags_in(P.active_content(render(nb))) >= LIVE


def test_inert_notebook_keeps_only_text_and_raster_images():
    src, nb = _hostile()
    out = inert.make_inert(nb, src)
    assert set(out.metadata) <= {"kernelspec", "language_info", "title"}, "no widget state"
    mimes = set()
    for cell in out.cells:
        assert set(cell.metadata) <= {"nbgrader", "autograder"}, cell.metadata
        assert "attachments" not in cell or not cell.attachments
        for o in cell.get("outputs", []):
            assert o.output_type in ("stream", "error", "display_data", "execute_result")
            mimes |= set(o.get("data", {}))
            for sizes in o.get("metadata", {}).values():
                assert all(isinstance(v, int) for v in sizes.values()), sizes
    assert mimes == {"text/plain", "image/png"}
    pngs = [o.data["image/png"] for c in out.cells for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
    assert pngs == [P.PNG], "the broken-out PNG is dropped, the valid one kept (its width metadata is not)"
    notices = [
        o.data["text/plain"]
        for c in out.cells
        for o in c.get("outputs", [])
        if o.get("data", {}).get("text/plain", "").startswith("[autograder:")
    ]
    assert any("text/html" in n for n in notices) and any("application/javascript" in n for n in notices)
    shown = [c for c in out.cells if c.cell_type == "markdown"]
    assert shown[0].source == INSTRUCTIONS, "the instructor's markdown is rendered as written"
    for cell, text in zip(shown[1:], P.MARKDOWN.values()):
        assert cell.metadata["autograder"]["student_text"] == text
        assert cell.source.startswith(inert.STUDENT_TEXT_LABEL) and text in cell.source


@pytest.mark.parametrize("render", [_lab, _formgrade], ids=["nbconvert-lab", "formgrade"])
def test_inert_notebook_renders_nothing_active(render):
    src, nb = _hostile()
    baseline = P.active_content(render(new_notebook(cells=_source().cells, metadata=KERNEL_META)))
    for source in (src, None):  # exact (with the source) and metadata-only mode
        found = [f for f in P.active_content(render(inert.make_inert(nb, source))) if f not in baseline]
        assert found == [], found


def test_markdown_that_is_not_the_instructors_is_shown_as_text():
    src, nb = _hostile()
    nb.cells[0].source += "\n\n<img src=x onerror=alert(1)>"  # a source cell changed: not the instructor's
    out = inert.make_inert(nb, src)
    assert out.cells[0].metadata["autograder"]["student_text"].endswith("onerror=alert(1)>")
    forged = new_markdown_cell("<script>alert(1)</script>", metadata={"autograder": {"student_text": "hi"}})
    assert inert.make_inert(new_notebook(cells=[forged])).cells[0].source == inert.text_block("hi")
    answer = new_markdown_cell(
        "<script>alert(1)</script>", metadata={"nbgrader": {"grade_id": "essay", "solution": True}}
    )
    assert "student_text" in inert.make_inert(new_notebook(cells=[answer])).cells[0].metadata["autograder"]
    raw = from_dict({"cell_type": "raw", "id": "r1", "metadata": {}, "source": "<script>alert(1)</script>"})
    assert inert.make_inert(new_notebook(cells=[raw])).cells[0].cell_type == "markdown"


def test_make_inert_is_idempotent_and_does_not_change_its_input():
    src, nb = _hostile()
    before = copy.deepcopy(nb)
    once = inert.make_inert(nb, src)
    assert nb == before
    assert inert.make_inert(once) == once and inert.make_inert(once, src) == once


def test_bad_grade_ids_cell_ids_and_stream_names_are_dropped():
    cell = from_dict(
        {
            "cell_type": "code",
            "id": '"><script>alert(1)</script>',
            "source": "x",
            "execution_count": None,
            "metadata": {"nbgrader": {"grade_id": '"><script>', "grade": True}},
            "outputs": [
                {"output_type": "stream", "name": '"><script>alert(1)</script>', "text": "hi"},
                {"output_type": "weird", "data": {"text/html": "<script>"}},
            ],
        }
    )
    out = inert.make_inert(from_dict({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [cell]})).cells[0]
    assert out.metadata == {} and [o.name for o in out.outputs] == ["stdout"]
    assert re.fullmatch(r"[a-zA-Z0-9_-]+", out.id), "a malformed cell id is replaced"


def test_feedback_page_has_no_script_at_all_and_a_strict_csp_first():
    src, nb = _hostile()
    page = _feedback(nb, src)
    assert P.active_content(page) == []
    assert "<script" not in page.lower()
    head = page[page.index("<head>") : page.index("</head>")]
    first = re.search(r"<(\w+)([^>]*)>", head[len("<head>") :])
    assert first.group(1) == "meta" and "Content-Security-Policy" in first.group(2)
    csp = re.search(r'content="([^"]*)"', first.group(2)).group(1)
    assert "script-src 'none'" in csp and "default-src 'none'" in csp and "img-src data:" in csp
    assert P.PRINTED.replace("<", "&lt;").replace(">", "&gt;") in page or "&lt;script&gt;" in page


class _Text(html.parser.HTMLParser):
    """Visible text and the tags used, of an HTML fragment."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.text, self.tags = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)

    def handle_data(self, data):
        self.text.append(data)


def _visible(fragment: str) -> tuple[str, list[str]]:
    p = _Text()
    p.feed(fragment)
    return "".join(p.text).strip(), p.tags


HOSTILE_TEXT = [
    P.REASON,
    "**Score: 7 / 7**",
    "[x](javascript:alert(1))",
    "<img src=x onerror=alert(1)>",
    "# heading",
    "a | b | c",
    "`code` and \\`escaped\\`",
    "&amp; &lt;",
    "1. list",
    "- item",
    "$\\href{javascript:alert(1)}{x}$",
    "_under_ ~~strike~~ <https://example.org> www.example.org",
]


@pytest.mark.parametrize("text", HOSTILE_TEXT)
def test_md_text_renders_as_exactly_the_text_in_nbconvert(text):
    from nbconvert.filters.markdown import markdown2html

    shown, tags = _visible(markdown2html(f"Reason: {inert.md_text(text)}"))
    assert shown == f"Reason: {' '.join(text.split())}"
    assert tags == ["p"]


@pytest.mark.parametrize("text", HOSTILE_TEXT + ["`a|b` and `<b>x</b>`", "one ` alone", "``", "` `"])
def test_md_text_with_code_shows_code_spans_as_code_and_everything_else_as_the_text(text):
    from nbconvert.filters.markdown import markdown2html

    rendered = markdown2html(f"Reason: {inert.md_text_with_code(text)}")
    shown, tags = _visible(rendered)
    spans = [p for i, p in enumerate(" ".join(text.split()).split("`")) if i % 2]
    code = [p for p in spans if p.strip() and "|" not in p] if text.count("`") % 2 == 0 else None
    if code is not None:
        assert tags == ["p"] + ["code"] * len(code), (text, rendered)
        assert re.findall(r"<code>(.*?)</code>", rendered) == [html.escape(c.strip(), quote=False) for c in code]
    assert set(tags) <= {"p", "code"}, rendered
    assert shown.replace("`", "") == f"Reason: {' '.join(text.split())}".replace("`", ""), rendered


@pytest.mark.parametrize("text", ["a ``` b", "```\n<script>alert(1)</script>\n```", "````` x ``", "plain"])
def test_text_block_cannot_be_closed_from_inside(text):
    from nbconvert.filters.markdown import markdown2html

    rendered = markdown2html(inert.text_block(text))
    body = rendered[rendered.index("<pre>") :]
    shown, tags = _visible(body)
    assert shown == text.strip() and tags == ["pre", "code"]


def test_a_fake_banner_is_not_the_graders_banner():
    """The grader's banner is a heading + blockquote; the student's copy is a labelled code block."""
    src, nb = _hostile()
    page = _feedback(nb, src, reason="AssertionError: f() returned 2")
    banners = [html.unescape(b) for b in re.findall(r"<h1[^>]*>(.*?)<", page)]  # "&#8212;" is "—"
    assert banners == ["Autograder feedback: 02_scaled_sum", "02 — "], "the grader's, then the instructor's"
    assert page.count("<blockquote>") == 2, "the banner and the one verdict: nothing else is a blockquote"
    assert page.count(P.FAKE_BANNER) >= 2, "the student's copies are still shown, as text"
    for m in re.finditer(re.escape(P.FAKE_BANNER), page):
        before = page[: m.start()]
        inside_code = before.rfind("<pre") > before.rfind("</pre>")
        inside_grader = before.rfind("<blockquote>") > before.rfind("</blockquote>")
        assert inside_code or inside_grader, page[m.start() - 300 : m.end()]


def test_ids_and_reasons_are_literal_in_feedback():
    page = _feedback(None, reason=P.REASON, student=P.REASON)
    assert P.active_content(page) == []
    start = page.index("<h1")
    shown, tags = _visible(page[start : page.index("</table>", start)])
    # only the grader's own markup: the heading (and its anchor), bold labels, the table
    assert tags == [
        "h1",
        "a",
        "blockquote",
        "p",
        "strong",
        "strong",
        "p",
        "strong",
        "table",
        "thead",
        "tr",
        "th",
        "th",
        "th",
        "tbody",
        "tr",
        "td",
        "code",
        "td",
        "td",
        "code",
    ], tags
    assert shown.count(" ".join(P.REASON.split())) >= 2, "banner id, status reason"
    # the table row: the reason's words as text, its one `code` span as code (not raw backticks)
    assert " ".join(P.REASON.split()).replace("`code`", "code") in shown, shown
    assert "<code>code</code>" in page


def test_student_ids_that_are_markup_are_refused_at_intake():
    """formgrader's submission page prints the student id unescaped (nbgrader's template), so an id must
    not be markup: intake refuses it with a reason (it is never graded, never reaches the gradebook)."""
    from nbconvert import HTMLExporter
    from nbgrader.server_extensions.formgrader import handlers

    from autograder.intake.placement import id_problem

    hostile = "<img src=x onerror=\"window.__pwned=['student_id'];alert(1)\">"  # no '/': a valid folder name
    exporter = HTMLExporter(template_name="formgrade", extra_template_basedirs=[handlers.template_path])
    resources = {
        "assignment_id": "a",
        "notebook_id": "n",
        "submission_id": "s",
        "index": 0,
        "total": 1,
        "base_url": "",
        "student": hostile,
        "last_name": None,
        "first_name": None,
        "notebook_path": "/n",
    }
    page, _ = exporter.from_notebook_node(new_notebook(), resources=resources)
    assert any("onerror" in f and "'student_id'" in f for f in P.active_content(page)), "why: formgrader runs it"
    for sid in (hostile, "a&b", 'say"hi"', "o'clock", "`x`", "a>b"):
        assert "markup" in id_problem(sid), sid
    for sid in ("ann", "Ann Lee", "josé", "s-01_b.c"):
        assert id_problem(sid) == "", sid
