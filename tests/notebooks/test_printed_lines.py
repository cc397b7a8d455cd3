"""What notebook 11's cells print, read from their sources in both editions (issue 61's minors): the
zero-measure table's header lines up with its rows, no count is printed as a set literal ("{8} devices") or
with a plural that 1 makes wrong ("1 reductions")."""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EDITIONS = {
    "en": ROOT / "solutions" / "11_step_anatomy.ipynb",
    "zh": ROOT / "solutions" / "zh" / "11_step_anatomy.ipynb",
}


def _cell(path: Path, cell_id: str) -> str:
    nb = json.loads(path.read_text(encoding="utf-8"))
    return next("".join(c["source"]) for c in nb["cells"] if c.get("id") == cell_id)


def _width(text: str) -> int:
    """Columns on a terminal or a notebook's monospaced output: a wide (CJK) character takes two."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


@pytest.mark.parametrize("edition", EDITIONS)
def test_the_zero_measure_tables_header_ends_where_its_columns_end(edition):
    code = _cell(EDITIONS[edition], "zero-measure")
    header = re.search(r'print\("([^"]+)"\)', code).group(1)
    row = re.search(r'print\(f"\{stage:(\d+)\}(\s+)\{stored:>(\d+),\} \{want_stored:>(\d+),\}', code)
    stage, gap, stored, want = int(row.group(1)), len(row.group(2)), int(row.group(3)), int(row.group(4))
    ends = [stage + gap + stored, stage + gap + stored + 1 + want]  # where the two numbers' columns end
    labels = re.findall(r"\S+", header)
    compiled, predicted = ("compiled", "predicted") if edition == "en" else ("编译", "预测")
    at = [_width(header[: header.index(compiled) + len(compiled)])]
    at.append(_width(header[: header.index(predicted, header.index(compiled)) + len(predicted)]))
    assert at == ends, (header, labels)


@pytest.mark.parametrize("edition", EDITIONS)
def test_counts_are_printed_as_numbers_with_a_plural_that_fits(edition):
    nb = json.loads(EDITIONS[edition].read_text(encoding="utf-8"))
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    prints = re.findall(r'print\(f"[^\n]*', code)
    assert not [p for p in prints if "{set(" in p], "a set printed as {8}"
    assert not [p for p in prints if re.search(r"\} reductions", p)], "1 reductions"
