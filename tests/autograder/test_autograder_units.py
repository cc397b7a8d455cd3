"""Unit tests of the autograder's trusted pieces: placement, merging, comparison (no kernels)."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import autograder_specs as specs
import nbformat
import numpy as np
import pytest
from judge_helpers import observations_match, said

from autograder.course.notebooks import SourceNotebook, UnreadableNotebook, build_graded, parse_submission
from autograder.intake.placement import place_course, place_submissions, safe_extract
from autograder.judge.compare import compare, load_observations, normalize
from autograder.publish.outputs import missing_reason as _missing_reason
from autograder.run.executor import guard_index, harvest_observations
from autograder.run.namespace_guard import split_hidden

SOURCE = specs.REPO / "solutions" / f"{specs.A02}.ipynb"
NOTEBOOKS = {f"{specs.A02}.ipynb": specs.A02, f"{specs.A01}.ipynb": specs.A01}


@pytest.fixture(scope="module")
def source():
    return SourceNotebook.load(specs.A02, SOURCE)


def student(source, answers=None, tamper=()):
    spec = specs.Spec("x", "ok", answers=answers or {}, tamper=tuple(tamper))
    return nbformat.reads(specs.notebook_for(spec, source.nb, {}).decode(), as_version=4)


def by_gid(nb, gid):
    return [c for c in nb.cells if specs.nb_meta(c).get("grade_id") == gid]


# ---------------------------------------------------------------- merging
def test_source_notebook_lists_tests_answers_and_stubs(source):
    assert source.test_ids() == [
        "scaled_sum_total",
        "scaled_sum_uses_psum",
        "scaled_mean_value",
        "global_max_share_value",
    ]
    assert source.answer_ids == ["scaled_sum_answer", "scaled_mean_answer", "global_max_share_answer"]
    assert "raise NotImplementedError()" in source.stubs["scaled_sum_answer"]
    assert "lax.psum" not in source.stubs["scaled_sum_answer"]


def test_graded_notebook_takes_answers_from_student_and_everything_else_from_source(source):
    nb = student(
        source,
        {"scaled_sum_answer": "def scaled_sum(x):\n    return 'mine'\n"},
        tamper=[specs.edit_test_cell("scaled_sum_total", "pass"), specs.change_points("scaled_mean_value", 99)],
    )
    graded, report = build_graded(source, nb)
    assert by_gid(graded, "scaled_sum_answer")[0].source.endswith("return 'mine'\n")
    assert by_gid(graded, "scaled_sum_total")[0].source == by_gid(source.nb, "scaled_sum_total")[0].source
    assert "### BEGIN HIDDEN TESTS" in by_gid(graded, "scaled_sum_total")[0].source
    assert by_gid(graded, "scaled_mean_value")[0].metadata["nbgrader"]["points"] == 2
    assert [c.source for c in graded.cells if c.cell_type == "markdown"] == [
        c.source for c in source.nb.cells if c.cell_type == "markdown"
    ]
    assert report.answers_missing == [] and report.added_cells == 0


def test_deleted_duplicated_and_retagged_test_cells_are_the_sources(source):
    nb = student(
        source,
        tamper=[
            specs.delete_cells("scaled_sum_total"),
            specs.duplicate_cell("scaled_mean_value", 2),
            specs.retag_test_cell("scaled_sum_uses_psum"),
        ],
    )
    graded, report = build_graded(source, nb)
    tests = [specs.nb_meta(c)["grade_id"] for c in graded.cells if specs.nb_meta(c).get("grade")]
    assert tests == source.test_ids()
    # the retagged cell (new id, new grade_id) is kept as a student cell, without nbgrader metadata
    added = [c for c in graded.cells if c.metadata.get("autograder", {}).get("student_added")]
    assert [c.source for c in added] == ["print('all good')"]
    assert "nbgrader" not in added[0].metadata
    assert report.duplicates == 2  # the two copies


def test_missing_answer_gets_the_released_stub_and_first_duplicate_wins(source):
    nb = student(
        source,
        {"scaled_mean_answer": "def scaled_mean(x):\n    return 1\n"},
        tamper=[specs.delete_cells("scaled_sum_answer"), specs.duplicate_cell("scaled_mean_answer")],
    )
    for c in nb.cells:  # make the copies differ
        if c.id.startswith("scaled-mean-answer-copy"):
            c.source = "def scaled_mean(x):\n    return 2\n"
    graded, report = build_graded(source, nb)
    assert report.answers_missing == ["scaled_sum_answer"]
    assert by_gid(graded, "scaled_sum_answer")[0].source == source.stubs["scaled_sum_answer"]
    assert by_gid(graded, "scaled_mean_answer")[0].source.endswith("return 1\n")
    assert len(by_gid(graded, "scaled_mean_answer")) == 1


def test_answer_cell_without_metadata_is_found_by_cell_id(source):
    nb = student(
        source,
        {"scaled_sum_answer": "def scaled_sum(x):\n    return 'by id'\n"},
        tamper=[specs.strip_answer_metadata("scaled_sum_answer")],
    )
    graded, report = build_graded(source, nb)
    assert by_gid(graded, "scaled_sum_answer")[0].source.endswith("return 'by id'\n")
    assert by_gid(graded, "scaled_sum_answer")[0].metadata["nbgrader"]["solution"] is True


def test_added_cells_keep_their_place_but_never_run_before_the_setup(source):
    nb = student(source, tamper=[specs.add_cell_after("scaled_sum_answer", "mine = 1")])
    nb.cells.insert(0, nbformat.v4.new_code_cell("import jax; jax.devices()"))
    graded, _ = build_graded(source, nb)
    ids = [c.get("id") for c in graded.cells]
    srcs = [c.source for c in graded.cells]
    assert srcs.index("mine = 1") == ids.index("scaled-sum-answer") + 1
    assert srcs.index("import jax; jax.devices()") == ids.index("imports") + 1
    assert guard_index(graded) == ids.index("imports")


def test_no_student_notebook_means_all_stubs(source):
    graded, report = build_graded(source, None)
    assert report.answers_missing == source.answer_ids
    assert len(graded.cells) == len(source.nb.cells)


@pytest.mark.parametrize(
    "data, reason",
    [
        (b'{"cells": [', "invalid JSON"),
        (b"\xff\xfe\x00garbage", "not UTF-8"),
        (b"[1, 2, 3]", "no list of cells"),
        (b'{"nbformat": 4}', "no list of cells"),
    ],
)
def test_unreadable_submissions_say_why(data, reason):
    with pytest.raises(UnreadableNotebook, match=reason):
        parse_submission(data)


def test_split_hidden_separates_visible_and_hidden_parts(source):
    visible, hidden = split_hidden(by_gid(source.nb, "scaled_sum_total")[0].source)
    assert "q.scaled_sum.check(scaled_sum)" in visible and "record(" not in visible
    assert hidden.startswith("### BEGIN HIDDEN TESTS") and 'record("scaled_sum_total"' in hidden
    assert split_hidden("x = 1") == ("x = 1", "")


# ---------------------------------------------------------------- comparison
def test_arrays_match_within_tolerance_with_same_shape_and_dtype():
    ref = normalize({"out": np.array([1.0, 2.0], np.float32), "axes": ["devices"]})
    assert compare(ref, normalize({"out": np.array([1.0, 2.000001], np.float32), "axes": ["devices"]})).passed
    v = said(compare(ref, normalize({"out": np.array([1.0, 2.5], np.float32), "axes": ["devices"]})))
    assert not v.passed and "out: values differ" in v.reason() and "0.5" not in v.reason()
    v = said(compare(ref, normalize({"out": np.array([1.0, 2.0], np.float16), "axes": ["devices"]})))
    assert not v.passed and "expected shape (2,) and dtype float32, got shape (2,) and dtype float16" in v.reason()
    v = said(compare(ref, normalize({"out": np.array([[1.0, 2.0]], np.float32), "axes": ["devices"]})))
    assert not v.passed and "shape (1, 2)" in v.reason()
    nan = normalize({"out": np.array([np.nan, 1.0])})
    assert compare(nan, nan).passed


def test_axes_must_include_every_reference_axis():
    ref = normalize({"axes": ["devices"]})
    assert compare(ref, normalize({"axes": ["batch", "devices"]})).passed
    v = said(compare(ref, normalize({"axes": []})))
    assert not v.passed and "expected a collective over 'devices', but it performs no collective" in v.reason()
    v = said(compare(ref, normalize({"axes": ["batch"]})))
    assert "it communicates over 'batch'" in v.reason()
    assert not compare(ref, normalize({"axes": "devices"})).passed


def test_json_values_must_be_equal_and_keys_present():
    ref = normalize({"flag": True, "n": 3, "names": ["a", "b"], "x": 0.1})
    assert compare(ref, normalize({"flag": True, "n": 3, "names": ["a", "b"], "x": 0.1000001, "extra": 1})).passed
    assert not compare(ref, normalize({"flag": 1, "n": 3, "names": ["a", "b"], "x": 0.1})).passed
    assert not compare(ref, normalize({"flag": True, "n": 3, "names": ["b", "a"], "x": 0.1})).passed
    v = said(compare(ref, normalize({"flag": True, "n": 3, "names": ["a", "b"]})))
    assert not v.passed and "x: missing from the results" in v.reason()
    assert not compare(normalize({"out": np.zeros(2)}), {"out": [0.0, 0.0]}).passed


def test_observations_match_accepts_jax_arrays():
    import jax.numpy as jnp

    assert observations_match(
        {"out": jnp.ones(3), "axes": ["devices"]}, {"out": np.ones(3, np.float32), "axes": ["devices"]}
    )


def test_observations_load_from_record_files_without_pickles(tmp_path):
    import os

    from namedaxes import grading

    os.environ[grading.OBSERVE_DIR_ENV] = str(tmp_path)
    try:
        grading.record("g1", {"out": np.arange(3.0), "axes": ["devices"], "ok": True})
    finally:
        del os.environ[grading.OBSERVE_DIR_ENV]
    got = harvest_observations(tmp_path, "g1")
    obs = load_observations(*got)
    assert obs["axes"] == ["devices"] and obs["ok"] is True and obs["out"].tolist() == [0.0, 1.0, 2.0]
    buf = io.BytesIO()
    np.save(buf, np.array([object()], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError):
        load_observations(buf.getvalue(), None)


def test_harvest_does_not_follow_links(tmp_path):
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"axes": ["devices"]}))
    observe = tmp_path / "observe"
    observe.mkdir()
    (observe / "g.json").symlink_to(secret)
    assert harvest_observations(observe, "g") is None
    link = tmp_path / "linkdir"
    link.symlink_to(observe)
    (observe / "h.json").write_text("{}")
    assert harvest_observations(link, "h") is None
    assert harvest_observations(observe, "h") == (None, b"{}")


# ---------------------------------------------------------------- placement
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


# ---------------------------------------------------------------- a kernel that never starts
def test_a_kernel_that_never_starts_gives_an_error_row(source, tmp_path):
    from autograder.course.notebooks import MergeReport
    from autograder.judge.score import submission_status
    from autograder.publish.words import say
    from autograder.records import Kind
    from autograder.run.executor import run_notebook
    from autograder.run.kernel import Kernel
    from autograder.sandbox.launch import Sandbox

    sandbox = Sandbox(isolate=False, python=str(tmp_path / "no-such-python"))
    graded, _ = build_graded(source, None)
    made = []

    def new_kernel(n):
        made.append(n)
        return Kernel(tmp_path / "work", sandbox, label=f"k{n}").start()

    run = run_notebook(graded, {}, None, new_kernel, cell_timeout=5, start_timeout=20)
    assert made == [0, 1]  # one retry, then give up
    assert run.start_error and all(o.status == "not_run" for o in run.outcomes.values())
    status, reason = submission_status(run, MergeReport(), [], str(tmp_path))
    assert status == "error" and reason.kind is Kind.KERNEL_NOT_STARTED  # data; the words come at publishing
    assert say(reason, "en").startswith("the kernel did not start")


# ---------------------------------------------------------------- observation files are checked before inflating
def _npz_member(name: str, header: dict, data: bytes, compression=None) -> bytes:
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression or zipfile.ZIP_STORED) as zf, zf.open(name, "w", force_zip64=True) as fh:
        head = io.BytesIO()
        np.lib.format.write_array_header_1_0(head, header)
        fh.write(head.getvalue())
        for start in range(0, len(data), 2**24):
            fh.write(data[start : start + 2**24])
    return buf.getvalue()


def test_a_deflate_bomb_observation_is_refused_before_it_inflates():
    import resource
    import zipfile

    bomb = _npz_member(
        "x.npy", {"descr": "<f8", "fortran_order": False, "shape": (2**27,)}, bytes(2**30), zipfile.ZIP_DEFLATED
    )
    assert len(bomb) < 2 * 2**20  # 1 GiB of zeros in about 1 MiB
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(ValueError, match="would inflate to more than 64 MiB"):
        load_observations(bomb, None)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 64 * 1024  # KiB: nothing inflated


def test_an_observation_header_declaring_a_huge_or_object_array_is_refused():
    huge = _npz_member("y.npy", {"descr": "<f8", "fortran_order": False, "shape": (10**10,)}, bytes(64))
    with pytest.raises(ValueError, match="declares more data than it holds"):
        load_observations(huge, None)
    objects = _npz_member("z.npy", {"descr": "|O", "fortran_order": False, "shape": (1,)}, bytes(8))
    with pytest.raises(ValueError, match="holds Python objects"):
        load_observations(objects, None)
    many = io.BytesIO()
    np.savez(many, **{f"a{i}": np.zeros(1) for i in range(600)})
    with pytest.raises(ValueError, match="too many recorded arrays"):
        load_observations(many.getvalue(), None)
    fine = io.BytesIO()
    np.savez(fine, x=np.arange(3.0))
    assert load_observations(fine.getvalue(), None)["x"].tolist() == [0.0, 1.0, 2.0]


def test_grading_runs_xla_with_one_thread_per_computation_and_keeps_the_callers_flags():
    from autograder.sandbox.build import grading_xla_flags as _grading_xla_flags

    assert _grading_xla_flags("--xla_force_host_platform_device_count=8").split() == [
        "--xla_force_host_platform_device_count=8",
        "--xla_cpu_multi_thread_eigen=false",
        "intra_op_parallelism_threads=1",
    ]
    mine = "--xla_cpu_multi_thread_eigen=true intra_op_parallelism_threads=2"
    assert _grading_xla_flags(mine) == mine  # an instructor's own choice wins
