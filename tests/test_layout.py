"""The tests mirror the code: tests/<package>/<subpackage>/test_<module>.py, with a few folders of their own.

A test of `autograder/judge/programs.py` is `tests/autograder/judge/test_programs.py`; what spans the product
has its own folder (`SPANNING`). Every folder of tests/ is a package (`tests.autograder.judge.test_programs`),
so two test files may share a name in different folders; therefore tests/ itself must never be on
sys.path, or `tests/namedaxes/` would be imported as `namedaxes` (by a subprocess that inherits the path,
for one). The shared helpers are in tests/helpers/, on pytest's `pythonpath` (pyproject.toml).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
SPANNING = {"browser", "notebooks", "helpers"}  # whole-product tests, and the helpers (no tests)
TOP_LEVEL = {"test_docs.py", "test_layout.py", "test_package_boundaries.py"}  # the repository as a whole


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
