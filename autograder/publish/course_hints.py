"""The hints of the course's exercises, for the misconception map: which hint addresses a group; and the
sentences of their known mistakes, for the judge's words.

    hints_of(module) -> {exercise name: (Hint(number, en, zh), ...)}
    mistakes_of(module) -> {exercise name: {mistake: the number of the hint that addresses it}}
    mistake_text(module, mistake) -> the mistake's sentence in English (a `str.format` template; "" if none)
    addressing(found, hints, declared) -> the Hint that a group's finding calls for (None: the exercise has none)

Where the hints are: each exercise module of the kernel package (or each module of a notebook's package)
makes its exercises with
`name = exercise("name", check, hints=[...])`, the hints as literal English strings (the catalog tool
extracts them the same way), translated at display time from the compiled catalog. This module reads
them from the module's *source* with `ast`, never importing it (no JAX in the report's process), and
their Chinese from the same catalog the kernel uses (`namedaxes.i18n.translator`).

A finding that is a known mistake (`judge/mistakes.py`: the same mistake the visible check diagnosed) is
addressed by the hint its exercise names for it (`exercise(..., mistakes={"center_local": 2})`), and says
the module's own sentence for it (its `TEXT[mistake]`, read here from the module's source like the hints).

Which hint addresses any other finding: a finding's group key names code (the collective expected and the one
performed, the function judged: `comm_missing(missing=psum,seen=pmean)`). The hint that shows the most
of those names in backticks is the one that speaks of this mistake, what the program did (`seen=`)
counting twice what was expected; ties go to the earlier hint, and when none shows any, the first
hint, the exercise's most general one. The course's own text is matched, never a student's.

Trusted input: the course's exercise modules (the checkout's code, as the grader's own). A module name
read from a notebook is checked against `MODULE_NAME` before it becomes a path.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

__all__ = ["Hint", "hints_of", "mistakes_of", "mistake_text", "addressing", "MODULE_NAME"]

MODULE_NAME = re.compile(r"[a-z_][a-z0-9_]{0,63}")
_CODE = re.compile(r"`([^`]{1,200})`")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_FIELD = re.compile(r"(\w+)=([^,|()]+)")
SEEN_WEIGHT = 2  # what the program did (`seen=`) says more about the mistake than what was expected
_TOO_COMMON = {"x", "y", "none", "True", "False", "the", "of"}  # names that say nothing about a mistake


@dataclass(frozen=True)
class Hint:
    """One hint of an exercise: its number as `q.<name>.hint()` shows it (1-based), in both languages."""

    number: int
    of: int
    en: str
    zh: str


def _exercises_folder() -> Path:
    import namedaxes

    return Path(namedaxes.__file__).resolve().parent / "exercises"


def _exercise_call(call: ast.Call) -> tuple[str, list[str], dict[str, int]] | None:
    """("name", [hints], {mistake: hint number}) of an `exercise("name", ..., hints=[...], mistakes={...})`
    call, or None."""
    if not (isinstance(call.func, ast.Name) and call.func.id == "exercise" and call.args):
        return None
    first = call.args[0]
    if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
        return None
    texts, mistakes = [], {}
    for kw in call.keywords:
        if kw.arg == "hints" and isinstance(kw.value, ast.List | ast.Tuple):
            texts = [e.value for e in kw.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        elif kw.arg == "mistakes" and isinstance(kw.value, ast.Dict):
            for k, v in zip(kw.value.keys, kw.value.values, strict=True):
                if isinstance(k, ast.Constant) and isinstance(v, ast.Constant) and isinstance(v.value, int):
                    mistakes[str(k.value)] = v.value
    return first.value, texts, mistakes


@cache
def _trees(module: str) -> tuple[ast.Module, ...]:
    """The parsed source of `namedaxes.exercises.<module>` (a module, or every file of a package); () if none."""
    if not MODULE_NAME.fullmatch(module):
        return ()
    folder = _exercises_folder()
    files = sorted((folder / module).glob("*.py")) if (folder / module).is_dir() else [folder / f"{module}.py"]
    try:  # a notebook's exercises: one module, or a package of them (its exercises one file each)
        return tuple(ast.parse(f.read_text(encoding="utf-8")) for f in files)
    except (OSError, SyntaxError, ValueError):
        return ()


def _calls(module: str):
    for node in (n for tree in _trees(module) for n in ast.walk(tree)):
        named = _exercise_call(node) if isinstance(node, ast.Call) else None
        if named:
            yield named


@cache
def hints_of(module: str) -> dict[str, tuple[Hint, ...]]:
    """Every exercise of `namedaxes.exercises.<module>` with its hints ({} for an unknown module)."""
    found: dict[str, tuple[Hint, ...]] = {}
    calls = list(_calls(module))
    if not calls:
        return found
    from namedaxes.i18n import translator

    zh = translator("zh")
    for name, texts, _ in calls:
        found[name] = tuple(Hint(i + 1, len(texts), t, zh(t)) for i, t in enumerate(texts))
    return found


@cache
def mistakes_of(module: str) -> dict[str, dict[str, int]]:
    """Every exercise of `namedaxes.exercises.<module>` that names known mistakes: mistake -> its hint's number."""
    return {name: mistakes for name, _, mistakes in _calls(module) if mistakes}


@cache
def _texts(module: str) -> dict[str, str]:
    """The module's `TEXT = {...}` table (English templates), read from its source."""
    table: dict[str, str] = {}
    for node in (n for tree in _trees(module) for n in tree.body):
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "TEXT" for t in node.targets)
            and isinstance(node.value, ast.Dict)
        ):
            try:
                table.update({str(k): str(v) for k, v in ast.literal_eval(node.value).items()})
            except ValueError:
                continue
    return table


def mistake_text(module: str, mistake: str) -> str:
    """The English sentence (template) the module's check says for `mistake`; "" when it has none."""
    return _texts(module).get(mistake, "") if mistake in {m for d in mistakes_of(module).values() for m in d} else ""


def _names_in(found: dict) -> dict[str, int]:
    """The code names a finding's group key mentions (its fields' values), each with its weight."""
    names: dict[str, int] = {}
    for field, value in _FIELD.findall(str(found.get("key", ""))):
        for name in set(_NAME.findall(value)) - _TOO_COMMON:
            names[name] = max(names.get(name, 0), SEEN_WEIGHT if field == "seen" else 1)
    return names


def addressing(found: dict, hints: tuple[Hint, ...], declared: dict[str, int] | None = None) -> Hint | None:
    """The hint the exercise names for `found`'s known mistake; else the hint that speaks of the most names of
    `found`; the first (most general) when none does."""
    if not hints:
        return None
    number = (declared or {}).get(str(found.get("mistake", "")))
    if isinstance(number, int) and 1 <= number <= len(hints):
        return hints[number - 1]
    names = _names_in(found)

    def score(hint: Hint) -> int:
        shown = {n for code in _CODE.findall(hint.en) for n in _NAME.findall(code)}
        return sum(w for n, w in names.items() if n in shown)

    best = max(hints, key=lambda h: (score(h), -h.number))
    return best if score(best) else hints[0]
