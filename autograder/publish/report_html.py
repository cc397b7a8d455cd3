"""The class report's HTML pieces that its sections share: escaped text, `code` spans, names of exercises.

Threat model: everything passed in may come from a submission (student ids, reasons, messages). `e`
escapes it (`inert.html_text`) and `inline_code` makes `code` spans of escaped text only; nothing here
emits a tag whose content was not escaped first.
"""

from __future__ import annotations

from .course_info import CourseInfo
from .inert import html_text

__all__ = ["e", "inline_code", "shorten", "exercise_name", "both"]


def e(text) -> str:
    return html_text(text)


def inline_code(text) -> str:
    """Escaped text with `code` spans as <code> (an unpaired backtick stays a backtick)."""
    parts = str(text).split("`")
    if len(parts) % 2 == 0:  # odd number of backticks: the last one is literal
        parts[-2:] = [parts[-2] + "`" + parts[-1]]
    return "".join(f"<code>{e(p)}</code>" if i % 2 else e(p) for i, p in enumerate(parts))


def shorten(text: str, limit: int = 400) -> str:
    text = " ".join(str(text).strip().split())
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def exercise_name(info: CourseInfo, aid: str, gid: str) -> str:
    doc = info.exercises.get(aid, {}).get(gid, "")
    if doc:
        return f'{inline_code(doc)}<br><code class="gid">{e(gid)}</code>'
    return f'<code class="gid">{e(gid)}</code>'


def both(en: str, zh: str) -> str:
    """A label in English and Chinese (both already HTML), the Chinese marked as such for readers and tools."""
    return f'{en} <span lang="zh-CN">/ {zh}</span>'
