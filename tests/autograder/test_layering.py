"""The grader's folders are its pipeline: every module imports, and imports only downwards.

Static and cheap (the source's `ast`, no import of JAX): every `import` of an `autograder` module,
at the top of a module or inside a function, is an edge. The packages and what each may import:

    records, reasons, limits, messages  (shared, top of autograder/)         nothing of the grader
    course/    the assignments: source notebooks, editions            shared
    intake/    which hand-ins there are, and whose                    shared
    sandbox/   what a student kernel may see and do                   shared, course
    judge/     observations -> verdicts -> points (writes no files)   shared, course
    publish/   every file written                                     shared, course, intake, sandbox
    run/       pool, workers, kernels, reference runs                 shared, course, sandbox, judge, publish
    formgrader/ the formgrader plug-ins                               shared, intake
    runner, __main__, bench  (the pipeline and its command lines)     anything

And no module imports itself through others (no import circle, lazy imports included). A second,
real test imports every module, so a moved or renamed module cannot hide behind a lazy import.

The writer writes: publish/ is every file written, so outside it no module makes a page or a published
file itself. Other stages reach publish/ only through the modules that write (`pages`: a hand-in's pages
and executed notebook; `publishing`: the batch's files; `lms`: an LMS export) or say things (`words`,
`outputs`' progress and reasons), and none calls `nbformat.write`.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "autograder"
SHARED = {"records", "reasons", "limits", "messages"}
PIPELINE = {"runner", "__main__", "bench"}
ALLOWED = {
    "shared": set(),
    "course": {"shared"},
    "intake": {"shared"},
    "sandbox": {"shared", "course"},
    "judge": {"shared", "course"},
    "publish": {"shared", "course", "intake", "sandbox"},
    "run": {"shared", "course", "sandbox", "judge", "publish"},
    "formgrader": {"shared", "intake"},
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def _stage(module: str) -> str:
    """'shared', a package name, 'pipeline' or 'package' (autograder/__init__.py)."""
    parts = module.split(".")[1:]
    if not parts:
        return "package"
    if len(parts) == 1:
        if parts[0] in SHARED:
            return "shared"
        if parts[0] in PIPELINE:
            return "pipeline"
        return parts[0] if (PKG / parts[0]).is_dir() else f"unknown top-level module {parts[0]}"
    return parts[0]


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(module: str) -> set[str]:
    """Every autograder module `module` imports (a name imported from a package counts as its module
    when it is one)."""
    path = MODULES[module]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "autograder"}
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, path.name == "__init__.py", node)
            if target.split(".")[0] != "autograder":
                continue
            subs = {f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in MODULES}
            found |= subs or {target}
    return {m for m in found if m != module}


EDGES = {m: _imports(m) for m in MODULES}


def test_every_module_belongs_to_a_stage():
    unknown = {m: _stage(m) for m in MODULES if _stage(m) not in ALLOWED and _stage(m) not in ("pipeline", "package")}
    assert not unknown, f"modules outside the stage table of this test (add the stage or move them): {unknown}"


def test_no_upward_import():
    bad = []
    for module, targets in EDGES.items():
        stage = _stage(module)
        if stage in ("pipeline",):
            continue
        for target in sorted(targets):
            other = _stage(target)
            if other == stage:
                continue
            if stage == "package" or other not in ALLOWED.get(stage, set()):
                bad.append(f"{module} ({stage}) imports {target} ({other})")
    assert not bad, "imports against the pipeline's direction:\n  " + "\n  ".join(bad)


def test_no_import_circle():
    circles, state = [], {}

    def visit(m, path):
        state[m] = "open"
        for t in sorted(EDGES.get(m, ())):
            if state.get(t) == "open":
                circles.append(" -> ".join(path[path.index(t) :] + [t]))
            elif t not in state:
                visit(t, path + [t])
        state[m] = "done"

    for m in MODULES:
        if m not in state:
            visit(m, [m])
    assert not circles, "import circles:\n  " + "\n  ".join(circles)


def test_the_checker_sees_the_edges_it_must_forbid():
    """The checker is not vacuous: it finds a known downward edge and would flag an upward one."""
    assert "autograder.judge.compare" in EDGES["autograder.judge.score"]
    assert "autograder.sandbox.launch" in EDGES["autograder.run.kernel"]
    node = ast.parse("from ..run import pool").body[0]
    assert _resolve("autograder.judge.score", False, node) == "autograder.run"
    assert "run" not in ALLOWED["judge"]


# what a module outside publish/ may import of it: the writers, and what says things
PUBLISH_ENTRIES = {"publishing", "pages", "lms", "words", "outputs"}


def _calls(module: str) -> set[str]:
    """Dotted names of the calls in `module` (`nbformat.write`, `Path.write_text`, ...)."""
    found = set()
    for node in ast.walk(ast.parse(MODULES[module].read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
        ):
            found.add(f"{node.func.value.id}.{node.func.attr}")
    return found


def test_only_publish_writes_published_files():
    bad = []
    for module, targets in EDGES.items():
        if _stage(module) == "publish":
            continue
        for target in sorted(targets):
            parts = target.split(".")
            if len(parts) > 2 and parts[1] == "publish" and parts[2] not in PUBLISH_ENTRIES:
                bad.append(f"{module} imports {target} (a page or file maker of publish/)")
        if "nbformat.write" in _calls(module):
            bad.append(f"{module} writes a notebook (nbformat.write): that is publish/pages.py's job")
    assert not bad, "files written outside publish/:\n  " + "\n  ".join(bad)


def test_the_writer_check_sees_what_it_must_forbid():
    """Not vacuous: it sees the workers' way to publish, and an edge it must refuse would be one."""
    assert "autograder.publish.pages" in EDGES["autograder.run.worker"]
    assert "nbformat.write" in _calls("autograder.publish.pages")
    assert "feedback" not in PUBLISH_ENTRIES and "inert" not in PUBLISH_ENTRIES


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_module_imports(module):
    importlib.import_module(module)
