"""How a cell ended, said as data: which cell (`cell_label`), why its kernel died (`death_reason`, and
the sandbox's `post_mortem` where a limit was hit), a cell the grader ended (`Ending`: one interrupted after
its timeout, `interrupted`, or one whose kernel was lost, `lost_ending`), the cells not run (`mark_rest`),
and the one text the graded notebook shows for a cell the grader ended (`append_error_output`).

Used by the executor (executor.py). Everything here is a `reasons.Phrase` (data; the words come when
publishing) but the error output appended to a cell of the graded notebook, which is published text:
`publish.words.say`'s words, in the current language. No text of the kernel's is put into a phrase
here but the student-added cell's number and the cell's own id (an nbformat id).
"""

from __future__ import annotations

from dataclasses import dataclass

from nbformat import NotebookNode
from nbformat import v4 as nbv4

from courseinfo.nbgrader_metadata import nbgrader_cell

from ..limits import MAX_MESSAGE_BYTES
from ..publish.words import say
from ..reasons import Phrase, phrase
from ..records import CellEnd, CellOutcome, RunResult, Status
from .cell_outputs import CellRun
from .kernel import Kernel

__all__ = [
    "cell_label",
    "post_mortem",
    "death_reason",
    "Ending",
    "interrupted",
    "lost_ending",
    "append_error_output",
    "mark_rest",
]


def cell_label(nb: NotebookNode, index: int) -> Phrase:
    """Which cell, as data ("cell 'axis_sum'", "the cell you added after cell 4 (#1 ...)")."""
    cell = nb.cells[index]
    meta = cell.get("metadata", {})
    gid = nbgrader_cell(cell).grade_id
    if gid:
        return phrase("cell_grade_id", grade_id=gid)
    if (meta.get("autograder") or {}).get("student_added"):
        added = [i for i, c in enumerate(nb.cells) if (c.metadata.get("autograder") or {}).get("student_added")]
        return phrase("cell_added", index=index, n=added.index(index) + 1)
    cid = cell.get("id")
    return phrase("cell_id", cell_id=cid) if cid else phrase("cell_number", number=index + 1)


def post_mortem(kernel: Kernel):
    """The sandbox's verdict on why a kernel died (a LimitHit with .status and .reason), or None."""
    ask = getattr(kernel, "post_mortem", None)
    if ask is None:
        return None
    try:
        return ask()
    except Exception:  # noqa: BLE001 - no verdict is better than a crashed worker
        return None


def death_reason(returncode: int | None) -> Phrase | str:
    if returncode is None:
        return ""
    if returncode < 0:
        try:
            name = __import__("signal").Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        key = {"SIGXCPU": "died_cpu", "SIGSEGV": "died_segv", "SIGKILL": "died_killed", "SIGXFSZ": "died_fsize"}.get(
            name
        )
        return phrase(key) if key else phrase("died_signal", signal=name)
    return phrase("died_exit", code=returncode)


@dataclass(frozen=True)
class Ending:
    """A cell the grader ended: the cell's outcome and what the run says happened (`RunResult.events`)."""

    outcome: CellOutcome
    event: tuple[str, Phrase]  # (status, what happened)


def interrupted(run: CellRun, label: Phrase, how: Phrase) -> Ending:
    """A cell interrupted after its timeout (`how`: the cell's timeout or the rest of the budget); its kernel lives."""
    outcome = CellOutcome(CellEnd.TIMEOUT, "TimeoutError", phrase("this_cell_interrupted", how=how), run.seconds)
    return Ending(outcome, (Status.TIMEOUT, phrase("cell_interrupted", label=label, how=how)))


def lost_ending(run: CellRun, kernel: Kernel, label: Phrase, how: Phrase) -> Ending:
    """A cell that hung (killed after its timeout), sent an oversized message or whose kernel died. A dead
    kernel is killed (what is left of it) before the sandbox is asked which limit it hit: that limit, where
    one was hit, is the ending; else how it died (its exit code or signal)."""
    if run.status == "hung":
        outcome = CellOutcome(CellEnd.TIMEOUT, "TimeoutError", phrase("this_cell_hung", how=how), run.seconds)
        return Ending(outcome, (Status.TIMEOUT, phrase("cell_hung", label=label, how=how)))
    if run.status == "oversized":
        mib = MAX_MESSAGE_BYTES // 2**20
        outcome = CellOutcome(CellEnd.ERROR, "OutputTooLarge", phrase("this_cell_oversized", mib=mib), run.seconds)
        return Ending(outcome, (Status.TOO_MUCH_OUTPUT, phrase("cell_oversized", label=label, mib=mib)))
    code = kernel.proc.returncode if kernel.proc is not None else None
    if code is not None and code > 128 and kernel.sandbox.isolate:
        code = 128 - code  # bwrap reports a child killed by signal N as exit 128+N
    kernel.kill()
    hit = post_mortem(kernel)
    if hit is not None:
        outcome = CellOutcome(CellEnd.DIED, "LimitReached", hit.reason, run.seconds)
        return Ending(outcome, (hit.status, phrase("limit_restarted", label=label, reason=hit.reason)))
    why = death_reason(code)
    outcome = CellOutcome(CellEnd.DIED, "DeadKernelError", phrase("this_cell_died", why=why), run.seconds)
    return Ending(outcome, (Status.KERNEL_DIED, phrase("cell_died", label=label, why=why)))


def append_error_output(cell: NotebookNode, outcome: CellOutcome) -> None:
    """The graded notebook shows why the grader ended the cell: that output is a published text, so its
    words are `publish.words.say`'s, in the current language (the worker's `speaking(lang)`)."""
    said = say(outcome.evalue)
    cell.outputs = list(cell.get("outputs", [])) + [
        nbv4.new_output("error", ename=outcome.ename, evalue=said, traceback=[f"{outcome.ename}: {said}"])
    ]


def mark_rest(result: RunResult, indices: list[int], why: Phrase) -> None:
    for j in indices:
        result.outcomes[j] = CellOutcome(CellEnd.NOT_RUN, "NotRun", phrase("not_run_because", why=why))
