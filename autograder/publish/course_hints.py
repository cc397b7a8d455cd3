"""The hints of the course's exercises, for the misconception map: which hint addresses a group; and the
sentences of their known mistakes, for the judge's words.

    hints_of(module) -> {exercise name: (Hint(number, en, zh), ...)}
    mistakes_of(module) -> {exercise name: {mistake: the number of the hint that addresses it}}
    mistake_text(module, mistake) -> the mistake's sentence in English (a `str.format` template; "" if none)
    addressing(found, hints, declared) -> the Hint that a group's finding calls for (None: the exercise has none)

Where the hints are: each notebook's package keeps its words as data in its `text.py` (`HINTS[exercise]`, the
hints in English; `MISTAKE_HINTS[exercise]`, the hint that addresses each known mistake; `TEXT`, the sentences),
which imports without JAX; this module imports it through the exercises' door (`namedaxes.exercises.text_of`)
and reads the Chinese from the same catalog the kernel uses (`namedaxes.i18n.translator`).

A finding that is a known mistake (`judge/mistakes.py`: the same mistake the visible check diagnosed) is
addressed by the hint its exercise names for it (`MISTAKE_HINTS[exercise]`), and says the package's own sentence
for it (its `TEXT[mistake]`).

Which hint addresses any other finding: a finding's group key names code (the collective expected and the one
performed, the function judged: `comm_missing(missing=psum,seen=pmean)`). The hint that shows the most
of those names in backticks is the one that speaks of this mistake, what the program did (`seen=`)
counting twice what was expected; ties go to the earlier hint, and when none shows any, the first
hint, the exercise's most general one. The course's own text is matched, never a student's.

Trusted input: the course's exercise packages (the checkout's code, as the grader's own). A module name read
from a notebook is checked against the course's list of packages (`text_of`) before it is imported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from namedaxes.exercises import text_of

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


def _text(module: str):
    """The `text.py` of the notebook package `namedaxes.exercises.<module>`; None for any other name."""
    return text_of(module) if MODULE_NAME.fullmatch(module) else None


@cache
def hints_of(module: str) -> dict[str, tuple[Hint, ...]]:
    """Every exercise of `namedaxes.exercises.<module>` with its hints ({} for an unknown module)."""
    text = _text(module)
    if text is None:
        return {}
    from namedaxes.i18n import translator

    zh = translator("zh")
    return {
        name: tuple(Hint(i + 1, len(texts), t, zh(t)) for i, t in enumerate(texts))
        for name, texts in text.HINTS.items()
    }


@cache
def mistakes_of(module: str) -> dict[str, dict[str, int]]:
    """Every exercise of `namedaxes.exercises.<module>` that names known mistakes: mistake -> its hint's number."""
    text = _text(module)
    return {name: dict(mistakes) for name, mistakes in text.MISTAKE_HINTS.items() if mistakes} if text else {}


def mistake_text(module: str, mistake: str) -> str:
    """The English sentence (template) the module's check says for `mistake`; "" when it has none."""
    if mistake not in {m for d in mistakes_of(module).values() for m in d}:
        return ""
    table = _text(module).TEXT
    return table.english(mistake) if mistake in table else ""


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
