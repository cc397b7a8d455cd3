"""The labels a notebook's code shows a student: the string literals it prints, found in a cell's source.

An edition in another language (the Chinese one, tools/generate_notebooks.py) translates these
literals and nothing else of the code, so `print("loss before the step:", loss)` prints a Chinese
label in the Chinese notebook while every name, number and call stays the English source's. Three
parties must agree on which literals those are, so the rule lives here, in one place:
tools/translate/ extracts them into the notebook catalogs (msgctxt `<cell id>#output`),
tools/generate_notebooks.py renders them, and both it and the grader (autograder/discovery.py)
compare an edition's code with the English source's through `canonical` (the labels' words
aside, their `{fields}` kept: an f-string's fields are code).

What is a label (from the cell's syntax tree alone; deterministic):

1. a `str` literal or f-string that is a positional argument of `print(...)` (also an operand of a
   `+` there), or the message of an `assert` (what a failing check cell says);
2. a loop label: a `str` literal of the collection a `for` loop iterates (the elements of a list,
   tuple or set; the keys of a dict; through `zip(...)`, `enumerate(...)`, `.items()`/`.keys()`,
   or through a name the cell binds to that collection and uses nowhere else), when the loop
   variable it binds is printed in the loop's body and used there only inside `print(...)` or as
   the key of a dict the cell starts empty (`seen[label] = ...`). A loop variable used as anything
   else (`params[name]`) is data, not a label, and stays as it is.

A literal without a word of two letters (`" | "`, `"->"`) is no label to translate (`canonical` still
reduces it, since a translated label has no Latin word left). Implicitly concatenated
pieces of one argument (`f"..." f"..."` over two lines) are one label (one sentence for the
translator) when they share their prefix and quote and no comment sits between them, written back
as one literal; otherwise each piece is its own label. `text` is the literal as written between
its quotes: escapes (`\\n`) and, in an f-string, the `{fields}` exactly as in the source.

`translation_problems` says why a translation cannot stand in a literal's place (a field lost or
added, an escape changed, a quote or line break that would end the literal); `render` keeps the
English for such a translation, and the catalog check reports it.

Threat model: the sources are the course's own notebooks (the English source and the editions
generated from it), never a student's: the grader compares the instructor's editions with this,
and a submission's code is never rewritten.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass

__all__ = [
    "Label",
    "labels",
    "parse_cell",
    "other_strings",
    "ESCAPE",
    "render",
    "canonical",
    "fields",
    "translation_problems",
    "PLOT_KEYWORDS",
    "figure_labels",
    "render_figures",
]

_WORD = re.compile(r"[A-Za-z]{2,}")
_PREFIX = re.compile(r"[rRbBuUfF]{0,2}")
ESCAPE = re.compile(r"\\(?:N\{[^}]*\}|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|[0-7]{1,3}|.)", re.S)


@dataclass(frozen=True)
class Label:
    """One label: `source[start:end]` is the literal (all its pieces), `text` what stands between its quotes."""

    start: int
    end: int
    prefix: str
    quote: str
    text: str
    kind: str  # "print", "assert" or "loop label"

    @property
    def is_f(self) -> bool:
        return "f" in self.prefix.lower()


# ------------------------------------------------------------------ reading literals
def _masked(source: str) -> str:
    """IPython magics and shell escapes blanked (same length, so every position holds)."""
    return "\n".join(" " * len(ln) if ln.lstrip().startswith(("%", "!")) else ln for ln in source.split("\n"))


def _line_starts(source: str) -> list[int]:
    starts, total = [], 0
    for line in source.split("\n"):
        starts.append(total)
        total += len(line) + 1
    return starts


def _offset(source: str, starts: list[int], lineno: int, byte_col: int) -> int:
    """The character offset of an ast position (its column counts UTF-8 bytes)."""
    line = source.split("\n")[lineno - 1]
    return starts[lineno - 1] + len(line.encode("utf-8")[:byte_col].decode("utf-8", "replace"))


def _pieces(segment: str) -> list[tuple[int, int, str, str, str]] | None:
    """(start, end, prefix, quote, body) of each string literal in `segment`, the source of one str/f-string
    node (implicitly concatenated pieces, whitespace between them); None if anything else is there."""
    out, i = [], 0
    while i < len(segment):
        if segment[i] in " \t\n\\":
            i += 1
            continue
        if segment[i] == "#":
            return None  # a comment between pieces: handled piece by piece elsewhere
        prefix = _PREFIX.match(segment, i).group(0)
        j = i + len(prefix)
        quote = segment[j : j + 3] if segment[j : j + 3] in ('"""', "'''") else segment[j : j + 1]
        if quote not in ('"', "'", '"""', "'''"):
            return None
        k = j + len(quote)
        while k < len(segment) and not segment.startswith(quote, k):
            k += 2 if segment[k] == "\\" else 1
        if k >= len(segment):
            return None
        out.append((i, k + len(quote), prefix, quote, segment[j + len(quote) : k]))
        i = k + len(quote)
    return out or None


