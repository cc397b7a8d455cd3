"""What a run records is data: cell labels, deaths, time-outs are phrases, said only when publishing."""

from __future__ import annotations

from nbformat import v4 as nbv4

from autograder.course.notebooks import build_graded
from autograder.judge.score import error_text
from autograder.publish.words import say
from autograder.reasons import Kind, Phrase, phrase
from autograder.records import CellOutcome, RunResult
from autograder.run.cell_endings import append_error_output, cell_label, death_reason, mark_rest


def _notebook():
    graded = {
        "grade": True,
        "grade_id": "axis_sum",
        "points": 1,
        "solution": False,
        "locked": True,
        "schema_version": 3,
    }
    return nbv4.new_notebook(
        cells=[
            nbv4.new_code_cell("x = 1", metadata={"nbgrader": graded}),
            nbv4.new_code_cell("y = 2", metadata={"autograder": {"student_added": True}}),
            nbv4.new_code_cell("z = 3"),
        ]
    )


def test_a_cell_is_named_by_a_phrase():
    nb = _notebook()
    labels = [cell_label(nb, i) for i in range(3)]
    assert all(isinstance(label, Phrase) for label in labels)
    assert labels[0] == phrase("cell_grade_id", grade_id="axis_sum")
    assert labels[1] == phrase("cell_added", index=1, n=1)
    assert say(labels[1], "en") == "the cell you added after cell 1 (#1 of your added cells)"
    assert say(labels[2], "en") == f"cell '{nb.cells[2].id}'"


def test_why_a_kernel_died_is_a_phrase_and_reads_as_before():
    assert death_reason(None) == ""
    assert death_reason(-11) == phrase("died_segv") and death_reason(3) == phrase("died_exit", code=3)
    assert death_reason(-10) == phrase("died_signal", signal="SIGUSR1")
    assert (
        say(phrase("this_cell_died", why=death_reason(-11)), "en") == "the kernel died in this cell: segmentation fault"
    )
    assert say(phrase("this_cell_died", why=death_reason(None)), "en") == "the kernel died in this cell"


def test_a_cell_the_grader_ended_keeps_its_phrase_and_its_reason_reads_as_before():
    outcome = CellOutcome(
        "timeout", "TimeoutError", phrase("this_cell_interrupted", how=phrase("ran_longer", seconds=5.0))
    )
    assert say(error_text(outcome.ename, outcome.evalue), "en") == (
        "TimeoutError: this cell ran longer than 5 s and was interrupted"
    )
    assert say(error_text("ValueError", "bad {0}"), "en") == "ValueError: bad {0}"  # the kernel's words: literal
    result = RunResult()
    mark_rest(result, [4, 5], phrase("too_many_restarts"))
    assert {o.evalue.kind for o in result.outcomes.values()} == {Kind.NOT_RUN_BECAUSE}
    assert say(error_text("NotRun", result.outcomes[4].evalue), "en") == "NotRun: not run: too many kernel restarts"


def test_the_graded_notebook_shows_the_words_in_the_current_language():
    from autograder.messages import speaking

    cell = nbv4.new_code_cell("while True: pass")
    outcome = CellOutcome("timeout", "TimeoutError", phrase("this_cell_hung", how=phrase("ran_longer", seconds=5.0)))
    with speaking("zh"):
        append_error_output(cell, outcome)
    shown = cell.outputs[-1]
    assert shown.ename == "TimeoutError" and shown.evalue == say(outcome.evalue, "zh") != say(outcome.evalue, "en")
    assert shown.traceback == [f"TimeoutError: {shown.evalue}"]


def test_a_kernel_that_never_starts_gives_an_error_row(source, tmp_path):
    from autograder.course.notebooks import MergeReport
    from autograder.judge.score import submission_status
    from autograder.publish.words import say
    from autograder.reasons import Kind
    from autograder.run.executor import NotebookLimits, run_notebook
    from autograder.run.kernel import Kernel
    from autograder.sandbox.launch import Sandbox

    sandbox = Sandbox(isolate=False, python=str(tmp_path / "no-such-python"))
    graded, _ = build_graded(source, None)
    made = []

    def new_kernel(n):
        made.append(n)
        return Kernel(tmp_path / "work", sandbox, label=f"k{n}").start()

    run = run_notebook(graded, {}, None, new_kernel, NotebookLimits(5, start_timeout=20))
    assert made == [0, 1]  # one retry, then give up
    assert run.start_error and all(o.status == "not_run" for o in run.outcomes.values())
    status, reason = submission_status(run, MergeReport(), [], str(tmp_path))
    assert status == "error" and reason.kind is Kind.KERNEL_NOT_STARTED  # data; the words come at publishing
    assert say(reason, "en").startswith("the kernel did not start")


