"""The publish step of a batch (`runner.grade`): every file of the class, and what is printed at the end.

In order: the pages of notebooks not handed in (pages.py), grades.csv, results.json and timings.json
(outputs.py, with the rows a --student/--assignment run keeps from the previous results.json), the
similarity report (similarity.py; every student of an assignment, the others' sections kept), the class
report (report.py), nbgrader's gradebook(s) (gradebook.py), the summary. Whatever fails after grades.csv is
written is reported as an internal grader error (the batch's `internal` list), never raised: grades.csv and
results.json are written whenever the batch ran to its end, and a report or a gradebook that cannot be
written does not take them down. Nothing here decides a score.
"""

from __future__ import annotations

import sys

from ..records import Graded
from ..sandbox.protections import as_json
from .outputs import merge_previous, merge_previous_notes, reference_notes, summary, write_outputs
from .pages import FeedbackPages

__all__ = ["publish", "print_problems"]


def publish(graded: Graded) -> None:
    """Write every file of the batch; failures after grades.csv go to its results' `internal`."""
    batch, results = graded.batch, graded.results
    FeedbackPages().write_missing(batch, results.rows)
    all_rows = merge_previous(batch.out, results.rows, batch.opts, graded.intake)
    notes = reference_notes(results)
    protections = as_json(graded.sandbox.protections()) if graded.sandbox is not None else None
    write_outputs(batch.out, all_rows, results.rows, protections, merge_previous_notes(batch.out, notes, batch.opts))
    if batch.every_student:  # pairs need the class; other assignments' sections are kept (similarity.py)
        try:
            from .similarity import write_similarity

            write_similarity(batch.out, graded.sources, graded.intake)
        except Exception as err:  # noqa: BLE001 - it reports, it never decides a score
            results.internal.append(f"writing the similarity report {batch.out / 'similarity.html'} failed: {err}")
    try:
        from .report import write_report

        write_report(batch.out, course=batch.course)  # the course names the report and its exercises
    except Exception as err:  # noqa: BLE001 - grades.csv is written; say why the report is not
        results.internal.append(f"writing the class report {batch.out / 'report.html'} failed: {err}")
    if batch.opts.gradebook:
        write_gradebooks(graded)
    if graded.sandbox is not None:
        summary(graded, notes)


def write_gradebooks(graded: Graded) -> None:
    """The scores into each of the batch's gradebooks (course mode: nbgrader's submission timestamps too,
    as formgrader shows a submission as graded only when they match)."""
    from .gradebook import write_gradebook

    results = graded.results
    for url, submitted in graded.batch.gradebooks:
        try:
            write_gradebook(url, graded.sources, results.rows, submitted, graded.policy)
        except Exception as err:  # noqa: BLE001
            results.internal.append(f"writing the gradebook {url} failed: {err}")


def print_problems(graded: Graded) -> None:
    """The instructor's report on stderr: reference solutions that do not run cleanly, internal errors."""
    sources, results = graded.sources, graded.results
    for aid, problems in sorted(results.ref_problems.items()):
        sys.stderr.write(
            f"\nautograder: error: the reference solution of {aid} ({sources[aid].path}) "
            f"does not run cleanly; its rows have status 'error'. Fix it first:\n  - " + "\n  - ".join(problems) + "\n"
        )
    if results.internal:
        sys.stderr.write("\nINTERNAL GRADER ERRORS (affected rows have status 'error'):\n")
        for msg in results.internal:
            sys.stderr.write(msg.rstrip() + "\n")
