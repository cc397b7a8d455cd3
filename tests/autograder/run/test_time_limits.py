"""Time limits that follow the reference's own run (autograder.run.time_limits), and the reference run that
is retried before its assignment is refused (run/batch.py): in memory, no worker or kernel started.

A busy machine must never fail a grade: a cell gets `multiple` times the reference's slowest cell on this
machine, never below the floor (`--timeout`); the instructor's override raises the floor, `--timeout-multiple
0` fixes the limits; a reference that ran out of time runs once more with a longer limit, and one that
failed on its own error does not."""

from __future__ import annotations

import json
import types
from pathlib import Path

import pytest

from autograder.limits import CELL_TIME_MULTIPLE, CELL_TIMEOUT, NOTEBOOK_BUDGET, REFERENCE_RETRY_FACTOR
from autograder.records import BatchResults, CellOutcome, Options, ReferenceRun, ReferenceTimes, Task
from autograder.run import batch as run_batch
from autograder.run.time_limits import retry_timeout, slowest, time_limits, worth_retrying

REPO = Path(__file__).resolve().parents[3]


# ---------------------------------------------------------------- the limits
def test_a_quick_reference_leaves_the_floors():
    limits = time_limits(ReferenceTimes(slowest_cell=2.0, whole=20.0), CELL_TIMEOUT, NOTEBOOK_BUDGET)
    assert (limits.cell, limits.notebook) == (CELL_TIMEOUT, NOTEBOOK_BUDGET)


def test_a_slow_reference_raises_them_by_the_multiple():
    times = ReferenceTimes(slowest_cell=31.5, whole=90.0)
    limits = time_limits(times, CELL_TIMEOUT, NOTEBOOK_BUDGET, multiple=5.0)
    assert limits.cell == 158 and limits.notebook == 450  # whole seconds, rounded up
    assert "5x the reference's slowest cell, 31.5 s" in limits.describe()
    assert CELL_TIME_MULTIPLE >= 3  # generous: a student's cell may be slower than the solution's


def test_a_notebook_budget_is_never_below_its_cell_limit():
    limits = time_limits(ReferenceTimes(slowest_cell=100.0, whole=101.0), 30.0, 60.0, multiple=5.0)
    assert limits.cell == 500.0 and limits.notebook == 505.0
    assert time_limits(ReferenceTimes(100.0, 100.0), 30.0, 60.0, multiple=1.0).notebook == 100.0


def test_the_instructors_override_raises_the_floor():
    times = ReferenceTimes(slowest_cell=10.0, whole=40.0)
    assert time_limits(times, 120.0, NOTEBOOK_BUDGET).cell == 120.0  # CELL_TIMEOUT=120: 5 x 10 s is less
    assert time_limits(times, 20.0, NOTEBOOK_BUDGET).cell == 50.0


def test_multiple_zero_or_no_recorded_times_give_the_floors_exactly():
    times = ReferenceTimes(slowest_cell=100.0, whole=400.0)
    fixed = time_limits(times, 45.0, 200.0, multiple=0.0)
    assert (fixed.cell, fixed.notebook, fixed.times) == (45.0, 200.0, None)
    assert "fixed limits" in fixed.describe()
    assert (time_limits(None, 45.0, 200.0).cell, time_limits(None, 45.0, 200.0).notebook) == (45.0, 200.0)


def test_the_command_line_default_is_the_table_and_the_override_passes_through():
    import argparse

    from autograder.__main__ import _grade_parser, _options

    parser = argparse.ArgumentParser()
    _grade_parser(parser.add_subparsers(dest="command"))
    opts = _options(parser, parser.parse_args(["grade"]))
    assert (opts.timeout, opts.timeout_multiple) == (CELL_TIMEOUT, CELL_TIME_MULTIPLE)
    opts = _options(parser, parser.parse_args(["grade", "--cell-timeout", "90", "--timeout-multiple", "0"]))
    assert (opts.timeout, opts.timeout_multiple) == (90.0, 0.0)
    with pytest.raises(SystemExit):
        _options(parser, parser.parse_args(["grade", "--timeout-multiple", "-1"]))


def test_make_grade_passes_cell_timeout_to_the_grader():
    import subprocess

    cmd = subprocess.run(
        ["make", "-n", "grade", "CELL_TIMEOUT=90", "TIMEOUT_MULTIPLE=3"], cwd=REPO, capture_output=True, text=True
    )
    # the grader's command line (under `make test`, make also prints the folders it enters and leaves)
    last = next(line for line in cmd.stdout.splitlines() if "tools.handin" in line and " grade " in line)
    assert '--cell-timeout="90"' in last and '--timeout-multiple="3"' in last, cmd.stdout
    helped = subprocess.run(["make", "help"], cwd=REPO, capture_output=True, text=True).stdout
    assert "CELL_TIMEOUT=s" in helped


