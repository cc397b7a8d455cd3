"""Translation catalogs of the course: extract, update, compile, check (one tool, Babel underneath).

    python -m tools.translate update     # merge the current English into locale/zh/*.po
    python -m tools.translate compile    # locale/zh/namedaxes.po -> namedaxes/locale/zh/LC_MESSAGES/namedaxes.mo
    python -m tools.translate check      # fail unless every catalog is in sync, complete and consistent
    python -m tools.translate check --sync    # only: catalogs and .mo match the English source (CI, always)
    python -m tools.translate extract    # write the templates to build/i18n/*.pot (to look at)

Catalogs (`locale/zh/`), one per notebook plus one for the helper package:

- `notebooks/NN_topic.po`: the prose of `solutions/NN_topic.ipynb`, msgctxt = the cell id. A
  markdown cell is cut into units so that a small English edit re-marks only its unit: a heading,
  a paragraph, a list item, a blockquote line, a table cell. The structure (heading marks, list
  markers and indentation, table pipes, fenced code blocks, blank lines) stays outside the msgids and
  is rebuilt around the translations, so a translator cannot break it; a paragraph's soft line
  breaks become spaces (markdown renders them so), so re-wrapping English changes nothing. Units
  without words (`lax.psum`, `2 (k − 1) / k · N`) are kept as they are. Student-facing comments of
  code cells are units too (msgctxt `<cell id>#comment`); nbgrader's markers, `noqa` and the like are
  not; so is a test cell's one-line docstring (msgctxt `<cell id>#docstring`: what the cell checks),
  and so is every label the code shows a student (msgctxt `<cell id>#output`): the string literals
  of `print(...)` calls, of `assert` messages and of the collections a loop prints its labels from,
  as `courseinfo.labels` defines them (f-strings as written, their `{fields}` included: fields are
  code and stay exactly). Code itself is never translated.
- `namedaxes.po`: every module-level `TEXT = {...}` table of `namedaxes/` and `autograder/`, every
  `hints=[...]` of an `exercise(...)`, every `gettext("...")`/`_("...")` call there, and the literal
  `title=`, `note=`, `*_label=`, `ylabel=` arguments of `plot_*` calls in the solution notebooks (the
  figures translate them when drawn). No msgctxt: the runtime (`namedaxes.i18n.gettext`) looks up by
  the English text; the location key is the `#:` reference (`namedaxes/checking/text.py#TEXT.passed`).

`update` is Babel's merge: an unchanged English text keeps its translation; a changed one is matched
to its old entry, keeps the old translation marked **fuzzy** with the previous msgid (`#| msgid`), so
the translator sees exactly what changed; new texts arrive empty; texts gone from the English are
dropped (no obsolete `#~` entries). Files are written deterministically (fixed header dates, source
order), so `check --sync` can regenerate in memory and compare bytes.

`check` reports, per catalog, what keeps it from being complete: out of sync with the English (run
`update`), missing/empty, fuzzy, obsolete entries, and translations that lost a `{placeholder}`, a
backtick code span, a link target or a list/heading marker (code, API names and JAX's error texts
stay English, so code spans must be identical). The .mo must be what `compile` writes. Then, so that
the edition reads as one voice:

- terms (`locale/<lang>/glossary.tsv`): an entry whose English prose (outside code spans,
  placeholders, CONSTANTS and quoted axis names) has a term uses its Chinese (one of them, where the
  glossary lists alternatives "元素 / 项"), unless the row says `optional` (a word that is also a
  verb, like "name"); and never one of the row's `avoid` words (条目 for an array's entries);
- punctuation of a Chinese translation: no space after full-width punctuation (，。：；？！、）),
  no Latin sentence end before a full-width one (`."。`, `.。`), no doubled full stop;
- one English, one rendering: the same msgid translated differently in two places (two catalogs,
  or two cells of one) is an error that names both places;
- a code label (`#output`): it must still fit its literal (`courseinfo.labels.translation_problems`:
  the same f-string fields and escapes, no quote or line break that ends the literal), it writes
  the colon before a value as a Latin `:` (print puts a space after it: no space after a
  full-width colon), and it keeps no English word but the code its notebook uses (`pmap`,
  `shard_map`, `params`, the HLO ops the cell compares with: `all-gather`).
"""

