"""A notebook that uses a deprecated API fails `make test-newest`: its kernels start with the IPython profile
tests/notebooks/ipython (IPYTHONDIR, the Makefile's NEWEST_RUN), whose start-up file makes a deprecation set
off by a notebook's own code, or by the course's package, an error. Shown here on a kernel started with that
profile, as nbval starts them; a library's own deprecation stays a warning."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

PROFILE = Path(__file__).resolve().parent / "ipython"


def _run(monkeypatch, *sources: str):
    monkeypatch.setenv("IPYTHONDIR", str(PROFILE))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    NotebookClient(nb, timeout=60, kernel_name="python3").execute()
    return nb


def test_a_deprecation_in_a_notebooks_code_is_an_error(monkeypatch):
    with pytest.raises(CellExecutionError) as failed:
        _run(monkeypatch, "import warnings\nwarnings.warn('with mesh: is deprecated', DeprecationWarning)")
    assert (failed.value.ename, failed.value.evalue) == ("DeprecationWarning", "with mesh: is deprecated")


def test_a_librarys_own_deprecation_stays_a_warning(monkeypatch):
    nb = _run(
        monkeypatch,
        "import warnings\n"
        "warnings.warn_explicit('old', DeprecationWarning, 'lib.py', 1, module='somelib')\n"
        "print('ran')",
    )
    assert "ran" in "".join(out.get("text", "") for out in nb.cells[0].outputs)
