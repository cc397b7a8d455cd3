"""A class to grade, built from this repository's notebooks: the course folder, the release a student
starts from, and the command line that grades a class.

One implementation of "build a class of N students and grade it", for `python -m autograder.bench`
(`make bench-grade`) and the grader's tests, which both grade made-up students with the real command
line in a subprocess. Which students there are and what they wrote is the caller's (the benchmark's
right/wrong/unanswered mix, the tests' fixture specs); this module lays out the folders and says how
they are graded. The grader itself never imports it.

Threat model: none of its own. It writes only the folders it is given, from the repository's notebooks
and from notebooks its caller made; what a made-up student wrote is hostile only once the grader runs
it, in the sandbox.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import nbformat

from .discovery import repo_root

__all__ = ["release_notebook", "typed_solution", "make_course", "write_class", "grade_command"]


def release_notebook(assignment: str) -> nbformat.NotebookNode:
    """notebooks/<assignment>.ipynb; the same nbgrader transformation of the source if not generated yet."""
    path = repo_root() / "notebooks" / f"{assignment}.ipynb"
    if path.exists():
        return nbformat.read(path, as_version=4)
    from nbgrader.preprocessors import ClearHiddenTests, ClearOutput, ClearSolutions

    nb = nbformat.read(repo_root() / "solutions" / f"{assignment}.ipynb", as_version=4)
    for pre in (ClearSolutions(), ClearHiddenTests(), ClearOutput()):
        nb, _ = pre.preprocess(nb, {})
    return nb


def typed_solution(text: str) -> str:
    """A solution cell's code as a student would type it: the solution markers removed."""
    return "\n".join(
        line for line in text.splitlines() if "### BEGIN SOLUTION" not in line and "### END SOLUTION" not in line
    )


def make_course(course: Path, assignments: Iterable[str]) -> Path:
    """An nbgrader course folder at `course` holding solutions/<id>.ipynb as source/<id>/<id>.ipynb."""
    for aid in assignments:
        (course / "source" / aid).mkdir(parents=True)
        shutil.copy(repo_root() / "solutions" / f"{aid}.ipynb", course / "source" / aid / f"{aid}.ipynb")
    return course


def write_class(klass: Path, notebooks: Mapping[str, Mapping[str, bytes]]) -> Path:
    """A submissions folder: `klass/<student>/<assignment>.ipynb` for each student -> assignment -> bytes."""
    for student, by_assignment in notebooks.items():
        (klass / student).mkdir(parents=True, exist_ok=True)
        for aid, data in by_assignment.items():
            (klass / student / f"{aid}.ipynb").write_bytes(data)
    return klass


def grade_command(
    course: Path,
    *extra: str,
    submissions: Path | None = None,
    out: Path | None = None,
    cache: Path | None = None,
    jobs: int = 2,
    timeout: float | None = None,
) -> list[str]:
    """`python -m autograder grade` of `course` (its own submitted/ and grades/ unless `submissions` and
    `out` are given), `extra` options last; run it with the repository as the working folder."""
    cmd = [sys.executable, "-m", "autograder", "grade", "--course", str(course)]
    for option, value in (("--submissions", submissions), ("--out", out), ("--cache", cache)):
        cmd += [option, str(value)] if value is not None else []
    cmd += ["-j", str(jobs)] + (["--timeout", f"{timeout:g}"] if timeout is not None else [])
    return cmd + list(extra)
