"""The course's constants: its nbgrader course ids, its editions, its notebooks and its folders.

Design: the one place these are written, the language list included. The kernel package (its
i18n), the grader, tools/, hub/, the website, the Makefile's Python calls and the tests read them
from here instead of spelling `namedaxes-zh`, `build/zh/course` or `("en", "zh")` again. English is the
course itself (course id `namedaxes`, folders solutions/, notebooks/, build/course); every other
language in EDITIONS is an edition with the same layout one folder down (solutions/zh/,
notebooks/zh/, build/zh/course) and the course id `namedaxes-<lang>`. Plain data and pure
functions: importing this module reads no file and starts nothing.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions"  # the hand-written, solved notebooks: the one source
NOTEBOOKS = ROOT / "notebooks"  # the student release, generated from SOLUTIONS
BUILD = ROOT / "build"
EXCHANGE = BUILD / "exchange"  # nbgrader's exchange on one machine (EXCHANGE=dir or a hub's replaces it)

COURSE_ID = "namedaxes"  # the English nbgrader course
EDITIONS = ("zh",)  # languages besides English, each its own nbgrader course
LANGUAGES = ("en", *EDITIONS)


def _edition(lang: str) -> str:
    if lang not in EDITIONS:
        raise ValueError(f"unknown edition {lang!r} (known: {', '.join(EDITIONS)})")
    return lang


def course_id(lang: str = "") -> str:
    """The nbgrader course id of an edition: `namedaxes` for English ("" or "en"), `namedaxes-zh`."""
    return COURSE_ID if lang in ("", "en") else f"{COURSE_ID}-{_edition(lang)}"


COURSES = tuple(course_id(lang) for lang in LANGUAGES)  # ("namedaxes", "namedaxes-zh")


def edition_of(course: str) -> str:
    """The edition of a course id: "" for the English course, "zh" for `namedaxes-zh`."""
    for lang in EDITIONS:
        if course == course_id(lang):
            return lang
    if course == COURSE_ID:
        return ""
    raise ValueError(f"unknown course {course!r} (known: {', '.join(COURSES)})")


def edition_folder(base: Path, lang: str = "") -> Path:
    """`base` for English, `base/<lang>` for an edition (solutions/zh, notebooks/zh, build/zh)."""
    return base if lang in ("", "en") else base / _edition(lang)


def built_course(lang: str = "") -> Path:
    """The nbgrader course folder `make notebooks` (English) or `tools.handin layout` lays out."""
    return edition_folder(BUILD, lang) / "course"


def notebook_ids(solutions: Path = SOLUTIONS) -> list[str]:
    """Every course notebook by its solution's file name (NN_topic), in order (of `solutions`: a tool
    that works on another folder, as the tests' small courses do, passes its own)."""
    return sorted(p.stem for p in solutions.glob("*.ipynb"))
