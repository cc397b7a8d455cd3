"""The site's settings: the one place that names the repository, its branch, the editions and the folders.

Design: every other module of website/ reads these constants; nothing else spells the repository URL.
The "Open in Colab" links open the student notebooks (notebooks/, notebooks/zh/) of REPOSITORY at
BRANCH, so a fork publishes a site whose buttons open the fork: set `NAMEDAXES_SITE_REPOSITORY`
(and `NAMEDAXES_SITE_BRANCH`) for `make site`, or change the defaults here. Only github.com
repositories can be opened by Colab's `/github/` route, so anything else is refused at build time.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from courseinfo.course import BUILD, LANGUAGES, NOTEBOOKS, ROOT, SOLUTIONS, edition_folder, notebook_ids

__all__ = ["ROOT", "BUILD", "SOLUTIONS", "RELEASE", "EDITIONS", "notebook_ids", "folder", "colab_url"]

DEFAULT_REPOSITORY = "https://github.com/namedaxes/jax-named-axes-course"
REPOSITORY = os.environ.get("NAMEDAXES_SITE_REPOSITORY") or DEFAULT_REPOSITORY
BRANCH = os.environ.get("NAMEDAXES_SITE_BRANCH") or "main"
COLAB = "https://colab.research.google.com/github"

# Sphinx's name of a language where it is not the course's (courseinfo.course.LANGUAGES).
_SPHINX_LANGUAGE = {"zh": "zh_CN"}
# Editions: code -> (Sphinx language, subfolder of the site). English is the site's root, Chinese in zh/.
EDITIONS = {
    lang: (_SPHINX_LANGUAGE.get(lang, lang), edition_folder(Path(), lang).as_posix().strip(".")) for lang in LANGUAGES
}

RELEASE = NOTEBOOKS  # the student notebooks (the pages' cells); SOLUTIONS: the solved sources (executed)
CACHE = BUILD / "site-cache"  # executed notebooks, keyed by the hash of what they depend on
SOURCES = BUILD / "site-src"  # the generated Sphinx sources, one folder per edition
DOCTREES = BUILD / "site-doctrees"  # Sphinx's incremental-build state, one folder per edition
OUT = BUILD / "site"  # the site: English at the root, the Chinese edition in zh/
SITE = Path(__file__).resolve().parent  # this folder: conf.py, templates, static files


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
        else "the default in website/settings.py"
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


def folder(base: Path, edition: str) -> Path:
    """`base` for English, `base/zh` for the Chinese edition (the repository's layout)."""
    return edition_folder(base, edition)


def colab_url(edition: str, notebook_id: str) -> str:
    """Colab's URL for the student notebook of `edition` in REPOSITORY at BRANCH."""
    path = folder(Path("notebooks"), edition) / f"{notebook_id}.ipynb"
    return f"{COLAB}/{github_path()}/blob/{BRANCH}/{path.as_posix()}"
