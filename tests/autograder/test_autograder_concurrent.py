"""Two `make grade` runs at once share the reference cache without breaking it (issue 8).

Both start on an empty cache: one computes the reference (under the
assignment's lock file), the other waits for it and reuses it; both grade
the class the same. Independent of the shared fixture class (its own cache).
"""

from __future__ import annotations

import autograder_specs as specs
import machine
import nbformat
from autograder_harness import CELL_TIMEOUT, read_csv, start_grading

from autograder.course.classroom import grade_command, make_course, write_class
from autograder.run.references import SECRET_NAME


def test_two_runs_at_once_compute_the_reference_once_and_agree(tmp_path):
    aid = specs.A01
    course = make_course(tmp_path / "course", [aid])
    source = nbformat.read(specs.REPO / "solutions" / f"{aid}.ipynb", as_version=4)
    answers = {"right": {}, "unanswered": {"rank_weighted_sum_answer": None}}
    sub = write_class(
        tmp_path / "class",
        {
            s: {aid: specs.notebook_for(specs.Spec(s, "ok", assignment=aid, answers=a), source, {})}
            for s, a in answers.items()
        },
    )
    cache = tmp_path / "cache" / "references"
    procs = []
    for n in (1, 2):
        cmd = grade_command(
            course,
            "--no-feedback",
            submissions=sub,
            out=tmp_path / f"out{n}",
            cache=cache,
            jobs=1,
            timeout=CELL_TIMEOUT,
        )
        procs.append(start_grading(cmd, tmp_path))
    results = [
        machine.communicate(p, quiet_s=600, what="the command of two runs at once compute the reference once and agree")
        for p in procs
    ]
    for p, (_, err) in zip(procs, results):
        assert p.returncode == 0, err[-3000:]
    computed = [err for _, err in results if "running the reference solution" in err]
    waited = [err for _, err in results if "waiting for another grading run" in err]
    assert len(computed) == 1 and len(waited) == 1, [err[-1500:] for _, err in results]
    first, second = (read_csv(tmp_path / f"out{n}" / "grades.csv") for n in (1, 2))
    assert first == second
    scores = {r["student"]: float(r["score"]) for r in first}
    assert scores["right"] == float(first[0]["max_score"]) > scores["unanswered"]
    refs = [d for d in cache.iterdir() if d.is_dir()]
    assert len(refs) == 1 and (refs[0] / "meta.json").exists(), refs  # one complete reference, no debris
    assert sorted(p.name for p in cache.iterdir() if not p.is_dir()) == [SECRET_NAME, f"{aid}.lock"]
