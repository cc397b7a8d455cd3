"""The course's exercises: a package per notebook (its words in `text.py`, how its answers run in `running.py`,
one module per exercise), and the one door through which the grader and the tools reach them by name.

A notebook's package face (`from namedaxes.exercises import axis_names as q`) imports its `text.py` at once and
its check modules when first asked for one of their names (`lazy_face`): the words of every notebook (`TEXT`,
`HINTS`, `MISTAKE_HINTS`) import without JAX, so the class report, the catalog tool and the site read them by
importing `text.py`, never by parsing the sources.

    text_of(package)        -> a notebook's text.py (None: no such notebook package)
    exercise_module(name)   -> `namedaxes.exercises.<package>[.<module>]`, a name read from the grader's data

This module imports nothing but the standard library.
"""

from __future__ import annotations

import importlib
import re
import sys
from types import ModuleType

__all__ = ["PACKAGES", "text_of", "exercise_module", "lazy_face"]

# The notebooks' packages, in course order.
PACKAGES = (
    "axis_names",
    "scaled_sum",
    "gradient_averaging",
    "shard_map",
    "nested_axes",
    "multi_process",
    "collectives",
    "compiler_sharding",
    "large_models",
    "training_at_scale",
    "step_anatomy",
)
_MODULE = re.compile(r"[a-z_][a-z0-9_]{0,63}")


def text_of(package: str) -> ModuleType | None:
    """The words of the notebook package `package` (its `text.py`, imported without JAX); None when `package` is
    not one of `PACKAGES` (a name read from a notebook or a report is checked here before it is imported)."""
    if package not in PACKAGES:
        return None
    return importlib.import_module(f"{__name__}.{package}.text")


def exercise_module(name: str) -> ModuleType:
    """The exercise module `name` (`namedaxes.exercises.<package>` or one of its modules), the one door through
    which the grader's judge and the tools reach a notebook's checks by a name read from data (which known
    mistakes a program's values are, a formula's hidden cases, a table's figures). ValueError for any other name."""
    parts = name.split(".")
    if parts[:2] != ["namedaxes", "exercises"] or len(parts) not in (3, 4) or parts[2] not in PACKAGES:
        raise ValueError(f"not an exercise module of the course: {name!r}")
    if not all(_MODULE.fullmatch(p) for p in parts[3:]):
        raise ValueError(f"not an exercise module of the course: {name!r}")
    return importlib.import_module(name)


def lazy_face(package: str, sources: dict[str, tuple[str, ...]]) -> None:
    """Make the module `package` (a notebook package's face, calling this at its end) show the names of its check
    modules: `sources` maps each module (relative, `.weighted`, or absolute) to the names the face shows from
    it, in the order the notebook's exercises register. The face imports without JAX: the first name asked for
    loads them all, in that order (`progress` is `q.progress()`). Where JAX is imported already (a kernel, the
    grader's zygote, which imports the faces to warm the kernels it forks) they load at once, as any import."""
    where = {name: module for module, names in sources.items() for name in names}

    def load(module: str) -> ModuleType:
        return importlib.import_module(module if not module.startswith(".") else package + module)

    def load_all() -> None:
        for module in sources:
            load(module)

    def __getattr__(attr: str):
        if attr == "progress":
            load_all()
            from namedaxes.checking import progress_of

            return progress_of(package)
        if attr not in where:
            raise AttributeError(f"module {package!r} has no attribute {attr!r}")
        load_all()
        return getattr(load(where[attr]), attr)

    def __dir__() -> list[str]:
        return sorted({*vars(face), *where, "progress"})

    face = sys.modules[package]
    face.__getattr__, face.__dir__ = __getattr__, __dir__
    if "jax" in sys.modules:
        load_all()
