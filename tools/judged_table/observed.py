"""The reference observations the table reads (the package's docstring, step 1): each solution notebook run as the
grader's reference run runs it, or its observations read back from a folder (`--save`'s, or the grader's own
reference cache of this checkout, verified as the grader verifies it).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from courseinfo.course import SOLUTIONS

__all__ = ["run_observations", "read_observations"]


def run_observations(notebook: str, save: Path | None = None) -> tuple[dict, float]:
    """Run `solutions/<notebook>.ipynb` as the grader's reference run does: (grade id -> observation, seconds)."""
    from tools.export_references import observations, run_reference

    with tempfile.TemporaryDirectory(prefix="judged-table-") as folder:
        seconds = run_reference(notebook, Path(folder), "", platforms=())
        found = observations(notebook, Path(folder))
        if save is not None:
            target = save / notebook
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(folder, target)
    return found, seconds


def read_observations(root: Path, notebook: str) -> dict:
    """grade id -> observation of `notebook` from `root/<notebook>/` (`--save`), else from the grader's reference
    cache `root/<notebook>-<key>/` of this checkout (verified as the grader verifies it)."""
    from autograder.course import SourceNotebook
    from tools.export_references import observations

    saved = root / notebook
    if saved.is_dir():
        return observations(notebook, saved)
    from autograder.run import load_references, reference_key

    source = SourceNotebook.load(notebook, SOLUTIONS / f"{notebook}.ipynb")
    folder = root / f"{notebook}-{reference_key(source)[:16]}"
    refs = load_references(folder, source)
    if refs is None:
        raise SystemExit(
            f"{notebook}: neither {saved} nor this checkout's reference {folder} holds its observations "
            "(run without --observations, or `make grade` first)"
        )
    return dict(refs)