from __future__ import annotations

import argparse
import ast
import builtins
import contextlib
import datetime as dt
import fcntl
import io
import keyword
import re
import sys
import tokenize
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import nbformat
from babel.messages.catalog import Catalog
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po, unescape, write_po

from courseinfo import labels as code_labels  # which literals of a code cell a student sees
from courseinfo.course import EDITIONS, ROOT, SOLUTIONS, notebook_ids
from courseinfo.nbgrader_metadata import nbgrader_cell

LOCALE = ROOT / "locale"
DOMAIN = "namedaxes"
PACKAGES = ("namedaxes", "autograder")
PROJECT = "JAX named axes course"
# Fixed header dates: the files change only when their entries do.
STAMP = dt.datetime(2026, 12, 1, 0, 0, tzinfo=dt.UTC)
PLOT_KEYWORDS = code_labels.PLOT_KEYWORDS  # the figure labels of plot_* calls (courseinfo.labels)


def po_path(lang: str, name: str) -> Path:
    """`name` is "namedaxes" or a notebook id ("07_collectives")."""
    return LOCALE / lang / (f"{DOMAIN}.po" if name == DOMAIN else f"notebooks/{name}.po")


def mo_path(lang: str) -> Path:
    return ROOT / "namedaxes" / "locale" / lang / "LC_MESSAGES" / f"{DOMAIN}.mo"


def catalog_names() -> list[str]:
    return [DOMAIN] + notebook_ids(SOLUTIONS)


# ================================================================== markdown units
_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^(#{1,6}\s+)(.*?)\s*$")
_ITEM = re.compile(r"^(\s*(?:[-*+]|\d+[.)])\s+)(.*)$")
_QUOTE = re.compile(r"^(\s*>\s?)(.*)$")
_ROW = re.compile(r"^\s*\|.*\|\s*$")
_SEPARATOR_ROW = re.compile(r"^\s*\|?(\s*:?-+:?\s*\|)+\s*:?-*:?\s*$")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_WORDS = re.compile(r"[A-Za-z]{2,}")


def translatable(text: str) -> bool:
    """Has words outside code spans and placeholders (`lax.psum` alone, or a formula, does not)."""
    return bool(_WORDS.search(re.sub(r"\{[^{}]*\}", "", _CODE_SPAN.sub("", text))))


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


# ================================================================== code comments
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


# ================================================================== test-cell docstrings
_DOCSTRING = re.compile(r'\A(\s*""")([^"\\\n]+?)(""")[ \t]*(?=\n|\Z)')


def docstring_unit(source: str) -> str | None:
    """The text of a cell's leading one-line docstring (`\"\"\"...\"\"\"` as its first line: what a test cell
    says it checks, and the exercise's name in the grader's report), or None."""
    m = _DOCSTRING.match(source)
    return m.group(2) if m and translatable(m.group(2)) else None


def render_docstring(source: str, translate: Callable[[str], str]) -> str:
    """`source` with its leading docstring translated (kept English when the translation could not sit
    inside triple quotes: a quote, backslash or line break in it)."""
    m = _DOCSTRING.match(source)
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
    m = _DOCSTRING.match(source)
    if m:
        source = source[: m.start(2)] + source[m.end(2) :]
    return strip_comments(source)


def docstring_context(cell_id: str) -> str:
    return f"{cell_id}#docstring"


# ================================================================== code labels (courseinfo.labels)
def output_units(source: str) -> list[str]:
    """The text of each label a code cell shows a student (`courseinfo.labels.labels`), in source order."""
    return [label.text for label in code_labels.labels(source)]


def render_outputs(source: str, translate: Callable[[str], str]) -> str:
    """`source` with its labels translated (one that would not fit its literal stays English)."""
    return code_labels.render(source, translate)


def output_context(cell_id: str) -> str:
    return f"{cell_id}#output"


_CODE_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:[-.][A-Za-z0-9_]+)*")
_SUBSCRIPT = re.compile(r"\b[A-Za-z_]\w*\[[^\]]*\]")


