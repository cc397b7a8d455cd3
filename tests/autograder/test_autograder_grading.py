"""End-to-end: the fixture class graded once (see conftest.py), checked spec by spec."""

from __future__ import annotations

import json
import re
import shutil
import sys

import autograder_specs as specs
import machine
import pytest
from autograder_harness import CELL_TIMEOUT, grade_cmd, read_csv

from autograder.course.classroom import grade_command
from autograder.records import CSV_COLUMNS

ISOLATED = shutil.which("bwrap") is not None


def _ids(spec):
    return f"{spec.assignment}:{spec.student}"


def test_the_batch_completes(graded_class):
    assert graded_class.returncode == 0, graded_class.stderr[-3000:]
    assert "submission(s) graded" in graded_class.stdout
    assert "grading [" in graded_class.stderr  # the progress bar


@pytest.mark.parametrize("spec", specs.SPECS, ids=_ids)
def test_fixture_scores_and_status(graded_class, spec):
    if spec.student == "sandbox_probe" and not ISOLATED:
        pytest.skip("bubblewrap is not installed: no isolation to prove")
    points = graded_class.points[spec.assignment]
    passes = spec.passes(set(points))
    assert passes <= set(points), f"spec names unknown test cells: {passes - set(points)}"
    row = graded_class.row(spec.student, spec.assignment)
    result = graded_class.result(spec.student, spec.assignment)
    got_passed = {c["grade_id"] for c in result["cells"] if c["passed"]}
    assert row["status"] == spec.expect_status, row
    assert got_passed == passes, (row, result["cells"])
    assert float(row["score"]) == sum(points[g] for g in passes), row
    assert float(row["max_score"]) == sum(points.values()), row
    assert specs.expected_reason_ok(spec, row["reason"]), f"reason {row['reason']!r} !~ {spec.reason!r}"
    for gid, pattern in spec.cell_reasons.items():
        cell = [c for c in result["cells"] if c["grade_id"] == gid][0]
        assert re.search(pattern, cell["reason"]), (gid, cell["reason"])
    for cell in result["cells"]:
        assert cell["passed"] or cell["reason"], cell  # every failure says why
        assert "record(" not in cell["reason"] and "BEGIN HIDDEN" not in cell["reason"]


def test_one_row_per_student_and_assignment(graded_class):
    assert list(read_csv(graded_class.out / "grades.csv")[0].keys()) == CSV_COLUMNS
    header = (graded_class.out / "grades.csv").read_text(encoding="utf-8").splitlines()[0]
    assert header == ",".join(CSV_COLUMNS)
    students = {s.student for s in specs.SPECS}
    assignments = sorted(graded_class.points)
    graded = [
        (r["student"], r["assignment"]) for r in graded_class.rows if r["status"] not in ("unplaceable", "conflict")
    ]
    assert sorted(graded) == sorted((s, a) for s in students for a in assignments)
    for student in students - {s.student for s in specs.SPECS if s.assignment == specs.A01}:
        row = graded_class.row(student, specs.A01)
        assert row["status"] == "missing" and float(row["score"]) == 0


def test_unplaceable_files_are_reported(graded_class):
    unplaced = {(r["student"], r["reason"].split(":")[0]): r for r in graded_class.rows if r["status"] == "unplaceable"}
    names = {k[1].rsplit("/", 1)[-1] for k in unplaced}
    assert {"loose_file.ipynb", "notes.txt", "draft.py", "02_scaled_sum (1).ipynb"} <= names, unplaced
    loose = [r for r in graded_class.rows if r["status"] == "unplaceable" and "loose_file" in r["reason"]][0]
    assert loose["student"] == "" and "top level" in loose["reason"]
    renamed = graded_class.row("renamed_notebook")
    assert "02_scaled_sum (1).ipynb" in renamed["reason"]
    assert "unplaceable files" in graded_class.stdout and "notes.txt" in graded_class.stdout


def test_feedback_per_student_and_assignment_without_hidden_tests(graded_class):
    for row in graded_class.rows:
        if row["status"] in ("unplaceable", "conflict"):
            continue
        page = graded_class.out / "feedback" / row["student"] / f"{row['assignment']}.html"
        assert page.exists(), page
        text = page.read_text(encoding="utf-8")
        assert "BEGIN HIDDEN TESTS" not in text and "record(" not in text, page
        assert f"Score: {row['score']} / {row['max_score']}" in text, page
    text = (graded_class.out / "feedback" / "mistake_no_collective" / f"{specs.A02}.html").read_text()
    assert "the program returns float32[2], expected float32[2, 3]" in text  # the judge's words, not the kernel's
    assert "Traceback" not in text and "q.scaled_sum.observe" not in text


