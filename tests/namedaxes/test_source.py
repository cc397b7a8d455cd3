"""namedaxes/source.py: notebooks 10 and 11 show the course's own functions; the Chinese edition shows their code
without the English docstrings and comments (issue 61), the English edition as written."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from namedaxes import source

ROOT = Path(__file__).resolve().parents[2]


def example(w, xs):
    """An English docstring
    over two lines."""
    total = 0  # an English comment
    # a comment line of its own
    for x in xs:
        total += w * x  # another
    return total


def test_the_chinese_edition_shows_only_the_code():
    said = source.source_text(example, "zh")
    assert said == ("def example(w, xs):\n    total = 0\n    for x in xs:\n        total += w * x\n    return total\n")
    assert source.source_text(example, "en").count("English") == 2  # as written


@pytest.mark.parametrize("aid", ["10_training_at_scale", "11_step_anatomy"])
def test_no_cell_prints_a_course_function_with_inspect(aid):
    for folder in ("solutions", "solutions/zh"):
        nb = json.loads((ROOT / folder / f"{aid}.ipynb").read_text(encoding="utf-8"))
        code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
        assert "inspect.getsource" not in code and re.search(r"show_source\(\w+\.\w+\)", code)
