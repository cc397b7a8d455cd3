"""Which assignments there are: the nbgrader source notebooks of a course."""
from __future__ import annotations

import importlib.util
from pathlib import Path

from .notebooks import SourceNotebook
from .records import GraderError

__all__ = ["repo_root", "package_dir", "discover_sources"]


def repo_root() -> Path:
    return Path(__file__).resolve().parent.parent


def package_dir(name: str) -> Path | None:
    """The folder of an importable package (without importing it)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def discover_sources(course: Path, only: list[str]) -> dict[str, SourceNotebook]:
    """Source notebooks: <course>/source/<id>/<id>.ipynb, else the repository's solutions/<id>.ipynb."""
    found: dict[str, Path] = {}
    source_dir = course / "source"
    if source_dir.is_dir():
        for folder in sorted(p for p in source_dir.iterdir() if p.is_dir() and not p.name.startswith(".")):
            nbs = sorted(p for p in folder.glob("*.ipynb"))
            if len(nbs) > 1:
                raise GraderError(f"{folder}: more than one notebook; the autograder expects one per assignment")
            if nbs:
                found[folder.name] = nbs[0]
    if not found:
        for nb in sorted((repo_root() / "solutions").glob("*.ipynb")):
            found[nb.stem] = nb
    if only:
        unknown = sorted(set(only) - set(found))
        if unknown:
            raise GraderError(f"unknown assignment(s): {', '.join(unknown)} (known: {', '.join(found) or 'none'})")
        found = {k: v for k, v in found.items() if k in only}
    if not found:
        raise GraderError(f"no source notebooks found (looked in {source_dir} and {repo_root() / 'solutions'})")
    sources = {}
    for aid, path in found.items():
        try:
            sources[aid] = SourceNotebook.load(aid, path)
        except Exception as err:  # noqa: BLE001
            raise GraderError(f"cannot read the source notebook {path}: {err}") from err
        if not sources[aid].test_cells:
            raise GraderError(f"{path}: no graded test cells")
    return sources