def _literal_labels(source: str, starts: list[int], node: ast.expr, kind: str, words: bool) -> list[Label]:
    if not (isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str))):
        return []
    start = _offset(source, starts, node.lineno, node.col_offset)
    end = _offset(source, starts, node.end_lineno, node.end_col_offset)
    pieces = _pieces(source[start:end])
    if pieces is None:
        return []
    if len({(p[2].lower(), p[3]) for p in pieces}) == 1 and not any("\n" in p[4] for p in pieces):
        found = [Label(start, end, pieces[0][2], pieces[0][3], "".join(p[4] for p in pieces), kind)]
    else:
        found = [Label(start + a, start + b, prefix, quote, body, kind) for a, b, prefix, quote, body in pieces]
    return [
        label for label in found if not words or _WORD.search(_without_fields(label.text) if label.is_f else label.text)
    ]


# ------------------------------------------------------------------ rule 1: print and assert
def _is_print(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print"


def _operands(node: ast.expr) -> Iterator[ast.expr]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        yield from _operands(node.left)
        yield from _operands(node.right)
    else:
        yield node


# ------------------------------------------------------------------ rule 2: loop labels
def _target_paths(target: ast.expr, path: tuple = ()) -> Iterator[tuple[str, tuple]]:
    if isinstance(target, ast.Name):
        yield target.id, path
    elif isinstance(target, (ast.Tuple, ast.List)):
        for i, elt in enumerate(target.elts):
            yield from _target_paths(elt, path + (i,))


def _elements(node: ast.expr, path: tuple, bound: dict[str, ast.expr]) -> list[ast.expr]:
    """The literals a loop over `node` binds at `path` of its target (see rule 2)."""
    if isinstance(node, ast.Name) and node.id in bound:
        return _elements(bound[node.id], path, bound)
    if isinstance(node, ast.Dict):
        items = [k for k in node.keys if k is not None]
    elif isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        items = list(node.elts)
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "zip" and path:
        return _elements(node.args[path[0]], path[1:], bound) if path[0] < len(node.args) else []
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "enumerate" and path:
        return _elements(node.args[0], path[1:], bound) if path[0] == 1 and node.args else []
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.args:
        mapping = bound.get(node.func.value.id) if isinstance(node.func.value, ast.Name) else node.func.value
        if not isinstance(mapping, ast.Dict):
            return []
        if node.func.attr == "keys":
            return _elements(mapping, path, bound)
        return _elements(mapping, path[1:], bound) if node.func.attr == "items" and path and path[0] == 0 else []
    else:
        return []
    out = []
    for item in items:
        for i in path:
            item = item.elts[i] if isinstance(item, (ast.Tuple, ast.List)) and i < len(item.elts) else None
            if item is None:
                break
        if item is not None:
            out.append(item)
    return out


def _parents(tree: ast.AST) -> dict[int, ast.AST]:
    return {id(child): parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}


def _only_printed(name: str, body: list[ast.stmt], parents: dict[int, ast.AST], empty_dicts: set[str]) -> bool:
    """`name` is printed in `body`, and used there only inside print(...) or as the key of an empty-started dict."""
    printed = False
    for stmt in body:
        for node in ast.walk(stmt):
            if not (isinstance(node, ast.Name) and node.id == name):
                continue
            if isinstance(node.ctx, ast.Store):
                return False
            up, in_print = node, False
            while id(up) in parents:
                up = parents[id(up)]
                if _is_print(up):
                    in_print = True
                    break
            parent = parents.get(id(node))
            key_of_own_dict = (
                isinstance(parent, ast.Subscript)
                and parent.slice is node
                and isinstance(parent.value, ast.Name)
                and parent.value.id in empty_dicts
            )
            if not (in_print or key_of_own_dict):
                return False
            printed |= in_print
    return printed


def _loop_label_nodes(tree: ast.Module) -> Iterator[ast.expr]:
    bound: dict[str, ast.expr] = {}
    for stmt in tree.body:  # top-level names bound once to a literal collection
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            bound[stmt.targets[0].id] = stmt.value
    loads = Counter(n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load))
    stores = Counter(n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    bound = {k: v for k, v in bound.items() if stores[k] == 1 and loads[k] == 1}  # used only by the loop
    empty_dicts = {k for k, v in bound.items() if isinstance(v, ast.Dict) and not v.keys}
    empty_dicts |= {
        s.targets[0].id
        for s in tree.body
        if isinstance(s, ast.Assign)
        and len(s.targets) == 1
        and isinstance(s.targets[0], ast.Name)
        and isinstance(s.value, ast.Dict)
        and not s.value.keys
    }
    parents = _parents(tree)
    for loop in ast.walk(tree):
        if not isinstance(loop, ast.For):
            continue
        for name, path in _target_paths(loop.target):
            if _only_printed(name, loop.body, parents, empty_dicts):
                yield from _elements(loop.iter, path, bound)


# ------------------------------------------------------------------ the labels of a cell
def parse_cell(source: str) -> tuple[str, ast.Module, list[int]] | None:
    """(the source with its strings' places kept, its tree, its line starts), or None if it is not Python."""
    masked = _masked(source)
    try:
        return masked, ast.parse(masked), _line_starts(source)
    except SyntaxError:
        return None


def labels(source: str, words: bool = True) -> list[Label]:
    """Every label of a code cell, in source order (empty when the cell is not Python). `words=False`: every
    literal in a label's place, words or not (a translated label has no Latin word left)."""
    parsed = parse_cell(source)
    if parsed is None:
        return []
    masked, tree, starts = parsed
    found: dict[int, Label] = {}
    for node in ast.walk(tree):
        candidates: list[tuple[ast.expr, str]] = []
        if _is_print(node):
            candidates = [(op, "print") for arg in node.args for op in _operands(arg)]
        elif isinstance(node, ast.Assert) and node.msg is not None:
            candidates = [(node.msg, "assert")]
        for expr, kind in candidates:
            for label in _literal_labels(masked, starts, expr, kind, words):
                found.setdefault(label.start, label)
    for expr in _loop_label_nodes(tree):
        for label in _literal_labels(masked, starts, expr, "loop label", words):
            found.setdefault(label.start, label)
    return [found[k] for k in sorted(found)]


def other_strings(source: str) -> list[str]:
    """The string literals of a code cell that are neither labels nor its leading docstring (dict keys, the
    names of the HLO ops a cell compares with), in source order; [] when the cell is not Python."""
    parsed = parse_cell(source)
    if parsed is None:
        return []
    masked, tree, starts = parsed
    spans = [(label.start, label.end) for label in labels(source)]
    docstring = tree.body[0].value if tree.body and isinstance(tree.body[0], ast.Expr) else None
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node is not docstring:
            at = _offset(masked, starts, node.lineno, node.col_offset)
            if not any(a <= at < b for a, b in spans):
                found.append((at, node.value))
    return [text for _, text in sorted(found)]


# ------------------------------------------------------------------ figure labels
# The keyword arguments of a `plot_*` call (namedaxes.plots) that a figure shows as text. They are not
# labels of the notebook catalogs: namedaxes.po holds them (tools/translate/ extracts them from the
# solutions), and the figure translates them when it is drawn. An edition writes them translated in its
# code too (`render_figures`), so the code a student reads says what the figure says.
PLOT_KEYWORDS = (
    "title",
    "note",
    "before_label",
    "after_label",
    "first_label",
    "second_label",
    "ylabel",
    "row_label",
    "step_label",
    "idle_label",
)


def figure_labels(source: str, words: bool = True) -> list[Label]:
    """The `str` literals of a cell's `plot_*(..., title="...")` calls (PLOT_KEYWORDS), in source order."""
    parsed = parse_cell(source)
    if parsed is None:
        return []
    masked, tree, starts = parsed
    found: dict[int, Label] = {}
    for node in ast.walk(tree):
        func = node.func if isinstance(node, ast.Call) else None
        name = getattr(func, "id", None) or getattr(func, "attr", None) or ""
        if not name.startswith("plot_"):
            continue
        for kw in node.keywords:
            if kw.arg in PLOT_KEYWORDS and isinstance(kw.value, ast.Constant):
                for label in _literal_labels(masked, starts, kw.value, "figure", words):
                    found.setdefault(label.start, label)
    return [found[k] for k in sorted(found)]


def render_figures(source: str, translate: Callable[[str], str]) -> str:
    """`source` with each figure label's text replaced by `translate(text)` (kept where it cannot stand in the
    literal: `translation_problems`)."""
    for label in reversed(figure_labels(source)):
        text = translate(label.text)
        if text == label.text or translation_problems(label.text, text, label.quote, label.is_f):
            continue
        source = source[: label.start] + label.prefix + label.quote + text + label.quote + source[label.end :]
    return source


def render(source: str, translate: Callable[[str], str]) -> str:
    """`source` with each label's text replaced by `translate(text)` (kept English where that translation could
    not stand in the literal: `translation_problems`)."""
    for label in reversed(labels(source)):
        text = translate(label.text)
        if text == label.text or translation_problems(label.text, text, label.quote, label.is_f):
            continue
        source = source[: label.start] + label.prefix + label.quote + text + label.quote + source[label.end :]
    return source


def canonical(source: str) -> str:
    """`source` with each label reduced to its prefix and its f-string fields (sorted): two editions of a cell
    have the same canonical source when they differ only in their labels' words."""
    every = {label.start: label for label in [*labels(source, words=False), *figure_labels(source, words=False)]}
    for label in (every[k] for k in sorted(every, reverse=True)):
        kept = "".join(sorted(fields(label.text).elements())) if label.is_f else ""
        source = source[: label.start] + label.prefix.lower() + '"' + kept + '"' + source[label.end :]
    return source


# ------------------------------------------------------------------ translations
def fields(text: str) -> Counter:
    """The `{...}` fields of an f-string body as written (nested braces included; `{{` and `}}` are no field)."""
    found, i = Counter(), 0
    while i < len(text):
        if text.startswith(("{{", "}}"), i):
            i += 2
            continue
        if text[i] == "{":
            depth, j = 0, i
            while j < len(text):
                depth += {"{": 1, "}": -1}.get(text[j], 0)
                if depth == 0:
                    break
                j += 1
            found[text[i : j + 1]] += 1
            i = j + 1
            continue
        i += 1
    return found


def _without_fields(text: str) -> str:
    for field in fields(text):
        text = text.replace(field, " ")
    return text


def translation_problems(
    english: str, translation: str, quote: str | None = None, is_f: bool | None = None
) -> list[str]:
    """Why `translation` cannot replace the label text `english` between the same quotes (empty: it can).
    `quote`/`is_f` unknown (a catalog entry): checked for every quote, and as an f-string when `english` has
    a field."""
    problems = []
    if is_f is None:
        is_f = bool(fields(english))
    if is_f and fields(english) != fields(translation):
        want, got = fields(english), fields(translation)
        problems.append(
            f"the f-string fields differ (they are code: keep each exactly): missing "
            f"{sorted((want - got).elements())}, extra {sorted((got - want).elements())}"
        )
    outside = (lambda t: _without_fields(t)) if is_f else (lambda t: t)
    want, got = Counter(ESCAPE.findall(outside(english))), Counter(ESCAPE.findall(outside(translation)))
    if want != got:
        problems.append(
            f"the escapes differ (keep {sorted(want.elements())} exactly, add none): {sorted(got.elements())}"
        )
    for q in [quote[0]] if quote else ['"', "'"]:
        if outside(re.sub(r"\\.", "", translation)).count(q) > outside(re.sub(r"\\.", "", english)).count(q):
            problems.append(f"a {q} that the English does not have would end the literal: use “ ” or 「 」")
    if "\n" in translation and "\n" not in english:
        problems.append("a line break (write `\\n` as the English does, or none)")
    return problems
