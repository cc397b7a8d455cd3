"""Which pending task a free worker takes next: the longest expected, counting a compile it would repeat.

After the reference runs (an assignment's grading waits for its reference), grading tasks go by two rules:

1. **Longest first.** A batch is done when its last notebook is, so the order decides how long one worker
   idles at the end while the other finishes (the makespan). Handing out the longest tasks first and the
   shortest last (the "longest processing time first" rule) keeps that tail to about one short notebook
   instead of one long one, whatever order the assignments were discovered or their references
   finished in.
2. **No compile twice without need.** A worker's scorer compiles an assignment's reference programs before
   it judges its first notebook of it (`judge.score.prepare_scorer`: 14 to 25 programs for notebooks
   01-04, about 0.5 to 2.5 s of CPU, the stages `compile_reference` and `scorer_cpu` of timings.json), and
   keeps them for its later notebooks of it. When two workers both take every assignment, each
   assignment is compiled twice. So a notebook of an assignment that another worker has graded and this
   one has not counts `STEAL_WEIGHT` of its expected time: a free worker rather starts an assignment no
   worker has yet (someone pays its compile anyway), unless the other worker's notebooks are more than
   twice as long (a long notebook is not left for the end). Among equals, an assignment it has graded
   goes first. On a 2-core machine grading is CPU-bound (a whole-tree sample of /proc found a runnable
   process in every slot 96-98 % of the time, cold or warm), so CPU not spent is wall time saved.
   Nothing is shared that was not before: each worker has its own scorer, as always, which judges the
   recorded programs of many students one after another; kernels are fresh per notebook.

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
STEAL_WEIGHT = 0.5  # what a notebook counts when only another worker has its assignment's programs compiled


def code_size(source: SourceNotebook) -> int:
    """Characters of code in the source notebook (its code cells, tests included)."""
    return sum(len(c.source) for c in source.nb.cells if c.cell_type == "code")


class LongestFirst:
    """`rank(task, here, elsewhere)`: the pool hands out the lowest rank first: references, then grading
    tasks by expected time, longest first, a task whose assignment only other workers have graded
    (`elsewhere`, not `here`: the free worker's) counted at `STEAL_WEIGHT`, ties to the assignments in
    `here`. `finished(task, seconds)` refines the estimate of that task's assignment."""

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
        weight = STEAL_WEIGHT if aid in elsewhere and aid not in here else 1.0  # its compile would be a second
        return (1, -weight * self.expected(aid), aid not in here)
