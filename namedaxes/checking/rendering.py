"""How a failed check looks: the message in red, wrapped for nbgrader, then the hint line.

Colour is ANSI, which Jupyter, nbconvert and terminals render and nbgrader's command line strips;
`NO_COLOR` turns it off. Lines are wrapped before 80 columns (nbgrader's `validate` cuts longer ones).
A failure in a language written without spaces wraps by display width (two columns per CJK
character), never inside a `code span`; English wraps with `textwrap` as it always did.
"""

from __future__ import annotations

import os
import re

from ..i18n import is_wide
from .text import TEXT

__all__ = ["render_failure", "color", "RED", "GREEN", "BOLD"]

RED, GREEN, BOLD, RESET = "\x1b[31m", "\x1b[32m", "\x1b[1m", "\x1b[0m"


def color(code: str, text: str) -> str:
    """`text` in an ANSI colour, unless `NO_COLOR` is set (https://no-color.org)."""
    return text if os.environ.get("NO_COLOR") else f"{code}{text}{RESET}"


# nbgrader's command-line `validate` cuts every line at 87 characters (4 of them indent): wrap before that.
_WIDTH = 80


def _wrap(text: str, first: str, width: int = _WIDTH) -> list[str]:
    """`text` in lines of at most `width` characters, `first` before the first line, continuation lines aligned."""
    import textwrap

    pad = " " * len(first)
    lines: list[str] = []
    for paragraph in text.split("\n"):
        if any(is_wide(ch) for ch in paragraph):
            lines += _wrap_wide(paragraph, first if not lines else pad, pad, width) or [pad]
            continue
        lines += textwrap.wrap(
            paragraph,
            width=width,
            initial_indent=first if not lines else pad,
            subsequent_indent=pad,
            break_long_words=False,
            break_on_hyphens=False,
        ) or [pad]
    return lines


# Pieces a wide-script line may break between: a code span, a run of non-space narrow text, one wide
# character with the punctuation that must not start a line, or spaces.
_PIECES = re.compile(r"`[^`]*`|[^\s`\u2e80-\uffff]+|[\u2e80-\uffff][，。、：；！？）」』》,.:;!?)]*|\s+|`")


def _columns(text: str) -> int:
    return sum(2 if is_wide(ch) else 1 for ch in text)


def _wrap_wide(paragraph: str, first: str, pad: str, width: int) -> list[str]:
    """Greedy wrap by display width for text written without spaces (Chinese): see the module docstring."""
    lines, line = [], first
    for piece in _PIECES.findall(paragraph.strip()):
        if piece.isspace():
            piece = " "
        if _columns(line) + _columns(piece) > width and line.strip():
            lines.append(line.rstrip())
            line = pad
            if piece == " ":
                continue
        line += piece
    if line.strip():
        lines.append(line.rstrip())
    return lines


def render_failure(message: str, hint_line: str = "") -> list[str]:
    """The lines a failed check shows instead of a traceback: the message in red, then the hint line."""
    lines = [color(RED, line) for line in _wrap(message, TEXT["failed_mark"])]
    lines[0] = (
        lines[0].replace(TEXT["failed_mark"], color(BOLD, TEXT["failed_mark"]) + RED, 1)
        if not os.environ.get("NO_COLOR")
        else lines[0]
    )
    return lines + ([hint_line] if hint_line else [])
