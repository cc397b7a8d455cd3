"""The site's settings: the one place that names the repository, its branch, the editions and the folders.

Design: every other module of site/ reads these constants; nothing else spells the repository URL.
The "Open in Colab" links open the student notebooks (notebooks/, notebooks/zh/) of REPOSITORY at
BRANCH, so a fork publishes a site whose buttons open the fork: set `NAMEDAXES_SITE_REPOSITORY`
(and `NAMEDAXES_SITE_BRANCH`) for `make site`, or change the defaults here. Only github.com
repositories can be opened by Colab's `/github/` route, so anything else is refused at build time.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

REPOSITORY = os.environ.get("NAMEDAXES_SITE_REPOSITORY") or "https://github.com/namedaxes/jax-named-axes-course"
BRANCH = os.environ.get("NAMEDAXES_SITE_BRANCH") or "main"
COLAB = "https://colab.research.google.com/github"

# Editions: (code, Sphinx language, subfolder of the site). English is the site's root, Chinese in zh/.
EDITIONS = {"en": ("en", ""), "zh": ("zh_CN", "zh")}

SOLUTIONS = ROOT / "solutions"  # the solved sources (executed for the pages' outputs)
RELEASE = ROOT / "notebooks"  # the student notebooks (the pages' cells)
BUILD = ROOT / "build"
CACHE = BUILD / "site-cache"  # executed notebooks, keyed by the hash of what they depend on
SOURCES = BUILD / "site-src"  # the generated Sphinx sources, one folder per edition
DOCTREES = BUILD / "site-doctrees"  # Sphinx's incremental-build state, one folder per edition
OUT = BUILD / "site"  # the site: English at the root, the Chinese edition in zh/
SITE = ROOT / "site"  # this folder: conf.py, templates, static files


def github_path() -> str:
    """owner/name of REPOSITORY; a clear error when it is not a github.com repository URL."""
    m = re.fullmatch(r"https://github\.com/([A-Za-z0-9][A-Za-z0-9-]*)/([A-Za-z0-9._-]+?)(?:\.git)?/?", REPOSITORY)
    if not m:
        raise SystemExit(
            f"NAMEDAXES_SITE_REPOSITORY={REPOSITORY!r}: the Colab links need a "
            f"https://github.com/OWNER/NAME repository URL"
        )
    return f"{m.group(1)}/{m.group(2)}"


def notebook_ids() -> list[str]:
    """Every course notebook, by its solution's file name (NN_topic), in order."""
    return sorted(p.stem for p in SOLUTIONS.glob("[0-9][0-9]_*.ipynb"))


def folder(base: Path, edition: str) -> Path:
    """`base` for English, `base/zh` for the Chinese edition (the repository's layout)."""
    sub = EDITIONS[edition][1]
    return base / sub if sub else base


def colab_url(edition: str, notebook_id: str) -> str:
    """Colab's URL for the student notebook of `edition` in REPOSITORY at BRANCH."""
    path = folder(Path("notebooks"), edition) / f"{notebook_id}.ipynb"
    return f"{COLAB}/{github_path()}/blob/{BRANCH}/{path.as_posix()}"
