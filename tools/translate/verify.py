"""`check`: what keeps each catalog from being complete, and one rendering of each English text.

Per catalog (`report`): out of sync with the English (run `update`), missing or empty, fuzzy, obsolete
entries, and the entries that break a rule (rules.py; a code label's rules: label_units.py). The .mo must be
what `compile` writes. Across the catalogs (`rendering_problems`): the same msgid translated differently in
two places (two catalogs, or two cells of one) is an error that names both places.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from courseinfo.course import EDITIONS

from . import catalogs
from .catalogs import DOMAIN, catalog_names, load_catalog, mo_bytes, mo_path, po_path
from .label_units import SUBSCRIPT, code_words, label_problems
from .merging import merged
from .rules import consistency_problems, glossary, glossary_problems, punctuation_problems

__all__ = ["Report", "report", "renderings", "rendering_problems", "check"]


@dataclass
class Report:
    name: str
    path: str
    entries: int = 0
    translated: int = 0
    stale: bool = False
    mo_stale: bool = False
    missing: list | None = None
    fuzzy: list | None = None
    obsolete: int = 0
    inconsistent: list | None = None

    def problems(self, sync_only: bool = False) -> list[str]:
        out = []
        if self.stale:
            out.append(f"{self.path} is out of sync with the English source: run `python -m tools.translate update`")
        if self.mo_stale:
            out.append(
                f"{mo_path('zh').relative_to(catalogs.ROOT)} is not what {self.path} compiles to: run "
                f"`python -m tools.translate compile`"
            )
        if sync_only:
            return out
        if self.missing:
            out.append(f"{len(self.missing)} untranslated (missing or empty), e.g. {self.missing[0]!r}")
        if self.fuzzy:
            out.append(
                f"{len(self.fuzzy)} fuzzy (English changed; re-translate, then delete the fuzzy flag), "
                f"e.g. {self.fuzzy[0]!r}"
            )
        if self.obsolete:
            out.append(f"{self.obsolete} obsolete (#~) entries: run `python -m tools.translate update`")
        for msgid, problem in self.inconsistent or []:
            out.append(f"{problem}: {msgid[:80]!r}")
        return out


def report(lang: str, name: str) -> Report:
    path = po_path(lang, name)
    rep = Report(name, str(path.relative_to(catalogs.ROOT)))
    cat = load_catalog(lang, name)
    rep.stale = cat is None or path.read_bytes() != catalogs.po_bytes(merged(lang, name))
    if name == DOMAIN:
        rep.mo_stale = not mo_path(lang).exists() or mo_path(lang).read_bytes() != mo_bytes(lang)
    if cat is None:
        return rep
    rep.obsolete = len(cat.obsolete)
    messages = [m for m in cat if m.id]
    rep.entries = len(messages)
    rep.missing = [m.id for m in messages if not m.string]
    rep.fuzzy = [m.id for m in messages if m.string and m.fuzzy]
    rep.translated = rep.entries - len(rep.missing) - len(rep.fuzzy)
    terms = glossary(lang)
    is_label = {id(m): (m.context or "").endswith("#output") for m in messages}
    allowed = code_words(name) if name != DOMAIN and any(is_label.values()) else set()
    rep.inconsistent = []
    for m in messages:
        if not m.string:
            continue
        english = SUBSCRIPT.sub(" ", m.id) if is_label[id(m)] else m.id  # a label's `batch['x']` is code
        rep.inconsistent += [
            (m.id, p)
            for p in consistency_problems(m.id, m.string)
            + glossary_problems(english, m.string, terms)
            + punctuation_problems(m.id, m.string)
            + (label_problems(m.id, m.string, allowed) if is_label[id(m)] else [])
        ]
    return rep


def renderings(lang: str, names: Iterable[str]) -> dict[str, dict[str, list[str]]]:
    """English -> its translations -> where each is (`catalog.po (cell id)`), over `names`' catalogs."""
    found: dict[str, dict[str, list[str]]] = {}
    for name in names:
        rel = po_path(lang, name).relative_to(catalogs.LOCALE / lang).as_posix()
        for msg in load_catalog(lang, name) or ():
            if msg.id and msg.string and not msg.fuzzy:
                where = f"{rel} ({msg.context})" if msg.context else rel
                found.setdefault(msg.id, {}).setdefault(msg.string, []).append(where)
    return found


def rendering_problems(lang: str, names: Iterable[str]) -> list[str]:
    """One English text, one translation: every msgid translated in two ways, with both places."""
    problems = []
    for msgid, variants in renderings(lang, names).items():
        if len(variants) > 1:
            places = "; ".join(
                f"{text[:50]!r} in {', '.join(where[:2])}{' ...' if len(where) > 2 else ''}"
                for text, where in variants.items()
            )
            problems.append(f"{msgid[:60]!r} is translated {len(variants)} ways: {places}")
    return problems


def check(names: Iterable[str], sync_only: bool = False) -> int:
    failed = 0
    for lang in EDITIONS:
        for name in names:
            rep = report(lang, name)
            problems = rep.problems(sync_only)
            state = "ok" if not problems else "OUT OF SYNC" if sync_only else "INCOMPLETE"
            print(f"{rep.path}: {rep.translated}/{rep.entries} translated -- {state}")
            for problem in problems[:12]:
                print(f"    {problem}")
            if len(problems) > 12:
                print(f"    ... and {len(problems) - 12} more")
            failed += bool(problems)
        if not sync_only:
            differ = rendering_problems(lang, catalog_names())
            print(f"one English, one {lang} rendering across the catalogs -- {'ok' if not differ else 'INCONSISTENT'}")
            for problem in differ:
                print(f"    {problem}")
            failed += bool(differ)
    if failed:
        print(f"{failed} catalog(s) {'out of sync' if sync_only else 'not complete'}; see docs/translators.md")
    return 1 if failed else 0
