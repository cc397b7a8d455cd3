"""The reference cache key changes with the grader's code (and only then): a cached reference made by
other code is never reused."""

from __future__ import annotations

import shutil
from pathlib import Path

from autograder.course.notebooks import SourceNotebook
from autograder.run import references

ROOT = Path(__file__).resolve().parents[3]
AID = "02_scaled_sum"


def test_the_reference_key_changes_with_the_code(tmp_path, monkeypatch):
    source = SourceNotebook.load(AID, ROOT / "solutions" / f"{AID}.ipynb")
    copy = tmp_path / "repo"
    shutil.copytree(ROOT / "autograder", copy / "autograder", ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(references, "repo_root", lambda: copy)
    same = references.reference_key(source)
    assert references.reference_key(source) == same, "the key is a function of the code"
    records = copy / "autograder" / "records.py"
    records.write_text(records.read_text() + "\n# a changed record\n")
    changed = references.reference_key(source)
    assert changed != same
    (copy / "autograder" / "publish" / "words.py").unlink()
    assert references.reference_key(source) not in (same, changed), "a removed module changes it too"
