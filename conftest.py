"""Repository-wide pytest hooks (the notebooks under nbval included).

nbval lets a cell tagged `raises-exception` pass whether or not it raised. In
the student notebooks those tags are set by the generation step on cells that
must fail while the exercises are unanswered, so here a tagged cell that ran
without an error *fails*: every test cell provably fails on an unanswered
notebook, and a demonstration that stopped raising is caught.

Kinds of test (the markers registered in pyproject.toml): every collected test gets its kind
here, from the path of its file (`KINDS`), so a new test file is a unit test unless it sits
where a slower kind lives, and no test is marked by hand. `unit` is what is left, and `make
test-fast` runs `-m unit`. The exercise matrices are a kind of their own, `exercises`: they
compile a JAX program for every answer on several meshes, most of the in-process tests' time,
so `make test-fast` leaves them out. `newest` adds the tests that `make test-newest` runs again
on the newest JAX line (`NEWEST`: the lock check, the exercises whose behaviour a Python or JAX
release changed, the notebooks: the Makefile passes the English solved ones and the other editions' student
ones, since an edition's code is the English code cell for cell; see its `test` target).

One compile cache per run: JAX's persistent compilation cache in a folder made empty for the run and
removed after it (`pytest_configure`, tools/compile_cache.py), shared by every process the run starts,
so a program compiled by one test (an exercise matrix, a solved notebook, its Chinese edition, a
student notebook under nbval) is read back by the next one that compiles it. Compiling from it gives
the same executable; the judge reads only its instructions. The grader's sandboxed kernels never see
it (`Sandbox.blocked_env`).
"""

import contextlib
import sys
from pathlib import Path

import pytest

from tools import compile_cache

ROOT = Path(__file__).resolve().parent

# path relative to the repository (a folder ends in "/", a file name prefix in "*", else one file)
# -> the kinds of the tests there. The first match wins.
KINDS = (
    ("tests/hub/test_accounts.py", ("unit",)),  # roster checks: no hub is started
    ("tests/hub/test_built_courses.py", ("unit",)),  # which course builds are stale: no hub is started
    ("tests/hub/", ("hub",)),
    ("tests/browser/test_hub.py", ("hub", "browser")),
    ("tests/browser/", ("browser",)),
    ("tests/autograder/intake/test_inbound.py", ("unit",)),  # collect's refusals, on files made here
    ("tests/autograder/publish/test_report.py", ("unit",)),  # the report page from records
    ("tests/autograder/publish/test_gradebook.py", ("unit",)),  # a gradebook.db of no rows
    ("tests/autograder/publish/test_lms.py", ("unit",)),  # an LMS export of a grades.csv made here
    ("tests/autograder/publish/test_misconceptions.py", ("unit",)),  # the class's map from rows made here
    ("tests/autograder/publish/test_similarity.py", ("unit",)),  # winnowing a class of notebooks made here
    ("tests/autograder/course/", ("unit",)),  # merging a submission into the graded notebook, in memory
    ("tests/autograder/intake/test_placement.py", ("unit",)),  # placing files made here
    ("tests/autograder/sandbox/test_syscalls.py", ("unit",)),  # the system-call table, read as data
    ("tests/autograder/judge/test_compare.py", ("unit",)),  # comparing and loading observations
    ("tests/autograder/judge/test_hidden_inputs.py", ("unit",)),  # drawing the secret inputs, numpy only
    ("tests/autograder/judge/test_mistakes.py", ("unit",)),  # known mistakes' results, numpy only
    ("tests/autograder/judge/test_exported.py", ("unit",)),  # reading programs exported here, in memory
    ("tests/autograder/run/test_namespace_guard.py", ("unit",)),  # splitting a test cell
    ("tests/autograder/run/test_order.py", ("unit",)),  # the pool's choice of the next task, no worker started
    ("tests/autograder/run/test_batch.py", ("unit",)),  # a batch's tasks, budgets and results, no worker started
    ("tests/autograder/run/test_observations.py", ("unit",)),  # an observation folder made here
    ("tests/autograder/run/test_cell_outputs.py", ("unit",)),  # what is kept of a cell's outputs, in memory
    ("tests/autograder/run/test_time_limits.py", ("unit",)),  # limits from a reference's times, in memory
    ("tests/autograder/test_records.py", ("unit",)),  # rows made and parsed, in memory
    ("tests/autograder/test_reasons.py", ("unit",)),  # kinds, phrases and verdicts, in memory
    ("tests/autograder/test_bench.py", ("unit",)),  # the benchmark's class, made in memory
    ("tests/autograder/test_runner.py", ("unit",)),  # a batch's first steps: nothing graded
    ("tests/autograder/run/test_reference_lock.py", ("unit",)),  # a lock file made here
    ("tests/autograder/judge/test_programs.py", ("exercises",)),  # the judge's layout points, answer by answer
    ("tests/autograder/", ("grader",)),
    ("tests/notebooks/test_validate.py", ("grader",)),  # nbgrader's Validator runs kernels
    ("tests/notebooks/test_validate_busy.py", ("grader",)),  # Validate's kernels beside CPU burners
    ("tests/tools/test_handin.py", ("grader",)),  # nbgrader's hand-in loop: release, collect, grade
    ("tests/namedaxes/exercises/", ("exercises",)),  # each exercise's matrices, and the one judge over them
    ("tests/tools/test_judged_table_observed.py", ("exercises",)),  # 01's observations, compiled as the judge does
    ("tests/namedaxes/test_pipeline.py", ("exercises",)),  # the pipelined step compiled on several meshes
    ("tests/namedaxes/test_tpu_cpu_parity.py", ("exercises",)),  # notebook 10's step compiled on the CPU
    ("tests/namedaxes/test_transformer_scanned.py", ("exercises",)),  # the scanned and remat steps compiled
    ("tests/notebooks/test_solved_notebooks.py", ("notebooks",)),  # every solved notebook, both editions
    ("tests/notebooks/test_run_order.py", ("notebooks",)),  # the course kernel started, restarted, run out of order
    ("tests/notebooks/test_deprecations.py", ("notebooks",)),  # kernels with make test-newest's IPython profile
    ("solutions/", ("notebooks",)),
    ("notebooks/", ("notebooks",)),
)
NEWEST = (
    "tests/tools/test_lock_requirements.py",
    "tests/namedaxes/exercises/test_multi_process.py",  # notebook 06's checks run in the two-process cluster
    "tests/namedaxes/multiprocess/test_compilation_cache.py",  # jax 0.12.1 hangs in the workers with a shared cache
    "tests/namedaxes/exercises/test_compiler_sharding.py",
    "tests/namedaxes/exercises/test_large_models.py",
    "tests/namedaxes/exercises/test_training_at_scale.py",
    "tests/namedaxes/exercises/test_step_anatomy.py",
    "tests/namedaxes/test_judging.py",  # the judge's compile options and shortcuts, on each JAX line
    "tests/namedaxes/judging/test_measured_trips.py",  # a loop counted by running its MLIR-rewritten variant
    "tests/namedaxes/checking/test_traced.py",  # the jaxpr's readings (a ppermute's axis order) on each line
    "tests/namedaxes/test_jax_line.py",  # the set-up's refusal of an old JAX and its pinned flags, on each line
    "tests/namedaxes/exercises/test_divergent_answers.py",  # answers whose fate a JAX line decides: one verdict
    "tests/namedaxes/test_pipeline.py",  # jax 0.10 and 0.12 partition the pipeline's saved activations differently
    "tests/notebooks/test_deprecations.py",  # the profile that fails a notebook on a deprecated API, on each line
    "solutions/",
    "notebooks/",
)


