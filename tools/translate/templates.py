"""The English templates of the catalogs, extracted from the sources.

- A notebook's (`notebook_template`): the units of `solutions/NN_topic.ipynb`, msgctxt the cell id (markdown),
  `<cell id>#comment`, `#docstring` or `#output` (code), and nbgrader's `# YOUR CODE HERE` stub.
- The helper package's (`package_template`): every module-level `TEXT = {...}` table of `namedaxes/` and
  `autograder/`, every `gettext("...")`/`_("...")` call there, the words of every notebook's exercise package
  (its `text.py`'s `TEXT` and `HINTS`, imported without JAX through `namedaxes.exercises.text_of`, never
  parsed: the exercises' sources are read by no one but Python), the
  defaults of the `plot_*` functions' figure labels, and the literal figure labels (`courseinfo.labels`'s
  `PLOT_KEYWORDS`) of `plot_*` calls in the solution notebooks. No msgctxt: the runtime looks up by the English
  text; the location key is the `#:` reference (`namedaxes/checking/text.py#TEXT.passed`), so moving a text
  to another file changes its reference, never its msgid.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import nbformat
from babel.messages.catalog import Catalog

from courseinfo import labels as code_labels
from courseinfo.nbgrader_metadata import nbgrader_cell

from . import catalogs
from .catalogs import DOMAIN, add_entry, notebook_ids
from .comments import comment_context, comment_units
from .docstrings import docstring_context, docstring_unit
from .label_units import output_context, output_units
from .markdown import markdown_units

__all__ = ["STUB_COMMENT", "STUB_CONTEXT", "render_stub", "notebook_template", "package_template", "template"]

PLOT_KEYWORDS = code_labels.PLOT_KEYWORDS  # the figure labels of plot_* calls (courseinfo.labels)

# The comment nbgrader's ClearSolutions writes into every answer cell of the student release (its `code_stub`,
# tools/generate_notebooks.py): a unit of every notebook catalog whose notebook has answer cells, rendered into
# the release's answer cells by the generator (`render_stub`).
STUB_COMMENT = "YOUR CODE HERE"
STUB_CONTEXT = "code-stub#comment"
EXERCISES = "namedaxes/exercises"  # the notebooks' exercise packages: their words are read from text.py, imported


def render_stub(source: str, translate: Callable[[str], str]) -> str:
    """An answer cell of a release with nbgrader's `# YOUR CODE HERE` line(s) translated; nothing else changes."""
    return re.sub(rf"(?m)^(\s*# ){re.escape(STUB_COMMENT)}$", lambda m: m.group(1) + translate(STUB_COMMENT), source)


def notebook_template(nb_id: str) -> Catalog:
    cat = catalogs.new_catalog(None, nb_id)
    nb = nbformat.read(catalogs.SOLUTIONS / f"{nb_id}.ipynb", as_version=4)
    if any(nbgrader_cell(c).solution for c in nb.cells if c.cell_type == "code"):
        add_entry(
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
                add_entry(cat, unit.text, (where, n), f"markdown {unit.kind}", context=cell.id)
        elif cell.cell_type == "code":
            if (doc := docstring_unit(cell.source)) is not None:
                add_entry(
                    cat,
                    doc,
                    (f"{where}.docstring", 1),
                    "a test cell's docstring: what it checks (no quotes)",
                    context=docstring_context(cell.id),
                )
            for n, (_, _, text) in enumerate(comment_units(cell.source), 1):
                add_entry(
                    cat,
                    text,
                    (f"{where}.comment", n),
                    "code comment (the code itself stays English)",
                    context=comment_context(cell.id),
                )
            for n, text in enumerate(output_units(cell.source), 1):
                add_entry(
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
    rel = path.relative_to(catalogs.ROOT).as_posix()
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


def _notebook_plot_labels(nb_id: str) -> Iterator[tuple[str, tuple[str, int | None], str]]:
    nb = nbformat.read(catalogs.SOLUTIONS / f"{nb_id}.ipynb", as_version=4)
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


def _exercise_messages(package: str) -> Iterator[tuple[str, tuple[str, int | None], str]]:
    """(English, location key, comment) of the words of one notebook's exercise package: its `text.py`, imported."""
    from namedaxes.exercises import text_of

    text, rel = text_of(package), f"{EXERCISES}/{package}/text.py"
    for key, english in text.TEXT.items():
        yield english, (f"{rel}#TEXT.{key}", None), f"TEXT['{key}'] of {rel}: a str.format template"
    for name, hints in text.HINTS.items():
        for n, hint in enumerate(hints, 1):
            yield hint, (f"{rel}#hints.{name}", n), f"hint {n} of exercise {name}"


def _module_messages(path: Path) -> Iterator[tuple[str, tuple[str, int | None], str]]:
    """A module's messages: an exercise package's from its text.py (imported), any other module's from its source."""
    rel = path.relative_to(catalogs.ROOT).as_posix()
    if not rel.startswith(f"{EXERCISES}/"):
        return _package_messages(path)
    parts = rel.split("/")
    return _exercise_messages(parts[2]) if len(parts) == 4 and parts[3] == "text.py" else iter(())


def package_template() -> Catalog:
    cat = catalogs.new_catalog(None, DOMAIN)
    files = [p for pkg in catalogs.PACKAGES for p in sorted((catalogs.ROOT / pkg).rglob("*.py"))]
    for path in files:
        for msgid, where, comment in _module_messages(path):
            add_entry(cat, msgid, where, comment)
    for nb_id in notebook_ids(catalogs.SOLUTIONS):
        for msgid, where, comment in _notebook_plot_labels(nb_id):
            add_entry(cat, msgid, where, comment)
    return cat


def template(name: str) -> Catalog:
    return package_template() if name == DOMAIN else notebook_template(name)
