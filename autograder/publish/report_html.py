"""The class report's page pieces (report.py and report_map.py lay out the page with them): its stylesheet,
escaping, `code` spans, links to feedback pages, the key that groups failure messages, exercise names, and
labels in both languages.

Threat model (report.py's): student ids, reasons and failure messages come from submissions; every
text goes through `escape` (`inert.html_text`), `code` spans become `<code>` around escaped text, and a
link is only ever a relative path to a feedback page that exists, each part URL-quoted.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import quote

from .course_info import CourseInfo
from .inert import EMPHASIS, html_text

__all__ = [
    "CSS",
    "both",
    "course_markup",
    "escape",
    "exercise_name",
    "failure_key",
    "feedback_href",
    "feedback_link",
    "inline_code",
    "shorten",
    "student_list",
]


# ---------------------------------------------------------------- failure messages
_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def failure_key(reason: str) -> str:
    """Group failure messages that differ only in numbers (each student's values differ)."""
    first = " ".join(reason.strip().split())
    return _NUMBER.sub("#", first)[:400]


def shorten(text: str, limit: int = 400) -> str:
    text = " ".join(text.strip().split())
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


CSS = """
:root { color-scheme: light dark; --fg: #1d1d1f; --bg: #ffffff; --muted: #6e6e73; --line: #d2d2d7;
        --warn: #b3261e; --card: #f5f5f7; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #f5f5f7; --bg: #1d1d1f; --muted: #a1a1a6; --line: #424245; --warn: #ff8a80; --card: #2c2c2e; }
}
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg);
       max-width: 1100px; margin: 2em auto; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: .2em; } h2 { margin-top: 2em; border-bottom: 1px solid var(--line); }
h3 { margin-top: 1.5em; }
.muted { color: var(--muted); } .warn { color: var(--warn); font-weight: 600; }
table { border-collapse: collapse; margin: .6em 0 1.2em; width: 100%; }
th, td { border-bottom: 1px solid var(--line); padding: .3em .6em; text-align: left; vertical-align: top; }
th { font-weight: 600; } td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
figure { margin: .5em 0 1em; } figure img { max-width: 100%; border-radius: 6px; background: #fff; }
.cards { display: flex; gap: 1em; flex-wrap: wrap; margin: 1em 0; }
.card { background: var(--card); border-radius: 8px; padding: .6em 1em; min-width: 9em; }
.card b { display: block; font-size: 1.5em; }
code, .msg { font-family: ui-monospace, "SFMono-Regular", Menlo, monospace; font-size: .88em; }
.msg { white-space: pre-wrap; word-break: break-word; }
.gid { color: var(--muted); font-size: .8em; }
td.missing { color: var(--muted); } td.full { font-weight: 600; }
table.students td, table.students th { white-space: nowrap; }
"""


# ---------------------------------------------------------------- HTML helpers
def escape(text) -> str:
    return html_text(text)


def inline_code(text) -> str:
    """Escaped text with `code` spans as <code> (an unpaired backtick stays a backtick)."""
    parts = str(text).split("`")
    if len(parts) % 2 == 0:  # odd number of backticks: the last one is literal
        parts[-2:] = [parts[-2] + "`" + parts[-1]]
    return "".join(f"<code>{escape(p)}</code>" if i % 2 else escape(p) for i, p in enumerate(parts))


def course_markup(text) -> str:
    """The judge's or the course's words (never a student's) as HTML: `code` spans as <code>, *emphasis* as
    <em>, everything escaped first (an asterisk between spaces, as in `j * block`, stays an asterisk)."""
    parts = str(text).split("`")
    if len(parts) % 2 == 0:  # odd number of backticks: the last one is literal
        parts[-2:] = [parts[-2] + "`" + parts[-1]]
    return "".join(
        f"<code>{escape(p)}</code>" if i % 2 else EMPHASIS.sub(r"<em>\1</em>", escape(p)) for i, p in enumerate(parts)
    )


def feedback_href(out: Path | None, student: str, aid: str) -> str:
    if out is None or not aid:
        return ""
    rel = Path("feedback") / student / f"{aid}.html"
    if not (out / rel).is_file():
        return ""
    return "/".join(quote(part) for part in rel.parts)


def feedback_link(out: Path | None, student: str, aid: str) -> str:
    href = feedback_href(out, student, aid)
    return f' <a href="{escape(href)}">feedback</a>' if href else ""


def student_list(names: list[str], limit: int = 8) -> str:
    names = sorted(set(names))
    shown = ", ".join(escape(n) for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def exercise_name(info: CourseInfo, aid: str, gid: str) -> str:
    """An exercise as the report names it: its test cell's one-line docstring, then its grade id."""
    doc = info.exercises.get(aid, {}).get(gid, "")
    if doc:
        return f'{inline_code(doc)}<br><code class="gid">{escape(gid)}</code>'
    return f'<code class="gid">{escape(gid)}</code>'


def both(en: str, zh: str) -> str:
    """A label in English and Chinese (both already HTML), the Chinese marked as such for readers and tools."""
    return f'{en} <span lang="zh-CN">/ {zh}</span>'
