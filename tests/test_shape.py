"""The product's shape: its limits, and one name for one meaning.

Static and cheap (each module's `ast`, no import), over the product's packages (courseinfo, namedaxes, autograder,
tools, website, hub):

- no file over 800 lines and no function over 80 lines: a module that grows past that is cut along its sections
  into a package, a function into its named steps;
- no import circle, but the lazy imports listed in `LAZY_CIRCLES`, each with why it is lazy
  (tests/autograder/test_layering.py holds the grader to none at all);
- no two classes of the product share a name, and no two modules do, but the roles in `ROLES`: a name that
  means the same kind of thing in each place it is used (every notebook's package has its `text.py`).
"""

from __future__ import annotations

import ast
import collections
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("courseinfo", "namedaxes", "autograder", "tools", "website", "hub")
MAX_FILE_LINES = 800
MAX_FUNCTION_LINES = 80
# Import circles closed only by an import inside a function, and why that import is lazy.
LAZY_CIRCLES = {
    frozenset({"namedaxes.kernel_start", "namedaxes.checking.stubs"}): (
        "kernel_start is the IPython extension every course kernel loads at start: it imports the checking "
        "package (NumPy, the catalogs) only when a cell fails (its docstring)"
    ),
}
# Module names that several packages use for the same kind of thing.
ROLES = {
    "text": "a package's sentences, its TEXT table (every notebook's checks, namedaxes.checking, the launcher)",
    "running": "how a notebook's checks run an answer (each notebook's package)",
    "mistakes": "known mistakes: a notebook's (the results of its checks' usual mistakes, `known_mistakes`, or what "
    "a program shows in its text, `program_mistakes`) and the judge's naming of a wrong program's values by them "
    "(autograder/judge/)",
    "bench": "the benchmark of its package (`make bench-grade`, `make bench-hub`)",
    "batch": "a grading batch's step in its stage: run/ runs it, publish/ writes it",
    "worker": "one worker process of its package's pool (the grader's pool, the multi-process launcher)",
    "nbgrader_config": "nbgrader reads a file of this name (the hub's student servers and formgrader services)",
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for package in PRODUCT for p in sorted((ROOT / package).rglob("*.py"))}
TREES = {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in MODULES.items()}


def _relative(module: str) -> str:
    return MODULES[module].relative_to(ROOT).as_posix()


def test_no_file_is_over_800_lines():
    lines = {_relative(m): len(p.read_text(encoding="utf-8").splitlines()) for m, p in MODULES.items()}
    long = {where: n for where, n in lines.items() if n > MAX_FILE_LINES}
    assert not long, f"cut these along their sections into a package: {long}"


def test_no_function_is_over_80_lines():
    long = [
        f"{_relative(m)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for m, tree in TREES.items()
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert not long, long


@functools.cache
def _edges(module: str) -> frozenset[tuple[str, bool]]:
    """(imported product module, lazy: inside a function or class) of every import of `module`."""
    is_package = MODULES[module].name == "__init__.py"
    top = {id(node) for node in TREES[module].body}
    found = set()
    for node in ast.walk(TREES[module]):
        targets = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".") if is_package else module.split(".")[:-1]
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        found |= {(t, id(node) not in top) for t in targets if t in MODULES and t != module}
    return frozenset(found)


@functools.cache
def _circles(lazy: bool) -> list[frozenset[str]]:
    """The import circles (strongly connected modules), following lazy imports too when `lazy`."""
    graph = {m: {t for t, is_lazy in _edges(m) if lazy or not is_lazy} for m in MODULES}
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            circle = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                circle.add(w)
                if w == v:
                    break
            if len(circle) > 1:
                found.append(frozenset(circle))

    for module in MODULES:
        if module not in index:
            visit(module)
    return found


def test_no_import_circle_but_the_documented_lazy_ones():
    assert _circles(lazy=False) == []
    undocumented = [sorted(c) for c in _circles(lazy=True) if c not in LAZY_CIRCLES]
    assert not undocumented, f"import circles through a lazy import, not in LAZY_CIRCLES: {undocumented}"
    gone = [sorted(c) for c in LAZY_CIRCLES if c not in _circles(lazy=True)]
    assert not gone, f"LAZY_CIRCLES lists circles that are gone: {gone}"


def test_no_two_classes_share_a_name():
    where = collections.defaultdict(list)
    for module, tree in TREES.items():
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                where[node.name].append(_relative(module))
    shared = {name: places for name, places in where.items() if len(places) > 1}
    assert not shared, f"one name, one meaning: rename one of each {shared}"


def test_no_two_modules_share_a_name_but_the_roles():
    where = collections.defaultdict(list)
    for module, path in MODULES.items():
        if path.name not in ("__init__.py", "__main__.py"):
            where[path.stem].append(_relative(module))
    shared = {name: places for name, places in where.items() if len(places) > 1 and name not in ROLES}
    assert not shared, f"one name, one meaning: rename one of each, or add the name to ROLES with its role {shared}"
    unused = [name for name in ROLES if len(where.get(name, [])) < 2]
    assert not unused, f"ROLES names what no two modules share: {unused}"


def test_the_rules_see_real_edges():
    """The walkers find what the rules are about (else every test above would pass on nothing)."""
    assert ("namedaxes.checking.stubs", True) in _edges("namedaxes.kernel_start")  # the lazy one
    assert ("autograder.records", False) in _edges("autograder.runner")  # `from .records import ...`
    assert ("tools.translate.catalogs", False) in _edges("tools.translate.templates")  # `from . import catalogs`
    assert frozenset({"namedaxes.kernel_start", "namedaxes.checking.stubs"}) in _circles(lazy=True)
    assert len(MODULES) > 150 and all(isinstance(t, ast.Module) for t in TREES.values())
