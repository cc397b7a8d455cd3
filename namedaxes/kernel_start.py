"""What the course's kernel does when it starts, before any cell ran: the course's error handler.

The course's `python3` kernel (jupyter/data/kernels/python3/kernel.json, used by `make lab`, the
hub and nbval) loads this IPython extension. A test cell run before the notebook's import cell, or
after a kernel restart, stops at `NameError: name 'q' is not defined`; with this handler it says,
in the student's language, which cell to run first (`namedaxes.checking.stubs.run_order_message`).
Only the handler is registered here; the checking package (NumPy, the catalogs) is imported when
an error comes, so the kernel starts as fast as before. Elsewhere (Colab, a plain kernel) the
handler comes with the notebook's import cell, as it always did.
"""

from __future__ import annotations

__all__ = ["load_ipython_extension", "HANDLED", "MARK"]

# The errors the handler looks at (RuntimeError covers multiprocess.WorkerError); every other error,
# and every one of these it has no words for, is shown as IPython would show it.
HANDLED = (NotImplementedError, RuntimeError, NameError)
MARK = "_namedaxes_handler"  # set on a shell whose handler is the course's


def _show_error(shell, etype, value, tb, tb_offset=None):
    from .checking.stubs import show_error

    return show_error(shell, etype, value, tb, tb_offset)


def load_ipython_extension(shell) -> None:
    if getattr(shell, "custom_exceptions", None):
        return  # someone else's handler: leave it alone
    shell.set_custom_exc(HANDLED, _show_error)
    setattr(shell, MARK, True)
