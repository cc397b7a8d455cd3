"""`update` and `compile`: the English merged into the catalogs, the helper package's catalog compiled.

`update` is Babel's merge: an unchanged English text keeps its translation; a changed one is matched to its
old entry, keeps the old translation marked **fuzzy** with the previous msgid (`#| msgid`), so the
translator sees exactly what changed; new texts arrive empty; texts gone from the English are dropped (no
obsolete `#~` entries). Files are written deterministically (fixed header dates, source order), so
`check --sync` can regenerate in memory and compare bytes (`merged`).
"""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterable
from pathlib import Path

from babel.messages.catalog import Catalog

from courseinfo.course import EDITIONS

from . import catalogs
from .catalogs import STAMP
from .templates import template

__all__ = ["merged", "update", "compile_catalogs"]


def merged(lang: str, name: str) -> Catalog:
    """The catalog as `update` would write it: the English template merged into the existing translations."""
    tmpl = template(name)
    cat = catalogs.load_catalog(lang, name) or catalogs.new_catalog(lang, name)
    # Babel's merge keeps an entry that is still fuzzy but forgets its previous msgid: put it back.
    previous = {(m.context, m.id): m.previous_id for m in cat if m.id and m.fuzzy and m.previous_id}
    cat.update(tmpl, update_header_comment=True)
    for msg in cat:
        if msg.id and msg.fuzzy and not msg.previous_id and (msg.context, msg.id) in previous:
            msg.previous_id = previous[(msg.context, msg.id)]
    cat.obsolete.clear()
    cat.creation_date = cat.revision_date = STAMP
    cat.fuzzy = False
    return cat


@contextlib.contextmanager
def _locked():
    """Hold `locale/.tx.lock` (an exclusive flock) while catalogs are read and rewritten, so two
    `update`s, or an update and a translation tool that takes the same lock, never interleave."""
    catalogs.LOCALE.mkdir(exist_ok=True)
    with open(catalogs.LOCALE / ".tx.lock", "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def update(names: Iterable[str]) -> list[str]:
    with _locked():
        return _update(names)


def _write_changed(path: Path, data: bytes) -> list[str]:
    """Write `data` to `path` unless it holds it already: [the path, from the checkout] if it wrote, else []."""
    if path.exists() and path.read_bytes() == data:
        return []
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return [str(path.relative_to(catalogs.ROOT))]


def _update(names: Iterable[str]) -> list[str]:
    names = list(names)
    return [
        changed
        for lang in EDITIONS
        for name in names
        for changed in _write_changed(catalogs.po_path(lang, name), catalogs.po_bytes(merged(lang, name)))
    ]


def compile_catalogs() -> list[str]:
    with _locked():
        return _compile()


def _compile() -> list[str]:
    return [changed for lang in EDITIONS for changed in _write_changed(catalogs.mo_path(lang), catalogs.mo_bytes(lang))]
