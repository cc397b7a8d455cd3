"""The hub's courses come from build/course and build/zh/course only when those are what solutions/ makes
today (hub.layout.stale_build): a build left by an older checkout once gave the hub an old notebook 02,
and `make grade HUB=1` then refused its reference solution. Each way a build can be stale is named."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hub import layout

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def course(tmp_path, monkeypatch):
    """A solutions/ folder and a build of it, as tools/generate_notebooks.py lays it out (source/<id>/<id>.ipynb)."""
    solutions, built = tmp_path / "solutions", tmp_path / "build" / "course"
    solutions.mkdir()
    for aid in ("01_a", "02_b"):
        (solutions / f"{aid}.ipynb").write_text(f'{{"cells": ["{aid}"]}}')
        (built / "source" / aid).mkdir(parents=True)
        (built / "source" / aid / f"{aid}.ipynb").write_text(f'{{"cells": ["{aid}"]}}')
    (built / "gradebook.db").write_bytes(b"")
    monkeypatch.setattr(layout, "ROOT", tmp_path)
    monkeypatch.setattr(layout, "BUILT_COURSE", {"namedaxes": built})
    monkeypatch.setattr(layout, "SOLUTIONS", {"namedaxes": solutions})
    return solutions, built


def test_a_current_build_is_taken(course):
    assert layout.stale_build("namedaxes") == []


@pytest.mark.parametrize(
    "change, message",
    [
        (
            lambda s, b: (s / "02_b.ipynb").write_text('{"cells": ["02_b reworked"]}'),
            r"^02_b: build/course/source differs from solutions$",
        ),
        (lambda s, b: (s / "03_c.ipynb").write_text("{}"), r"^03_c: not in build/course$"),
        (lambda s, b: (s / "01_a.ipynb").unlink(), r"^01_a: in build/course, no longer in solutions$"),
        (lambda s, b: (b / "gradebook.db").unlink(), r"^build/course is not laid out$"),
    ],
    ids=["source-reworked", "assignment-added", "assignment-removed", "never-laid-out"],
)
def test_a_stale_build_is_named(course, change, message):
    change(*course)
    why = layout.stale_build("namedaxes")
    assert len(why) == 1 and re.match(message, why[0]), why


def test_the_command_exits_1_and_says_why(course, capsys):
    (course[0] / "02_b.ipynb").write_text('{"cells": ["02_b reworked"]}')
    assert layout.main(["built", "namedaxes"]) == 1
    assert (
        capsys.readouterr().out.strip()
        == "hub layout: out of date, rebuilding: 02_b: build/course/source differs from solutions"
    )
    (course[0] / "02_b.ipynb").write_text('{"cells": ["02_b"]}')
    assert layout.main(["built", "namedaxes"]) == 0
