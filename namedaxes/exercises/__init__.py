"""The course's exercises: a package per notebook (its words in `text.py`, how its answers run in `running.py`,
one module per exercise), and the one door through which the grader and the tools reach them by name.

A notebook's package face (`from namedaxes.exercises import axis_names as q`) imports its `text.py` at once and
its check modules when first asked for one of their names (`notebook_face`): the words of every notebook (`TEXT`,
`HINTS`, `MISTAKE_HINTS`) import without JAX, so the class report, the catalog tool and the site read them by
importing `text.py`, never by parsing the sources.

    text_of(package)        -> a notebook's text.py (None: no such notebook package)
    exercise_module(name)   -> `namedaxes.exercises.<package>[.<module>]`, a name read from the grader's data

This module imports nothing but the standard library, the lazy face (`namedaxes.faces`) and `Messages`.
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Callable
from types import ModuleType

from namedaxes.faces import lazy_face
from namedaxes.i18n import Messages

__all__ = ["PACKAGES", "text_of", "exercise_module", "notebook_words", "notebook_face"]

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


def notebook_words(
    text: dict[str, str], hints: dict[str, list[str]], mistake_hints: dict[str, dict[str, int]]
) -> tuple[Messages, Callable[..., str]]:
    """A notebook's words, from the three tables of its `text.py` (which ends `TEXT, say = notebook_words(TEXT,
    HINTS, MISTAKE_HINTS)`): its sentences as a `Messages` table (each lookup in the kernel's language) and `say`
    (a template of it filled in). ValueError where a known mistake of `mistake_hints` names no sentence of `text`
    or no hint of its exercise."""
    for name, mistakes in mistake_hints.items():
        for key, number in mistakes.items():
            if key not in text or not 1 <= number <= len(hints.get(name, ())):
                raise ValueError(f"MISTAKE_HINTS[{name!r}][{key!r}] = {number}: no such sentence or hint")
    words = Messages(text)
    return words, words.say


def notebook_face(package: str, table: dict[str, tuple[str, ...]]) -> None:
    """Make the module `package` (a notebook package's face, calling this at its end) show its words (`TEXT`, its
    `text.py` imported at once), `q.progress()`, and the names of its check modules: `table` maps each module
    (relative, `.weighted`, or absolute) to the names the face shows from it, in the order the notebook's
    exercises register. The face imports without JAX: the first name asked for loads them all, in that order
    (`namedaxes.faces.lazy_face`). Where JAX is imported already (a kernel, the grader's zygote, which imports the
    faces to warm the kernels it forks) they load at once, as any import."""
    face = sys.modules[package]
    face.TEXT = text_of(package.rsplit(".", 1)[-1]).TEXT
    load_all = lazy_face(package, table, in_order=True)
    shown = face.__getattr__

    def __getattr__(attr: str):
        if attr != "progress":
            return shown(attr)
        load_all()
        from namedaxes.checking import progress_of

        return progress_of(package)

    face.__getattr__ = __getattr__
    face.__all__ += ["TEXT", "progress"]
    if "jax" in sys.modules:
        load_all()
