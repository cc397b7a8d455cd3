"""A test cell's one-line docstring: what the cell checks, one unit (msgctxt `<cell id>#docstring`)."""

from __future__ import annotations

import re
from collections.abc import Callable

from courseinfo import labels as code_labels  # which literals of a code cell a student sees

from .comments import strip_comments
from .markdown import translatable

__all__ = ["DOCSTRING", "docstring_unit", "render_docstring", "strip_prose", "docstring_context"]

DOCSTRING = re.compile(r'\A(\s*""")([^"\\\n]+?)(""")[ \t]*(?=\n|\Z)')


def docstring_unit(source: str) -> str | None:
    """The text of a cell's leading one-line docstring (`\"\"\"...\"\"\"` as its first line: what a test cell
    says it checks, and the exercise's name in the grader's report), or None."""
    m = DOCSTRING.match(source)
    return m.group(2) if m and translatable(m.group(2)) else None


def render_docstring(source: str, translate: Callable[[str], str]) -> str:
    """`source` with its leading docstring translated (kept English when the translation could not sit
    inside triple quotes: a quote, backslash or line break in it)."""
    m = DOCSTRING.match(source)
    if not m or not translatable(m.group(2)):
        return source
    text = translate(m.group(2))
    if re.search(r'["\\\n]', text):
        text = m.group(2)
    return source[: m.start(2)] + text + source[m.end(2) :]


def strip_prose(source: str) -> str:
    """`source` with its labels' words, comments and a leading docstring emptied: the code of a cell, as
    two editions must share it."""
    source = code_labels.canonical(source)
    m = DOCSTRING.match(source)
    if m:
        source = source[: m.start(2)] + source[m.end(2) :]
    return strip_comments(source)


def docstring_context(cell_id: str) -> str:
    return f"{cell_id}#docstring"
