"""`update` merges the English into a catalog: a changed text fuzzy, a removed one dropped (merging.py)."""

from __future__ import annotations

import nbformat
import pytest
from nbformat.v4 import new_markdown_cell, new_notebook

from tools import translate
from tools.translate import catalogs


@pytest.fixture
def course(tmp_path, monkeypatch):
    """A one-notebook course in tmp_path, for the catalog tool."""
    (tmp_path / "solutions").mkdir()
    for name in ("SOLUTIONS", "LOCALE", "ROOT"):
        monkeypatch.setattr(catalogs, name, tmp_path / {"SOLUTIONS": "solutions", "LOCALE": "locale", "ROOT": ""}[name])
    monkeypatch.setattr(catalogs, "PACKAGES", ())

    def write(*paragraphs):
        cell = new_markdown_cell("\n\n".join(paragraphs))
        cell.id = "intro"
        nbformat.write(new_notebook(cells=[cell]), tmp_path / "solutions" / "01_demo.ipynb")

    return write


def _entries(name="01_demo"):
    return {m.id: m for m in translate.load_catalog("zh", name) if m.id}


def test_update_marks_changed_english_fuzzy_and_drops_removed(course):
    course("The device holds a block.", "Every device gets the total.", "Gone soon.")
    translate.update(["01_demo"])
    cat = translate.load_catalog("zh", "01_demo")
    for msg in cat:
        if msg.id:
            msg.string = {
                "The device holds a block.": "设备持有一个块。",
                "Every device gets the total.": "每个设备都得到总和。",
                "Gone soon.": "很快消失。",
            }[msg.id]
    translate.po_path("zh", "01_demo").write_bytes(translate.po_bytes(cat))
    assert translate.report("zh", "01_demo").problems() == []
    course("The device holds a block.", "Every device gets the whole total.")
    assert "out of sync" in " ".join(translate.report("zh", "01_demo").problems(sync_only=True))
    translate.update(["01_demo"])
    entries = _entries()
    assert set(entries) == {"The device holds a block.", "Every device gets the whole total."}
    assert not entries["The device holds a block."].fuzzy
    changed = entries["Every device gets the whole total."]
    assert changed.fuzzy and changed.previous_id == ["Every device gets the total."] and changed.string
    assert translate.load_catalog("zh", "01_demo").get(changed.id, "intro").previous_id == changed.previous_id
    assert '#| msgid "Every device gets the total."' in translate.po_path("zh", "01_demo").read_text()
    assert "#~" not in translate.po_path("zh", "01_demo").read_text()
    problems = translate.report("zh", "01_demo").problems()
    assert len(problems) == 1 and "1 fuzzy" in problems[0]
    assert translate.check(["01_demo"], sync_only=True) == 0 and translate.check(["01_demo"]) == 1
