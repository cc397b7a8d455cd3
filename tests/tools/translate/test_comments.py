"""A code cell's comments: translated, the code not (tools/translate/comments.py)."""

from __future__ import annotations

from tools import translate


def test_comments_are_translated_and_code_is_not():
    source = "x = 1  # check: one\n### BEGIN SOLUTION\ny = '# not a comment'\n# noqa: E501\n%timeit x"
    assert [t for _, _, t in translate.comment_units(source)] == ["check: one"]
    out = translate.render_comments(source, lambda t: "检查：一")
    assert out.splitlines()[0] == "x = 1  # 检查：一" and out.splitlines()[1:] == source.splitlines()[1:]
    assert translate.strip_comments(out) == translate.strip_comments(source)
