"""Turn what a run produced into cell results and a row (trusted: observations only).

A test cell scores its points only when what its hidden part recorded passes
against the reference solution's. What the kernel printed, raised or displayed
never adds a point; it only explains a zero.

Where the reference recorded exported programs (`autograder.judge.programs`), the
student's recording is judged by this worker's clean scorer process
(`autograder.judge.scorer_process`: one per worker process, started on first use, reused for
the whole batch, replaced after a timeout or crash). A reference the scorer
cannot use raises `ScorerReferenceError`: the submission is not scored rather
than scored against nothing. Other observations are compared directly
(`compare`).

What comes out is data (`records.CellResult`, its reason a `reasons.Reason`: the verdict, a phrase,
the run's phrases (`run/executor.py`), or the kernel's own words): this module writes no words and
no files. The words are written when publishing (`autograder/publish/words.py`), in the
submission's language.
"""

from __future__ import annotations

import atexit
import re
import threading
from dataclasses import replace

from courseinfo.nbgrader_metadata import nbgrader_cell

from .. import records
from ..course.notebooks import SourceNotebook
from ..limits import CELL_MESSAGE_CHARS, SCORER_TIMEOUT
from ..reasons import Phrase, Reason, Verdict, Words, phrase
from ..records import CellEnd, CellResult, Row, RunResult, Status, Task
from .compare import compare, load_observations
from .scorer_process import ScorerReferenceError

__all__ = [
    "one_line",
    "error_text",
    "score_run",
    "submission_status",
    "task_row",
    "scorer_for",
    "close_scorers",
    "scrub_text",
    "scrubbed",
    "scorer_stats",
    "prepare_scorer",
    "SCORER_TIMEOUT",
]

_scorers: dict = {}
_ADDR = re.compile(r"0x[0-9a-fA-F]{6,}")


def scrub_text(text: str, workdir: str | None = None) -> str:
    """Make a message stable across runs: no memory addresses, no temporary paths."""
    if workdir:
        text = text.replace(workdir, "<work>")
    text = _ADDR.sub("0x…", text)
    return text


def scorer_for(secret: bytes):
    """This process's scorer for `secret` (started on first use)."""
    from .scorer_process import Scorer

    if secret not in _scorers:
        _scorers[secret] = Scorer(secret, timeout=SCORER_TIMEOUT)
    return _scorers[secret]


def prepare_scorer(refs) -> threading.Thread | None:
    """Start this process's scorer and load (compile) the reference programs of `refs` in a background
    thread, so that both happen while the student's kernel runs instead of after it. The caller joins
    the thread before scoring (the scorer is not used from two threads at once). A reference that
    fails here is only skipped: scoring meets it again and reports it (`ScorerReferenceError`)."""
    from .exported import is_program_observation

    pairs, secret = getattr(refs, "pairs", None) or {}, getattr(refs, "secret", b"")
    wanted = [pairs[gid] for gid in refs if gid in pairs and is_program_observation(refs[gid])]
    if not wanted or not secret:
        return None
    scorer = scorer_for(secret)
    scorer.start()  # here, in the worker's own thread: the child dies with the thread that starts it

    def run() -> None:
        for pair in wanted:
            try:
                scorer.prepare(pair)
            except Exception:  # noqa: BLE001 - scoring reports it
                return

    thread = threading.Thread(target=run, name="scorer-prepare", daemon=True)
    thread.start()
    return thread


def scorer_stats() -> dict[str, float]:
    """What this process's scorers compiled so far (counts and seconds by kind; for timings)."""
    total: dict[str, float] = {}
    for scorer in _scorers.values():
        for k, v in scorer.compile_stats.items():
            total[k] = total.get(k, 0) + v
        total["scorer_start_s"] = total.get("scorer_start_s", 0.0) + scorer.start_seconds
        total["scorer_cpu"] = total.get("scorer_cpu", 0.0) + scorer.cpu_seconds()
    return total


def close_scorers() -> None:
    for scorer in list(_scorers.values()):
        scorer.close()
    _scorers.clear()


atexit.register(close_scorers)


def _verdict(gid: str, refs, got, formulas=None) -> Verdict:
    from .exported import is_program_observation

    if formulas is not None and gid in formulas.expected:  # a formula: the reference's figures on this run's cases
        return formulas.verdict(gid, load_observations(*got))
    if is_program_observation(refs[gid]):
        pairs, secret = getattr(refs, "pairs", None), getattr(refs, "secret", b"")
        if not pairs or not secret:
            raise RuntimeError("program references need their recorded bytes and the grading secret")
        return scorer_for(secret).judge(gid, pairs[gid], got)
    return compare(refs[gid], load_observations(*got))


