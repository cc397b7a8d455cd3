"""The feedback page names each test by its exercise (`scaled_sum`, check 2 of 2), never by its grade id,
and shows a check's message without the exception's name (no `CheckFailed:`)."""

from __future__ import annotations

import html
import re
from pathlib import Path

from autograder.course.notebooks import SourceNotebook
from autograder.publish.feedback import FeedbackWriter, exercise_names, sentences_cut, shown_reason, whole_message
from autograder.records import make_row, zero_cells

ROOT = Path(__file__).resolve().parents[3]
AID = "02_scaled_sum"
REASON = "CheckFailed: `scaled_sum` returned different values on different devices"


def _text(page: str) -> str:
    body = page[page.index("<body") :] if "<body" in page else page
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", body)))


def _page(with_notebook: bool) -> str:
    source = SourceNotebook.load(AID, ROOT / "solutions" / f"{AID}.ipynb")
    cells = zero_cells(source, REASON)
    row = make_row("ann", AID, "", source, "ok", "", cells)
    return FeedbackWriter().html(source.nb if with_notebook else None, AID, row, cells, source=source)


def test_exercises_are_the_answer_cells_before_the_tests():
    source = SourceNotebook.load(AID, ROOT / "solutions" / f"{AID}.ipynb")
    assert exercise_names(source.nb, [t.grade_id for t in source.test_cells]) == {
        "scaled_sum_total": ("scaled_sum", 1, 2),
        "scaled_sum_uses_psum": ("scaled_sum", 2, 2),
        "scaled_mean_value": ("scaled_mean", 1, 1),
        "global_max_share_value": ("global_max_share", 1, 1),
    }
    assert exercise_names(None, ["x_test"]) == {"x_test": ("x_test", 1, 1)}, "no notebook: the grade id stays"
    assert shown_reason(REASON) == REASON[len("CheckFailed: ") :]
    unstarted = "NotAttempted: `scaled_sum` is not written yet: replace `raise NotImplementedError()` in its cell"
    assert shown_reason(unstarted) == unstarted[len("NotAttempted: ") :]  # the words say "not started"
    assert shown_reason("TypeError: bad") == "TypeError: bad"


def test_the_page_names_exercises_and_drops_the_checkfailed_prefix():
    for with_notebook in (False, True):
        page = _page(with_notebook)
        text = _text(page)
        banner = text[: text.index("Everything below the line")]
        verdicts = " ".join(_text(q) for q in re.findall(r"(?s)<blockquote>.*?</blockquote>", page)[1:])
        assert "exercise points result" in banner, banner
        for gid in ("scaled_sum_total", "scaled_sum_uses_psum", "scaled_mean_value", "global_max_share_value"):
            assert gid not in banner and gid not in verdicts, f"grade id {gid} in the grader's words"
        assert "scaled_sum (check 1 of 2)" in text and "scaled_sum (check 2 of 2)" in text
        assert "CheckFailed" not in text
        assert "returned different values on different devices" in text
    text = _text(_page(True))
    assert re.search(r"✘ Autograder, exercise scaled_sum ?, check 2 of 2: 0 / 1 point\. scaled_sum returned", text)
    page = _page(True)
    graders = " ".join(_text(q) for q in re.findall(r"(?s)<blockquote>.*?</blockquote>|<table.*?</table>", page))
    assert "returned different values" in graders and "`" not in graders, "the grader's words show code, not backticks"
    assert page.count("<code>scaled_sum</code> returned different values") >= 2, "in the table and the verdict"
    assert re.search(r"✘ Autograder, exercise scaled_mean ?: 0 / 2 points\.", text)


def test_the_memoized_sanitizer_gives_nbconverts_output_and_keeps_only_small_inputs():
    from nbconvert.filters import clean_html

    from autograder.publish import feedback

    memo = feedback._memo_clean_html()
    small = '<p onclick="x()">hi<script>alert(1)</script></p>'
    big = "<b>" + "x" * feedback.MEMO_MAX_CHARS + "</b><img src=x onerror=alert(1)>"
    for page in (small, small, big, big):
        assert memo(page) == clean_html(page)
    assert "<script" not in memo(small) and "<img" not in memo(big)  # still sanitized


