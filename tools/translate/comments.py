"""The student-facing comments of a code cell: each one a unit (msgctxt `<cell id>#comment`).

nbgrader's markers, `noqa` and the like are not prose; code is never translated (`strip_comments` gives the
code two editions must share).
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Callable

from .markdown import translatable

__all__ = ["comment_units", "render_comments", "strip_comments", "comment_context"]

_NOT_PROSE = re.compile(
    r"^#+\s*(BEGIN|END) (SOLUTION|HIDDEN TESTS)|^#\s*(noqa|type:|pragma|fmt:|pylint|YOUR CODE HERE)"
)


def _comment_tokens(source: str) -> list[tokenize.TokenInfo] | None:
    # IPython magics and shell escapes are not Python: blank them out (same length, so positions hold).
    masked = "\n".join(" " * len(ln) if ln.lstrip().startswith(("%", "!")) else ln for ln in source.split("\n"))
    try:
        return [t for t in tokenize.generate_tokens(io.StringIO(masked).readline) if t.type == tokenize.COMMENT]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None


def comment_units(source: str) -> list[tuple[tokenize.TokenInfo, str, str]]:
    """(token, prefix such as "# ", text) of each student-facing comment in a code cell."""
    found = []
    for tok in _comment_tokens(source) or []:
        if _NOT_PROSE.match(tok.string):
            continue
        m = re.match(r"(#+\s*)(.*?)\s*$", tok.string)
        if m and translatable(m.group(2)):
            found.append((tok, m.group(1), m.group(2)))
    return found


def render_comments(source: str, translate: Callable[[str], str]) -> str:
    """`source` with each student-facing comment translated; code untouched."""
    lines = source.split("\n")
    for tok, prefix, text in reversed(comment_units(source)):
        row, col = tok.start[0] - 1, tok.start[1]
        lines[row] = lines[row][:col] + prefix + translate(text) + lines[row][tok.end[1] :]
    return "\n".join(lines)


def strip_comments(source: str) -> str:
    """`source` with every comment emptied to `#` (to compare the code of two editions)."""
    tokens = _comment_tokens(source)
    if tokens is None:
        return source
    lines = source.split("\n")
    for tok in reversed(tokens):
        row = tok.start[0] - 1
        lines[row] = lines[row][: tok.start[1]] + "#" + lines[row][tok.end[1] :]
    return "\n".join(lines)


def comment_context(cell_id: str) -> str:
    return f"{cell_id}#comment"
