"""Markdown cells cut into units and rebuilt around their translations (tools/translate/markdown.py)."""

from __future__ import annotations

from tools import translate


def test_markdown_units_keep_structure():
    source = (
        "# Title with `code`\n\nA paragraph that is\nwrapped over lines.\n\n- item one\n  continued\n"
        "- `only_code`\n\n| a col | `x` |\n|---|---|\n| a cell | 2 (k − 1) |\n\n```python\n# not prose\n```"
    )
    units = [u.text for u in translate.markdown_units(source)]
    assert units == [
        "Title with `code`",
        "A paragraph that is wrapped over lines.",
        "item one continued",
        "a col",
        "a cell",
    ]
    upper = translate.render_markdown(source, str.upper)
    assert upper.splitlines()[0] == "# TITLE WITH `CODE`"
    assert "- ITEM ONE CONTINUED\n- `only_code`" in upper
    assert "| A COL | `x` |\n|---|---|\n| A CELL | 2 (k − 1) |" in upper
    assert upper.endswith("```python\n# not prose\n```")
    rewrapped = source.replace("that is\nwrapped", "that is wrapped")
    assert [u.text for u in translate.markdown_units(rewrapped)] == units  # re-wrapping is no change
