"""Hostile content for the inert-page tests: what a student could put in a submission to run code
in the instructor's browser (formgrader), or to forge what a page says.

Every active payload runs `js(tag)`: it records `tag` in `window.__pwned`, calls
`alert` and fetches `/api/contents?pwned=<tag>` (the Jupyter API that the
instructor's token opens). `active_content` finds, in an HTML page, everything
that could run or load: the tests assert it finds every payload in a page made
from the raw notebook (so the payloads are live) and nothing in the pages the
grader writes.
"""

from __future__ import annotations

import base64
import html.parser
import re

from nbformat import from_dict
from nbformat.v4 import new_code_cell, new_markdown_cell

FAKE_BANNER = "Score: 7 / 7"
# 1x1 PNG, valid base64
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


def js(tag: str) -> str:
    return f"window.__pwned=(window.__pwned||[]).concat(['{tag}']);alert('{tag}');fetch('/api/contents?pwned={tag}')"


def _svg(tag: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" onload="{js(tag)}"><script>{js(tag)}</script>'
        f'<a href="javascript:{js(tag)}"><text y="20">{FAKE_BANNER}</text></a></svg>'
    )


# name -> (mime bundle, output metadata): displayed by the student's code (display(..., raw=True))
OUTPUTS: dict[str, tuple[dict, dict]] = {
    "html_script": ({"text/html": f"<script>{js('html_script')}</script>"}, {}),
    "html_onerror": ({"text/html": f'<img src="x" onerror="{js("html_onerror")}">'}, {}),
    "html_js_link": ({"text/html": f'<a href="javascript:{js("html_js_link")}">{FAKE_BANNER}</a>'}, {}),
    "html_iframe": ({"text/html": f'<iframe src="data:text/html,<script>{js("html_iframe")}</script>"></iframe>'}, {}),
    "html_svg": ({"text/html": f'<svg onload="{js("html_svg")}"></svg>'}, {}),
    "html_details": ({"text/html": f'<details open ontoggle="{js("html_details")}">x</details>'}, {}),
    "html_refresh": ({"text/html": f'<meta http-equiv="refresh" content="0;url=javascript:{js("html_refresh")}">'}, {}),
    "javascript": ({"application/javascript": js("javascript")}, {}),
    "svg": ({"image/svg+xml": _svg("svg"), "text/plain": "<svg>"}, {}),
    "markdown_output": (
        {
            "text/markdown": f'<img src="x" onerror="{js("markdown_output")}"> '
            f"[x](javascript:{js('markdown_output')}) **{FAKE_BANNER}**"
        },
        {},
    ),
    "latex": ({"text/latex": f"$\\href{{javascript:{js('latex')}}}{{x}}$"}, {}),
    "widget": (
        {"application/vnd.jupyter.widget-view+json": {"model_id": "pwn", "version_major": 2, "version_minor": 0}},
        {},
    ),
    "unknown_mime": ({"application/x-evil+html": f"<script>{js('unknown_mime')}</script>"}, {}),
    "png_breakout": ({"image/png": f'x" onerror="{js("png_breakout")}'}, {}),
    "png_meta": ({"image/png": PNG}, {"image/png": {"width": f'1" onerror="{js("png_meta")}'}}),
}
# text outputs that must stay visible, escaped
PRINTED = f"<script>{js('printed')}</script> {FAKE_BANNER}"

# name -> markdown cell the student adds
MARKDOWN: dict[str, str] = {
    "md_script": f'<script>{js("md_script")}</script>\n\n<img src=x onerror="{js("md_script")}">',
    "md_links": f"[x](javascript:{js('md_links')}) ![y](javascript:{js('md_links')}) <javascript:{js('md_links')}>",
    "md_banner": f"# Autograder feedback: 02_scaled_sum\n\n> **Student:** you &nbsp; **{FAKE_BANNER}**",
    "md_math": f"$\\href{{javascript:{js('md_math')}}}{{click}}$",
    "md_details": f'<details open ontoggle="{js("md_details")}">x</details>',
    "md_attachment": "![a](attachment:a.svg)",
}
ATTACHMENTS = {"md_attachment": {"a.svg": {"image/svg+xml": base64.b64encode(_svg("md_attachment").encode()).decode()}}}
# text the grader writes into pages (a reason, a student id) that must stay literal
REASON = f'<img src=x onerror="{js("reason")}"> **{FAKE_BANNER}** [x](javascript:{js("reason")}) | `code`'

