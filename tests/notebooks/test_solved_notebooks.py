"""Every solved notebook, both editions, runs top to bottom on 8 simulated devices, each speaking its language.

The executions are the website's (website/execute_notebooks.py: a fresh kernel of this venv per
notebook, in the notebook's folder, no `NAMEDAXES_LANG`, so the set-up cell decides the language
as in a student's kernel; cached in build/site-cache/ under the hash of the notebook, the
namedaxes package, the lock and the Python). They replace nbval on solutions/: nbval ran the same
notebooks in the same venv and, solutions/ keeping no outputs, checked exactly that no cell raised,
which is what an execution for the site checks too (`allow_errors=False`, asserted again below).
So `make test` executes each solved notebook once, for this test and the website's test together
(tests/browser/test_site.py; the per-notebook locks keep two builds from running one twice), and
an unchanged notebook runs no kernel at all. The notebooks of students (notebooks/) stay under nbval.

What is checked beyond nbval: every code cell ran (an execution count, in order), the executed
cells are the solution's current cells, and the editions agree: the same check messages in each
(the same number of "✓" lines in both), and the Chinese edition's check messages are Chinese
while the English edition shows no Chinese at all.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from website import execute_notebooks, settings

ROOT = Path(__file__).resolve().parents[2]

CJK = re.compile(r"[\u4e00-\u9fff]")
PASSED = "\u2713"  # the first character of a passed check's line (namedaxes.checking)
NAME_ONLY = re.compile(r"^\s*\u2713\s+[A-Za-z_]\w*\s*$")  # a summary's line: a name, no words
ANSI = re.compile(r"\x1b\[[0-9;]*m")
IDS = settings.notebook_ids()


@pytest.fixture(scope="session")
def executions() -> dict[tuple[str, str], execute_notebooks.Execution]:
    """As many kernels at a time as there are CPUs: this file is one pytest worker's, so it is the
    longest single item of `make test` unless its notebooks run side by side."""
    return {(e.edition, e.notebook_id): e for e in execute_notebooks.execute()}


def _texts(cell) -> list[str]:
    """The text of each output of a code cell (streams, results, displays; errors by their name)."""
    texts = []
    for out in cell.get("outputs", []):
        if out.output_type == "stream":
            texts.append(out.text)
        elif out.output_type == "error":
            texts.append(f"{out.ename}: {out.evalue}")
        else:
            texts.append(str(out.get("data", {}).get("text/plain", "")))
    return texts


def _executed(executions, edition: str, notebook_id: str):
    return nbformat.read(executions[(edition, notebook_id)].executed, as_version=4)


@pytest.mark.parametrize("edition", sorted(settings.EDITIONS))
@pytest.mark.parametrize("notebook_id", IDS)
def test_the_solved_notebook_ran_every_cell_without_an_error(executions, edition, notebook_id):
    source = nbformat.read(settings.folder(settings.SOLUTIONS, edition) / f"{notebook_id}.ipynb", as_version=4)
    ran = _executed(executions, edition, notebook_id)
    code = [c for c in ran.cells if c.cell_type == "code"]
    assert [c.source for c in code] == [c.source for c in source.cells if c.cell_type == "code"], (
        f"{edition} {notebook_id}: the executed cells are not the solution's current cells"
    )
    counts = [c.execution_count for c in code if c.source.strip()]
    assert counts == list(range(1, len(counts) + 1)), (
        f"{edition} {notebook_id}: expected every code cell to run once, in order; execution counts {counts}"
    )
    errors = [(i, t) for i, c in enumerate(code) for o, t in zip(c.outputs, _texts(c)) if o.output_type == "error"]
    assert not errors, f"{edition} {notebook_id}: a solved notebook must raise nowhere; code cells raised: {errors}"


@pytest.mark.parametrize("notebook_id", IDS)
def test_both_editions_print_the_same_checks_each_in_its_language(executions, notebook_id):
    lines = {}
    for edition in settings.EDITIONS:
        text = "\n".join(
            t for c in _executed(executions, edition, notebook_id).cells if c.cell_type == "code" for t in _texts(c)
        )
        lines[edition] = [ln for ln in text.splitlines() if PASSED in ln]
        if edition == "en":
            assert not CJK.search(text), (
                f"en {notebook_id}: the English edition printed Chinese: "
                f"{[ln for ln in text.splitlines() if CJK.search(ln)][:3]}"
            )
    assert lines["en"], f"{notebook_id}: expected the solved notebook to pass at least one visible check, saw none"
    assert len(lines["zh"]) == len(lines["en"]), (
        f"{notebook_id}: expected as many passed checks in zh as in en ({len(lines['en'])}), saw {len(lines['zh'])}"
    )
    sentences = [ln for ln in lines["zh"] if not NAME_ONLY.match(ANSI.sub("", ln))]
    assert sentences, f"zh {notebook_id}: expected check messages (a sentence per passed check), saw only {lines['zh']}"
    english = [ln for ln in sentences if not CJK.search(ln)]
    assert not english, f"zh {notebook_id}: check messages that are not in Chinese: {english}"
