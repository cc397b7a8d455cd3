"""Unwritten stubs in plain notebook cells: one line instead of a stub's traceback.

In a notebook, a cell that calls a function whose body is still `raise NotImplementedError()` shows
the one line "`loss_fn` is not written yet: ..." (an IPython exception hook registered when
`namedaxes.checking` is imported), so an unanswered notebook shows messages, not stub tracebacks.
A cell that uses an exercise's answer before its cell ran (`NameError: name 'loss_fn' is not
defined`) says so in one line too, and `progress()` lists that exercise as not started. Any other
name a cell's own code cannot find (`q`, `jnp`, `devices`: the most common state after a kernel
restart or cells run out of order) says which cell to run first (`run_order_message`).

The handler is there from the kernel's start, before any cell ran: the course's kernel loads the
IPython extension `namedaxes.kernel_start`, which registers `handle_cell_error` and imports this module
only when an error comes; importing `namedaxes.checking` then keeps that registration.
"""

from __future__ import annotations

import re

from ..kernel_start import HANDLED, MARK, cell_seconds
from .explaining import user_frames
from .notebook import ipython
from .registry import NOT_ATTEMPTED, LastCheck, exercises, record_check
from .rendering import render_failure
from .text import TEXT

__all__ = ["undefined_answer", "run_order_message", "install_stub_handler", "handle_cell_error"]


def undefined_answer(value: BaseException) -> str | None:
    """One line for a notebook cell stopped because an exercise's answer is not defined yet (its cell has
    not run), else None; every check of that exercise is then recorded as not attempted."""
    name = getattr(value, "name", None) if type(value) is NameError else None
    found = [ex for ex in exercises() if name and ex.name == name]
    if not found or not user_frames(value.__traceback__):
        return None
    message = TEXT["not_defined_yet"].format(name=name)
    for ex in found:
        record_check(ex, LastCheck(NOT_ATTEMPTED, message))
    return message


def run_order_message(value: BaseException) -> str | None:
    """One line for `NameError: name 'X' is not defined` raised by a cell's own top-level code: run the
    cells above first (for `q`: the import cell). A name missing inside a function is left to Python."""
    name = getattr(value, "name", None) if type(value) is NameError else None
    frames = user_frames(value.__traceback__) if name else []
    if not frames or frames[-1].tb_frame.f_code.co_name != "<module>" or frames[-1].tb_next is not None:
        return None
    return TEXT["q_not_defined"] if name == "q" else TEXT["run_cells_above"].format(name=name)


def _busy(value: BaseException) -> str | None:
    """One sentence for Validate's per-cell limit (the only KeyboardInterrupt this handler is given:
    `kernel_start`): the machine is busy, and how long the cell took."""
    if not isinstance(value, KeyboardInterrupt):
        return None
    return TEXT["validate_busy"].format(seconds=round(cell_seconds()))


def _stub_message(value: BaseException) -> str | None:
    """One line for a cell stopped by a stub's bare `raise NotImplementedError()`, else None.

    Also for a stub that raised in a worker process of notebook 06 (`multiprocess.WorkerError`, whose
    text ends with the worker's traceback, shipped functions appearing as `<shipped name>`).
    """
    if getattr(value, "remote_type", None) == "NotImplementedError":
        shipped = re.findall(r'File "<shipped (\w+)>", line \d+, in \w+\n\s+raise NotImplementedError\(\)', str(value))
        return TEXT["uses_unwritten"].format(name=shipped[-1]) if shipped else None
    if not isinstance(value, NotImplementedError) or str(value):
        return None  # a library's NotImplementedError: keep its traceback
    frames = user_frames(value.__traceback__)
    if not frames:
        return None
    where = frames[-1].tb_frame.f_code.co_name
    return TEXT["cell_not_written_yet"] if where == "<module>" else TEXT["uses_unwritten"].format(name=where)


def handle_cell_error(shell, etype, value, tb, tb_offset=None):
    """IPython custom exception handler for HANDLED (see the module docstring)."""
    message = _stub_message(value) or undefined_answer(value) or run_order_message(value) or _busy(value)
    if message is None:
        shell.showtraceback((etype, value, tb), tb_offset=tb_offset)  # anything else: IPython's own display
    else:  # the error output: ename/evalue unchanged, these lines as its traceback
        shell._showtraceback(etype, value, render_failure(message))


def install_stub_handler() -> None:
    shell = ipython()
    if shell is None or getattr(shell, MARK, False):
        return  # not a notebook, or ours already (from namedaxes.kernel_start)
    if getattr(shell, "custom_exceptions", None):
        return  # someone else's handler: leave it alone
    shell.set_custom_exc(HANDLED, handle_cell_error)
    setattr(shell, MARK, True)
