"""Each package holds one kind of knowledge, and imports only the packages below it.

tests/autograder/test_layering.py guards the grader's stages inside autograder/; this test guards the
boundaries BETWEEN the course's packages. Static and cheap (each module's `ast`, no import): every
`import` at the top of a module or inside a function is an edge. The floors, lowest first:

    courseinfo/  what a course is: ids, editions, languages, nbgrader metadata, labels   the standard library
    namedaxes/   what a student's kernel runs                                          courseinfo
    autograder/  the grader                                                            courseinfo, namedaxes
    tools/       the maintenance, instructor and student commands                     the three above
    website/     `make site`                                                          courseinfo, namedaxes, tools
    hub/         a class on JupyterHub                                                courseinfo, tools

Rules more: the scorer's judging package (namedaxes/judging/, which the grader's trusted process imports)
imports only the standard library, NumPy and JAX, and reaches into JAX's privates only through its adapter
(jax_private.py; the grader's readers of programs use it too); and no exercise module (one per notebook)
imports another notebook's private names, so what notebooks share is public and said to be.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("courseinfo", "namedaxes", "autograder", "tools", "website", "hub")
ALLOWED = {
    "courseinfo": set(),
    "namedaxes": {"courseinfo"},
    "autograder": {"courseinfo", "namedaxes"},
    "tools": {"courseinfo", "namedaxes", "autograder"},
    "website": {"courseinfo", "namedaxes", "tools"},
    "hub": {"courseinfo", "tools"},
}
JUDGING = "namedaxes.judging"
JUDGING_MAY_IMPORT = {"numpy", "jax", "jaxlib"}
JAX_ADAPTER = "namedaxes/judging/jax_private.py"
EXPORTED_PRIVATES = {"_in_named_shardings", "_out_named_shardings"}
# Reaches into JAX's privates that are not the judge's, and why each is where it is.
JAX_PRIVATE_ELSEWHERE = {
    "namedaxes/devices.py": "whether a backend started (xla_bridge): the device count can still be set",
    "namedaxes/multiprocess/worker.py": "gloo's TCP collectives on the loopback address (a JAX-internal factory)",
    "namedaxes/checking/compiled.py": "the fingerprint of a lowered program (its compile memo)",
    "tools/bench_checks.py": "counting XLA compiles in a benchmark",
}
EXERCISES = "namedaxes.exercises"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _python_files(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def _imports(path: Path, module: str | None = None) -> list[tuple[int, str, list[str]]]:
    """(line, absolute module, names imported from it) of every import in the module at `path` (named `module`)."""
    module = module or _module_name(path)
    is_package = path.name == "__init__.py"
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = node.module or ""
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            found.append((node.lineno, target, [alias.name for alias in node.names]))
    return found


def _where(path: Path, line: int) -> str:
    return f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name}:{line}"


@pytest.mark.parametrize("package", PACKAGES)
def test_a_package_imports_only_the_floors_below_it(package):
    wrong = []
    for path in _python_files(package):
        for line, target, _ in _imports(path):
            top = target.split(".")[0]
            if top in PACKAGES and top != package and top not in ALLOWED[package]:
                wrong.append(f"{_where(path, line)} imports {target}")
    assert not wrong, f"{package}/ may import only {sorted(ALLOWED[package]) or 'the standard library'}: {wrong}"


def test_the_ground_floor_imports_only_the_standard_library():
    """courseinfo is read by the website's Sphinx, in a venv without the course's packages, and by the kernel."""
    outside = [
        f"{_where(path, line)} imports {target}"
        for path in _python_files("courseinfo")
        for line, target, _ in _imports(path)
        if target and target.split(".")[0] not in sys.stdlib_module_names and target.split(".")[0] != "courseinfo"
    ]
    assert not outside, outside


def test_the_scorers_judging_package_imports_only_the_standard_library_numpy_and_jax():
    files = _python_files("namedaxes/judging")
    outside = [
        f"{_where(path, line)} imports {target}"
        for path in files
        for line, target, _ in _imports(path)
        if target.split(".")[0] not in sys.stdlib_module_names | JUDGING_MAY_IMPORT
        and not (target + ".").startswith(JUDGING + ".")
    ]
    assert not outside, f"the grader imports namedaxes.judging in its trusted process: {outside}"
    seen = {t for path in files for _, t, _ in _imports(path)}
    assert {"numpy", "namedaxes.judging.hlo", "jax._src.lib.mlir"} <= seen, "the walker sees the package's imports"


def _private_jax(path: Path) -> list[str]:
    """Where the module at `path` reaches into JAX's privates: an import of `jax._src`, or a private
    attribute of an exported program (`exp._in_named_shardings`)."""
    found = [f"{_where(path, line)} imports {t}" for line, t, _ in _imports(path) if t.startswith("jax._src")]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and node.attr in EXPORTED_PRIVATES:
            found.append(f"{_where(path, node.lineno)} reads .{node.attr}")
    return found


def test_the_judge_reaches_into_jax_only_through_its_adapter():
    """namedaxes/judging/jax_private.py holds every reach of the judge (the visible checks' and the grader's)
    into JAX's private modules and attributes; the few others are listed with why they are not the judge's."""
    reaches = {
        path.relative_to(ROOT).as_posix(): found
        for package in PACKAGES
        for path in _python_files(package)
        if (found := _private_jax(path))
    }
    assert JAX_ADAPTER in reaches, "the walker sees the adapter's reaches"
    unlisted = {
        where: found for where, found in reaches.items() if where != JAX_ADAPTER and where not in JAX_PRIVATE_ELSEWHERE
    }
    assert not unlisted, (
        f"reach JAX's privates through {JAX_ADAPTER}, or list the module in JAX_PRIVATE_ELSEWHERE: {unlisted}"
    )
    gone = sorted(set(JAX_PRIVATE_ELSEWHERE) - set(reaches))
    assert not gone, f"JAX_PRIVATE_ELSEWHERE lists modules that no longer reach JAX's privates: {gone}"


def _notebook_module(target: str) -> str | None:
    """The exercise module (one notebook's) that `target` is, or None."""
    parts = target.split(".")
    return ".".join(parts[:3]) if target.startswith(EXERCISES + ".") and len(parts) >= 3 else None


def _private_uses(path: Path, me: str, module: str | None = None) -> list[str]:
    """Where the exercise module at `path` (named `module`, of the notebook `me`) uses a private name of another
    notebook's module."""
    found = []
    aliases: dict[str, str] = {}  # a name this module binds to another notebook's module
    for line, target, names in _imports(path, module or me):
        if names and target == EXERCISES:
            aliases.update({n: f"{EXERCISES}.{n}" for n in names})
        other = _notebook_module(target)
        if other is None or other == me:
            continue
        found += [f"{_where(path, line)}: {target}.{n}" for n in names if n.startswith("_")]
        if not names:
            aliases[target.split(".")[-1]] = other
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and isinstance(node.value, ast.Name)
            and aliases.get(node.value.id, me) != me
        ):
            found.append(f"{_where(path, node.lineno)}: {aliases[node.value.id]}.{node.attr}")
    return found