def test_the_slowest_cell_and_what_is_worth_a_retry():
    outcomes = {1: CellOutcome("ok", seconds=0.5), 4: CellOutcome("ok", seconds=31.0), 6: CellOutcome("ok")}
    assert slowest(outcomes) == 31.0 and slowest({}) == 0.0
    assert worth_retrying(["ok", "timeout"], "") and worth_retrying(["ok", "died"], "")
    assert worth_retrying([], "the kernel did not start in 90 s")
    assert not worth_retrying(["ok", "error"], "")  # the solution's own error: a second run changes nothing
    assert retry_timeout(30.0) == REFERENCE_RETRY_FACTOR * 30.0 > 30.0


def test_recorded_times_are_read_only_when_they_are_numbers():
    assert ReferenceTimes.from_json({"slowest_cell": 3.25, "whole": 40}) == ReferenceTimes(3.25, 40.0)
    for bad in (None, [], {"whole": 3}, {"slowest_cell": "x", "whole": 1}, {"slowest_cell": float("nan"), "whole": 1}):
        assert ReferenceTimes.from_json(bad) is None, bad


def test_the_times_travel_in_the_authenticated_cache(tmp_path):
    from autograder.course.notebooks import SourceNotebook
    from autograder.run.references import load_references, save_references

    source = SourceNotebook.load("02_scaled_sum", REPO / "solutions" / "02_scaled_sum.ipynb")
    obs = {gid: (None, json.dumps({"axes": ["devices"]}).encode()) for gid in source.test_ids()}
    folder = tmp_path / "cache" / "02_scaled_sum-abc"
    save_references(folder, source, obs, ReferenceTimes(4.5, 12.0))
    assert load_references(folder, source).times == ReferenceTimes(4.5, 12.0)
    meta = json.loads((folder / "meta.json").read_text())
    meta["times"]["slowest_cell"] = 0.001  # a shorter limit for everyone: not authentic any more
    (folder / "meta.json").write_text(json.dumps(meta))
    from autograder.run.references import ReferenceCacheError

    with pytest.raises(ReferenceCacheError, match="not authentic"):
        load_references(folder, source)


# ---------------------------------------------------------------- the retried reference
class _Lock:
    released = False

    def release(self):
        self.released = True


def _grading(aid: str) -> tuple[run_batch._Grading, list, _Lock]:
    """A batch's grading loop with no pool or worker: what it submits is collected."""
    submitted: list = []
    lock = _Lock()
    g = object.__new__(run_batch._Grading)
    g.batch = types.SimpleNamespace(opts=Options(course=Path("."), timeout=30.0))
    g.results = BatchResults()
    g.locks = {aid: lock}
    g.sources = {aid: None}
    g.waiting = {}
    g.limits = g.results.time_limits
    g.caches = types.SimpleNamespace(ref_dirs={aid: Path("/nonexistent")}, xla_dirs={aid: Path("/nonexistent")})
    g.pool = types.SimpleNamespace(submit=lambda task, front=False: submitted.append((task, front)))
    return g, submitted, lock


def _timed_out(aid: str, retry: bool = True) -> ReferenceRun:
    return ReferenceRun(aid, ["cell 12 (measure): timeout: ran longer than 30 s"], {}, 41.0, retry=retry)


def test_a_reference_that_ran_out_of_time_runs_again_with_a_longer_limit():
    aid = "10_training_at_scale"
    g, submitted, lock = _grading(aid)
    task = Task(0, "reference", aid, cell_timeout=30.0)
    g.reference_done(task, _timed_out(aid))
    assert submitted == [(task, True)] and task.cell_timeout == REFERENCE_RETRY_FACTOR * 30.0
    assert not lock.released and aid in g.locks  # another run must not take the half-made reference
    assert aid not in g.results.ref_problems
    said = g.results.ref_retried[aid]
    assert "failed with 30 s per cell" in said and "measure" in said and "ran again with 120 s per cell" in said
    # the second run fails too: now the assignment is refused, once, and the lock goes
    g.reference_done(task, _timed_out(aid))
    assert len(submitted) == 1 and lock.released
    assert g.results.ref_problems[aid] == _timed_out(aid).problems


def test_a_reference_that_failed_on_its_own_error_is_refused_at_once():
    aid = "02_scaled_sum"
    g, submitted, lock = _grading(aid)
    g.reference_done(Task(0, "reference", aid, cell_timeout=30.0), _timed_out(aid, retry=False))
    assert submitted == [] and lock.released and aid in g.results.ref_problems and not g.results.ref_retried
