"""The catalog files: where each one is, a new one, an entry added, and reading and writing them.

Every other module of the package reads the paths through this module's attributes (`catalogs.LOCALE`,
`catalogs.SOLUTIONS`, `catalogs.ROOT`, `catalogs.PACKAGES`), so a test can point the whole tool at a course of its
own by setting them here.
"""

from __future__ import annotations

import datetime as dt
import io
import re
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po, unescape, write_po

from courseinfo.course import ROOT, SOLUTIONS, notebook_ids

__all__ = [
    "ROOT",
    "SOLUTIONS",
    "LOCALE",
    "DOMAIN",
    "PACKAGES",
    "PROJECT",
    "STAMP",
    "notebook_ids",
    "po_path",
    "mo_path",
    "catalog_names",
    "new_catalog",
    "add_entry",
    "po_bytes",
    "load_catalog",
    "mo_bytes",
    "translations",
]

LOCALE = ROOT / "locale"
DOMAIN = "namedaxes"
PACKAGES = ("namedaxes", "autograder")
PROJECT = "JAX named axes course"
# Fixed header dates: the files change only when their entries do.
STAMP = dt.datetime(2026, 12, 1, 0, 0, tzinfo=dt.UTC)


def po_path(lang: str, name: str) -> Path:
    """`name` is "namedaxes" or a notebook id ("07_collectives")."""
    return LOCALE / lang / (f"{DOMAIN}.po" if name == DOMAIN else f"notebooks/{name}.po")


def mo_path(lang: str) -> Path:
    return ROOT / "namedaxes" / "locale" / lang / "LC_MESSAGES" / f"{DOMAIN}.mo"


def catalog_names() -> list[str]:
    return [DOMAIN] + notebook_ids(SOLUTIONS)


def new_catalog(lang: str | None, name: str) -> Catalog:
    cat = Catalog(
        locale=lang,
        domain=name,
        project=PROJECT,
        version="1",
        copyright_holder=PROJECT,
        msgid_bugs_address="",
        creation_date=STAMP,
        revision_date=STAMP,
        language_team="Simplified Chinese" if lang else None,
        fuzzy=False,
    )
    cat.last_translator = "course translators"
    return cat


def add_entry(
    cat: Catalog, msgid: str, location: tuple[str, int | None], comment: str, context: str | None = None
) -> None:
    """Add an entry, or one more location of it. `location` is (key, n): Babel writes it `key:n`, and
    reads back only an integer after the last colon, so keys use `#` and `.` as separators."""
    existing = cat.get(msgid, context)
    if existing is not None:
        existing.locations.append(location)
        if comment not in existing.auto_comments:
            existing.auto_comments.append(comment)
    else:
        cat.add(msgid, locations=[location], auto_comments=[comment], context=context)


def po_bytes(cat: Catalog) -> bytes:
    buf = io.BytesIO()
    write_po(buf, cat, width=100, ignore_obsolete=True, include_previous=True)
    return buf.getvalue()


def load_catalog(lang: str, name: str) -> Catalog | None:
    path = po_path(lang, name)
    if not path.exists():
        return None
    with path.open("rb") as fh:
        cat = read_po(fh, locale=lang, domain=name)
    for msg in list(cat) + list(cat.obsolete.values()):
        _previous_from_comments(msg)
    return cat


def _previous_from_comments(msg) -> None:
    """Babel writes a fuzzy entry's old msgid as `#| msgid "..."` but reads those lines back as user
    comments ("| msgid ..."): turn them into `previous_id` again, so a round trip changes nothing."""
    lines = [c for c in msg.user_comments if c.startswith("|")]
    if not lines:
        return
    msg.user_comments = [c for c in msg.user_comments if not c.startswith("|")]
    text = " ".join(c[1:].strip() for c in lines)
    if text.startswith("msgid "):
        text = text[len("msgid ") :].split(" msgid_plural ")[0]
        msg.previous_id = ["".join(unescape(part) for part in re.findall(r'"(?:[^"\\]|\\.)*"', text))]


def mo_bytes(lang: str) -> bytes:
    cat = load_catalog(lang, DOMAIN) or new_catalog(lang, DOMAIN)
    buf = io.BytesIO()
    write_mo(buf, cat, use_fuzzy=False)
    return buf.getvalue()


def translations(lang: str, name: str) -> dict[tuple[str | None, str], str]:
    """(msgctxt, English) -> translation, for entries that are translated and not fuzzy."""
    cat = load_catalog(lang, name)
    out = {}
    for msg in cat or ():
        if msg.id and msg.string and not msg.fuzzy:
            out[(msg.context, msg.id)] = msg.string
    return out