def test_gradebook_matches_grades_csv(graded_class):
    from nbgrader.api import Gradebook

    csv_scores = {
        (r["student"], r["assignment"]): float(r["score"])
        for r in graded_class.rows
        if r["status"] not in ("missing", "unplaceable", "conflict")
    }
    with Gradebook(f"sqlite:///{graded_class.out / 'gradebook.db'}") as gb:
        for (student, assignment), score in csv_scores.items():
            assert gb.find_submission(assignment, student).score == pytest.approx(score), (student, assignment)
    autograded = graded_class.out / "autograded" / "correct" / specs.A02 / f"{specs.A02}.ipynb"
    assert autograded.exists()


def test_nothing_escaped_the_sandbox(graded_class):
    assert not (specs.REPO / "pwned.txt").exists()
    assert not (graded_class.submissions / "pwned.txt").exists()


def _reference_dirs(course):
    from autograder.course.discovery import discover_sources
    from autograder.run.references import reference_key

    return {f"{aid}-{reference_key(src)[:16]}" for aid, src in discover_sources(course, []).items()}


def test_reference_observations_are_cached(graded_class):
    for assignment, points in graded_class.points.items():
        metas = [json.loads(m.read_text()) for m in graded_class.cache.glob(f"{assignment}-*/meta.json")]
        assert any(sorted(m["tests"]) == sorted(points) for m in metas), metas
    xla = graded_class.cache.parent / "xla-cache"
    assert any((d / ".complete").exists() and any(d.glob("*-cache")) for d in xla.glob(f"{specs.A02}-*"))


