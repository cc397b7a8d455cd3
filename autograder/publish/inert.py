"""The one place that makes student-controlled content inert before anyone's browser renders it.

Threat model. The instructor reviews submissions in formgrader, in the browser
session that holds their Jupyter token (often as root). Anything a submission
can make that browser *execute* there -- a script, an event handler, a
`javascript:` link, an SVG with a script, a widget loaded from a CDN -- can drive
the Jupyter API (files, terminals): a root shell. The same content in a feedback
page or in the class report could forge what a student or an instructor sees
("Score: 7 / 7"). Everything a submission controls is treated as hostile:

- every output of every cell (the student's code runs in the kernel that
  produced them, and a kernel can send any message: any mimetype, any
  metadata, any stream name);
- the text of answer cells and of cells the student added;
- anything in a notebook that did not come from the instructor's source.

What is kept, and why it is inert:

- `text/plain`, stream text and error text: nbconvert's templates and
  JupyterLab escape them (they are shown in `<pre>`, never parsed as HTML);
- `image/png` and `image/jpeg` whose data is strict base64 (so it cannot close
  the `src="data:..."` attribute it is pasted into) with numeric width/height
  only: a raster image in an `<img>` cannot run code;
- markdown and raw cells are rendered only when they are the instructor's
  verbatim (same text as a markdown cell of the source notebook, or, when no
  source is given, a non-answer cell that the grader did not mark as added by
  the student); every other markdown or raw cell is shown *as typed*, inside a
  fenced code block longer than any backtick run in it, under a label saying it
  is the student's text. Such text cannot render as HTML, a link, math or a
  heading, so it cannot look like the grader's banner either.

What is removed: `text/html`, `text/markdown`, `text/latex`,
`application/javascript`, `image/svg+xml`, widget views and every other rich
mimetype (an output left with nothing to show gets a one-line text notice);
output metadata other than image sizes; cell attachments except valid PNG/JPEG
on the instructor's own cells; cell metadata other than nbgrader's (with a
well-formed grade_id) and the grader's own marks (so `metadata.jupyter` cannot
hide a student's code from the reviewer); notebook metadata other than
`kernelspec` and `language_info` (widget state is how a notebook pulls in
widget JavaScript).

Text that the grader itself puts into a page (ids, reasons, exercise names)
goes through `md_text` (markdown context) or `html_text` (HTML context). Pages
the grader writes carry `CSP`: no script source at all, images only from
`data:`, no requests, no forms, no base URL. This module has no state: calling
`make_inert` on its own output returns the same notebook.
"""

from __future__ import annotations

import copy
import html
import re

from nbformat import NotebookNode, from_dict, validate
from nbformat.v4 import new_notebook
from nbformat.v4.nbbase import random_cell_id

__all__ = [
    "CSP",
    "CSP_META",
    "SAFE_IMAGE_TYPES",
    "STUDENT_TEXT_LABEL",
    "REMOVED_OUTPUT_NOTICE",
    "make_inert",
    "inert_outputs",
    "md_text",
    "md_text_with_code",
    "EMPHASIS",
    "html_text",
    "text_block",
]

# Content-Security-Policy for every page the grader writes (feedback HTML, report.html):
# nothing may run, load or be sent; inline CSS and data: images are all these pages need.
CSP = (
    "default-src 'none'; script-src 'none'; object-src 'none'; style-src 'unsafe-inline'; "
    "img-src data:; font-src data:; base-uri 'none'; form-action 'none'; frame-src 'none'"
)
CSP_META = f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'

SAFE_IMAGE_TYPES = ("image/png", "image/jpeg")
# Student-facing strings (shown in feedback pages and in formgrader).
STUDENT_TEXT_LABEL = "*Text from the submission, shown as typed (not rendered):*"
REMOVED_OUTPUT_NOTICE = (
    "[autograder: an output of type {types} is not shown; pages of graded work show "
    "only text and PNG/JPEG images from a submission]"
)