def code_words(nb_id: str) -> set[str]:
    """The words of notebook `nb_id`'s code that a label may keep: its names, attributes, arguments, and the
    words of its string literals that are neither labels nor a docstring (dict keys, the HLO op names a cell
    compares with)."""
    nb = nbformat.read(SOLUTIONS / f"{nb_id}.ipynb", as_version=4)
    words = set(dir(builtins)) | set(keyword.kwlist)
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        masked = code_labels._masked(cell.source)
        try:
            tree = ast.parse(masked)
        except SyntaxError:
            continue
        spans = [(label.start, label.end) for label in code_labels.labels(cell.source)]
        starts = code_labels._line_starts(masked)
        docstring = tree.body[0].value if tree.body and isinstance(tree.body[0], ast.Expr) else None
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                words.add(node.id)
            elif isinstance(node, ast.Attribute):
                words.add(node.attr)
            elif isinstance(node, ast.arg) or isinstance(node, ast.keyword) and node.arg:
                words.add(node.arg)
            elif isinstance(node, ast.alias):
                words.update((node.asname or node.name).split("."))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node is not docstring:
                at = code_labels._offset(masked, starts, node.lineno, node.col_offset)
                if not any(a <= at < b for a, b in spans):
                    words.update(_CODE_WORD.findall(node.value))
    return words


def label_problems(msgid: str, msgstr: str, allowed: set[str]) -> list[str]:
    """What keeps `msgstr` from standing in for the code label `msgid` (see the module docstring)."""
    problems = code_labels.translation_problems(msgid, msgstr)
    if "：" in msgstr:
        problems.append("a code label writes the colon before a value as a Latin ':' (print puts a space after it)")
    prose = code_labels._ESCAPE.sub(" ", msgstr)
    for field in code_labels.fields(msgstr):
        prose = prose.replace(field, " ")
    prose = _CODE_SPAN.sub(" ", re.sub(r"\[[^\]]*\]|'[^'\s]*'", " ", prose))
    english = [
        w
        for w in _CODE_WORD.findall(prose)
        if len(w) > 1
        and not re.fullmatch(r"[A-Z][A-Z0-9_]+", w)
        and w not in allowed
        and not all(part in allowed for part in w.split("."))
    ]
    if english:
        problems.append(
            f"English left in a code label ({', '.join(english)}): translate it (only its "
            f"notebook's code stays English)"
        )
    return problems


# ================================================================== templates
def _new_catalog(lang: str | None, name: str) -> Catalog:
    cat = Catalog(
        locale=lang,
        domain=name,
        project=PROJECT,
        version="1",
        copyright_holder=PROJECT,
        msgid_bugs_address="",
        creation_date=STAMP,
        revision_date=STAMP,
        language_team="Simplified Chinese" if lang else None,
        fuzzy=False,
    )
    cat.last_translator = "course translators"
    return cat


def _add(cat: Catalog, msgid: str, location: tuple[str, int | None], comment: str, context: str | None = None) -> None:
    """Add an entry, or one more location of it. `location` is (key, n): Babel writes it `key:n`, and
    reads back only an integer after the last colon, so keys use `#` and `.` as separators."""
    existing = cat.get(msgid, context)
    if existing is not None:
        existing.locations.append(location)
        if comment not in existing.auto_comments:
            existing.auto_comments.append(comment)
    else:
        cat.add(msgid, locations=[location], auto_comments=[comment], context=context)


# The comment nbgrader's ClearSolutions writes into every answer cell of the student release (its `code_stub`,
# tools/generate_notebooks.py): a unit of every notebook catalog whose notebook has answer cells, rendered into
# the release's answer cells by the generator (`render_stub`).
STUB_COMMENT = "YOUR CODE HERE"
STUB_CONTEXT = "code-stub#comment"


def render_stub(source: str, translate: Callable[[str], str]) -> str:
    """An answer cell of a release with nbgrader's `# YOUR CODE HERE` line(s) translated; nothing else changes."""
    return re.sub(rf"(?m)^(\s*# ){re.escape(STUB_COMMENT)}$", lambda m: m.group(1) + translate(STUB_COMMENT), source)


