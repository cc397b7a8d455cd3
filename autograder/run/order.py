"""Which pending task a free worker takes next: the longest expected first.

A batch is done when its last notebook is, so the order decides how long one worker idles at the
end while the other finishes (the makespan). Handing out the longest tasks first and the shortest
last (the "longest processing time first" rule) keeps that tail to about one short notebook
instead of one long one, whatever order the assignments were discovered or their references
finished in.

What a notebook will take is not known before it runs; the estimate for an assignment is:

- the mean wall time of its notebooks graded so far in this run, once there is one;
- before that, the size of its source notebook's code (characters of its code cells) converted
  to seconds at the rate the assignments already measured show (one second per 1000 characters
  while none is measured). Notebook 03 has about twice the code of 01 and takes about twice as
  long, so the order is right from the first task on.

Reference runs come first (an assignment's grading waits for its reference), and a task retried
after its worker was lost keeps the place `Pool.submit(front=True)` gave it. Only the order
changes: which tasks run, their budgets and their results do not.
"""

from __future__ import annotations

import collections

from ..course.notebooks import SourceNotebook
from ..records import Task

__all__ = ["LongestFirst"]

DEFAULT_RATE = 1e-3  # seconds per character of code, until some assignment has been measured


def code_size(source: SourceNotebook) -> int:
    """Characters of code in the source notebook (its code cells, tests included)."""
    return sum(len(c.source) for c in source.nb.cells if c.cell_type == "code")


class LongestFirst:
    """`rank(task)`: the pool hands out the lowest rank first (references, then the longest expected
    grading task); `finished(task, seconds)` refines the estimate of that task's assignment."""

    def __init__(self, sources: dict[str, SourceNotebook]):
        self.size = {aid: max(1, code_size(s)) for aid, s in sources.items()}
        self.total: dict[str, float] = collections.defaultdict(float)
        self.count: dict[str, int] = collections.defaultdict(int)

    def finished(self, task: Task, seconds: float | None) -> None:
        if task.kind == "grade" and seconds is not None and seconds > 0:
            self.total[task.assignment] += seconds
            self.count[task.assignment] += 1

    def expected(self, assignment: str) -> float:
        """Seconds one notebook of `assignment` is expected to take."""
        if self.count[assignment]:
            return self.total[assignment] / self.count[assignment]
        measured = [a for a in self.count if self.count[a]]
        chars = sum(self.size.get(a, 1) for a in measured)
        rate = sum(self.total[a] / self.count[a] for a in measured) / chars if measured else DEFAULT_RATE
        return self.size.get(assignment, 1) * rate

    def rank(self, task: Task) -> tuple[int, float]:
        if task.kind == "reference":
            return (0, 0.0)
        return (1, -self.expected(task.assignment))