def test_regrading_gives_identical_results(graded_class, tmp_path):
    """Regrade a mix of students (crashes, tampering, odd ids, a zip) into a copy of the output:
    the merged grades.csv and results.json are byte-identical, and the cached references are reused."""
    out = tmp_path / "out"
    shutil.copytree(graded_class.out, out)
    before_csv = (out / "grades.csv").read_bytes()
    before_json = (out / "results.json").read_bytes()
    students = [
        "crash_os_exit",
        "tamper_patch_check_and_collectives",
        "José María Ñúñez Ø",
        "zoe zipped",
        "corrupt_json",
    ]
    cmd = grade_cmd(graded_class.course, graded_class.submissions, out, graded_class.cache)
    for s in students:
        cmd += ["--student", s]
    proc = machine.run(
        cmd,
        cwd=specs.REPO,
        capture_output=True,
        text=True,
        quiet_s=600,
        what="the command of regrading gives identical results",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    if "running the reference solution" in proc.stderr:  # only if namedaxes changed meanwhile
        assert sorted(_reference_dirs(graded_class.course)) != graded_class.reference_dirs
    assert (out / "grades.csv").read_bytes() == before_csv
    assert (out / "results.json").read_bytes() == before_json


def test_bad_arguments_exit_non_zero(graded_class, tmp_path):
    base = [sys.executable, "-m", "autograder", "grade", "--course", str(graded_class.course)]
    proc = machine.run(
        base + ["--submissions", str(tmp_path / "nope"), "--out", str(tmp_path / "o")],
        cwd=specs.REPO,
        capture_output=True,
        text=True,
        quiet_s=120,
        what="the command of bad arguments exit non zero",
    )
    assert proc.returncode == 1 and "submissions not found" in proc.stderr
    proc = machine.run(
        base + ["--submissions", str(graded_class.submissions), "--out", str(tmp_path / "o"), "--student", "nobody"],
        cwd=specs.REPO,
        capture_output=True,
        text=True,
        quiet_s=120,
        what="the command of bad arguments exit non zero",
    )
    assert proc.returncode == 1 and "nobody" in proc.stderr


def test_course_folder_mode_feeds_nbgrader_export(graded_class, tmp_path):
    """Without --submissions: nbgrader's course folder in, its gradebook/autograded/feedback out;
    `nbgrader export` then reports the autograder's scores."""
    import nbformat

    course = tmp_path / "course"
    (course / "source" / specs.A02).mkdir(parents=True)
    shutil.copy(specs.REPO / "solutions" / f"{specs.A02}.ipynb", course / "source" / specs.A02)
    (course / "nbgrader_config.py").write_text("c = get_config()  # noqa: F821\nc.CourseDirectory.course_id = 'test'\n")
    bindir = str(specs.Path(sys.executable).parent)
    env = {**__import__("os").environ, "PATH": bindir + ":" + __import__("os").environ["PATH"]}
    machine.run(
        [f"{bindir}/nbgrader", "generate_assignment", specs.A02, "--log-level=ERROR"],
        cwd=course,
        env=env,
        check=True,
        capture_output=True,
        quiet_s=300,
        what="the command of course folder mode feeds nbgrader export",
    )
    source_nb = nbformat.read(specs.REPO / "solutions" / f"{specs.A02}.ipynb", as_version=4)
    chosen = {
        s.student: s
        for s in specs.SPECS
        if s.student in ("correct", "mistake_no_collective") and s.assignment == specs.A02
    }
    for student, spec in chosen.items():
        folder = course / "submitted" / student / specs.A02
        folder.mkdir(parents=True)
        (folder / f"{specs.A02}.ipynb").write_bytes(specs.notebook_for(spec, source_nb, {}))
        (folder / "timestamp.txt").write_text("2025-01-01 00:00:00")
    proc = machine.run(
        grade_command(course, cache=graded_class.cache, timeout=CELL_TIMEOUT),
        cwd=specs.REPO,
        capture_output=True,
        text=True,
        quiet_s=600,
        what="the command of course folder mode feeds nbgrader export",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = {r["student"]: r for r in read_csv(course / "grades" / "grades.csv")}
    points = graded_class.points[specs.A02]
    want = {s: sum(points[g] for g in spec.passes(set(points))) for s, spec in chosen.items()}
    assert {s: float(r["score"]) for s, r in rows.items()} == want
    for student in chosen:
        assert (course / "autograded" / student / specs.A02 / f"{specs.A02}.ipynb").exists()
        assert (course / "feedback" / student / specs.A02 / f"{specs.A02}.html").exists()
    machine.run(
        [f"{bindir}/nbgrader", "export", "--log-level=ERROR"],
        cwd=course,
        env=env,
        check=True,
        capture_output=True,
        quiet_s=300,
        what="the command of course folder mode feeds nbgrader export",
    )
    exported = {r["student_id"]: float(r["score"]) for r in read_csv(course / "grades.csv")}
    assert exported == want


def test_results_and_summary_say_which_protections_were_in_force(graded_class):
    data = json.loads((graded_class.out / "results.json").read_text())
    keys = [p["key"] for p in data["protections"]]
    assert {"allow_list_view", "dedicated_uid", "memory_cgroup", "process_limit", "disk_quota", "network_off"} <= set(
        keys
    ), keys
    in_force = sum(1 for p in data["protections"] if p["available"])
    assert f"protections: {in_force} of {len(keys)} in force" in graded_class.stdout


def test_a_wrong_answer_gets_the_judges_words_and_finding_for_the_map(graded_class):
    """A graded kernel's visible checks leave the judging to the judge: a wrong answer's cell is 0 with the
    judge's verdict on the hidden inputs as its reason, which is also the cell's `finding`, the data the
    class's misconception map groups (issues 39, 46); an unwritten answer still reads "not written yet" (its
    visible part fails: the answer does not export), and a right one has no finding."""
    rows = {(r["student"], r["assignment"]): r for r in graded_class.results}

    def cells(student, aid):
        return {c["grade_id"]: c for c in rows[(student, aid)]["cells"]}

    total = cells("mistake_pmean_for_psum", "02_scaled_sum")["scaled_sum_total"]
    assert total["points"] == 0 and not total["passed"] and "mean over devices" in total["reason"]
    assert "mean over devices" in total["finding"]["en"] and total["finding"]["zh"]  # the known mistake, named
    ring = cells("honest_wrong_09", "09_large_models")["causal_ring_attention_ring"]
    assert ring["points"] == 0 and "seen=all_gather over 'sequence_axis'" in ring["finding"]["key"]
    assert "all_gather" in ring["finding"]["en"] and ring["finding"]["zh"]
    assert all(c["passed"] and "finding" not in c for c in cells("correct", "02_scaled_sum").values())
    unanswered = cells("unanswered", "02_scaled_sum")["scaled_sum_total"]
    assert unanswered["points"] == 0 and "not written yet" in unanswered["reason"]
