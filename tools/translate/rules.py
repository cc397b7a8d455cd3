"""The rules one translated entry must keep, so that the edition reads as one voice.

- consistency: a translation keeps every `{placeholder}`, backtick code span (code, API names and JAX's error
  texts stay English) and link target, and adds no line break or surrounding space;
- terms (`locale/<lang>/glossary.tsv`): an entry whose English prose (outside code spans, placeholders,
  CONSTANTS and quoted axis names) has a term uses its Chinese (one of them, where the glossary lists
  alternatives "元素 / 项"), unless the row says `optional` (a word that is also a verb, like "name"); and
  never one of the row's `avoid` words (条目 for an array's entries);
- punctuation of a Chinese translation: no space after full-width punctuation (，。：；？！、）), no Latin
  sentence end before a full-width one (`."。`, `.。`), no doubled full stop.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from . import catalogs
from .markdown import CODE_SPAN

__all__ = [
    "consistency_problems",
    "Term",
    "glossary_path",
    "glossary",
    "prose_of",
    "glossary_problems",
    "punctuation_problems",
]

_PLACEHOLDER = re.compile(r"(?<!\{)\{[A-Za-z_][A-Za-z0-9_]*(?:![rsa])?(?::[^{}]*)?\}(?!\})")
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _code_spans(text: str) -> Counter:
    return Counter(m.group(0) for m in CODE_SPAN.finditer(text))


def consistency_problems(msgid: str, msgstr: str) -> list[str]:
    """What a translation lost or changed that must survive: placeholders, code spans, link targets."""
    problems = []
    for what, pattern in (("placeholders", _PLACEHOLDER), ("link targets", _LINK)):
        want, got = Counter(pattern.findall(msgid)), Counter(pattern.findall(msgstr))
        if want != got:
            problems.append(f"{what} differ: English {sorted(want.elements())}, translation {sorted(got.elements())}")
    want, got = _code_spans(msgid), _code_spans(msgstr)
    if want != got:
        lost, added = sorted((want - got).elements()), sorted((got - want).elements())
        problems.append(f"code spans differ (they stay English, identical): missing {lost}, extra {added}")
    if msgstr != msgstr.strip() and msgid == msgid.strip():
        problems.append("translation has leading/trailing whitespace the English does not")
    if msgid.startswith(" ") and not msgstr.startswith(" ") and not msgstr.startswith("（"):
        problems.append("the English starts with a space (it is appended to another text): keep it")
    if "\n" in msgstr and "\n" not in msgid:
        problems.append("translation has a line break the English does not (one unit is one line)")
    return problems


@dataclass(frozen=True)
class Term:
    """A row of `locale/<lang>/glossary.tsv`: English, its Chinese (alternatives), and the words to avoid."""

    en: str
    zh: tuple[str, ...]
    note: str = ""
    avoid: tuple[str, ...] = ()
    optional: bool = False  # the English word is also something else (a verb): only `avoid` is checked
    case: bool = False  # matched in its own case only (ZeRO, never "zero")

    def pattern(self) -> re.Pattern:
        return re.compile(rf"(?<![\w-]){re.escape(self.en)}(s|es)?(?![\w-])", 0 if self.case else re.IGNORECASE)


def glossary_path(lang: str) -> Path:
    return catalogs.LOCALE / lang / "glossary.tsv"


def glossary(lang: str) -> list[Term]:
    """The glossary's rows. Columns: English, Chinese ("a / b": either), note, and optionally a fourth
    column of rules: `avoid: w1, w2` (words a translation of this term must not use), `optional` and/or `case`
    (the English matched in its own case only: ZeRO is no "zero")."""
    path = glossary_path(lang)
    if not path.exists():
        return []
    terms = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        cols = line.split("\t") + ["", "", ""]
        avoid, optional, case = (), False, False
        for rule in (r.strip() for r in cols[3].split(";")):
            if rule.startswith("avoid:"):
                avoid = tuple(w.strip() for w in rule[len("avoid:") :].split(",") if w.strip())
            elif rule == "optional":
                optional = True
            elif rule == "case":
                case = True
        terms.append(
            Term(
                cols[0].strip(),
                tuple(z.strip() for z in cols[1].split("/") if z.strip()),
                cols[2].strip(),
                avoid,
                optional,
                case,
            )
        )
    return terms


def prose_of(text: str) -> str:
    """The words a translator translates: no code spans, placeholders, quoted axis names ('devices') or
    constants (DEVICES, DATA_PARALLEL), which stay English."""
    text = re.sub(r"\{[^{}]*\}", " ", CODE_SPAN.sub(" ", text))
    return re.sub(r"\b[A-Z][A-Z0-9_]+\b|'[^'\s]+'", " ", text)


def glossary_problems(msgid: str, msgstr: str, terms: list[Term]) -> list[str]:
    """Where `msgstr` does not use the glossary's word for a term of `msgid`, or uses a word to avoid."""
    english, chinese = prose_of(msgid), CODE_SPAN.sub(" ", msgstr)
    problems = []
    for term in terms:
        if not term.pattern().search(english):
            continue
        if not term.optional and not any(z in chinese for z in term.zh):
            problems.append(f"glossary: {term.en!r} is {' / '.join(term.zh)!r}, not used in {msgstr[:60]!r}")
        for word in term.avoid:
            if re.search(
                re.escape(word) if not word.isascii() else rf"(?<![\w`]){re.escape(word)}(?![\w`])",
                chinese,
                0 if not word.isascii() else re.IGNORECASE,
            ):
                problems.append(f"glossary: {term.en!r} is {' / '.join(term.zh)!r}, not {word!r}: {msgstr[:60]!r}")
    return problems


_FULL_WIDTH = "，。：；？！、）"
_SPACE_AFTER_FULL_WIDTH = re.compile(rf"[{_FULL_WIDTH}] +\S")
_LATIN_THEN_FULL_STOP = re.compile(r"[.!?][\"'”’)]?[。！？]")


def punctuation_problems(msgid: str, msgstr: str) -> list[str]:
    """Chinese punctuation rules of a translation (code spans aside)."""
    if not any("\u4e00" <= ch <= "\u9fff" for ch in msgstr):
        return []
    text = CODE_SPAN.sub("`code`", msgstr)
    problems = []
    if m := _SPACE_AFTER_FULL_WIDTH.search(text):
        problems.append(
            f"a space after full-width punctuation ({m.group(0)!r}): full-width punctuation carries its own space"
        )
    if m := _LATIN_THEN_FULL_STOP.search(text):
        problems.append(f"a Latin sentence end before a full-width one ({m.group(0)!r}): one full stop")
    if m := re.search(r"[。！？]{2,}", text):
        problems.append(f"a doubled full stop ({m.group(0)!r})")
    return problems
