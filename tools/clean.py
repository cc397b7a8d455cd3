"""`make clean`: delete build/ and .pytest_cache/, unless build/ holds the hand-in loop's state.

    python3 -m tools.clean [--force]

build/ also holds nbgrader's exchange (students' hand-ins) and the built course (collected submissions,
grades, the gradebook): while there are hand-ins in it, nothing is deleted without --force (FORCE=1).
The standard library only: it runs without a venv.
"""

from __future__ import annotations

import argparse
import shutil
import sys

from courseinfo.course import BUILD, EXCHANGE, ROOT, built_course, course_id


def hand_ins() -> list[str]:
    """The folders of hand-ins and collected submissions that are not empty."""
    folders = [EXCHANGE / course_id() / "inbound", built_course() / "submitted"]
    return [str(f.relative_to(ROOT)) for f in folders if f.is_dir() and any(f.iterdir())]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--force", action="store_true", help="delete even students' hand-ins")
    args = parser.parse_args(argv)
    if hand_ins() and not args.force:
        print(
            "make clean would delete students' hand-ins (build/exchange) and collected submissions, grades and the "
            "gradebook (build/course).\nKeep what you need, then: make clean FORCE=1",
            file=sys.stderr,
        )
        return 1
    for folder in (BUILD, ROOT / ".pytest_cache"):
        print(f"rm -rf {folder.relative_to(ROOT)}")
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
