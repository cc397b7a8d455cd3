"""No JAX API that is gone, renamed or deprecated on a supported line (jax 0.10.2 to 0.12.1) is used anywhere a
student, an instructor or the course's code meets it: the notebooks' code and words (solutions/, the generated
notebooks/ of every edition), the hints and messages (namedaxes/), the catalogs, the docs and the product code.
Each entry says what it was and what the course writes instead; each pattern is shown to catch a use."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# (pattern, a use it must catch, why it is forbidden and what works on every line)
FORBIDDEN = (
    (
        r"\baxis_shapes\s*=",
        "jax.make_mesh(axis_shapes=(2, 4), axis_names=('x', 'y'))",
        "make_mesh's axis_shapes= is axis_sizes= from jax 0.11.1, with no alias: pass the sizes by position",
    ),
    (
        r"\bSingleDeviceSharding\s*\(",
        "jax.sharding.SingleDeviceSharding(devices[0])",
        "SingleDeviceSharding is deprecated in jax 0.12.1: NamedSharding on a one-device mesh works on every line",
    ),
    (
        r"\bcustom_remat\b",
        "jax.custom_remat(f)",
        "jax.custom_remat came in 0.11 and is gone in 0.12: jax.checkpoint with a policy works on every line",
    ),
    (
        r"checkpoint_policies\.[A-Z]\w*|\b(SaveOnlyTheseNames|SaveAnyNamesButThese|SaveAndOffloadOnlyTheseNames"
        r"|EverythingSaveable|NothingSaveable)\b",
        "policy=jax.checkpoint_policies.SaveOnlyTheseNames('h')",
        "the class-named checkpoint policies came in 0.11 and are gone in 0.12: "
        "jax.checkpoint_policies.save_only_these_names works on every line",
    ),
    (
        r"\b(lax|jax\.lax)\.(psend|precv)\b",
        "lax.psend(x, 'stages', perm)",
        "lax.psend and lax.precv are deprecated in 0.12: lax.ppermute works on every line",
    ),
    (
        r"\bwith\s+[\w.]*mesh\w*\s*(:|,|\bas\b)",
        "with mesh:\n    y = f(x)",
        "a Mesh as a context manager is deprecated since 0.10.1: jax.set_mesh(mesh) works on every line",
    ),
)
CODE_AND_WORDS = ("namedaxes", "tools", "autograder", "hub", "website", "courseinfo", "docs", "locale")
FILE_KINDS = (".py", ".md", ".po", ".txt")
NOTEBOOKS = ("solutions", "notebooks")


def _notebook_text(path: Path) -> str:
    """What a notebook teaches: its cells' sources (outputs are what JAX printed, not what the course wrote)."""
    return "\n".join("".join(cell["source"]) for cell in json.loads(path.read_text(encoding="utf-8"))["cells"])


def _texts():
    for path in sorted((ROOT / "README.md", ROOT / "Makefile")):
        yield path, path.read_text(encoding="utf-8")
    for folder in CODE_AND_WORDS:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix in FILE_KINDS and path.is_file():
                yield path, path.read_text(encoding="utf-8")
    for folder in NOTEBOOKS:
        for path in sorted((ROOT / folder).rglob("*.ipynb")):
            yield path, _notebook_text(path)


def test_the_course_uses_no_api_gone_renamed_or_deprecated_on_a_supported_line():
    found = []
    for path, text in _texts():
        for pattern, _, why in FORBIDDEN:
            for m in re.finditer(pattern, text):
                line = text.count("\n", 0, m.start()) + 1
                found.append(f"{path.relative_to(ROOT)}:{line}: {m.group(0)!r}: {why}")
    assert not found, "\n".join(found)


@pytest.mark.parametrize("pattern, use, why", FORBIDDEN, ids=[f[1].split("(")[0] for f in FORBIDDEN])
def test_each_pattern_catches_a_use(pattern, use, why):
    assert re.search(pattern, use), why


@pytest.mark.parametrize(
    "allowed",
    [
        "jax.make_mesh((2, 4), ('x', 'y'), axis_types=(AxisType.Explicit,) * 2)",
        "with jax.set_mesh(mesh):",
        "jax.checkpoint(f, policy=jax.checkpoint_policies.save_only_these_names('h'))",
        "NamedSharding(Mesh(np.array(devices[:1]), ('one',)), P())",
        "lax.ppermute(x, 'stages', perm)",
    ],
)
def test_what_works_on_every_line_is_not_caught(allowed):
    assert not [p for p, _, _ in FORBIDDEN if re.search(p, allowed)]
