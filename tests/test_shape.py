"""The product's shape: its limits, and one name for one meaning.

Static and cheap (each module's `ast`, no import), over the product's packages (courseinfo, namedaxes, autograder,
tools, website, hub):

- no file over 800 lines and no function over 80 lines: a module that grows past that is cut along its sections
  into a package, a function into its named steps; files keep under 500 lines (`MAX_PREFERRED_FILE_LINES`) but
  those listed in `LONG_FILES`, each at most as long as it is listed, and classes under 250 lines
  (`MAX_CLASS_LINES`) but those listed in `LONG_CLASSES`: a listed one may shrink, never grow;
- no import circle, but the lazy imports listed in `LAZY_CIRCLES`, each with why it is lazy
  (tests/autograder/test_layering.py holds the grader to none at all);
- no two classes of the product share a name, and no two modules do, but the roles in `ROLES`: a name that
  means the same kind of thing in each place it is used (every notebook's package has its `text.py`); the same
  for public top-level functions, but the roles in `FUNCTION_ROLES`;
- the judge's plumbing has one home, namedaxes/judging/: no module of the grader compiles a program, makes a
  mesh or writes the tolerance itself (`compile_exported`, `mesh_of`, `RTOL`/`ATOL`);
- tools/ reach the grader only through its faces: a stage package's `FACE` (namedaxes/faces.py) and the
  records every stage shares (`GRADER_SHARED`); a face's names are the names its modules define.
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
MAX_PREFERRED_FILE_LINES = 500
# Files over `MAX_PREFERRED_FILE_LINES`, at most as long as listed (cut them along their sections when they grow).
LONG_FILES: dict[str, int] = {}  # none now
MAX_CLASS_LINES = 250
# Classes over `MAX_CLASS_LINES`, at most as long as listed.
LONG_CLASSES = {
    "namedaxes.multiprocess.cluster.Cluster": 356,  # the multi-process launcher's cluster
}
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
    "worker": "one worker process of its package's pool (the grader's pool, the multi-process launcher)",
    "nbgrader_config": "nbgrader reads a file of this name (the hub's student servers and formgrader services)",
}

# Public top-level functions that several modules define for the same role.
FUNCTION_ROLES = {
    "main": "a command's entry point (`python -m ...`)",
    "known_mistakes": "a notebook's known mistakes (judge/mistakes.py reads each notebook's)",
    "run_answer": "how a notebook's checks run an answer (each notebook's running.py)",
    "explained_here": "a notebook's explanation of a check's finding (each notebook's running.py)",
    "step_mistakes": "the known mistakes of a notebook's training step (each notebook's)",
    "build": "a build step's entry (the benchmark's course, the notebooks, the catalogs, the site)",
    "render": "a page or table's text from its records (report, labels, tables)",
    "text": "TEXT[key] in a language, its placeholders filled (the grader's messages, the site's words)",
    "provenance": "where a tool's measured record was made: the machine, the versions, the date, the command",
    "serve": "a child process's main loop: read each request, answer it (the launcher's worker, the judge's scorer)",
    "place": "a model module's parameters (and optimizer state) stored on a mesh as its rules say",
    "loss_fn": "a model's loss: parameters and a batch to one number (the transformer, the pipeline)",
    "train_step": "a model module's one training step: (params, state, window) to (params, state, loss)",
    "expected_figures": "an answer table's figures from reference answers passed in (tools/answer_tables.py)",
}
# The grader's stage packages, each with its face (`FACE` in its __init__.py), and the modules every stage and
# its clients share (records, reasons, limits; the command line).
GRADER_STAGES = ("course", "intake", "judge", "run", "publish", "sandbox", "formgrader")
GRADER_SHARED = ("autograder.records", "autograder.reasons", "autograder.limits", "autograder.__main__")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for package in PRODUCT for p in sorted((ROOT / package).rglob("*.py"))}
TREES = {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in MODULES.items()}


def _relative(module: str) -> str:
    return MODULES[module].relative_to(ROOT).as_posix()


def _face(package: str) -> dict[str, str]:
    """The names of the `FACE` table of a package's __init__.py, each -> the module that defines it (the table
    maps a module, `.compare` in the package or a full name, to the names the face shows from it), {} if none."""
    for node in TREES[package].body if package in TREES else ():
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["FACE"]:
            table = ast.literal_eval(node.value)
            return {n: package + m if m.startswith(".") else m for m, names in table.items() for n in names}
    return {}


def test_no_file_is_over_800_lines():
    lines = {_relative(m): len(p.read_text(encoding="utf-8").splitlines()) for m, p in MODULES.items()}
    long = {where: n for where, n in lines.items() if n > MAX_FILE_LINES}
    assert not long, f"cut these along their sections into a package: {long}"


def test_files_keep_under_500_lines_but_the_listed_ones():
    lines = {_relative(m): len(p.read_text(encoding="utf-8").splitlines()) for m, p in MODULES.items()}
    long = {where: n for where, n in lines.items() if n > LONG_FILES.get(where, MAX_PREFERRED_FILE_LINES)}
    assert not long, f"cut these along their sections (or, if listed, back to their LONG_FILES length): {long}"
    short = [where for where in LONG_FILES if lines.get(where, 0) <= MAX_PREFERRED_FILE_LINES]
    assert not short, f"LONG_FILES lists files that are no longer long: {short}"


def test_classes_keep_under_250_lines_but_the_listed_ones():
    sizes = {
        f"{m}.{node.name}": node.end_lineno - node.lineno + 1
        for m, tree in TREES.items()
        for node in tree.body
        if isinstance(node, ast.ClassDef)
    }
    long = {name: n for name, n in sizes.items() if n > LONG_CLASSES.get(name, MAX_CLASS_LINES)}
    assert not long, f"split these classes along their jobs (or, if listed, back to their length): {long}"
    short = [name for name in LONG_CLASSES if sizes.get(name, 0) <= MAX_CLASS_LINES]
    assert not short, f"LONG_CLASSES lists classes that are no longer long: {short}"


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
            face = _face(base)  # a name of a stage's face is an edge to the module that defines it
            targets = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else face.get(a.name, base) for a in node.names
            ]
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


def test_no_two_public_functions_share_a_name_but_the_roles():
    where = collections.defaultdict(list)
    for module, tree in TREES.items():
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
                where[node.name].append(_relative(module))
    shared = {name for name, places in where.items() if len(places) > 1}
    new = {name: where[name] for name in shared - set(FUNCTION_ROLES)}
    assert not new, f"one name, one meaning: rename one of each, or add the name to FUNCTION_ROLES {new}"
    gone = sorted(set(FUNCTION_ROLES) - shared)
    assert not gone, f"FUNCTION_ROLES names what no two modules share any more: {gone}"


def test_the_rules_see_real_edges():
    """The walkers find what the rules are about (else every test above would pass on nothing)."""
    assert ("namedaxes.checking.stubs", True) in _edges("namedaxes.kernel_start")  # the lazy one
    assert ("autograder.records", False) in _edges("autograder.runner")  # `from .records import ...`
    assert ("tools.translate.catalogs", False) in _edges("tools.translate.templates")  # `from . import catalogs`
    assert frozenset({"namedaxes.kernel_start", "namedaxes.checking.stubs"}) in _circles(lazy=True)
    assert ("autograder.judge.programs", True) in _edges("tools.judged_table.cells")  # through the judge's FACE
    assert len(MODULES) > 150 and all(isinstance(t, ast.Module) for t in TREES.values())


def _grader_imports(module: str) -> list[tuple[int, str, tuple[str, ...]]]:
    """(line, imported autograder module, names) of every import of the grader in `module`."""
    found = []
    for node in ast.walk(TREES[module]):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name, ()) for a in node.names if a.name.split(".")[0] == "autograder"]
        elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "autograder":
            found.append((node.lineno, node.module, tuple(a.name for a in node.names)))
    return found


def test_tools_reach_the_grader_only_through_its_faces():
    stages = {f"autograder.{s}" for s in GRADER_STAGES}
    wrong = []
    for module in (m for m in MODULES if m.split(".")[0] == "tools"):
        for line, target, names in _grader_imports(module):
            if target in GRADER_SHARED:
                continue
            if (
                target == "autograder"
                and names
                and all(f"autograder.{n}" in stages | set(GRADER_SHARED) for n in names)
            ):
                continue
            if target in stages and names and all(n in _face(target) for n in names):
                continue
            wrong.append(f"{_relative(module)}:{line} {target} {names}")
    assert not wrong, f"tools import the grader through a stage's FACE or GRADER_SHARED, not: {wrong}"


def test_each_face_names_what_its_modules_define():
    wrong, faces = [], 0
    for stage in GRADER_STAGES:
        package = f"autograder.{stage}"
        face = _face(package)
        faces += bool(face)
        for name, module in face.items():
            where = module
            defined = {
                getattr(node, "name", None) or getattr(node.targets[0], "id", None)
                for node in TREES.get(where, ast.Module(body=[])).body
                if isinstance(node, (ast.FunctionDef, ast.ClassDef)) or (isinstance(node, ast.Assign) and node.targets)
            }
            if name not in defined or f"{package}.{name}" in MODULES:  # a submodule's name would shadow it
                wrong.append(f"{package}: {name} -> {module}")
    assert faces >= 6 and not wrong, wrong


def test_the_judges_plumbing_lives_in_namedaxes_judging():
    """One compile, one mesh reading, one tolerance: the grader imports them from namedaxes.judging."""
    found = []
    for module, tree in TREES.items():
        if module.split(".")[0] != "autograder":
            continue
        for node in ast.walk(tree):
            call = node.func if isinstance(node, ast.Call) else None
            if isinstance(call, ast.Attribute) and call.attr == "compile" and getattr(call.value, "id", "") != "re":
                found.append(f"{_relative(module)}:{node.lineno} compiles (namedaxes.judging.compile_exported)")
            if isinstance(call, ast.Name) and call.id == "Mesh":
                found.append(f"{_relative(module)}:{node.lineno} makes a mesh (namedaxes.judging.device_mesh)")
            if isinstance(node, ast.Constant) and node.value == 1e-5:
                found.append(f"{_relative(module)}:{node.lineno} writes the tolerance (namedaxes.judging.RTOL/ATOL)")
    assert not found, found
    judge = _edges("autograder.judge.compiling") | _edges("autograder.judge.compare")
    assert ("namedaxes.judging", False) in judge  # the rule sees the grader's imports of the judge's plumbing
