"""One hand-in's files: its feedback page(s) and its executed (autograded) notebook.

Every page the grader writes goes through here: the workers' (a graded or unreadable notebook), the
pool's (a notebook that was not run: no reference, a spent budget, a worker lost twice) and the
pipeline's (a notebook not handed in). Threat model: the executed notebook is the student's code and
whatever their kernel printed; formgrader renders it in the instructor's browser, so it is made inert
(`inert.make_inert`) before it is written, and the feedback page is built by `feedback.FeedbackWriter`
(nothing a student wrote is active content). A page that cannot be built with the notebook is built
without it: the verdict, rather than no page.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ..records import Batch, Row, Status

__all__ = ["FeedbackPages", "write_page"]


def write_page(paths: Iterable[str | Path], page: str) -> None:
    """The same page at each path (folders made)."""
    for p in paths:
        p = Path(p)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(page, encoding="utf-8")


class FeedbackPages:
    """Feedback pages, with one `FeedbackWriter` made on first use (nbconvert's exporter is slow to make)."""

    def __init__(self) -> None:
        self._writer = None

    @property
    def writer(self):
        if self._writer is None:
            from .feedback import FeedbackWriter

            self._writer = FeedbackWriter()
        return self._writer

    def write(self, paths: Iterable[str | Path], assignment: str, row: Row, graded=None) -> None:
        """The page of `row` (with the executed notebook `graded` where there is one) at each path."""
        paths = list(paths)
        if not paths:
            return
        try:
            page = self.writer.html(graded, assignment, row, row.cells)
        except Exception:  # the verdict without the notebook, rather than no page
            if graded is None:
                raise
            page = self.writer.html(None, assignment, row, row.cells)
        write_page(paths, page)

    def hand_in(self, row: Row, graded, source, notebook_path: str = "", pages: Iterable[str | Path] = ()) -> None:
        """A graded hand-in's files: the executed notebook `graded` (None: none was run), made inert
        (`source`: the edition its prose came from), at `notebook_path` (""; none), and its feedback page
        at each of `pages`."""
        if graded is not None:
            from .inert import make_inert

            graded = make_inert(graded, source)
        if notebook_path and graded is not None:
            import nbformat

            path = Path(notebook_path)
            path.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(graded, str(path))
        self.write(pages, row.assignment, row, graded)

    def write_missing(self, batch: Batch, rows: Iterable[Row]) -> None:
        """The grader's page of each notebook not handed in (status `missing`), when pages are wanted."""
        if not batch.opts.feedback:
            return
        for row in rows:
            if row.status == Status.MISSING:
                self.write([batch.feedback_page(row.student, row.assignment)], row.assignment, row)
