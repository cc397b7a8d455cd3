"""Repository-wide pytest hooks (the notebooks under nbval included).

nbval lets a cell tagged `raises-exception` pass whether or not it raised. In
the student notebooks those tags are set by the generation step on cells that
must fail while the exercises are unanswered, so here a tagged cell that ran
without an error *fails*: every test cell provably fails on an unanswered
notebook, and a demonstration that stopped raising is caught.
"""
import pytest


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
