"""Unwritten stubs in plain notebook cells: one line instead of a stub's traceback.

In a notebook, a cell that calls a function whose body is still `raise NotImplementedError()` shows
the one line "`loss_fn` is not written yet: ..." (an IPython exception hook registered when
`namedaxes.checking` is imported), so an unanswered notebook shows messages, not stub tracebacks.
A cell that uses an exercise's answer before its cell ran (`NameError: name 'loss_fn' is not
defined`) says so in one line too, and `progress()` lists that exercise as not started.
"""

from __future__ import annotations

import re

from .explaining import _user_frames
from .notebook import ipython
from .rendering import render_failure
from .text import TEXT
from .verdicts import _REGISTRY, _RESULTS, NOT_ATTEMPTED, Verdict

__all__ = ["undefined_answer", "install_stub_handler"]


def undefined_answer(value: BaseException) -> str | None:
    """One line for a notebook cell stopped because an exercise's answer is not defined yet (its cell has
    not run), else None; every check of that exercise is then recorded as not attempted."""
    name = getattr(value, "name", None) if type(value) is NameError else None
    exercises = [ex for module in _REGISTRY.values() for ex in module.values() if name and ex.name == name]
    if not exercises or not _user_frames(value.__traceback__):
        return None
    message = TEXT["not_defined_yet"].format(name=name)
    for ex in exercises:
        _RESULTS[ex._key] = Verdict(NOT_ATTEMPTED, message)
    return message


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
    frames = _user_frames(value.__traceback__)
    if not frames:
        return None
    where = frames[-1].tb_frame.f_code.co_name
    return TEXT["cell_not_written_yet"] if where == "<module>" else TEXT["uses_unwritten"].format(name=where)


def _show_stub_error(shell, etype, value, tb, tb_offset=None):
    """IPython custom exception handler for NotImplementedError and NameError (see the module docstring)."""
    message = _stub_message(value) or undefined_answer(value)
    if message is None:
        shell.showtraceback((etype, value, tb), tb_offset=tb_offset)  # anything else: IPython's own display
    else:  # the error output: ename/evalue unchanged, these lines as its traceback
        shell._showtraceback(etype, value, render_failure(message))


def install_stub_handler() -> None:
    shell = ipython()
    if shell is None or getattr(shell, "custom_exceptions", None):
        return  # not a notebook, or someone else's handler: leave it alone
    # RuntimeError covers multiprocess.WorkerError; every other error is shown as IPython would show it.
    shell.set_custom_exc((NotImplementedError, RuntimeError, NameError), _show_stub_error)