def _notebook_of(path: Path) -> str:
    """The notebook a file of namedaxes/exercises/ belongs to: its module, or the package it is part of (the
    modules of one notebook's package share its privates)."""
    name = _module_name(path)
    return _notebook_module(name) or name


def test_no_exercise_module_uses_another_notebooks_private_names():
    """`from namedaxes.exercises.shard_map import _x` or `shard_map._x` in another notebook's module: what two
    notebooks share is public, in namedaxes/checking/ (regions.py: the region judging of 05, 06 and 07), so a
    change to one notebook's privates stays in it."""
    found = [
        use
        for path in _python_files("namedaxes/exercises")
        for use in _private_uses(path, _notebook_of(path), _module_name(path))
    ]
    assert not found, found


def _module_of(target: str, names: list[str]) -> list[str]:
    """The product modules an import names: `from a.b import c` is module a.b.c where that is one, else a.b."""
    found = {f"{target}.{n}" for n in names if f"{target}.{n}" in _MODULES} | (
        {target} if target in _MODULES else set()
    )
    return sorted(found)


_MODULES = {_module_name(p) for package in PACKAGES for p in _python_files(package)}


def _underscore_imports(path: Path, module: str | None = None) -> list[str]:
    """`from <a product module> import _name` in the module at `path`: a private name taken across files."""
    return [
        f"{_where(path, line)}: {target}.{name}"
        for line, target, names in _imports(path, module)
        if target.split(".")[0] in PACKAGES
        for name in names
        if name.startswith("_") and not name.startswith("__")
    ]