def test_the_page_is_nbconverts_page_without_its_reparse():
    """`accessible` adds what HTMLExporter's BeautifulSoup pass adds (alt, tabindex), and nothing else."""
    from bs4 import BeautifulSoup
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter
    from nbformat.v4 import new_code_cell, new_notebook, new_output

    from autograder.publish import feedback

    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
    nb = new_notebook(
        cells=[
            new_code_cell("x", outputs=[new_output("display_data", data={"image/png": png, "text/plain": "<fig>"})]),
            new_code_cell("print(1)", outputs=[new_output("stream", name="stdout", text='<img src=x> "a" & b\n')]),
        ]
    )
    loader = [DictLoader({feedback.TEMPLATE_NAME: feedback.TEMPLATE})]
    ours = FeedbackWriter().exporter.from_notebook_node(nb)[0]
    theirs = HTMLExporter(template_name="lab", extra_loaders=loader, template_file=feedback.TEMPLATE_NAME)
    theirs.exclude_input_prompt = False
    nbconvert = theirs.from_notebook_node(nb)[0]
    soup = BeautifulSoup(ours, "html.parser")
    assert [img.get("alt") for img in soup.select("img")] == [feedback.NO_ALT]
    assert all(d.get("tabindex") == "0" for d in soup.select("div.jp-OutputArea-output, div.jp-Cell-inputWrapper"))
    assert "&lt;img src=x&gt;" in ours, "the printed tag stays text"
    assert str(soup) == str(BeautifulSoup(nbconvert, "html.parser"))
    assert feedback.accessible('<img alt="a" src="x">') == '<img alt="a" src="x">'


# ---------------------------------------------------------------- whole messages (issue 48)
RING = (  # 09's visible check on a ring masked by positions inside each block, as the kernel raised it
    "CheckFailed: `causal_ring_attention` returned wrong values (mesh 8 sequence_axis: x (24, 4)): row 3 "
    "expected [0.1, 0.2], got [0.3, 0.4]. That is a mask by positions inside each block: every block was masked "
    "as if it were the device's own. Compare *global* positions: block j's keys start at j * block, and at ring "
    "step s the device holds another device's block."
)


def test_a_message_is_cut_after_a_sentence_never_inside_one():
    head, rest = sentences_cut(shown_reason(RING))
    assert head == (
        "`causal_ring_attention` returned wrong values (mesh 8 sequence_axis: x (24, 4)): row 3 expected [0.1, 0.2], "
        "got [0.3, 0.4]. That is a mask by positions inside each block: every block was masked as if it were the "
        "device's own."
    )
    assert rest.startswith("Compare *global* positions") and rest.endswith("another device's block.")
    assert sentences_cut("short. message.") == ("short. message.", "")
    one = "a" * 400 + " b. Then more."
    assert sentences_cut(one) == ("a" * 400 + " b.", "Then more.")  # a long first sentence is kept whole
    assert sentences_cut("word " * 100) == (("word " * 100).strip(), "")  # no sentence end: whole
    assert sentences_cut("e.g. " + "x" * 300 + ". Next.")[0].startswith("e.g. x")  # "e.g." ends no sentence
    zh = "这是第一句。" * 60 + "最后一句。"
    assert sentences_cut(zh)[0].endswith("。") and sentences_cut(zh)[1].endswith("最后一句。")


def test_the_page_shows_a_whole_message_the_rest_one_click_away_and_no_raw_emphasis():
    source = SourceNotebook.load(AID, ROOT / "solutions" / f"{AID}.ipynb")
    cells = zero_cells(source, RING)
    page = FeedbackWriter().html(
        source.nb, AID, make_row("ann", AID, "", source, "ok", "", cells), cells, source=source
    )
    shown = _text(page)
    graders = " ".join(_text(q) for q in re.findall(r"(?s)<blockquote>.*?</blockquote>|<table.*?</table>", page))
    assert "at ring step s the device holds another device's block." in graders and "…" not in graders
    assert page.count("<details><summary>the rest of the message</summary>Compare global positions:") == 2 * len(cells)
    assert "*global*" not in shown and "<em>global</em>" not in page, "a kernel's *emphasis*: the plain word"
    assert "<script" not in page.split("</head>")[1]


def test_the_judges_words_keep_their_emphasis():
    from autograder.reasons import Verdict, phrase
    from autograder.records import CellResult

    judged = Verdict(False, (phrase("known_mistake", key="k8", module="large_models", mistake="ring_local_mask"),))
    said = whole_message(CellResult("ring", 0.0, 3.0, False, judged))
    assert "*global*" in said and "\\*global\\*" not in said  # markdown emphasis: <em> once rendered
    kernel = whole_message(CellResult("ring", 0.0, 3.0, False, RING))
    assert "Compare global positions" in kernel and "*" not in kernel.replace("\\*", "")