def test_a_kernel_that_floods_its_log_and_dies_gives_a_bounded_start_error(source, tmp_path):
    """The log is the kernel's to write: only its tail is read, and the reason quoting it is capped."""
    from autograder.limits import KERNEL_LOG_TAIL_BYTES, START_ERROR_CHARS
    from autograder.run.executor import NotebookLimits, run_notebook
    from autograder.run.kernel import Kernel
    from autograder.sandbox.launch import Sandbox

    flood = tmp_path / "flood"
    flood.write_text("#!/bin/sh\nhead -c 20000000 /dev/zero | tr '\\0' x >&2\nexit 3\n")
    flood.chmod(0o755)
    sandbox = Sandbox(isolate=False, python=str(flood))
    graded, _ = build_graded(source, None)
    kernels = []

    def new_kernel(n):
        kernels.append(Kernel(tmp_path / "work", sandbox, label=f"k{n}"))
        return kernels[-1].start()

    run = run_notebook(graded, {}, None, new_kernel, NotebookLimits(5, start_timeout=20))
    assert kernels and kernels[-1].log_path.stat().st_size >= 20_000_000, "the flood reached the log"
    assert "exit code 3" in run.start_error and len(run.start_error) <= START_ERROR_CHARS
    assert run.start_error.endswith("…") and "x" * 100 in run.start_error
    assert len(kernels[-1].log_tail()) == KERNEL_LOG_TAIL_BYTES


def _test_cell(gid: str, visible: str, hidden: str):
    meta = {"grade": True, "grade_id": gid, "points": 1, "solution": False, "locked": True, "schema_version": 3}
    source = f"{visible}\n### BEGIN HIDDEN TESTS\n{hidden}\n### END HIDDEN TESTS"
    return nbv4.new_code_cell(source, metadata={"nbgrader": meta})


def test_a_failed_visible_check_still_records_for_the_judge_and_that_pass_costs_nothing(tmp_path):
    """The FINDING pass (issue 39): the hidden part of a test cell whose visible check failed runs after every
    other hidden part, in the namespace the visible part left; its observations are harvested for the judge's
    finding, the cell keeps its failed outcome, and a hidden part that never ends there stops the pass with no
    event and no cell marked, while every other cell keeps what it earned."""
    import json
    import sys

    from autograder.run.executor import NotebookLimits, run_notebook
    from autograder.run.kernel import Kernel
    from autograder.sandbox.launch import Sandbox

    nb = nbv4.new_notebook(
        cells=[
            nbv4.new_code_cell("from namedaxes.grading import record\nanswer = 41"),
            _test_cell("wrong", 'assert answer == 42, "the visible check failed"', 'record("wrong", {"seen": answer})'),
            _test_cell(
                "unwritten",
                "class NotAttempted(Exception):\n    pass\nraise NotAttempted('not written yet')",
                'record("unwritten", {"seen": 1})',
            ),
            _test_cell("right", "answer = answer + 1", 'record("right", {"seen": answer})'),
            _test_cell("stuck", "assert False", 'record("stuck", {"seen": 0})\nwhile True:\n    pass'),
            _test_cell("after", "x = 1", 'record("after", {"seen": x})'),
        ]
    )
    tests = {1: "wrong", 2: "unwritten", 3: "right", 4: "stuck", 5: "after"}
    sandbox = Sandbox(isolate=False, python=sys.executable)
    run = run_notebook(
        nb,
        tests,
        None,
        lambda n: Kernel(tmp_path / "w", sandbox, label=f"k{n}").start(),
        NotebookLimits(3, start_timeout=60),
    )
    assert [run.outcomes[i].status for i in (1, 2, 3, 4, 5)] == ["error", "error", "ok", "error", "ok"]
    assert "the visible check failed" in str(run.outcomes[1].evalue)  # what the student saw, kept
    assert run.outcomes[2].ename == "NotAttempted"
    # "stuck" never finished its hidden part; "unwritten" (not started) had nothing for the judge: not run again
    assert set(run.observations) == {"wrong", "right", "after"}
    seen = {gid: json.loads(values)["seen"] for gid, (_, values) in run.observations.items()}
    assert seen == {"wrong": 41, "right": 42, "after": 1}  # "wrong": the namespace its visible part left
    assert run.events == [] and run.restarts == 0
    assert "findings" in run.stages
