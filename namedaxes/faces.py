"""A package's lazy face: the names it shows, each loaded from its module when first asked for.

Two kinds of package have one. The grader's stage packages (`autograder/<stage>/__init__.py`) show what the
grader's clients (tools/) use, and importing one module of a stage loads no other: the student kernel imports
`autograder.run.kernel_prelude`, the zygote forks kernels with only its own modules loaded, and the scorer sets
its devices up before anything imports JAX. A notebook's exercise package (`namedaxes.exercises.notebook_face`)
imports without JAX, so that its words are read by importing it, and the first name asked for loads all of its
check modules, in the order its exercises register (`in_order`).

A face's table (`FACE`) is a literal: each module -> the names the face shows from it, a module of the package
written relative (`.compare`), any other by its full name (`namedaxes.meshes`). The shape test follows it as
import edges (tests/test_shape.py). This module imports nothing but the standard library.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from types import ModuleType

__all__ = ["lazy_face"]


def lazy_face(package: str, table: dict[str, tuple[str, ...]], *, in_order: bool = False) -> Callable[[], None]:
    """Make the module `package` (a package's `__init__.py`, calling this after its table) show the names of
    `table` (module -> names) and list them in its `__all__`: each is loaded from its module when first asked
    for, or, `in_order`, every module of the table is loaded first, in the table's order. Returns the function
    that loads every module of the table in that order."""
    where = {name: module for module, names in table.items() for name in names}
    face = sys.modules[package]

    def load(module: str) -> ModuleType:
        return importlib.import_module(package + module if module.startswith(".") else module)

    def load_all() -> None:
        for module in table:
            load(module)

    def __getattr__(attr: str):
        if attr not in where:
            raise AttributeError(f"module {package!r} has no attribute {attr!r}")
        if in_order:
            load_all()
        return getattr(load(where[attr]), attr)

    def __dir__() -> list[str]:
        return sorted({*vars(face), *face.__all__})

    face.__all__ = [*getattr(face, "__all__", ()), *where]
    face.__getattr__, face.__dir__ = __getattr__, __dir__
    return load_all
