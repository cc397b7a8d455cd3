"""Refresh the docs' screenshots from the browser tests' (build/screenshots/ -> docs/images/).

    python -m tools.doc_images [NAME ...]   # after the browser tests that take them (TAKEN_BY); default: all

The docs show what the tests saw on real pages: the class report of a class graded for real, the course
website. A screenshot is never drawn or edited by hand; the test that takes it names it.
"""

from __future__ import annotations

import shutil
import sys

from courseinfo.course import ROOT

SCREENSHOTS = ROOT / "build" / "screenshots"
DOCS = ROOT / "docs" / "images"
# docs/images/<name> <- build/screenshots/<name>, taken by
TAKEN_BY = {
    "class-report-misconception-map.png": "tests/browser/test_instructor_loop.py",
    "site-landing-en.png": "tests/browser/test_site.py",
    "site-notebook-en.png": "tests/browser/test_site.py",
    "site-notebook-zh.png": "tests/browser/test_site.py",
}


def main(argv: list[str] | None = None) -> int:
    names = (sys.argv[1:] if argv is None else argv) or list(TAKEN_BY)
    unknown = [n for n in names if n not in TAKEN_BY]
    if unknown:
        print(f"no test takes {', '.join(unknown)} (known: {', '.join(TAKEN_BY)})", file=sys.stderr)
        return 2
    missing = []
    for name, test in ((n, TAKEN_BY[n]) for n in names):
        taken = SCREENSHOTS / name
        if not taken.is_file():
            missing.append(f"{name} (run {test})")
            continue
        shutil.copyfile(taken, DOCS / name)
        print(f"docs/images/{name} <- build/screenshots/{name} ({test})")
    for line in missing:
        print(f"not taken yet: {line}", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
