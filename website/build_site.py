"""`make site`: build the course's static website into build/site/ (English) and build/site/zh/.

    .venv/bin/python -m website.build_site [--sphinx .venv-site/bin/python] [-j JOBS]

Design, the pipeline in four steps, each in its own file:
1. execute_notebooks.py runs every solved notebook of both editions on 8 simulated devices, in
   the course's venv (this interpreter), or finds it in build/site-cache/ under the hash of what
   it depends on;
2. compose_pages.py makes each notebook page from the student release and those outputs;
3. landing_pages.py writes the landing page and the syllabus from the notebooks;
4. Sphinx (myst-nb, sphinx-book-theme: conf.py) renders both editions, at the same time, in the
   site's own venv (.venv-site, website/requirements.txt), so the course's lock and Colab's stay as
   they are.

Reuse: step 1 runs no kernel for an unchanged notebook; steps 2-3 rewrite a source only when its
text changed, so Sphinx's incremental build re-renders only those pages; and when nothing that
goes into the site changed since the last build (the stamp build/site-cache/site-key: the page
sources, website/ and the site's lock), Sphinx does not start at all. A change in website/ (templates,
style, configuration, texts) rebuilds both editions from scratch. A cold build on 2 cores is
dominated by step 1 (two notebooks at a time).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from website import compose_pages, execute_notebooks, landing_pages, settings

STAMP = settings.CACHE / "site-key"


def _digest(paths) -> str:
    digest = hashlib.sha256()
    for path in sorted(paths):
        digest.update(str(path.relative_to(settings.ROOT)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _site_files() -> list[Path]:
    return [p for p in settings.SITE.rglob("*") if p.is_file() and "__pycache__" not in p.parts]


def _sources() -> list[Path]:
    return [p for p in settings.SOURCES.rglob("*") if p.is_file()]


def _prune_sources(expected: set[Path]) -> bool:
    """Delete generated sources that no notebook generates any more; True if any was deleted."""
    stale = [p for p in _sources() if p not in expected]
    for path in stale:
        path.unlink()
    return bool(stale)


def _sphinx(python: str, edition: str, fresh: bool) -> subprocess.Popen:
    out = settings.folder(settings.OUT, edition)
    cmd = [
        python,
        "-m",
        "sphinx",
        "-b",
        "html",
        "-q",
        "-c",
        str(settings.SITE),
        "-d",
        str(settings.DOCTREES / edition),
        str(settings.SOURCES / edition),
        str(out),
    ]
    if fresh:
        cmd.insert(3, "-E")
    env = dict(os.environ, NAMEDAXES_SITE_EDITION=edition, PYTHONDONTWRITEBYTECODE="1")
    return subprocess.Popen(cmd, env=env, cwd=settings.ROOT)


def build(sphinx_python: str, jobs: int | None = None) -> int:
    started = time.monotonic()
    executions = execute_notebooks.execute(jobs)
    expected, pages = set(), []
    for edition in settings.EDITIONS:
        landing_pages.write(edition)
        expected |= {settings.SOURCES / edition / "index.md", settings.SOURCES / edition / "syllabus.md"}
    for ex in executions:
        page = compose_pages.write_notebook_page(ex.edition, ex.notebook_id, ex.executed)
        expected.add(page.path)
        pages.append(page)
    pruned = _prune_sources(expected)
    site_key = _digest(_site_files())
    key = f"site {site_key}\nsources {_digest(_sources())}\n"
    previous = STAMP.read_text() if STAMP.exists() else ""
    if previous == key and all((settings.folder(settings.OUT, e) / "index.html").exists() for e in settings.EDITIONS):
        print(settings.colab_note(settings.origin()))
        print(
            f"build/site/ is up to date ({len(pages)} notebook pages; nothing changed since it was built): "
            f"{time.monotonic() - started:.1f} s"
        )
        return 0
    fresh = pruned or not previous.startswith(f"site {site_key}\n")
    if fresh:
        for path in (settings.OUT, settings.DOCTREES):
            shutil.rmtree(path, ignore_errors=True)
    STAMP.unlink(missing_ok=True)
    print(f"Rendering both editions with Sphinx ({'from scratch' if fresh else 'the changed pages'})...", flush=True)
    procs = {edition: _sphinx(sphinx_python, edition, fresh) for edition in settings.EDITIONS}
    failed = [edition for edition, proc in procs.items() if proc.wait()]
    if failed:
        print(f"make site: Sphinx failed for the {', '.join(failed)} edition (its messages are above)", file=sys.stderr)
        return 1
    (settings.OUT / ".nojekyll").touch()
    STAMP.write_text(key)
    count = sum(
        1
        for p in settings.OUT.rglob("*.html")  # pages, not the theme's fragments in _static/
        if not any(part.startswith("_") for part in p.relative_to(settings.OUT).parts)
    )
    executed = sum(not e.cached for e in executions)
    print(settings.colab_note(settings.origin()))
    print(
        f"Built build/site/ in {time.monotonic() - started:.0f} s: {count} pages ({len(pages)} notebook pages, "
        f"{executed} notebooks executed now, {len(executions) - executed} from the cache). "
        f"Open build/site/index.html, or publish the folder (GitHub Pages ready)."
    )
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sphinx",
        default=str(settings.ROOT / ".venv-site" / "bin" / "python"),
        help="the Python of the site's venv (with Sphinx)",
    )
    parser.add_argument("-j", "--jobs", type=int, default=None, help="notebooks executed at a time")
    args = parser.parse_args(argv)
    return build(args.sphinx, args.jobs)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
