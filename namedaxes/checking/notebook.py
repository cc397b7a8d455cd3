"""The IPython shell the checks run in, when there is one (a notebook, the grader's kernel)."""

from __future__ import annotations

import sys

__all__ = ["ipython", "user_namespace"]


def ipython():
    """The running IPython shell, or None (plain Python, a test): nothing to hook into then."""
    if "IPython" not in sys.modules:
        return None
    from IPython import get_ipython

    return get_ipython()


def user_namespace() -> dict | None:
    """The notebook's variables, or None outside IPython."""
    shell = ipython()
    return getattr(shell, "user_ns", None) if shell is not None else None
