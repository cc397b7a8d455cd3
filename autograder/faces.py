"""A stage package's face for the grader's clients (tools/): the names it exports, each loaded from its module
when first asked for, so that importing one module of a stage loads no other.

That laziness matters: the student kernel imports `autograder.run.kernel_prelude`, the zygote forks kernels
with only its own modules loaded, and the scorer sets its devices up before anything imports JAX. A stage's
`__init__.py` holds its `FACE` (name -> the module of the stage that defines it, a literal table that the
shape test follows as import edges and the boundary test checks) and `__getattr__ = face(__name__, FACE)`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

__all__ = ["face"]


def face(package: str, table: dict[str, str]) -> Callable[[str], Any]:
    """The module `__getattr__` of `package` that loads each name of `table` from its module of the package."""

    def attribute(name: str) -> Any:
        if name not in table:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{table[name]}"), name)

    return attribute
