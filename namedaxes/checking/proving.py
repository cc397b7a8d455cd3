"""Cells that prove something in a solution notebook: a pitfall that must raise (`show_error`), a check
that must reject a plausible wrong answer and accept an equivalent right one (`assert_check_*`)."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable

from .failures import CheckFailed

__all__ = ["show_error", "assert_check_fails", "assert_check_passes"]


@contextlib.contextmanager
def show_error(exc_type: type[BaseException] | tuple = Exception, match: str | None = None):
    """Run a cell that demonstrates an error: print the real error, prove it raised.

        with show_error(ValueError, match="context mesh"):
            jax.pmap(jax.pmap(f, axis_name="inner"), axis_name="outer")(x)

    Raises `AssertionError` if nothing (or something else) was raised, so a
    pitfall cell can never silently stop demonstrating its pitfall.
    """
    try:
        yield
    except exc_type as err:  # the point of the cell
        text = str(err)
        if match is not None and not re.search(match, text):
            raise AssertionError(f"expected an error matching {match!r}, got {type(err).__name__}: {text}") from err
        first = "\n".join(line for line in text.splitlines() if line.strip() and not set(line) <= {"-"})[:600]
        print(f"{type(err).__name__}: {first}")
    else:
        names = exc_type.__name__ if isinstance(exc_type, type) else " or ".join(e.__name__ for e in exc_type)
        raise AssertionError(f"this cell should raise {names}, but it ran without an error")


# ---------------------------------------------------------------- proving checks both ways
def assert_check_fails(check: Callable, *args, match: str | None = None) -> str:
    """`check(*args)` rejects a plausible wrong answer (and, optionally, says `match`)."""
    try:
        check(*args)
    except CheckFailed as err:
        if match is not None and not re.search(match, str(err)):
            raise AssertionError(f"check failed, but its message does not mention {match!r}: {err}") from err
        return str(err)
    raise AssertionError("the check accepted an answer it should reject")


def assert_check_passes(check: Callable, *args) -> None:
    """`check(*args)` accepts a correct (e.g. an equivalent alternative) answer."""
    check(*args)
