"""The exercise wing's rules (issue 60): a notebook's words are data in its package's `text.py`, read by importing
it; the exercises are reached by name through one door.

- Every notebook package is listed (`namedaxes.exercises.PACKAGES`) and has a `text.py` with `TEXT` (a Messages
  table), `HINTS` (each exercise's hints) and `MISTAKE_HINTS` (each exercise's known mistakes with their hints).
- `text.py`, and the package's face, import without JAX (or NumPy): the face loads its check modules lazily.
- A check module declares `exercise("name", check, observe=...)`: no hints or mistakes written there; every
  exercise's hints and mistakes are its package's `HINTS` and `MISTAKE_HINTS` by name, and every entry of those
  tables belongs to an exercise.
- The class report and the catalog tool read the words by importing them: neither reads a file of the exercises.
- `importlib.import_module` appears only where listed: the exercises' door (`exercise_module`, `text_of`, the
  lazy faces: namedaxes/faces.py) and the places that import modules named at run time for reasons of their own.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import namedaxes.exercises
from namedaxes.i18n import Messages

ROOT = Path(__file__).resolve().parents[1]
WING = ROOT / "namedaxes" / "exercises"
PRODUCT = ("courseinfo", "namedaxes", "autograder", "tools", "website", "hub")
# Where a module is imported by a name known only at run time, and why.
IMPORT_MODULE_AT = {
    "namedaxes/exercises/__init__.py": "the exercises' door: text_of, exercise_module",
    "namedaxes/multiprocess/shipping.py": "a function shipped to the workers by its module's name",
    "autograder/run/zygote_main.py": "the kernel's warm modules, imported before it forks",
    "autograder/sandbox/launch.py": "the same warm modules, in the code a booting kernel runs",
    "namedaxes/faces.py": "the lazy package faces (the grader's stages', the notebooks'), each name from its module",
}


def _packages() -> list[str]:
    return sorted(p.name for p in WING.iterdir() if (p / "__init__.py").is_file())


def test_every_notebook_package_is_listed_and_keeps_its_words_in_text_py():
    assert sorted(namedaxes.exercises.PACKAGES) == _packages()
    for package in namedaxes.exercises.PACKAGES:
        text = namedaxes.exercises.text_of(package)
        assert isinstance(text.TEXT, Messages), package
        assert isinstance(text.HINTS, dict) and text.HINTS, package
        assert all(isinstance(h, str) and h for hints in text.HINTS.values() for h in hints), package
        for name, mistakes in text.MISTAKE_HINTS.items():
            assert name in text.HINTS, (package, name)
            for key, number in mistakes.items():
                assert key in text.TEXT and 1 <= number <= len(text.HINTS[name]), (package, name, key)
    assert namedaxes.exercises.text_of("../solutions") is None and namedaxes.exercises.text_of("nope") is None


def test_the_words_and_the_faces_import_without_jax():
    code = (
        "import sys, namedaxes.exercises as e\n"
        "for p in e.PACKAGES:\n"
        "    __import__(f'namedaxes.exercises.{p}'); e.text_of(p)\n"
        "from autograder.publish.course_hints import hints_of, mistakes_of\n"
        "assert all(hints_of(p) for p in e.PACKAGES)\n"
        "print(sorted(m for m in ('jax', 'jaxlib', 'numpy') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stderr


def _exercise_calls(path: Path):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("exercise", "Exercise"):
            yield node


def test_a_check_module_declares_its_exercises_without_words():
    written = [
        f"{path.relative_to(ROOT)}:{call.lineno} {kw.arg}="
        for path in sorted(WING.rglob("*.py"))
        for call in _exercise_calls(path)
        for kw in call.keywords
        if kw.arg in ("hints", "mistakes")
    ]
    assert not written, written


def test_every_exercise_takes_its_hints_and_mistakes_from_its_packages_text_and_every_entry_is_used():
    from namedaxes.checking import Exercise

    for package in namedaxes.exercises.PACKAGES:
        face = importlib.import_module(f"namedaxes.exercises.{package}")
        text = namedaxes.exercises.text_of(package)
        used = set()
        for attr in face.__all__:
            exercise = getattr(face, attr)
            if not isinstance(exercise, Exercise):
                continue
            key = exercise.name if exercise._hints == list(text.HINTS.get(exercise.name, ())) else attr
            assert exercise._hints == list(text.HINTS[key]), (package, attr)
            assert exercise.mistakes == dict(text.MISTAKE_HINTS.get(key, {})), (package, attr)
            used.add(key)
        assert used == set(text.HINTS), (package, set(text.HINTS) - used)


def test_the_class_report_and_the_catalog_tool_read_no_file_of_the_exercises(monkeypatch):
    """They import `text.py`; they never open an exercise's source (to parse it, or for any other reason)."""
    from autograder.publish import course_hints
    from tools.translate.templates import package_template

    read = []
    real_open, real_read_text = builtins.open, Path.read_text

    def noted(path) -> None:
        if str(WING) in str(Path(path).resolve()):
            read.append(str(path))

    def open_noted(file, *args, **kwargs):
        if isinstance(file, (str, Path)):
            noted(file)
        return real_open(file, *args, **kwargs)

    def read_text_noted(self, *args, **kwargs):
        noted(self)
        return real_read_text(self, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", open_noted)
    monkeypatch.setattr(Path, "read_text", read_text_noted)
    for reader in (course_hints.hints_of, course_hints.mistakes_of):
        reader.cache_clear()
    for package in namedaxes.exercises.PACKAGES:
        assert course_hints.hints_of(package) and course_hints.mistakes_of(package) is not None
    assert course_hints.mistake_text("axis_names", "center_local")
    ids = {m.id for m in package_template() if m.id}
    text = namedaxes.exercises.text_of("collectives")
    assert set(dict(text.TEXT.items()).values()) | {h for hs in text.HINTS.values() for h in hs} <= ids
    assert not read, read


def _import_module_calls(path: Path) -> int:
    return path.read_text(encoding="utf-8").count("import_module(")


def test_modules_are_imported_by_a_run_time_name_only_where_listed():
    found = {
        path.relative_to(ROOT).as_posix()
        for package in PRODUCT
        for path in sorted((ROOT / package).rglob("*.py"))
        if _import_module_calls(path)
    }
    assert found == set(IMPORT_MODULE_AT), found


@pytest.mark.parametrize(
    "name",
    [
        "os",
        "namedaxes.checking",
        "namedaxes.exercises.nope",
        "namedaxes.exercises.axis_names.x.y",
        "namedaxes.exercises",
    ],
)
def test_the_door_opens_only_onto_the_course_exercises(name):
    with pytest.raises(ValueError):
        namedaxes.exercises.exercise_module(name)


def test_the_door_opens_onto_a_notebook_package_and_its_modules():
    door = namedaxes.exercises.exercise_module
    assert door("namedaxes.exercises.axis_names").__name__ == "namedaxes.exercises.axis_names"
    assert callable(door("namedaxes.exercises.training_at_scale.cases").expected_figures)


def test_the_wing_imports_public_names_under_their_own_names():
    """A public name is read as itself (`with_mesh`, not `_bound`): no `import name as _alias` in the wing."""
    aliased = [
        f"{path.relative_to(ROOT)}:{node.lineno} {alias.name} as {alias.asname}"
        for path in sorted(WING.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if alias.asname and alias.asname.startswith("_") and not alias.name.startswith("_")
    ]
    assert not aliased, aliased
