"""What the course's kernel does when it starts, before any cell ran: the course's error handler.

The course's `python3` kernel (jupyter/data/kernels/python3/kernel.json, used by `make lab`, the
hub and nbval) loads this IPython extension. A test cell run before the notebook's import cell, or
after a kernel restart, stops at `NameError: name 'q' is not defined`; with this handler it says,
in the student's language, which cell to run first (`namedaxes.checking.stubs.run_order_message`).
Only the handler is registered here; the checking package (NumPy, the catalogs) is imported when
an error comes, so the kernel starts as fast as before. Elsewhere (Colab, a plain kernel) the
handler comes with the notebook's import cell, as it always did.

In the kernel of nbgrader's Validate (NBGRADER_EXECUTION=validate) a KeyboardInterrupt is Validate's
per-cell limit running out (nobody else can interrupt that kernel): the handler says in one sentence that
the machine is busy and how long the cell took, never a bare traceback. Each cell's start is noted for it.
"""

from __future__ import annotations

import os
import time

__all__ = ["load_ipython_extension", "HANDLED", "MARK", "validating", "cell_seconds"]

# The errors the handler looks at (RuntimeError covers multiprocess.WorkerError); every other error,
# and every one of these it has no words for, is shown as IPython would show it.
HANDLED = (NotImplementedError, RuntimeError, NameError)
MARK = "_namedaxes_handler"  # set on a shell whose handler is the course's
_started = [time.monotonic()]  # when the running cell started (Validate's kernel notes each one)


def validating() -> bool:
    """Is this the kernel of nbgrader's Validate (whose only interrupt is its per-cell limit)?"""
    return os.environ.get("NBGRADER_EXECUTION", "") == "validate"


def cell_seconds() -> float:
    """How long the running cell has run, in seconds."""
    return time.monotonic() - _started[0]


def _cell_started(*_info) -> None:
    _started[0] = time.monotonic()


def _handle_cell_error(shell, etype, value, tb, tb_offset=None):
    from .checking.stubs import handle_cell_error

    return handle_cell_error(shell, etype, value, tb, tb_offset)


def load_ipython_extension(shell) -> None:
    if getattr(shell, "custom_exceptions", None):
        return  # someone else's handler: leave it alone
    if validating():
        shell.events.register("pre_run_cell", _cell_started)
    shell.set_custom_exc(HANDLED + ((KeyboardInterrupt,) if validating() else ()), _handle_cell_error)
    setattr(shell, MARK, True)