def notebook_template(nb_id: str) -> Catalog:
    cat = _new_catalog(None, nb_id)
    nb = nbformat.read(SOLUTIONS / f"{nb_id}.ipynb", as_version=4)
    if any(nbgrader_cell(c).solution for c in nb.cells if c.cell_type == "code"):
        _add(
            cat,
            STUB_COMMENT,
            (f"solutions/{nb_id}.ipynb#code-stub", 1),
            "the comment nbgrader writes into each "
            "answer cell of the student release, above `raise NotImplementedError()`",
            context=STUB_CONTEXT,
        )
    for cell in nb.cells:
        where = f"solutions/{nb_id}.ipynb#{cell.id}"
        if cell.cell_type == "markdown":
            for n, unit in enumerate(markdown_units(cell.source), 1):
                _add(cat, unit.text, (where, n), f"markdown {unit.kind}", context=cell.id)
        elif cell.cell_type == "code":
            if (doc := docstring_unit(cell.source)) is not None:
                _add(
                    cat,
                    doc,
                    (f"{where}.docstring", 1),
                    "a test cell's docstring: what it checks (no quotes)",
                    context=docstring_context(cell.id),
                )
            for n, (_, _, text) in enumerate(comment_units(cell.source), 1):
                _add(
                    cat,
                    text,
                    (f"{where}.comment", n),
                    "code comment (the code itself stays English)",
                    context=comment_context(cell.id),
                )
            for n, text in enumerate(output_units(cell.source), 1):
                _add(
                    cat,
                    text,
                    (f"{where}.output", n),
                    "a label the code prints: keep every {field}, escape and quote; a Latin ':' before a value",
                    context=output_context(cell.id),
                )
    return cat


def _strings(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _package_messages(path: Path) -> Iterator[tuple[str, tuple[str, int | None], str]]:
    """(English, location key, comment) of every extractable string in a module (see the docstring)."""
    rel = path.relative_to(ROOT).as_posix()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for stmt in tree.body:  # module-level TEXT tables
        target = (
            stmt.targets[0]
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
            else stmt.target
            if isinstance(stmt, ast.AnnAssign)
            else None
        )
        value = stmt.value if target is not None else None
        if isinstance(value, ast.Call) and len(value.args) == 1 and not value.keywords:
            value = value.args[0]  # TEXT = Messages({...})
        if isinstance(target, ast.Name) and target.id == "TEXT" and isinstance(value, ast.Dict):
            for key, item in zip(value.keys, value.values):
                k, v = _strings(key) if key else None, _strings(item)
                if k is not None and v:
                    yield v, (f"{rel}#TEXT.{k}", None), f"TEXT['{k}'] of {rel}: a str.format template"
    functions = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name.startswith("plot_"):  # default titles and labels
            args = node.args.kwonlyargs + node.args.args[len(node.args.args) - len(node.args.defaults) :]
            defaults = node.args.kw_defaults + node.args.defaults
            for arg, default in zip(args, defaults):
                if arg.arg in PLOT_KEYWORDS and default is not None and _strings(default):
                    yield (
                        _strings(default),
                        (f"{rel}#{node.name}.{arg.arg}", None),
                        f"default {arg.arg}= of {node.name}",
                    )
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for inner in ast.walk(node):
                functions.setdefault(id(inner), node.name)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = (
            node.func.id
            if isinstance(node.func, ast.Name)
            else node.func.attr
            if isinstance(node.func, ast.Attribute)
            else ""
        )
        if func in ("_", "gettext") and node.args and _strings(node.args[0]):
            where = functions.get(id(node), "module")
            yield _strings(node.args[0]), (f"{rel}#{where}", None), f"shown by {where}() in {rel}"
        if func in ("Exercise", "exercise"):  # exercise = exercises_for(__name__) in an exercise module
            name = _strings(node.args[0]) if node.args else None
            for kw in node.keywords:
                if kw.arg == "hints" and isinstance(kw.value, (ast.List, ast.Tuple)):
                    for n, elt in enumerate(kw.value.elts, 1):
                        if _strings(elt):
                            yield _strings(elt), (f"{rel}#hints.{name}", n), f"hint {n} of exercise {name}"


def _notebook_plot_labels(nb_id: str) -> Iterator[tuple[str, tuple[str, int | None], str]]:
    nb = nbformat.read(SOLUTIONS / f"{nb_id}.ipynb", as_version=4)
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse(
                "\n".join(line for line in cell.source.split("\n") if not line.lstrip().startswith(("%", "!")))
            )
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                func = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
                if func.startswith("plot_"):
                    for kw in node.keywords:
                        if kw.arg in PLOT_KEYWORDS and _strings(kw.value):
                            yield (
                                _strings(kw.value),
                                (f"solutions/{nb_id}.ipynb#{cell.id}.{kw.arg}", None),
                                f"{kw.arg}= of a figure in notebook {nb_id}",
                            )


def package_template() -> Catalog:
    cat = _new_catalog(None, DOMAIN)
    files = [p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))]
    for path in files:
        for msgid, where, comment in _package_messages(path):
            _add(cat, msgid, where, comment)
    for nb_id in notebook_ids(SOLUTIONS):
        for msgid, where, comment in _notebook_plot_labels(nb_id):
            _add(cat, msgid, where, comment)
    return cat