def _matches(relative: str, pattern: str) -> bool:
    if pattern.endswith(("/", "*")):
        return relative.startswith(pattern.rstrip("*"))
    return relative == pattern


def kinds_of(relative: str) -> tuple[str, ...]:
    """The markers of a test whose file is at `relative` (POSIX, from the repository root)."""
    kinds = next((k for pattern, k in KINDS if _matches(relative, pattern)), ("unit",))
    if any(_matches(relative, pattern) for pattern in NEWEST):
        kinds += ("newest",)
    return kinds


def pytest_ignore_collect(collection_path, config):
    """`-m newest` alone (make test-newest) does not even import the other test files and folders:
    the newest venv need only run what it runs, and collects in seconds."""
    if config.getoption("markexpr", "") != "newest":
        return None
    try:
        relative = Path(str(collection_path)).resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return None
    if collection_path.is_dir():
        inside = f"{relative}/" if relative != "." else ""
        return None if any(p.startswith(inside) or inside.startswith(p) for p in NEWEST) else True
    if relative.endswith((".py", ".ipynb")) and Path(relative).name not in ("conftest.py", "__init__.py"):
        return None if any(_matches(relative, p) for p in NEWEST) else True
    return None


def pytest_collection_modifyitems(config, items):
    for item in items:
        try:
            relative = Path(str(item.path)).resolve().relative_to(ROOT).as_posix()
        except ValueError:  # a test file outside the repository (pytest's own tests of a plugin)
            continue
        for kind in kinds_of(relative):
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
        report.longrepr = (
            f"{item.name}: this cell is tagged 'raises-exception' but ran without an error.\n"
            f"In notebooks/ that means a test passed on an unanswered notebook, or a cell\n"
            f"that uses an unanswered exercise did not fail.\n--- cell ---\n{item.cell.source}"
        )


# ---------------------------------------------------------------- one compile cache per test run
# (the module docstring, tools/compile_cache.py): the controller, or a run without workers, makes it; the
# workers and every kernel inherit it. JAX read its settings when tests/conftest.py imported it, so this
# process is told again.
_compile_cache = contextlib.ExitStack()


def pytest_configure(config):
    _compile_cache.enter_context(compile_cache.shared("namedaxes-tests-jax-cache-"))
    config.addinivalue_line("filterwarnings", f"ignore:{compile_cache.HALF_WRITTEN}:UserWarning")
    if "jax" in sys.modules:  # imported before this hook ran (tests/conftest.py): set it in this process too
        compile_cache.configure_loaded_jax()


def pytest_unconfigure(config):
    _compile_cache.close()
