"""Functions travel to the workers as source text (`ship`), or as the module they can be imported from.

The same program runs in every process, as it would on a real cluster: a notebook function travels
with what it uses from the notebook (imports, plain constants, other notebook functions); anything
else (arrays, objects) raises `ShipError`: pass data as arguments instead.
"""

from __future__ import annotations

import ast
import dis
import importlib
import inspect
import textwrap
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .errors import ShipError
from .text import TEXT

__all__ = ["Shipped", "ship"]


@dataclass(frozen=True)
class Shipped:
    """A function on its way to the workers: a program text that defines it,
    or the module it can be imported from."""

    name: str
    source: str | None = None  # program text that defines `name` (imports, constants, defs)
    module: str | None = None  # ... or import `name` from this module

    def load(self, cache: dict | None = None) -> Callable:
        """The function, rebuilt in this process (the program text runs once per process)."""
        if self.module is not None:
            obj: Any = importlib.import_module(self.module)
            for part in self.name.split("."):
                obj = getattr(obj, part)
            return obj
        cache = {} if cache is None else cache
        if self.source not in cache:
            import linecache

            filename = f"<shipped {self.name}>"
            linecache.cache[filename] = (len(self.source), None, self.source.splitlines(True), filename)
            namespace: dict = {"__name__": "__shipped__"}
            exec(compile(self.source, filename, "exec"), namespace)  # the point of shipping
            cache[self.source] = namespace
        return cache[self.source][self.name]

    def __str__(self) -> str:
        return self.source if self.source is not None else f"from {self.module} import {self.name}"


def _importable_name(obj: Any) -> tuple[str, str] | None:
    """(module, qualname) from which `obj` can be imported again, or None."""
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if not module or not qualname or module == "__main__" or "<" in qualname:
        return None
    parts = module.split(".")
    for i in range(1, len(parts) + 1):  # prefer the shortest (public) module path
        candidate = ".".join(parts[:i])
        try:
            found: Any = importlib.import_module(candidate)
            for part in qualname.split("."):
                found = getattr(found, part)
        except (ImportError, AttributeError):
            continue
        if found is obj:
            return candidate, qualname
    return None


def _is_literal(value: Any) -> bool:
    """A value whose repr() rebuilds it: numbers, strings, and containers of them."""
    if type(value) in (type(None), bool, int, float, complex, str, bytes):
        return True
    if type(value) in (tuple, list, frozenset, set):
        return all(_is_literal(v) for v in value)
    if type(value) is dict:
        return all(_is_literal(k) and _is_literal(v) for k, v in value.items())
    return False


def _global_names(fn: types.FunctionType, tree: ast.AST | None) -> list[str]:
    """Global names `fn` reads: in its body (bytecode) and in its decorators/defaults (source)."""
    names: list[str] = []

    def add(name: str) -> None:
        if name not in names:
            names.append(name)

    if tree is not None:
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                header = [*node.decorator_list, node.args, *([node.returns] if node.returns else [])]
                for part in header:
                    for sub in ast.walk(part):
                        if isinstance(sub, ast.Name):
                            add(sub.id)
                break

    def walk(code: types.CodeType) -> None:
        for ins in dis.get_instructions(code):
            if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME", "STORE_GLOBAL", "DELETE_GLOBAL"):
                add(str(ins.argval))
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                walk(const)

    walk(fn.__code__)
    return names


def ship(fn: Callable) -> Shipped:
    """Package `fn` for the workers.

    A function importable from a module (not the notebook) travels as
    `from module import name`. A function defined in the notebook travels as
    source text: its own `def`, plus what it uses from the notebook — imports
    for modules, `from ... import` for library functions, assignments for plain
    constants (numbers, strings, tuples...), and the source of other notebook
    functions it calls. Anything else (arrays, objects) raises `ShipError`:
    pass data as arguments instead.
    """
    if isinstance(fn, Shipped):
        return fn
    if not callable(fn):
        raise ShipError(TEXT["ship_not_function"].format(type=type(fn).__name__))
    ref = _importable_name(fn)
    if ref is not None:
        return Shipped(name=ref[1], module=ref[0])
    header: dict[str, str] = {}
    defs: list[str] = []
    done: dict[int, str] = {}

    def visit(obj: Callable, shown_as: str) -> str:
        inner = inspect.unwrap(obj)
        if id(inner) in done:
            return done[id(inner)]
        if not isinstance(inner, types.FunctionType):
            raise ShipError(TEXT["ship_not_def"].format(name=shown_as, type=type(obj).__name__))
        if inner.__name__ == "<lambda>":
            raise ShipError(TEXT["ship_lambda"].format(name=shown_as))
        if inner.__code__.co_freevars:
            raise ShipError(
                TEXT["ship_closure"].format(
                    name=inner.__name__, names=TEXT["id_sep"].join(f"`{v}`" for v in inner.__code__.co_freevars)
                )
            )
        try:
            source = textwrap.dedent(inspect.getsource(inner))
        except (OSError, TypeError) as err:
            raise ShipError(TEXT["ship_no_source"].format(name=inner.__name__, error=err)) from err
        try:
            tree = ast.parse(source)
        except SyntaxError:
            tree = None
        done[id(inner)] = inner.__name__
        for name in _global_names(inner, tree):
            if name in header or name == inner.__name__ or name not in inner.__globals__:
                continue  # already there, recursion, or a builtin
            value = inner.__globals__[name]
            if inspect.ismodule(value):
                header[name] = (
                    f"import {value.__name__}" if value.__name__ == name else f"import {value.__name__} as {name}"
                )
            elif _is_literal(value):
                header[name] = f"{name} = {value!r}"
            elif (where := _importable_name(value)) is not None:
                module, qualname = where
                if "." in qualname:
                    header[name] = f"import {module}\n{name} = {module}.{qualname}"
                else:
                    header[name] = (
                        f"from {module} import {qualname}"
                        if qualname == name
                        else f"from {module} import {qualname} as {name}"
                    )
            elif callable(value):
                defined = visit(value, name)
                if defined != name:
                    defs.append(f"{name} = {defined}\n")
                header.setdefault(name, "")  # mark as handled
            else:
                raise ShipError(TEXT["ship_variable"].format(name=inner.__name__, var=name, type=type(value).__name__))
        defs.append(source)
        return inner.__name__

    name = visit(fn, getattr(fn, "__name__", "function"))
    lines = [line for line in header.values() if line]
    program = ("\n".join(lines) + "\n\n\n" if lines else "") + "\n\n".join(d.rstrip() + "\n" for d in defs)
    return Shipped(name=name, source=program)