def template(name: str) -> Catalog:
    return package_template() if name == DOMAIN else notebook_template(name)


# ================================================================== update / compile
def _po_bytes(cat: Catalog) -> bytes:
    buf = io.BytesIO()
    write_po(buf, cat, width=100, ignore_obsolete=True, include_previous=True)
    return buf.getvalue()


def load(lang: str, name: str) -> Catalog | None:
    path = po_path(lang, name)
    if not path.exists():
        return None
    with path.open("rb") as fh:
        cat = read_po(fh, locale=lang, domain=name)
    for msg in list(cat) + list(cat.obsolete.values()):
        _previous_from_comments(msg)
    return cat


def _previous_from_comments(msg) -> None:
    """Babel writes a fuzzy entry's old msgid as `#| msgid "..."` but reads those lines back as user
    comments ("| msgid ..."): turn them into `previous_id` again, so a round trip changes nothing."""
    lines = [c for c in msg.user_comments if c.startswith("|")]
    if not lines:
        return
    msg.user_comments = [c for c in msg.user_comments if not c.startswith("|")]
    text = " ".join(c[1:].strip() for c in lines)
    if text.startswith("msgid "):
        text = text[len("msgid ") :].split(" msgid_plural ")[0]
        msg.previous_id = ["".join(unescape(part) for part in re.findall(r'"(?:[^"\\]|\\.)*"', text))]


def merged(lang: str, name: str) -> Catalog:
    """The catalog as `update` would write it: the English template merged into the existing translations."""
    tmpl = template(name)
    cat = load(lang, name) or _new_catalog(lang, name)
    # Babel's merge keeps an entry that is still fuzzy but forgets its previous msgid: put it back.
    previous = {(m.context, m.id): m.previous_id for m in cat if m.id and m.fuzzy and m.previous_id}
    cat.update(tmpl, update_header_comment=True)
    for msg in cat:
        if msg.id and msg.fuzzy and not msg.previous_id and (msg.context, msg.id) in previous:
            msg.previous_id = previous[(msg.context, msg.id)]
    cat.obsolete.clear()
    cat.creation_date = cat.revision_date = STAMP
    cat.fuzzy = False
    return cat


def mo_bytes(lang: str) -> bytes:
    cat = load(lang, DOMAIN) or _new_catalog(lang, DOMAIN)
    buf = io.BytesIO()
    write_mo(buf, cat, use_fuzzy=False)
    return buf.getvalue()


def translations(lang: str, name: str) -> dict[tuple[str | None, str], str]:
    """(msgctxt, English) -> translation, for entries that are translated and not fuzzy."""
    cat = load(lang, name)
    out = {}
    for msg in cat or ():
        if msg.id and msg.string and not msg.fuzzy:
            out[(msg.context, msg.id)] = msg.string
    return out


