"""`check`: every catalog complete and in sync, one rendering of each English text (tools/translate/verify.py).

The catalog-completeness test is parametrized per catalog: a catalog the translators have finished passes, an
unfinished one fails and says what is missing (nothing here is xfail: `make test` is red until every catalog
is complete, as issue 12 asks).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import translate
from tools.translate import catalogs

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("name", translate.catalog_names())
def test_catalog_is_complete_and_consistent(name):
    """Every entry translated, none fuzzy or obsolete, placeholders and code spans kept (fails until translated)."""
    problems = translate.report("zh", name).problems()
    assert not problems, f"{translate.po_path('zh', name).relative_to(ROOT)}:\n  " + "\n  ".join(problems[:20])


def test_catalogs_and_compiled_catalog_are_in_sync_with_the_english():
    problems = [p for name in translate.catalog_names() for p in translate.report("zh", name).problems(sync_only=True)]
    assert not problems, "\n".join(problems)


def test_one_english_text_has_one_rendering_across_the_catalogs(tmp_path, monkeypatch):
    """The same msgid translated two ways in two catalogs is an error that names both places."""
    from babel.messages.catalog import Catalog
    from babel.messages.pofile import write_po

    monkeypatch.setattr(catalogs, "LOCALE", tmp_path)
    for name, ctx, text in (("01_a", "md-summary", "小结"), ("02_b", "md-summary", "小结"), ("07_c", "md-end", "总结")):
        cat = Catalog(locale="zh")
        cat.add("Summary", text, context=ctx)
        path = translate.po_path("zh", name)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as fh:
            write_po(fh, cat)
    problems = translate.rendering_problems("zh", ["01_a", "02_b", "07_c"])
    assert len(problems) == 1 and "'Summary' is translated 2 ways" in problems[0], problems
    assert "notebooks/01_a.po (md-summary)" in problems[0] and "notebooks/07_c.po (md-end)" in problems[0]
    assert translate.rendering_problems("zh", ["01_a", "02_b"]) == []


def test_the_catalogs_render_each_english_text_one_way():
    assert translate.rendering_problems("zh", translate.catalog_names()) == []