def test_no_module_imports_another_modules_private_name():
    """What a module shares is public, even with its siblings: a package's face (its `__init__`, its `__all__`)
    draws the line for the outside, and an underscore marks what no other file uses."""
    found = [use for package in PACKAGES for path in _python_files(package) for use in _underscore_imports(path)]
    assert not found, found


def test_no_notebooks_package_imports_another_notebooks():
    """A notebook's checks (namedaxes/exercises/<topic>/) import no other notebook's package: what two notebooks
    share lives in namedaxes/checking/ (or the core beside it), said to be shared."""
    found = []
    for path in _python_files("namedaxes/exercises"):
        me = _notebook_of(path)
        for line, target, names in _imports(path):
            for other in {_notebook_module(m) for m in _module_of(target, names)} - {None, me}:
                found.append(f"{_where(path, line)} imports {other}")
    assert not found, found


def test_every_notebooks_checks_are_a_package_with_its_face():
    """One shape: each notebook's checks a package, its `__init__` the `q.` face (`notebook_face(__name__, {module:
    names})`: a literal table of what it shows), its sentences in `text.py`, what its exercises share in
    `running.py`."""
    folder = ROOT / "namedaxes" / "exercises"
    loose = sorted(p.name for p in folder.glob("*.py") if p.name != "__init__.py")
    assert not loose, f"a notebook's checks are a package, not one file: {loose}"
    packages = sorted(p for p in folder.iterdir() if (p / "__init__.py").is_file())
    assert len(packages) >= 10
    for package in packages:
        face = ast.parse((package / "__init__.py").read_text(encoding="utf-8"))
        tables = [
            n.value.args[1]
            for n in face.body
            if isinstance(n, ast.Expr)
            and isinstance(n.value, ast.Call)
            and getattr(n.value.func, "id", "") == "notebook_face"
            and len(n.value.args) == 2
        ]
        assert len(tables) == 1 and ast.literal_eval(tables[0]), f"{package.name}/__init__.py: no notebook_face table"
        assert (package / "text.py").is_file(), f"{package.name}/ has no text.py"
        assert (package / "running.py").is_file(), f"{package.name}/ has no running.py (what its exercises share)"


def test_the_rules_see_real_edges(tmp_path):
    """The walker finds the edges the rules are about (else every test above would pass on nothing)."""
    region_users = {
        _notebook_of(path)
        for path in _python_files("namedaxes/exercises")
        for _, target, _ in _imports(path)
        if target == "namedaxes.checking.regions"
    }
    assert len(region_users) >= 3, "shard_map, collectives and multi_process share the core's region judging"
    inside = ROOT / "namedaxes" / "exercises" / "collectives" / "ring.py"
    assert any(t == f"{EXERCISES}.collectives.running" for _, t, _ in _imports(inside))  # a package's own privates
    assert _private_uses(inside, _notebook_of(inside), _module_name(inside)) == []
    assert any(t.startswith("courseinfo") for p in _python_files("namedaxes") for _, t, _ in _imports(p))
    planted = tmp_path / "probe.py"
    planted.write_text(
        "from .shard_map import _judge, judge_region\nfrom . import collectives\nfrom ..checking import fail\n"
        "from .probe import _mine\ncollectives._expect(1)\n"
    )
    assert [t for _, t, _ in _imports(planted, f"{EXERCISES}.probe")][-2:] == [
        "namedaxes.checking",
        f"{EXERCISES}.probe",
    ]
    assert _private_uses(planted, f"{EXERCISES}.probe") == [
        "probe.py:1: namedaxes.exercises.shard_map._judge",
        "probe.py:5: namedaxes.exercises.collectives._expect",
    ]
    assert _underscore_imports(planted, f"{EXERCISES}.probe") == [
        "probe.py:1: namedaxes.exercises.shard_map._judge",
        "probe.py:4: namedaxes.exercises.probe._mine",
    ]
    sibling = ROOT / "namedaxes" / "exercises" / "shard_map" / "scaled.py"
    assert any(t == f"{EXERCISES}.shard_map.running" for _, t, _ in _imports(sibling))  # a sibling's names, public
