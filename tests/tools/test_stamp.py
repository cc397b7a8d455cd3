"""tools/stamp.py: `make release` and `make roster` read a content stamp instead of regenerating every notebook
(26-28 s) when nothing changed, and still refuse stale notebooks: any changed input or output is not fresh."""

from __future__ import annotations

import subprocess

import pytest

from tools import handin
from tools.stamp import Stamp, edition_stamp, notebooks_stamp


@pytest.fixture
def made(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "in" / "a.ipynb").write_text("source")
    (tmp_path / "out" / "a.ipynb").write_text("release")
    stamp = Stamp(tmp_path / "stamp.json", (f"{tmp_path}/in/*.ipynb",), (f"{tmp_path}/out/*.ipynb",))
    stamp.write()
    return tmp_path, stamp


def test_a_stamp_is_fresh_until_an_input_or_an_output_changes(made):
    root, stamp = made
    assert stamp.fresh()
    (root / "in" / "a.ipynb").write_text("source, edited")
    assert not stamp.fresh()
    stamp.write()
    (root / "out" / "a.ipynb").write_text("release, edited by hand")
    assert not stamp.fresh()


@pytest.mark.parametrize("change", ["new input", "input removed", "output removed", "stamp removed", "stamp garbled"])
def test_a_file_added_or_removed_is_a_change(made, change):
    root, stamp = made
    {
        "new input": lambda: (root / "in" / "b.ipynb").write_text("another notebook"),
        "input removed": lambda: (root / "in" / "a.ipynb").unlink(),
        "output removed": lambda: (root / "out" / "a.ipynb").unlink(),
        "stamp removed": stamp.remove,
        "stamp garbled": lambda: stamp.path.write_text("{"),
    }[change]()
    assert not stamp.fresh()


def test_the_course_stamps_cover_the_sources_the_catalogs_the_generated_notebooks_and_the_course():
    stamp = notebooks_stamp()
    assert "solutions/*.ipynb" in stamp.inputs and "locale/*/notebooks/*.po" in stamp.inputs
    assert "tools/generate_notebooks.py" in stamp.inputs
    assert {"notebooks/*.ipynb", "notebooks/zh/*.ipynb", "solutions/zh/*.ipynb"} <= set(stamp.outputs)
    assert any(o.endswith("course/release/*/*.ipynb") for o in stamp.outputs)
    zh = edition_stamp(handin.built_course("zh"), "zh")
    assert "solutions/zh/*.ipynb" in zh.inputs and "notebooks/zh/*.ipynb" in zh.inputs


def test_release_skips_the_slow_check_only_while_the_stamp_is_fresh(tmp_path, monkeypatch):
    ran = []
    monkeypatch.setattr(
        handin.subprocess, "run", lambda cmd, **k: ran.append(cmd) or subprocess.CompletedProcess(cmd, 0)
    )
    (tmp_path / "gradebook.db").write_text("")
    monkeypatch.setattr(Stamp, "fresh", lambda self: True)
    handin.lay_out(tmp_path, "")
    assert ran == []
    monkeypatch.setattr(Stamp, "fresh", lambda self: False)
    handin.lay_out(tmp_path, "")
    assert ran and ran[0][-2:] == ["tools.generate_notebooks", "--check"]
    monkeypatch.setattr(handin.subprocess, "run", lambda cmd, **k: subprocess.CompletedProcess(cmd, 1))
    with pytest.raises(handin.HandinError, match="notebooks/ is out of date"):
        handin.lay_out(tmp_path, "")
    monkeypatch.setattr(Stamp, "fresh", lambda self: True)
    (tmp_path / "gradebook.db").unlink()  # no gradebook: laid out again, whatever the stamp says
    with pytest.raises(handin.HandinError, match="notebooks/ is out of date"):
        handin.lay_out(tmp_path, "")
