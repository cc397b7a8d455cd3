"""What a batch asks of the pool (autograder.run.batch): its tasks, each grading task's share of its student's
submission budget, and what each finished or lost task gives. No worker is started: the pool is a list that
records what is submitted, and the batch's callbacks (`admit`, `settle`, `on_done`, `on_lost`) are called as the
pool calls them."""

from __future__ import annotations

import autograder_specs as specs
import pytest

from autograder.course.notebooks import SourceNotebook
from autograder.publish.outputs import Progress
from autograder.reasons import Kind, Phrase, phrase
from autograder.records import Batch, BatchResults, InternalError, Options, ReferenceRun, ReferenceTimes, Task
from autograder.run import batch as batch_module
from autograder.run.batch import _Caches, _grade_tasks, _Grading, _reference_tasks, run_all

A02 = specs.A02


class _Sandbox:
    """What the batch reads of a sandbox: whether kernels are isolated in a user namespace, and why no zygote."""

    isolate, userns = False, False

    def fork_why(self) -> str:
        return "not in this test"


class _Pool:
    """Records the tasks submitted, in the order the pool would take them."""

    def __init__(self):
        self.pending: list[Task] = []

    def submit(self, task: Task, front: bool = False) -> None:
        self.pending.insert(0, task) if front else self.pending.append(task)


class _Placed:
    def __init__(self, path: str, origin: str = "submitted/alice/02", late=None):
        self.path, self.origin, self.late = path, origin, late


@pytest.fixture(scope="module")
def sources() -> dict[str, SourceNotebook]:
    return {A02: SourceNotebook.load(A02, specs.REPO / "solutions" / f"{A02}.ipynb")}


def _batch(tmp_path, **opts) -> Batch:
    options = Options(course=tmp_path / "course", quiet=True, feedback=False, **opts)
    return Batch(
        opts=options,
        course=tmp_path / "course",
        out=tmp_path / "out",
        cache=tmp_path / "cache" / "references",
        xla_root=tmp_path / "cache" / "xla",
        submissions=None,
        autograded_root=tmp_path / "autograded",
        nbgrader_feedback_root=None,
        gradebooks=(),
        jobs=2,
        work_root=tmp_path / "work",
    )


def _grading(tmp_path, sources, monkeypatch, **opts) -> tuple[_Grading, _Pool, BatchResults]:
    monkeypatch.setattr(batch_module, "mpl_cache", lambda folder: None)  # no font cache is built for this
    batch = _batch(tmp_path, **opts)
    results = BatchResults()
    grading = _Grading(batch, sources, _Sandbox(), _Caches.of(batch, sources, _Sandbox()), {}, results)
    grading.pool, grading.progress = _Pool(), Progress(0, quiet=True)
    return grading, grading.pool, results


def _task(seq: int, student: str = "alice") -> Task:
    return Task(seq, "grade", A02, student, path=f"/x/{student}.ipynb", origin=f"{student}/{A02}")


def test_grading_tasks_are_numbered_after_the_references_and_name_every_page_they_write(tmp_path, sources):
    batch = _batch(tmp_path)
    caches = _Caches.of(batch, sources, _Sandbox())
    placed = [(("alice", A02), _Placed("/in/alice.ipynb")), (("bob", A02), _Placed("/in/bob.ipynb"))]
    tasks = _grade_tasks(batch, sources, placed, caches, seq=3)[A02]
    assert [(t.seq, t.student, t.kind) for t in tasks] == [(3, "alice", "grade"), (4, "bob", "grade")]
    alice = tasks[0]
    assert alice.path == "/in/alice.ipynb" and alice.ref_dir == str(caches.ref_dirs[A02])
    assert alice.feedback_paths == (str(batch.feedback_page("alice", A02)),)
    assert alice.autograded_path == str(batch.autograded_root / "alice" / A02 / sources[A02].file_name)
    assert alice.budget == batch.opts.notebook_budget
    course_mode = Batch(**{**batch.__dict__, "nbgrader_feedback_root": tmp_path / "feedback"})
    both = _grade_tasks(course_mode, sources, placed[:1], caches, seq=0)[A02][0].feedback_paths
    assert both[1] == str(tmp_path / "feedback" / "alice" / A02 / f"{sources[A02].notebook_name}.html")


def test_a_reference_task_has_the_reference_budget_and_the_cell_floor(tmp_path, sources):
    batch = _batch(tmp_path, timeout=7.0, notebook_budget=5.0)
    (task,) = _reference_tasks([A02], _Caches.of(batch, sources, _Sandbox()), batch.opts)
    assert (task.kind, task.assignment, task.cell_timeout, task.xla_dir) == ("reference", A02, 7.0, "")
    assert task.budget >= batch_module.REFERENCE_BUDGET  # not held to the students' budget


def test_the_caches_of_an_assignment_are_named_by_its_reference_key(tmp_path, sources):
    batch = _batch(tmp_path)
    caches = _Caches.of(batch, sources, _Sandbox())
    assert caches.ref_dirs[A02].parent == batch.cache and caches.xla_dirs[A02].parent == batch.xla_root
    assert caches.ref_dirs[A02].name == caches.xla_dirs[A02].name and caches.ref_dirs[A02].name.startswith(A02)
    assert not caches.use_xla and not caches.xla_ready(A02)  # offered only to kernels isolated as another user
    assert not caches.cached(A02, sources[A02]) and caches.times(A02, sources[A02]) is None


