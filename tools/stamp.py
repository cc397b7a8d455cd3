"""Is a generated set of files still what its inputs generate, without generating it again? A content stamp.

    stamp = notebooks_stamp()           # notebooks/, the editions and build/course, from solutions/ and locale/
    if not stamp.fresh(): ...            # regenerate or check the slow way; it writes the stamp when all is well
    stamp.write()

A stamp is a small JSON file holding the SHA-256 of every input file (the sources, the catalogs, the
generator's own code, nbgrader's version) and of every output file it made, each set hashed by path and
content. `fresh()` hashes both sets again: equal means nothing changed since the last generation or check
that passed, so the generated files are still what the inputs generate. Anything else (a source edited, a
generated notebook edited by hand or deleted, a catalog changed, another nbgrader) is not fresh, and the
caller runs the full check, which refuses stale notebooks. Hashing the ~50 files takes a few hundredths of a
second, where `tools.generate_notebooks --check` runs nbgrader on every notebook (26-28 s on 2 cores).

Only the standard library: `make release` asks before anything heavy is imported.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from courseinfo.course import EDITIONS, NOTEBOOKS, ROOT, SOLUTIONS, built_course

__all__ = ["Stamp", "notebooks_stamp", "edition_stamp"]

# what the notebook generator reads besides solutions/ and the catalogs: its own code and what it imports
GENERATOR_CODE = (
    "tools/generate_notebooks.py",
    "tools/translate/*.py",
    "tools/handin.py",
    "courseinfo/*.py",
    "namedaxes/i18n.py",
    "autograder/course/discovery.py",
)


def _files(patterns: tuple[str, ...]) -> list[Path]:
    """The files the glob patterns name (relative to the checkout, or absolute)."""
    found: set[Path] = set()
    for pattern in patterns:
        root, pattern = (Path("/"), pattern.lstrip("/")) if Path(pattern).is_absolute() else (ROOT, pattern)
        found.update(p for p in root.glob(pattern) if p.is_file())
    return sorted(found)


def _digest(paths: list[Path], extra: str = "") -> str:
    h = hashlib.sha256(extra.encode())
    for path in paths:
        h.update(str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path).encode() + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def _nbgrader() -> str:
    try:
        return "nbgrader " + metadata.version("nbgrader")
    except metadata.PackageNotFoundError:
        return "no nbgrader"


@dataclass(frozen=True)
class Stamp:
    """The stamp file `path` of the outputs `outputs` made from the inputs `inputs` (glob patterns, each set
    read again at every call: a file added or removed changes its hash)."""

    path: Path
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]

    def _now(self) -> dict:
        return {
            "inputs": _digest(_files(self.inputs), _nbgrader()),
            "outputs": _digest(_files(self.outputs)),
        }

    def fresh(self) -> bool:
        """The outputs are what the inputs made when the stamp was written (and there are some)."""
        try:
            stamped = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
        return bool(_files(self.outputs)) and stamped == self._now()

    def write(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(self._now(), indent=1) + "\n", encoding="utf-8")

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def notebooks_stamp() -> Stamp:
    """notebooks/, the editions (solutions/LANG, notebooks/LANG) and the English course build/course (its source/
    and release/), as `tools.generate_notebooks` makes them from solutions/ and the catalogs."""
    course = _rel(built_course())
    editions = tuple(f"{_rel(folder)}/{lang}/*.ipynb" for lang in EDITIONS for folder in (SOLUTIONS, NOTEBOOKS))
    return Stamp(
        built_course() / "notebooks.stamp",
        inputs=(f"{_rel(SOLUTIONS)}/*.ipynb", "locale/*/notebooks/*.po", *GENERATOR_CODE),
        outputs=(
            f"{_rel(NOTEBOOKS)}/*.ipynb",
            *editions,
            f"{course}/nbgrader_config.py",
            f"{course}/source/*/*.ipynb",
            f"{course}/release/*/*.ipynb",
        ),
    )


def edition_stamp(course: Path, lang: str) -> Stamp:
    """An edition's course folder (`tools.handin.layout_edition`: source/ and release/ from solutions/LANG and
    notebooks/LANG, checked against nbgrader's own release of each)."""
    course = Path(course).resolve()
    inside = _rel(course) if course.is_relative_to(ROOT) else None
    outputs = ("nbgrader_config.py", "source/*/*.ipynb", "release/*/*.ipynb")
    return Stamp(
        course / "edition.stamp",
        inputs=(f"{_rel(SOLUTIONS)}/{lang}/*.ipynb", f"{_rel(NOTEBOOKS)}/{lang}/*.ipynb", *GENERATOR_CODE),
        outputs=tuple(f"{inside}/{o}" for o in outputs) if inside else tuple(str(course / o) for o in outputs),
    )
