"""Repository-wide pytest hooks (the notebooks under nbval included).

nbval lets a cell tagged `raises-exception` pass whether or not it raised. In
the student notebooks those tags are set by the generation step on cells that
must fail while the exercises are unanswered, so here a tagged cell that ran
without an error *fails*: every test cell provably fails on an unanswered
notebook, and a demonstration that stopped raising is caught.

Kinds of test (the markers registered in pyproject.toml): every collected test gets its kind
here, from the path of its file (`KINDS`), so a new test file is a unit test unless it sits
where a slower kind lives, and no test is marked by hand. `unit` is what is left: `make
test-fast` runs `-m unit`. `newest` adds the tests that `make test-newest` runs again on the
newest JAX line (`NEWEST`: the lock check and the exercises whose behaviour a Python or JAX
release changed).
"""
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent

# (path relative to the repository, a folder ending in "/" or a file) -> its kinds; first match wins.
KINDS = (
    ("tests/hub/test_accounts.py", ("unit",)),         # roster checks: no hub is started
    ("tests/hub/", ("hub",)),
    ("tests/browser/test_hub.py", ("hub", "browser")),
    ("tests/browser/", ("browser",)),
    ("tests/autograder/", ("grader",)),
    ("tests/test_validate.py", ("grader",)),            # nbgrader's Validator runs kernels
    ("tests/test_solved_notebooks.py", ("notebooks",)),  # every solved notebook, both editions
    ("solutions/", ("notebooks",)),
    ("notebooks/", ("notebooks",)),
)
NEWEST = ("tests/test_environment_pins.py", "tests/test_exercises_multi_process.py",
          "tests/test_exercises_compiler_sharding.py", "solutions/", "notebooks/")


def _matches(relative: str, pattern: str) -> bool:
    return relative.startswith(pattern) if pattern.endswith("/") else relative == pattern


def kinds_of(relative: str) -> tuple[str, ...]:
    """The markers of a test whose file is at `relative` (POSIX, from the repository root)."""
    kinds = next((k for pattern, k in KINDS if _matches(relative, pattern)), ("unit",))
    if any(_matches(relative, pattern) for pattern in NEWEST):
        kinds += ("newest",)
    return kinds


KIND_NAMES = frozenset({"unit", "notebooks", "grader", "browser", "hub", "newest"})


def _relative(path) -> str | None:
    try:
        return Path(str(path)).resolve().relative_to(ROOT).as_posix()
    except ValueError:          # a test file outside the repository (pytest's own tests of a plugin)
        return None


def pytest_ignore_collect(collection_path, config):
    """Do not even import a test file that `-m` deselects as a whole (`make test-fast` imports no
    grader, browser or notebook test). Only for an expression made of the kinds alone, which a
    file's tests all share; anything else (another marker, a syntax pytest knows better) collects."""
    markexpr = config.getoption("markexpr", "")
    relative = _relative(collection_path) if markexpr and collection_path.is_file() else None
    if relative is None or not relative.endswith((".py", ".ipynb")):
        return None
    try:
        from _pytest.mark.expression import Expression
        expression = Expression.compile(markexpr)
    except Exception:           # pytest's private API moved, or a bad expression (pytest reports it)
        return None
    kinds, foreign = kinds_of(relative), []

    def matches(name: str, /, **kwargs) -> bool:
        if kwargs or name not in KIND_NAMES:
            foreign.append(name)
        return name in kinds and not kwargs

    selected = expression.evaluate(matches)
    return None if selected or foreign else True


def pytest_collection_modifyitems(config, items):
    for item in items:
        relative = _relative(item.path)
        for kind in kinds_of(relative) if relative else ():
            item.add_marker(kind)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.when != "call" or report.outcome != "passed" or type(item).__name__ != "IPyNbCell":
        return
    if not item.options.get("check_exception"):
        return
    outputs = getattr(item, "test_outputs", None) or []
    if not any(out.get("output_type") == "error" for out in outputs):
        report.outcome = "failed"
        report.longrepr = (f"{item.name}: this cell is tagged 'raises-exception' but ran without an error.\n"
                           f"In notebooks/ that means a test passed on an unanswered notebook, or a cell\n"
                           f"that uses an unanswered exercise did not fail.\n--- cell ---\n{item.cell.source}")
