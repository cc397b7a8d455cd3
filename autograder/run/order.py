"""Which pending task a free worker takes next: an assignment it has graded, then the longest expected.

Two rules, in this order, after the reference runs (an assignment's grading waits for its reference):

1. **Stay with an assignment.** A worker's scorer compiles an assignment's reference programs before it
   judges the first notebook of it (`judge.score.prepare_scorer`: 14 to 25 programs for notebooks 01-04,
   about 0.5 to 2.5 s of CPU each time, the stages `compile_reference` and `scorer_cpu` of timings.json),
   and keeps them for its later notebooks of that assignment. Two workers that both grade every
   assignment compile every assignment twice. So a free worker takes a notebook of an assignment it has
   graded; else one of an assignment no other worker has; else (only that is left) another worker's.
   On a 2-core machine grading is CPU-bound (every slot runs a kernel, or a scorer, all the time), so
   CPU not spent is wall time saved. Nothing is shared that was not before: each worker has its own
   scorer, as always, which judges recorded programs of many students one after the other; kernels are
   fresh per notebook.
2. **Longest first.** A batch is done when its last notebook is, so the order decides how long one worker
   idles at the end while the other finishes (the makespan). Handing out the longest tasks first and the
   shortest last (the "longest processing time first" rule) keeps that tail to about one short notebook
   instead of one long one, whatever order the assignments were discovered or their references
   finished in. Within rule 1's choice, the longest expected assignment goes first.

What a notebook will take is not known before it runs; the estimate for an assignment is:

- the mean wall time of its notebooks graded so far in this run, once there is one;
- before that, the size of its source notebook's code (characters of its code cells) converted
  to seconds at the rate the assignments already measured show (one second per 1000 characters
  while none is measured). Notebook 03 has about twice the code of 01 and takes about twice as
  long, so the order is right from the first task on.

Reference runs come first, and a task retried after its worker was lost keeps the place
`Pool.submit(front=True)` gave it. Only the order changes: which tasks run, their budgets and their
results do not.
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
    """`rank(task, here, elsewhere)`: the pool hands out the lowest rank first (references, then grading
    tasks of an assignment in `here`, those the free worker has graded, then of one in no other worker's
    `elsewhere`, then the rest; the longest expected first within each); `finished(task, seconds)` refines
    the estimate of that task's assignment."""

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

    def rank(self, task: Task, here: frozenset = frozenset(), elsewhere: frozenset = frozenset()) -> tuple:
        if task.kind == "reference":
            return (0, 0, 0.0)
        aid = task.assignment
        stay = 0 if aid in here else 1 if aid not in elsewhere else 2  # compiled here / nowhere / elsewhere only
        return (1, stay, -self.expected(aid))