def one_line(text: str, n: int = 400) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def error_text(ename: str, evalue: str | Phrase) -> Reason:
    """What a cell's error says: the kernel's words (literal, one line), "not answered yet", or, where
    the grader ended the cell (`evalue` a phrase: a timeout, a kernel death, a limit), "<ename>: <phrase>"."""
    if isinstance(evalue, Phrase):
        return Words((ename, evalue), ": ")
    if ename == "NotImplementedError" and not evalue.strip():
        return phrase("not_answered")
    return one_line(f"{ename}: {evalue}" if evalue.strip() else ename, CELL_MESSAGE_CHARS)


def scrubbed(reason, workdir: str | None):
    """`reason` with every literal text in it made stable (`scrub_text`); kinds are left as they are."""
    if isinstance(reason, str):
        return scrub_text(reason, workdir)
    if isinstance(reason, Phrase):
        return replace(reason, fields=tuple((k, scrubbed(v, workdir)) for k, v in reason.fields))
    if isinstance(reason, Words):
        return Words(tuple(scrubbed(p, workdir) for p in reason.parts), reason.sep)
    if isinstance(reason, Verdict):
        return replace(reason, differences=tuple(scrubbed(d, workdir) for d in reason.differences))
    return reason


def score_run(
    source: SourceNotebook, nb, run: RunResult, refs: dict[str, dict], workdir: str
) -> tuple[CellResult, ...]:
    """Per test cell: its points, and (as data) why."""
    from .formulas import formula_run

    formulas = formula_run(source, refs)
    index = {}
    for i, cell in enumerate(nb.cells):
        gid = nbgrader_cell(cell).grade_id
        if gid:
            index[gid] = i
    cells: list[CellResult] = []
    for test in source.test_cells:
        gid = test.grade_id
        i = index.get(gid)
        outcome = run.outcomes.get(i) if i is not None else None
        error = error_text(outcome.ename, outcome.evalue) if outcome and outcome.status != CellEnd.OK else ""
        passed, reason, judged = False, "", ""
        got = run.observations.get(gid)
        visible_failed = outcome is not None and outcome.status == CellEnd.ERROR
        if got is not None:
            try:
                verdict = _verdict(gid, refs, got, formulas)
                # a failed visible check keeps the cell at 0 (the student saw it fail): the verdict only says
                # what went wrong, for the class's misconception map
                passed = verdict.passed and not visible_failed
                reason = "" if passed else (error if visible_failed else verdict)
                judged = verdict if visible_failed and not verdict.passed else ""
            except ScorerReferenceError:
                raise
            except Exception:  # noqa: BLE001 - anything odd in what was recorded: no points
                reason = error if visible_failed else phrase("results_unreadable")
        elif outcome is None:
            reason = phrase("cell_not_run")
        elif outcome.status == CellEnd.OK:
            reason = phrase("nothing_recorded")
        else:
            reason = error
        points = float(test.points) if passed else 0.0
        cells.append(
            CellResult(gid, points, float(test.points), bool(passed), scrubbed(reason, workdir), judged=judged)
        )
    return tuple(cells)


def submission_status(run: RunResult, merge, cells, workdir: str) -> tuple[Status, Reason]:
    """The row's status and reason: the first event (timeout, died, ...) decides the status."""
    parts: list[Reason] = []
    status = Status.OK
    if run.start_error and all(o.status == CellEnd.NOT_RUN for o in run.outcomes.values()):
        return Status.ERROR, scrubbed(phrase("kernel_not_started", error=one_line(run.start_error, 374)), workdir)
    if run.events:
        status = run.events[0][0]
        seen = []
        for _, said in run.events:
            if said not in seen:
                seen.append(said)
        parts += seen
    if merge.answers_missing:
        parts.append(phrase("answers_missing", ids=", ".join(merge.answers_missing)))
    failed = [c.grade_id for c in cells if not c.passed]
    if failed:
        parts.append(phrase("failed_tests", ids=", ".join(failed)))
    return status, scrubbed(Words(tuple(parts), "; "), workdir)


def task_row(
    task: Task, source: SourceNotebook | None, status: Status, reason: Reason, cells, language: str = "", observe_log=()
) -> Row:
    """The row of a task (records.make_row, the one place rows are made)."""
    return records.make_row(
        task.student,
        task.assignment,
        task.origin,
        source,
        status,
        reason,
        cells,
        language,
        tuple(observe_log),
        task.late,
    )