ACTIVE_TAGS = sorted((set(OUTPUTS) | set(MARKDOWN)) - {"md_attachment", "md_banner"})
# payloads that only a script-running renderer (MathJax, widget manager) or no renderer at all would make live:
# a page made from the raw notebook does not show them as active HTML
SCRIPT_ONLY_TAGS = {"latex", "md_math", "widget", "unknown_mime"}


def output_cells() -> list:
    """Code cells whose outputs are the payloads, as if they had run (for unit tests and controls)."""
    cells = []
    for name, (bundle, meta) in OUTPUTS.items():
        out = from_dict({"output_type": "display_data", "data": bundle, "metadata": meta})
        cells.append(new_code_cell(f"# {name}", outputs=[out]))
    cells.append(
        new_code_cell(
            "print(PRINTED)", outputs=[from_dict({"output_type": "stream", "name": "stdout", "text": PRINTED + "\n"})]
        )
    )
    return cells


def markdown_cells() -> list:
    cells = []
    for name, text in MARKDOWN.items():
        cell = new_markdown_cell(text, metadata={"jupyter": {"source_hidden": True}})
        if name in ATTACHMENTS:
            cell.attachments = ATTACHMENTS[name]
        cells.append(cell)
    return cells


def student_code() -> str:
    """One code cell a student adds: it displays every payload (run for real by the grader)."""
    lines = ["from IPython.display import display", f"PRINTED = {PRINTED!r}", "print(PRINTED)"]
    for bundle, meta in OUTPUTS.values():
        lines.append(f"display({bundle!r}, metadata={meta!r}, raw=True)")
    return "\n".join(lines)


# ---------------------------------------------------------------- finding active content
URL_ATTRS = {"href", "src", "action", "formaction", "data", "xlink:href", "srcdoc", "poster", "background"}
ACTIVE_ELEMENTS = {
    "script",
    "iframe",
    "object",
    "embed",
    "svg",
    "math",
    "base",
    "form",
    "frame",
    "frameset",
    "applet",
    "portal",
}
SAFE_DATA = re.compile(r"data:image/(png|jpeg);base64,[A-Za-z0-9+/=\s]*$", re.I)


def _decoded(url: str) -> str:
    """The text inside a base64 data: URL (so a finding names the payload it carries)."""
    head, _, data = url.partition(",")
    if not head.lower().endswith(";base64"):
        return ""
    try:
        return base64.b64decode(data + "===", validate=False).decode("utf-8", "replace")[:3000]
    except ValueError:
        return ""


class _Finder(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        where = f"<{tag} {' '.join(f'{k}={v!r}' for k, v in attrs)}>"[:3000]
        if tag in ACTIVE_ELEMENTS:
            self.found.append(f"element {where}")
        if tag == "meta" and any(k == "http-equiv" and (v or "").lower() == "refresh" for k, v in attrs):
            self.found.append(f"meta refresh {where}")
        for key, value in attrs:
            value = value or ""
            if key.startswith("on"):
                self.found.append(f"event handler {key} {where}")
            elif key in URL_ATTRS:
                url = re.sub(r"[\s\x00-\x1f]", "", value).lower()
                if url.startswith(("javascript:", "vbscript:")) or (
                    url.startswith("data:") and not SAFE_DATA.match(value.strip())
                ):
                    self.found.append(f"active url {where} {_decoded(value)}")
        self._in_script = tag == "script"

    def handle_data(self, data):
        if self._in_script and data.strip():
            self.found.append(f"script text {data.strip()[:300]}")

    def handle_endtag(self, tag):
        self._in_script = False


def active_content(page: str) -> list[str]:
    """What in `page` could run code, load something or navigate away (one line each)."""
    finder = _Finder()
    finder.feed(page)
    finder.close()
    return finder.found


def tags_in(findings: list[str]) -> set[str]:
    text = "\n".join(findings)
    return {t for t in set(OUTPUTS) | set(MARKDOWN) if f"'{t}'" in text or f"={t}" in text}