def test_a_batch_with_nothing_to_grade_starts_no_pool(tmp_path, sources, monkeypatch):
    class _Nothing:
        placed: dict = {}

    monkeypatch.setattr(batch_module, "_lock_references", lambda *a: {})
    monkeypatch.setattr(batch_module, "_Grading", None)  # would fail if it were made
    batch = _batch(tmp_path)
    (tmp_path / "work").mkdir()
    assert run_all(batch, sources, _Nothing(), _Sandbox()) == BatchResults()


def test_a_notebook_gets_what_is_left_of_its_students_submission_budget(tmp_path, sources, monkeypatch):
    grading, pool, results = _grading(tmp_path, sources, monkeypatch, notebook_budget=60.0, submission_budget=100.0)
    grading.waiting = {A02: [_task(1), _task(2), _task(3), _task(4, "bob")]}
    grading.release(A02)  # no reference times cached: the floors
    assert [t.seq for t in pool.pending] == [1, 2, 3, 4] and grading.limits[A02].notebook == 60.0
    first, second, third, bob = pool.pending
    assert grading.admit(first) == "send" and (first.budget, first.budget_of_submission) == (60.0, 0.0)
    assert grading.admit(second) == "defer"  # 40 s left while the first runs: it waits for its sibling
    assert grading.admit(bob) == "send" and bob.budget == 60.0  # another student's budget is their own
    grading.settle(first, 30.0)  # it took 30 s of its 60
    assert grading.admit(second) == "send" and second.budget == 60.0  # 70 s left
    grading.settle(second, 75.0)  # a notebook is charged at most its budget: 30 + 60 spent
    assert grading.admit(third) == "send" and (third.budget, third.budget_of_submission) == (10.0, 100.0)
    assert grading.admit(third) == "send" and third.budget == 10.0  # sent again (its worker was lost): the same
    grading.settle(third, 10.0)
    assert grading.admit(_task(5)) == "drop"  # nothing left: a notebook is answered, not run
    (row,) = results.rows
    assert (row.student, row.status, row.score) == ("alice", "timeout", 0.0)
    assert isinstance(row.reason, Phrase) and row.reason.kind is Kind.BUDGET_SPENT_ELSEWHERE
    assert {c.reason.kind for c in row.cells} == {Kind.BUDGET_USED_UP}


def test_a_reference_is_never_held_to_a_students_budget(tmp_path, sources, monkeypatch):
    grading, _, _ = _grading(tmp_path, sources, monkeypatch)
    assert grading.admit(Task(0, "reference", A02)) == "send"


def test_a_task_lost_twice_is_an_error_row_and_an_internal_error(tmp_path, sources, monkeypatch):
    grading, _, results = _grading(tmp_path, sources, monkeypatch)
    lost = _task(1)
    grading.on_lost(lost, phrase("worker_died"))
    (row,) = results.rows
    assert row.status == "error" and row.reason.kind is Kind.LOST_TWICE
    assert results.internal and results.internal[0].startswith(f"alice / {A02}: ") and "(twice)" in results.internal[0]
    grading.on_done(_task(2, "bob"), InternalError("Traceback ..."))
    assert results.rows[-1].status == "error" and results.rows[-1].reason.kind is Kind.INTERNAL_ERROR
    assert results.internal[-1] == f"bob / {A02}:\nTraceback ..."


def test_a_broken_reference_answers_its_assignments_notebooks_without_running_them(tmp_path, sources, monkeypatch):
    grading, pool, results = _grading(tmp_path, sources, monkeypatch)
    grading.waiting = {A02: [_task(1), _task(2, "bob")]}
    ref = Task(0, "reference", A02, cell_timeout=10.0)
    grading.on_done(ref, ReferenceRun(A02, ["cell 3 raised"], {}, 1.0))
    assert results.ref_problems == {A02: ["cell 3 raised"]} and pool.pending == []
    assert [(r.student, r.status, r.reason.kind) for r in results.rows] == [
        ("alice", "error", Kind.NO_REFERENCE),
        ("bob", "error", Kind.NO_REFERENCE),
    ]


def test_a_reference_that_ran_out_of_time_runs_once_more_first_in_line(tmp_path, sources, monkeypatch):
    grading, pool, results = _grading(tmp_path, sources, monkeypatch)
    grading.waiting = {A02: [_task(1)]}
    pool.submit(_task(9, "carol"))
    ref = Task(0, "reference", A02, cell_timeout=10.0)
    grading.on_done(ref, ReferenceRun(A02, ["cell 3 ran out of time"], {}, 12.0, retry=True))
    assert pool.pending[0] is ref and ref.cell_timeout > 10.0 and A02 in results.ref_retried
    assert "ran again with" in results.ref_retried[A02] and not results.ref_problems
    grading.on_done(ref, ReferenceRun(A02, ["cell 3 ran out of time"], {}, 12.0, retry=True))  # never a third run
    assert results.ref_problems == {A02: ["cell 3 ran out of time"]} and results.rows[0].status == "error"


def test_a_clean_reference_publishes_its_observations_and_releases_its_notebooks(tmp_path, sources, monkeypatch):
    grading, pool, results = _grading(tmp_path, sources, monkeypatch, timeout=5.0, timeout_multiple=3.0)
    saved = []
    monkeypatch.setattr(batch_module, "save_references", lambda *a: saved.append(a))
    grading.waiting = {A02: [_task(1)]}
    times = ReferenceTimes(slowest_cell=4.0, whole=30.0)
    grading.on_done(Task(0, "reference", A02), ReferenceRun(A02, [], {"c": (b"r", None)}, 31.0, times))
    assert saved and saved[0][2] == {"c": (b"r", None)} and results.ref_seconds == {A02: 31.0}
    (task,) = pool.pending
    assert (task.cell_timeout, task.budget) == (12.0, max(90.0, grading.notebook_budget))  # 3x its times
    assert grading.limits[A02].times == times
