"""The labels a code cell shows a student (`courseinfo.labels`): each one a unit (msgctxt `<cell id>#output`).

The string literals of `print(...)` calls, of `assert` messages and of the collections a loop prints its
labels from; f-strings as written, their `{fields}` included (fields are code and stay exactly). A label's
translation must still fit its literal, writes the colon before a value as a Latin `:`, and keeps no English
word but the code its notebook uses (`label_problems`, with `code_words`).
"""

from __future__ import annotations

import ast
import builtins
import keyword
import re
from collections.abc import Callable

import nbformat

from courseinfo import labels as code_labels

from . import catalogs
from .markdown import CODE_SPAN

__all__ = ["output_units", "render_outputs", "output_context", "SUBSCRIPT", "code_words", "label_problems"]

_CODE_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:[-.][A-Za-z0-9_]+)*")
SUBSCRIPT = re.compile(r"\b[A-Za-z_]\w*\[[^\]]*\]")  # `batch['x']` in a label is code


def output_units(source: str) -> list[str]:
    """The text of each label a code cell shows a student (`courseinfo.labels.labels`), in source order."""
    return [label.text for label in code_labels.labels(source)]


def render_outputs(source: str, translate: Callable[[str], str]) -> str:
    """`source` with its labels translated (one that would not fit its literal stays English)."""
    return code_labels.render(source, translate)


def output_context(cell_id: str) -> str:
    return f"{cell_id}#output"


def code_words(nb_id: str) -> set[str]:
    """The words of notebook `nb_id`'s code that a label may keep: its names, attributes, arguments, and the
    words of its string literals that are neither labels nor a docstring (dict keys, the HLO op names a cell
    compares with)."""
    nb = nbformat.read(catalogs.SOLUTIONS / f"{nb_id}.ipynb", as_version=4)
    words = set(dir(builtins)) | set(keyword.kwlist)
    for cell in nb.cells:
        parsed = code_labels.parse_cell(cell.source) if cell.cell_type == "code" else None
        if parsed is None:
            continue
        for node in ast.walk(parsed[1]):
            if isinstance(node, ast.Name):
                words.add(node.id)
            elif isinstance(node, ast.Attribute):
                words.add(node.attr)
            elif isinstance(node, ast.arg) or isinstance(node, ast.keyword) and node.arg:
                words.add(node.arg)
            elif isinstance(node, ast.alias):
                words.update((node.asname or node.name).split("."))
        for text in code_labels.other_strings(cell.source):
            words.update(_CODE_WORD.findall(text))
    return words


def label_problems(msgid: str, msgstr: str, allowed: set[str]) -> list[str]:
    """What keeps `msgstr` from standing in for the code label `msgid` (see the module docstring)."""
    problems = code_labels.translation_problems(msgid, msgstr)
    if "：" in msgstr:
        problems.append("a code label writes the colon before a value as a Latin ':' (print puts a space after it)")
    prose = code_labels.ESCAPE.sub(" ", msgstr)
    for field in code_labels.fields(msgstr):
        prose = prose.replace(field, " ")
    prose = CODE_SPAN.sub(" ", re.sub(r"\[[^\]]*\]|'[^'\s]*'", " ", prose))
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