_BASE64 = re.compile(r"[A-Za-z0-9+/=\r\n]*")
_GRADE_ID = re.compile(r"[a-zA-Z0-9_\-]{1,200}")
_CELL_ID = re.compile(r"[a-zA-Z0-9_\-]{1,64}")
_NBGRADER_KEYS = {
    "grade": bool,
    "solution": bool,
    "locked": bool,
    "task": bool,
    "schema_version": int,
    "points": (int, float),
    "grade_id": str,
    "checksum": str,
    "cell_type": str,
}
_MD_PUNCT = {c: "\\" + c for c in "!#$()*+-./:=?@[\\]^_`{|}~"}
_MD_PUNCT.update({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"})
_MD_TABLE = str.maketrans(_MD_PUNCT)


def html_text(text) -> str:
    """Any text, safe as HTML element content or a quoted attribute value."""
    return html.escape(str(text), quote=True)


def md_text(text) -> str:
    """Any text as one line of literal markdown: no HTML, no emphasis, no links, no table cells.

    Markdown's ASCII punctuation is backslash-escaped (CommonMark, which both
    nbconvert's mistune and JupyterLab's marked follow) and `& < > "` become
    entities, so `<img onerror=...>`, `**Score: 7 / 7**` and
    `[x](javascript:...)` show as exactly those characters.
    """
    return " ".join(str(text).split()).translate(_MD_TABLE)


EMPHASIS = re.compile(r"(?<![*\w\\])\*([^\W_](?:[\w' -]*[^\W_])?)\*(?![*\w])")  # *global*, *a few words*


def md_text_with_code(text, emphasis: bool = False) -> str:
    """Like `md_text`, but a `code span` in the text (the grader's and the checks' words mark names and
    code with backticks) shows as code instead of raw backticks, and an *emphasis* (the checks' words stress a
    word so) shows without its asterisks: as emphasis when `emphasis` (words only the judge or the course
    wrote), else as the plain word (a message a kernel raised: it may have been written to look like the
    grader's).

    A code span's content is literal in CommonMark (no emphasis, no link, no HTML: the renderer escapes
    it), so it is safe as it is; a piece that could still break out of its table cell (a `|`) or is
    empty, and an unpaired backtick, are shown escaped as plain text. An emphasis's words are escaped like
    any other text, between the two asterisks that make it one.
    """
    parts = " ".join(str(text).split()).split("`")
    if len(parts) % 2 == 0:  # an odd number of backticks: the last one has no partner
        parts[-2:] = [parts[-2] + "`" + parts[-1]]
    out = []
    for i, part in enumerate(parts):
        if i % 2 and part.strip() and "|" not in part:
            out.append(f"`{part}`")
        elif i % 2:
            out.append(f"`{part}`".translate(_MD_TABLE))
        else:
            pieces = EMPHASIS.split(part)  # text, emphasized, text, ...
            out.append(
                "".join(
                    (f"*{p.translate(_MD_TABLE)}*" if emphasis else p.translate(_MD_TABLE))
                    if j % 2
                    else p.translate(_MD_TABLE)
                    for j, p in enumerate(pieces)
                )
            )  # md_text, spaces kept
    return "".join(out)


def text_block(text: str) -> str:
    """Markdown that shows `text` verbatim: a fenced code block no line of `text` can close."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{STUDENT_TEXT_LABEL}\n\n{fence}\n{text}\n{fence}"


# ---------------------------------------------------------------- outputs
def _text(value) -> str:
    if isinstance(value, list):
        return "".join(v for v in value if isinstance(v, str))
    return value if isinstance(value, str) else ""


def _size(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= 20000 else None


def _bundle(output: dict) -> tuple[dict, dict]:
    data = output.get("data") if isinstance(output.get("data"), dict) else {}
    meta = output.get("metadata") if isinstance(output.get("metadata"), dict) else {}
    kept, kept_meta, dropped = {}, {}, []
    for mime, value in data.items():
        if mime == "text/plain":
            kept[mime] = _text(value)
        elif mime in SAFE_IMAGE_TYPES and _BASE64.fullmatch(_text(value)) and _text(value):
            kept[mime] = _text(value)
            sizes = meta.get(mime) if isinstance(meta.get(mime), dict) else {}
            dims = {k: _size(sizes.get(k)) for k in ("width", "height")}
            if any(dims.values()):
                kept_meta[mime] = {k: v for k, v in dims.items() if v}
        else:
            dropped.append(str(mime))
    if not kept:
        kept["text/plain"] = REMOVED_OUTPUT_NOTICE.format(types=", ".join(sorted(set(dropped))) or "(none)")
    return kept, kept_meta


def _output(output) -> NotebookNode | None:
    if not isinstance(output, dict):
        return None
    kind = output.get("output_type")
    if kind == "stream":
        return from_dict(
            {
                "output_type": "stream",
                "name": "stderr" if output.get("name") == "stderr" else "stdout",
                "text": _text(output.get("text")),
            }
        )
    if kind == "error":
        tb = output.get("traceback") if isinstance(output.get("traceback"), list) else []
        return from_dict(
            {
                "output_type": "error",
                "ename": _text(output.get("ename")),
                "evalue": _text(output.get("evalue")),
                "traceback": [_text(t) for t in tb],
            }
        )
    if kind in ("display_data", "execute_result"):
        data, meta = _bundle(output)
        out = {"output_type": kind, "data": data, "metadata": meta}
        if kind == "execute_result":
            count = output.get("execution_count")
            out["execution_count"] = count if isinstance(count, int) and not isinstance(count, bool) else None
        return from_dict(out)
    return None


def inert_outputs(outputs) -> list[NotebookNode]:
    """The outputs of one code cell, rebuilt from allowed fields only (unknown output types dropped)."""
    if not isinstance(outputs, list):
        return []
    return [o for o in (_output(x) for x in outputs) if o is not None]


# ---------------------------------------------------------------- cells
def _nbgrader_meta(meta) -> dict:
    meta = meta.get("nbgrader") if isinstance(meta, dict) else None
    if not isinstance(meta, dict):
        return {}
    clean = {
        k: v
        for k, v in meta.items()
        if k in _NBGRADER_KEYS
        and isinstance(v, _NBGRADER_KEYS[k])
        and not (isinstance(v, bool) and _NBGRADER_KEYS[k] is int)
    }
    if "grade_id" in clean and not _GRADE_ID.fullmatch(clean["grade_id"]):
        return {}
    return clean


def _grader_marks(meta) -> dict:
    marks = meta.get("autograder") if isinstance(meta, dict) else None
    if not isinstance(marks, dict):
        return {}
    clean = {}
    if marks.get("student_added") is True:
        clean["student_added"] = True
    if isinstance(marks.get("student_text"), str):
        clean["student_text"] = marks["student_text"]
    return clean


def _cell_meta(cell) -> dict:
    meta = {}
    nbg = _nbgrader_meta(cell.get("metadata"))
    if nbg:
        meta["nbgrader"] = nbg
    marks = _grader_marks(cell.get("metadata"))
    if marks:
        meta["autograder"] = marks
    return meta


def _attachments(cell) -> dict:
    found = cell.get("attachments")
    kept = {}
    for name, bundle in found.items() if isinstance(found, dict) else ():
        if not (isinstance(name, str) and isinstance(bundle, dict)):
            continue
        images = {
            m: _text(v) for m, v in bundle.items() if m in SAFE_IMAGE_TYPES and _text(v) and _BASE64.fullmatch(_text(v))
        }
        if images:
            kept[name] = images
    return kept


def _new_cell(kind: str, source: str, **fields) -> NotebookNode:
    """nbformat's `new_code_cell` / `new_markdown_cell`, less their schema validation of each cell:
    `make_inert` validates the whole notebook once, against the same schema (a notebook of 60 cells was
    60 validations, 70 ms of a feedback page's CPU, and every page makes two inert copies)."""
    cell = NotebookNode(id=random_cell_id(), cell_type=kind, source=source, metadata=NotebookNode())
    if kind == "code":
        cell.execution_count, cell.outputs = None, []
    cell.update(fields)
    return cell


def _keep_id(cell, new: NotebookNode) -> None:
    """Keep the cell's id when it is a well-formed nbformat id (templates print it in an attribute)."""
    cid = cell.get("id")
    if isinstance(cid, str) and _CELL_ID.fullmatch(cid):
        new.id = cid


def _student_text_cell(cell, text: str, meta: dict) -> NotebookNode:
    meta = dict(meta)
    meta["autograder"] = dict(meta.get("autograder", {}), student_text=text)
    new = _new_cell("markdown", text_block(text), metadata=meta)
    _keep_id(cell, new)
    return new


def _is_student_cell(meta: dict) -> bool:
    return bool(meta.get("nbgrader", {}).get("solution")) or bool(meta.get("autograder", {}).get("student_added"))


def _source_texts(source) -> set[str] | None:
    if source is None:
        return None
    nb = getattr(source, "nb", source)
    return {
        _text(c.get("source"))
        for c in nb.get("cells", [])
        if isinstance(c, dict)
        and c.get("cell_type") == "markdown"
        and not _nbgrader_meta(c.get("metadata")).get("solution")
    }


def _cell(cell, trusted_markdown: set[str] | None) -> NotebookNode | None:
    if not isinstance(cell, dict):
        return None
    kind = cell.get("cell_type")
    meta = _cell_meta(cell)
    text = _text(cell.get("source"))
    if kind == "code":
        count = cell.get("execution_count")
        new = _new_cell(
            "code",
            text,
            metadata=meta,
            outputs=inert_outputs(cell.get("outputs")),
            execution_count=count if isinstance(count, int) and not isinstance(count, bool) else None,
        )
        _keep_id(cell, new)
        return new
    if kind not in ("markdown", "raw"):
        return None
    if "student_text" in meta.get("autograder", {}):  # our own output: rebuilt from the original text
        return _student_text_cell(cell, meta["autograder"]["student_text"], meta)
    trusted = (
        kind == "markdown" and not _is_student_cell(meta) and (trusted_markdown is None or text in trusted_markdown)
    )
    if not trusted:
        return _student_text_cell(cell, text, meta)
    attachments = _attachments(cell)
    if len(attachments) != len(cell.get("attachments") or {}):  # an unsafe image: the text is all we show
        return _student_text_cell(cell, text, meta)
    new = _new_cell("markdown", text, metadata=meta)
    if attachments:
        new.attachments = attachments
    _keep_id(cell, new)
    return new


def make_inert(nb, source=None) -> NotebookNode:
    """A copy of `nb` that renders nothing active, in formgrader, JupyterLab or nbconvert.

    `source` (a `notebooks.SourceNotebook` or the source NotebookNode) makes
    the test for instructor markdown exact: a markdown cell is rendered only if
    its text is the text of a non-answer markdown cell of the source. Without
    it, the notebook must have been built by `notebooks.build_graded` (whose
    cell metadata all comes from the source): answer cells and cells marked
    `student_added` are shown as text. The input is not changed.
    """
    trusted = _source_texts(source)
    meta = nb.get("metadata") if isinstance(nb.get("metadata"), dict) else {}
    keep = {}
    for key in ("kernelspec", "language_info"):
        value = meta.get(key)
        if isinstance(value, dict):
            keep[key] = {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, (str, int))}
    if isinstance(meta.get("title"), str):
        keep["title"] = meta["title"]
    out = new_notebook(metadata=copy.deepcopy(keep))
    cells = nb.get("cells") if isinstance(nb.get("cells"), list) else []
    out.cells = [c for c in (_cell(c, trusted) for c in cells) if c is not None]
    validate(out)  # what each new_*_cell checked, at once: a cell we built wrong raises, as it did there
    return out
