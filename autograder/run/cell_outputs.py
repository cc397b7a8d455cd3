"""One cell's run as the grader records it: its ending and what is kept of its outputs.

Threat model: every message comes from the student's kernel, which may send a flood of them, huge ones,
malformed ones, or `clear_output` tricks. What is kept is capped in characters (`MAX_OUTPUT_CHARS`, and
what is left of the notebook's cap, `NotebookOutputCap`) and in outputs (`MAX_OUTPUTS`); past either cap one
line says that output was dropped, and nothing more is kept for that cell. A message nbformat cannot
read is dropped. Consecutive stream outputs of one stream are merged, as Jupyter shows them.
(The frames themselves are capped before Python reads them: `kernel.py`.)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nbformat import v4 as nbv4

from ..limits import MAX_OUTPUT_CHARS, MAX_OUTPUTS
from ..reasons import Phrase, phrase
from ..records import Status

__all__ = ["CellRun", "CellOutputs", "NotebookOutputCap", "DROPPED"]

DROPPED = "\n[autograder: further output of this cell was dropped]\n"


@dataclass
class CellRun:
    status: str  # ok | error | timeout (interrupted) | hung (killed) | died | oversized
    outputs: list = field(default_factory=list)
    output_chars: int = 0  # characters of output kept
    truncated: bool = False  # some output was dropped (the cell's or the notebook's cap)
    execution_count: int | None = None
    ename: str = ""
    evalue: str = ""
    seconds: float = 0.0


class CellOutputs:
    """What is kept of one cell's outputs, from the kernel's IOPub messages, within the caps."""

    def __init__(self, max_chars: int = MAX_OUTPUT_CHARS):
        self.items: list = []
        self.chars = 0
        self.max_chars = min(MAX_OUTPUT_CHARS, max(0, max_chars))
        self.truncated = False
        self.clear_pending = False

    def _room(self, size: int) -> bool:
        if self.truncated:
            return False
        if len(self.items) >= MAX_OUTPUTS or self.chars + size > self.max_chars:
            self.truncated = True
            self.items.append(nbv4.new_output("stream", name="stderr", text=DROPPED))
            return False
        self.chars += size
        return True

    def add(self, msg: dict) -> None:
        kind = msg["msg_type"]
        content = msg.get("content", {})
        if kind == "clear_output":
            if content.get("wait"):
                self.clear_pending = True
            else:
                self.items.clear()
            return
        if kind not in ("stream", "display_data", "execute_result", "error"):
            return
        if self.clear_pending:
            self.items.clear()
            self.clear_pending = False
        try:
            out = nbv4.output_from_msg(msg)
        except Exception:  # noqa: BLE001 - a malformed message from the kernel is dropped
            return
        size = len(repr(content))
        if not self._room(size):
            return
        if (
            kind == "stream"
            and self.items
            and self.items[-1].get("output_type") == "stream"
            and self.items[-1].get("name") == out.get("name")
        ):
            self.items[-1]["text"] += out.get("text", "")
        else:
            self.items.append(out)


@dataclass
class NotebookOutputCap:
    """The cap on the output a notebook keeps over all its cells (`limit` characters): what is left of it for
    the next cell (`left`, the cell's `max_chars`), and whether the run has said that it was reached (once)."""

    limit: int
    left: int = field(init=False)
    reached: bool = False

    def __post_init__(self) -> None:
        self.left = self.limit

    def charge(self, run: CellRun, label: Phrase) -> tuple[str, Phrase] | None:
        """Count a cell's kept output against the cap; where some was dropped, the run's event (status, what
        happened): the notebook's cap (said once), else the cell's own caps. A cell whose message was
        oversized has its own ending instead (cell_endings.lost_ending)."""
        notebook_cap = self.left < MAX_OUTPUT_CHARS  # the notebook's cap bound before the cell's
        self.left = max(0, self.left - run.output_chars)
        if not run.truncated or run.status == "oversized":
            return None
        if notebook_cap or self.left == 0:
            if self.reached:
                return None
            self.reached = True
            return Status.TOO_MUCH_OUTPUT, phrase("output_notebook_cap", label=label, limit=self.limit)
        said = phrase("output_cell_cap", label=label, limit=MAX_OUTPUT_CHARS, outputs=MAX_OUTPUTS)
        return Status.TOO_MUCH_OUTPUT, said