@contextlib.contextmanager
def _locked():
    """Hold `locale/.tx.lock` (an exclusive flock) while catalogs are read and rewritten, so two
    `update`s, or an update and a translation tool that takes the same lock, never interleave."""
    LOCALE.mkdir(exist_ok=True)
    with open(LOCALE / ".tx.lock", "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def update(names: Iterable[str]) -> list[str]:
    with _locked():
        return _update(names)


def _write_changed(path: Path, data: bytes) -> list[str]:
    """Write `data` to `path` unless it holds it already: [the path, from the checkout] if it wrote, else []."""
    if path.exists() and path.read_bytes() == data:
        return []
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return [str(path.relative_to(ROOT))]


def _update(names: Iterable[str]) -> list[str]:
    names = list(names)
    return [
        changed
        for lang in EDITIONS
        for name in names
        for changed in _write_changed(po_path(lang, name), _po_bytes(merged(lang, name)))
    ]


def compile_catalogs() -> list[str]:
    with _locked():
        return _compile()


def _compile() -> list[str]:
    return [changed for lang in EDITIONS for changed in _write_changed(mo_path(lang), mo_bytes(lang))]


# ================================================================== check
_PLACEHOLDER = re.compile(r"(?<!\{)\{[A-Za-z_][A-Za-z0-9_]*(?:![rsa])?(?::[^{}]*)?\}(?!\})")
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _code_spans(text: str) -> Counter:
    return Counter(m.group(0) for m in _CODE_SPAN.finditer(text))


def consistency_problems(msgid: str, msgstr: str) -> list[str]:
    """What a translation lost or changed that must survive: placeholders, code spans, link targets."""
    problems = []
    for what, pattern in (("placeholders", _PLACEHOLDER), ("link targets", _LINK)):
        want, got = Counter(pattern.findall(msgid)), Counter(pattern.findall(msgstr))
        if want != got:
            problems.append(f"{what} differ: English {sorted(want.elements())}, translation {sorted(got.elements())}")
    want, got = _code_spans(msgid), _code_spans(msgstr)
    if want != got:
        lost, added = sorted((want - got).elements()), sorted((got - want).elements())
        problems.append(f"code spans differ (they stay English, identical): missing {lost}, extra {added}")
    if msgstr != msgstr.strip() and msgid == msgid.strip():
        problems.append("translation has leading/trailing whitespace the English does not")
    if msgid.startswith(" ") and not msgstr.startswith(" ") and not msgstr.startswith("（"):
        problems.append("the English starts with a space (it is appended to another text): keep it")
    if "\n" in msgstr and "\n" not in msgid:
        problems.append("translation has a line break the English does not (one unit is one line)")
    return problems


# ------------------------------------------------------------------ terms
@dataclass(frozen=True)
class Term:
    """A row of `locale/<lang>/glossary.tsv`: English, its Chinese (alternatives), and the words to avoid."""

    en: str
    zh: tuple[str, ...]
    note: str = ""
    avoid: tuple[str, ...] = ()
    optional: bool = False  # the English word is also something else (a verb): only `avoid` is checked

    def pattern(self) -> re.Pattern:
        return re.compile(rf"(?<![\w-]){re.escape(self.en)}(s|es)?(?![\w-])", re.IGNORECASE)


def glossary_path(lang: str) -> Path:
    return LOCALE / lang / "glossary.tsv"


def glossary(lang: str) -> list[Term]:
    """The glossary's rows. Columns: English, Chinese ("a / b": either), note, and optionally a fourth
    column of rules: `avoid: w1, w2` (words a translation of this term must not use) and/or `optional`."""
    path = glossary_path(lang)
    if not path.exists():
        return []
    terms = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        cols = line.split("\t") + ["", "", ""]
        avoid, optional = (), False
        for rule in (r.strip() for r in cols[3].split(";")):
            if rule.startswith("avoid:"):
                avoid = tuple(w.strip() for w in rule[len("avoid:") :].split(",") if w.strip())
            elif rule == "optional":
                optional = True
        terms.append(
            Term(
                cols[0].strip(),
                tuple(z.strip() for z in cols[1].split("/") if z.strip()),
                cols[2].strip(),
                avoid,
                optional,
            )
        )
    return terms


def prose_of(text: str) -> str:
    """The words a translator translates: no code spans, placeholders, quoted axis names ('devices') or
    constants (DEVICES, DATA_PARALLEL), which stay English."""
    text = re.sub(r"\{[^{}]*\}", " ", _CODE_SPAN.sub(" ", text))
    return re.sub(r"\b[A-Z][A-Z0-9_]+\b|'[^'\s]+'", " ", text)


def glossary_problems(msgid: str, msgstr: str, terms: list[Term]) -> list[str]:
    """Where `msgstr` does not use the glossary's word for a term of `msgid`, or uses a word to avoid."""
    english, chinese = prose_of(msgid), _CODE_SPAN.sub(" ", msgstr)
    problems = []
    for term in terms:
        if not term.pattern().search(english):
            continue
        if not term.optional and not any(z in chinese for z in term.zh):
            problems.append(f"glossary: {term.en!r} is {' / '.join(term.zh)!r}, not used in {msgstr[:60]!r}")
        for word in term.avoid:
            if re.search(
                re.escape(word) if not word.isascii() else rf"(?<![\w`]){re.escape(word)}(?![\w`])",
                chinese,
                0 if not word.isascii() else re.IGNORECASE,
            ):
                problems.append(f"glossary: {term.en!r} is {' / '.join(term.zh)!r}, not {word!r}: {msgstr[:60]!r}")
    return problems


# ------------------------------------------------------------------ punctuation
_FULL_WIDTH = "，。：；？！、）"
_SPACE_AFTER_FULL_WIDTH = re.compile(rf"[{_FULL_WIDTH}] +\S")
_LATIN_THEN_FULL_STOP = re.compile(r"[.!?][\"'”’)]?[。！？]")


def punctuation_problems(msgid: str, msgstr: str) -> list[str]:
    """Chinese punctuation rules of a translation (code spans aside)."""
    if not any("\u4e00" <= ch <= "\u9fff" for ch in msgstr):
        return []
    text = _CODE_SPAN.sub("`code`", msgstr)
    problems = []
    if m := _SPACE_AFTER_FULL_WIDTH.search(text):
        problems.append(
            f"a space after full-width punctuation ({m.group(0)!r}): full-width punctuation carries its own space"
        )
    if m := _LATIN_THEN_FULL_STOP.search(text):
        problems.append(f"a Latin sentence end before a full-width one ({m.group(0)!r}): one full stop")
    if m := re.search(r"[。！？]{2,}", text):
        problems.append(f"a doubled full stop ({m.group(0)!r})")
    return problems


@dataclass
class Report:
    name: str
    path: str
    entries: int = 0
    translated: int = 0
    stale: bool = False
    mo_stale: bool = False
    missing: list | None = None
    fuzzy: list | None = None
    obsolete: int = 0
    inconsistent: list | None = None

    def problems(self, sync_only: bool = False) -> list[str]:
        out = []
        if self.stale:
            out.append(f"{self.path} is out of sync with the English source: run `python -m tools.translate update`")
        if self.mo_stale:
            out.append(
                f"{mo_path('zh').relative_to(ROOT)} is not what {self.path} compiles to: run "
                f"`python -m tools.translate compile`"
            )
        if sync_only:
            return out
        if self.missing:
            out.append(f"{len(self.missing)} untranslated (missing or empty), e.g. {self.missing[0]!r}")
        if self.fuzzy:
            out.append(
                f"{len(self.fuzzy)} fuzzy (English changed; re-translate, then delete the fuzzy flag), "
                f"e.g. {self.fuzzy[0]!r}"
            )
        if self.obsolete:
            out.append(f"{self.obsolete} obsolete (#~) entries: run `python -m tools.translate update`")
        for msgid, problem in self.inconsistent or []:
            out.append(f"{problem}: {msgid[:80]!r}")
        return out


def report(lang: str, name: str) -> Report:
    path = po_path(lang, name)
    rep = Report(name, str(path.relative_to(ROOT)))
    cat = load(lang, name)
    rep.stale = cat is None or path.read_bytes() != _po_bytes(merged(lang, name))
    if name == DOMAIN:
        rep.mo_stale = not mo_path(lang).exists() or mo_path(lang).read_bytes() != mo_bytes(lang)
    if cat is None:
        return rep
    rep.obsolete = len(cat.obsolete)
    messages = [m for m in cat if m.id]
    rep.entries = len(messages)
    rep.missing = [m.id for m in messages if not m.string]
    rep.fuzzy = [m.id for m in messages if m.string and m.fuzzy]
    rep.translated = rep.entries - len(rep.missing) - len(rep.fuzzy)
    terms = glossary(lang)
    is_label = {id(m): (m.context or "").endswith("#output") for m in messages}
    allowed = code_words(name) if name != DOMAIN and any(is_label.values()) else set()
    rep.inconsistent = []
    for m in messages:
        if not m.string:
            continue
        english = _SUBSCRIPT.sub(" ", m.id) if is_label[id(m)] else m.id  # a label's `batch['x']` is code
        rep.inconsistent += [
            (m.id, p)
            for p in consistency_problems(m.id, m.string)
            + glossary_problems(english, m.string, terms)
            + punctuation_problems(m.id, m.string)
            + (label_problems(m.id, m.string, allowed) if is_label[id(m)] else [])
        ]
    return rep


def renderings(lang: str, names: Iterable[str]) -> dict[str, dict[str, list[str]]]:
    """English -> its translations -> where each is (`catalog.po (cell id)`), over `names`' catalogs."""
    found: dict[str, dict[str, list[str]]] = {}
    for name in names:
        rel = po_path(lang, name).relative_to(LOCALE / lang).as_posix()
        for msg in load(lang, name) or ():
            if msg.id and msg.string and not msg.fuzzy:
                where = f"{rel} ({msg.context})" if msg.context else rel
                found.setdefault(msg.id, {}).setdefault(msg.string, []).append(where)
    return found


def rendering_problems(lang: str, names: Iterable[str]) -> list[str]:
    """One English text, one translation: every msgid translated in two ways, with both places."""
    problems = []
    for msgid, variants in renderings(lang, names).items():
        if len(variants) > 1:
            places = "; ".join(
                f"{text[:50]!r} in {', '.join(where[:2])}{' ...' if len(where) > 2 else ''}"
                for text, where in variants.items()
            )
            problems.append(f"{msgid[:60]!r} is translated {len(variants)} ways: {places}")
    return problems


def check(names: Iterable[str], sync_only: bool = False) -> int:
    failed = 0
    for lang in EDITIONS:
        for name in names:
            rep = report(lang, name)
            problems = rep.problems(sync_only)
            state = "ok" if not problems else "OUT OF SYNC" if sync_only else "INCOMPLETE"
            print(f"{rep.path}: {rep.translated}/{rep.entries} translated -- {state}")
            for problem in problems[:12]:
                print(f"    {problem}")
            if len(problems) > 12:
                print(f"    ... and {len(problems) - 12} more")
            failed += bool(problems)
        if not sync_only:
            differ = rendering_problems(lang, catalog_names())
            print(f"one English, one {lang} rendering across the catalogs -- {'ok' if not differ else 'INCONSISTENT'}")
            for problem in differ:
                print(f"    {problem}")
            failed += bool(differ)
    if failed:
        print(f"{failed} catalog(s) {'out of sync' if sync_only else 'not complete'}; see docs/translators.md")
    return 1 if failed else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("extract", "update", "compile", "check"))
    parser.add_argument("--sync", action="store_true", help="check: only that catalogs and .mo match the English")
    parser.add_argument("names", nargs="*", help=f"catalogs: {DOMAIN} and/or notebook ids (default: all)")
    args = parser.parse_intermixed_args(argv)
    names = args.names or catalog_names()
    unknown = sorted(set(names) - set(catalog_names()))
    if unknown:
        parser.error(f"unknown catalog(s) {unknown}; the catalogs are {catalog_names()}")
    if args.command == "extract":
        out = ROOT / "build" / "i18n"
        out.mkdir(parents=True, exist_ok=True)
        for name in names:
            (out / f"{name}.pot").write_bytes(_po_bytes(template(name)))
        print(f"wrote {len(names)} templates to {out.relative_to(ROOT)}/")
    elif args.command == "update":
        changed = update(names)
        print("updated: " + (", ".join(changed) if changed else "nothing changed"))
    elif args.command == "compile":
        changed = compile_catalogs()
        print("compiled: " + (", ".join(changed) if changed else "nothing changed"))
    else:
        return check(names, sync_only=args.sync)
    return 0


if __name__ == "__main__":
    sys.exit(main())
