"""Markdown cells cut into units: a heading, a paragraph, a list item, a blockquote line, a table cell.

The structure (heading marks, list markers and indentation, table pipes, fenced code blocks, blank lines)
stays outside the units and is rebuilt around their translations (`render_markdown`); a paragraph's soft
line breaks become spaces, so re-wrapping English changes no unit. A unit without words (`lax.psum`, a
formula) is no unit (`translatable`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["CODE_SPAN", "translatable", "Unit", "markdown_pieces", "markdown_units", "render_markdown"]

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^(#{1,6}\s+)(.*?)\s*$")
_ITEM = re.compile(r"^(\s*(?:[-*+]|\d+[.)])\s+)(.*)$")
_QUOTE = re.compile(r"^(\s*>\s?)(.*)$")
_ROW = re.compile(r"^\s*\|.*\|\s*$")
_SEPARATOR_ROW = re.compile(r"^\s*\|?(\s*:?-+:?\s*\|)+\s*:?-*:?\s*$")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_WORDS = re.compile(r"[A-Za-z]{2,}")


def translatable(text: str) -> bool:
    """Has words outside code spans and placeholders (`lax.psum` alone, or a formula, does not)."""
    return bool(_WORDS.search(re.sub(r"\{[^{}]*\}", "", CODE_SPAN.sub("", text))))


@dataclass
class Unit:
    """One translatable piece of a markdown cell: `prefix` + text, on one output line."""

    prefix: str
    text: str
    kind: str


def _starts_block(line: str) -> bool:
    return bool(
        not line.strip()
        or _FENCE.match(line)
        or _HEADING.match(line)
        or _ITEM.match(line)
        or _ROW.match(line)
        or _QUOTE.match(line)
    )


def _cells_of_row(line: str) -> list[str]:
    body = line.strip()[1:-1]
    cells, depth, current = [], False, ""
    for ch in body:  # a pipe inside a code span is not a cell boundary
        if ch == "`":
            depth = not depth
        if ch == "|" and not depth:
            cells.append(current)
            current = ""
        else:
            current += ch
    return [c.strip() for c in cells + [current]]


def markdown_pieces(source: str) -> list:
    """The cell as output lines: each a `str` kept verbatim, a `Unit`, or a table row (`list` of str/Unit)."""
    lines, out, i = source.split("\n"), [], 0
    while i < len(lines):
        line = lines[i]
        if _FENCE.match(line):
            fence = _FENCE.match(line).group(1)
            j = i + 1
            while j < len(lines) and not lines[j].strip().startswith(fence):
                j += 1
            out.extend(lines[i : j + 1])
            i = j + 1
            continue
        if not line.strip():
            out.append(line)
        elif m := _HEADING.match(line):
            out.append(Unit(m.group(1), m.group(2), "heading") if translatable(m.group(2)) else line)
        elif _ROW.match(line):
            if _SEPARATOR_ROW.match(line):
                out.append(line)
            else:
                out.append([Unit("", c, "table cell") if translatable(c) else c for c in _cells_of_row(line)])
        else:
            m = _ITEM.match(line) or _QUOTE.match(line)
            prefix, first = (m.group(1), m.group(2)) if m else ("", line.strip())
            kind = "list item" if _ITEM.match(line) else "quote" if m else "paragraph"
            parts = [first]
            while i + 1 < len(lines) and not _starts_block(lines[i + 1]):
                i += 1
                parts.append(lines[i].strip())
            text = " ".join(p for p in parts if p)
            out.append(Unit(prefix, text, kind) if translatable(text) else "\n".join(lines[i - len(parts) + 1 : i + 1]))
        i += 1
    return out


def markdown_units(source: str) -> list[Unit]:
    units = []
    for piece in markdown_pieces(source):
        if isinstance(piece, Unit):
            units.append(piece)
        elif isinstance(piece, list):
            units.extend(c for c in piece if isinstance(c, Unit))
    return units


def render_markdown(source: str, translate: Callable[[str], str]) -> str:
    """The cell with every unit replaced by `translate(unit.text)`, its structure rebuilt around it."""
    lines = []
    for piece in markdown_pieces(source):
        if isinstance(piece, Unit):
            lines.append(piece.prefix + translate(piece.text))
        elif isinstance(piece, list):
            lines.append("| " + " | ".join(translate(c.text) if isinstance(c, Unit) else c for c in piece) + " |")
        else:
            lines.append(piece)
    return "\n".join(lines)
