"""A course module's function as a notebook shows it: `show_source(tm.forward)`.

Notebooks 10 and 11 show the course's own code (`namedaxes.transformer`, `namedaxes.zero`) rather than
repeat it. Its docstrings and comments are English prose, and an edition's code is the English code cell
for cell, so in another edition (the kernel's language, `namedaxes.i18n.language`) the function is shown
without them: only the code, which reads the same in every language. The English edition shows it as written.
"""

from __future__ import annotations

import ast
import inspect
import io
import textwrap
import tokenize

from .i18n import language

__all__ = ["show_source", "source_text", "code_only"]


def show_source(fn) -> None:
    """Print `fn`'s source in the kernel's language (see the module docstring)."""
    print(source_text(fn))


def source_text(fn, lang: str | None = None) -> str:
    text = inspect.getsource(fn)
    return text if (lang or language()) == "en" else code_only(text)


def code_only(text: str) -> str:
    """`text` (Python source) without its docstrings and comments; lines left empty by them dropped."""
    source = textwrap.dedent(text)
    dropped: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)) and body:
            first = body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                dropped |= set(range(first.lineno, first.end_lineno + 1))
    lines = source.splitlines()
    comments = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = tok.start[1]
    kept = []
    for number, line in enumerate(lines, 1):
        if number in dropped:
            continue
        if number in comments:
            line = line[: comments[number]].rstrip()
            if not line.strip():
                continue
        kept.append(line)
    indent = text[: len(text) - len(text.lstrip(" "))]
    return "\n".join(indent + ln if ln else ln for ln in kept) + "\n"
