"""Unit tests of intake/placement.py.

Submissions folders, zips (extraction stays inside its target) and course folders placed, links never
followed.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import autograder_specs as specs

from autograder.intake.placement import place_course, place_submissions, safe_extract
from autograder.publish.outputs import missing_reason as _missing_reason

NOTEBOOKS = {f"{specs.A02}.ipynb": specs.A02, f"{specs.A01}.ipynb": specs.A01}


def _write(path: Path, data: bytes = b"{}") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def test_placement_of_a_submissions_folder(tmp_path):
    root = tmp_path / "class"
    _write(root / "ann" / "02_scaled_sum.ipynb")
    _write(root / "ann" / "01_axis_names.ipynb")
    _write(root / "Zoë Ünal" / "02_scaled_sum.ipynb")
    _write(root / "bob" / "02_scaled_sum" / "02_scaled_sum.ipynb")  # nbgrader's layout
    _write(root / "bob" / "02_scaled_sum" / "timestamp.txt")  # clutter
    _write(root / "cy" / "02_scaled_sum-Copy1.ipynb")
    _write(root / "cy" / "answers.py")
    _write(root / "cy" / ".ipynb_checkpoints" / "02_scaled_sum-checkpoint.ipynb")
    _write(root / "dee" / "deep" / "02_scaled_sum.ipynb")
    (root / "empty").mkdir()
    _write(root / "README.md")
    with place_submissions(root, NOTEBOOKS) as intake:
        assert intake.students == {"ann", "Zoë Ünal", "bob", "cy", "dee", "empty"}
        assert sorted(intake.placed) == [
            ("Zoë Ünal", specs.A02),
            ("ann", specs.A01),
            ("ann", specs.A02),
            ("bob", specs.A02),
        ]
        reasons = {u.origin: u.reason for u in intake.unplaced}
        assert "renamed" in reasons["class/cy/02_scaled_sum-Copy1.ipynb"]
        assert "not a notebook (.py)" in reasons["class/cy/answers.py"]
        assert "unexpected folder" in reasons["class/dee/deep"]
        assert "top level" in reasons["class/README.md"]
        assert intake.empty == {"empty"} and intake.clutter == 2
        assert "renamed" in _missing_reason(intake, "cy", specs.A02, "02_scaled_sum.ipynb")
        assert "empty submission" in _missing_reason(intake, "empty", specs.A02, "02_scaled_sum.ipynb")


def test_placement_of_zips(tmp_path):
    whole = tmp_path / "whole.zip"  # a zip of the whole class folder
    whole.write_bytes(
        specs.zip_bytes({"class/ann/02_scaled_sum.ipynb": b"{}", "class/Łukasz K/01_axis_names.ipynb": b"{}"})
    )
    with place_submissions(whole, NOTEBOOKS) as intake:
        assert sorted(intake.placed) == [("ann", specs.A02), ("Łukasz K", specs.A01)]
    one = tmp_path / "Ann Lee.zip"  # one student's zip, notebooks at its root
    one.write_bytes(specs.zip_bytes({"02_scaled_sum.ipynb": b"{}"}))
    with place_submissions(one, NOTEBOOKS) as intake:
        assert sorted(intake.placed) == [("Ann Lee", specs.A02)]
    folder = tmp_path / "class2"  # a folder of per-student zips
    folder.mkdir()
    (folder / "bo.zip").write_bytes(specs.zip_bytes({"bo/02_scaled_sum.ipynb": b"{}"}))
    (folder / "bad.zip").write_bytes(b"not a zip")
    with place_submissions(folder, NOTEBOOKS) as intake:
        assert sorted(intake.placed) == [("bo", specs.A02)]
        assert [u.student for u in intake.unplaced] == ["bad"]


def test_zip_extraction_stays_inside_the_target(tmp_path):
    evil = tmp_path / "evil.zip"
    with zipfile.ZipFile(evil, "w") as zf:
        zf.writestr("../escape.txt", "x")
        zf.writestr("/abs.txt", "x")
        zf.writestr("ok/02_scaled_sum.ipynb", "{}")
    target = tmp_path / "t"
    target.mkdir()
    safe_extract(evil, target)
    assert not (tmp_path / "escape.txt").exists()
    assert sorted(str(p.relative_to(target)) for p in target.rglob("*") if p.is_file()) == ["ok/02_scaled_sum.ipynb"]


def test_placement_of_a_course_folder_and_links(tmp_path):
    course = tmp_path / "course"
    _write(course / "submitted" / "ann" / specs.A02 / "02_scaled_sum.ipynb")
    _write(course / "submitted" / "ann" / specs.A02 / "mine.ipynb")
    _write(tmp_path / "secret.ipynb")
    (course / "submitted" / "bob").mkdir()
    (course / "submitted" / "bob" / "02_scaled_sum.ipynb").symlink_to(tmp_path / "secret.ipynb")
    with place_course(course, NOTEBOOKS) as intake:
        assert sorted(intake.placed) == [("ann", specs.A02)]
        reasons = {u.origin: u.reason for u in intake.unplaced}
        assert "does not match the assignment folder" in reasons[f"submitted/ann/{specs.A02}/mine.ipynb"]
        assert "symbolic link" in reasons["submitted/bob/02_scaled_sum.ipynb"]


def test_a_reserved_name_is_refused_and_ids_equal_but_for_spaces_collide(tmp_path):
    """Issue 58: `Points Possible` was graded and became a second maxima row in the Canvas export; `alice` and
    `alice ` were two students. Now the first is refused with its reason, the two are a conflict naming both
    folders (neither graded, nothing merged), and a lone id with no twin is graded as before."""
    root = tmp_path / "class"
    for name in ("Points Possible", "points possible ", "alice", "alice ", " bob"):
        _write(root / name / "02_scaled_sum.ipynb")
    with place_submissions(root, NOTEBOOKS) as intake:
        assert sorted(intake.placed) == [(" bob", specs.A02)]
        reasons = sorted(u.reason for u in intake.unplaced)
        assert reasons == [
            "not a usable student id: 'Points Possible' is the name of a row the LMS exports write themselves "
            "(Canvas's row of maxima); not graded",
            "not a usable student id: 'points possible' is the name of a row the LMS exports write themselves "
            "(Canvas's row of maxima); not graded",
        ]
        assert sorted(u.student for u in intake.conflicts) == ["alice", "alice "]
        said = {u.reason for u in intake.conflicts}
        assert said == {
            "the folders 'alice' and 'alice ' name the same student (they differ only in Unicode normalization, "
            "letter case or spaces around the name): neither is graded; rename one and grade again"
        }


def test_a_compile_cache_in_a_hand_in_is_ignored_never_an_unplaceable_row(tmp_path):
    """An older `make lab` put JAX's cache in the notebook's folder (work/.jax-cache) and Submit handed it in:
    the notebook is graded, the cache is counted for the summary's note, and nothing is unplaceable."""
    course = tmp_path / "course"
    handed = course / "submitted" / "ann" / specs.A02
    _write(handed / "02_scaled_sum.ipynb")
    for i in range(3):
        _write(handed / "work" / ".jax-cache" / f"jit_f-{i}-cache", b"x")
    _write(handed / ".jax-cache" / "jit_g-cache", b"x")
    _write(course / "submitted" / "bob" / specs.A02 / "work" / "notes.txt")  # a real folder: still reported
    with place_course(course, NOTEBOOKS) as intake:
        assert sorted(intake.placed) == [("ann", specs.A02)]
        assert [u.origin for u in intake.unplaced] == [f"submitted/bob/{specs.A02}/work"]
        assert intake.caches == [f"submitted/ann/{specs.A02}/.jax-cache", f"submitted/ann/{specs.A02}/work"]
        assert "ann" not in intake.empty
