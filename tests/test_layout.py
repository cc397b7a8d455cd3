"""The tests mirror the code: tests/<package>/<subpackage>/test_<module>.py, with a few folders of their own.

A test of `autograder/judge/programs.py` is `tests/autograder/judge/test_programs.py`; what spans the product
has its own folder (`SPANNING`). A module of 250 lines or more has a test file named after it (or after the
package it is part of: `tests/namedaxes/exercises/test_shard_map.py` for `namedaxes/exercises/shard_map/`), or
is listed in `COVERED_BY` with the test that covers it.

Every folder of tests/ is a package (`tests.autograder.judge.test_programs`), so two test files may share a
name in different folders; therefore tests/ itself must never be on sys.path, or `tests/namedaxes/` would be
imported as `namedaxes` (by a subprocess that inherits the path, for one). The shared helpers are in
tests/helpers/, on pytest's `pythonpath` (pyproject.toml).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
SPANNING = {"browser", "notebooks", "helpers"}  # whole-product tests, and the helpers (no tests)
TOP_LEVEL = {
    "test_docs.py",
    "test_forbidden_apis.py",
    "test_layout.py",
    "test_package_boundaries.py",
    "test_shape.py",
    "test_busy_machine.py",
    "test_exercise_wing.py",  # the exercise wing and its readers: the class report, the catalog tool, the judge
}  # the repository as a whole
PRODUCT = ("courseinfo", "namedaxes", "autograder", "tools", "website", "hub")
BIG = 250  # lines: a module this long has a test file of its own
# A big module whose test is named otherwise -> that test (the reason in a word).
COVERED_BY = {
    "namedaxes/transformer.py": "tests/namedaxes/test_transformer_scanned.py",  # and notebook 10's exercises
    "autograder/messages.py": "tests/autograder/publish/test_words.py",  # the grader's words are said there
    "autograder/run/kernel.py": "tests/autograder/run/test_executor.py",  # one kernel, cell by cell
    "autograder/publish/canonical.py": "tests/autograder/publish/test_similarity.py",  # the report's first step
    "hub/layout.py": "tests/hub/test_isolation.py",  # the hub's folders, laid out for real
    "hub/server.py": "tests/browser/test_hub.py",  # the hub started, used and cleaned
    "tools/compile_for_topology.py": "tests/namedaxes/test_recorded_programs.py",  # its records, read again
}


def _test_files():
    return sorted(p for p in TESTS.rglob("test_*.py") if "__pycache__" not in p.parts)


def test_every_test_file_sits_where_the_code_it_tests_lives():
    misplaced = []
    for path in _test_files():
        relative = path.relative_to(TESTS)
        if len(relative.parts) == 1:
            if relative.name not in TOP_LEVEL:
                misplaced.append(f"{relative} (at the top of tests/: put it in tests/<package>/)")
            continue
        if relative.parts[0] in SPANNING:
            continue
        folder = ROOT.joinpath(*relative.parts[:-1])
        if not folder.is_dir():
            misplaced.append(f"{relative} (no folder {folder.relative_to(ROOT)}/ in the code)")
    assert not misplaced, "test files outside the mirrored layout:\n" + "\n".join(misplaced)


def test_every_test_folder_is_a_package_but_the_helpers():
    folders = {p.parent for p in _test_files()}
    folders |= {parent for f in list(folders) for parent in f.parents if parent == TESTS or TESTS in parent.parents}
    missing = sorted(str(f.relative_to(ROOT)) for f in folders if not (f / "__init__.py").is_file())
    assert not missing, f"folders of tests/ without an __init__.py: {missing}"
    assert not (TESTS / "helpers" / "__init__.py").exists(), "tests/helpers/ is on pythonpath, not a package"


def test_tests_itself_is_not_on_the_import_path():
    on_path = [p for p in sys.path if Path(p or ".").resolve() == TESTS]
    assert not on_path, f"tests/ is on sys.path ({on_path}): tests/namedaxes/ would shadow the namedaxes package"


def _named_tests(module: Path) -> list[Path]:
    """The test files that may bear `module`'s name: after itself, or after the package it is part of."""
    relative = module.relative_to(ROOT)
    own = relative.parent.name if module.name == "__init__.py" else relative.stem
    folder = (
        TESTS.joinpath(*relative.parts[:-1]) if module.name != "__init__.py" else TESTS.joinpath(*relative.parts[:-2])
    )
    found = [folder / f"test_{own}.py"]
    if module.name != "__init__.py" and (module.parent / "__init__.py").is_file() and len(relative.parts) > 2:
        found.append(TESTS.joinpath(*relative.parts[:-2]) / f"test_{relative.parts[-2]}.py")
    return found


def test_every_big_module_has_a_test_named_after_it_or_says_which_test_covers_it():
    untested = []
    for package in PRODUCT:
        for module in sorted((ROOT / package).rglob("*.py")):
            if len(module.read_text(encoding="utf-8").splitlines()) < BIG:
                continue
            key = module.relative_to(ROOT).as_posix()
            if not any(t.is_file() for t in _named_tests(module)) and key not in COVERED_BY:
                untested.append(f"{key} (no {_named_tests(module)[0].relative_to(ROOT)})")
    assert not untested, (
        f"modules of {BIG}+ lines with no test of their own (write one, or list it in COVERED_BY):\n"
        + "\n".join(untested)
    )
    listed = [f"{m} -> {t}" for m, t in COVERED_BY.items() if not (ROOT / m).is_file() or not (ROOT / t).is_file()]
    assert not listed, f"COVERED_BY names what is not there: {listed}"
