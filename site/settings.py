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

DEFAULT_REPOSITORY = "https://github.com/namedaxes/jax-named-axes-course"
REPOSITORY = os.environ.get("NAMEDAXES_SITE_REPOSITORY") or DEFAULT_REPOSITORY
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


def origin() -> str | None:
    """The checkout's `origin` remote as owner/name on github.com (None: no such remote, or not GitHub)."""
    import subprocess

    try:
        url = subprocess.run(
            ["git", "config", "--get", "remote.origin.url"], cwd=ROOT, capture_output=True, text=True, timeout=10
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"github\.com[:/]([A-Za-z0-9][A-Za-z0-9-]*)/([A-Za-z0-9._-]+?)(?:\.git)?/?$", url)
    return f"{m.group(1)}/{m.group(2)}" if m else None


def colab_note(checkout: str | None = None) -> str:
    """What `make site` says about its Colab buttons: which repository and branch they open, where that
    was set, how to change it, and a warning when this checkout's origin is another GitHub repository."""
    where = (
        "set by NAMEDAXES_SITE_REPOSITORY"
        if os.environ.get("NAMEDAXES_SITE_REPOSITORY")
        else "the default in site/settings.py"
    )
    note = (
        f"Colab buttons open the notebooks of https://github.com/{github_path()} at branch {BRANCH} ({where}); "
        f"a fork sets its own: make site NAMEDAXES_SITE_REPOSITORY=https://github.com/OWNER/NAME "
        f"[NAMEDAXES_SITE_BRANCH=BRANCH]"
    )
    if checkout and checkout.lower() != github_path().lower():
        note += (
            f"\nWARNING: this checkout's origin is github.com/{checkout}, but the site's Colab buttons open "
            f"github.com/{github_path()}: students of this site would open that repository's notebooks"
        )
    return note


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
