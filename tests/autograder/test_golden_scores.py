"""Nothing about a grade changes when the grader's code does: the fixture class (conftest.py) gets,
row by row, the scores, statuses and passed cells written down in `golden_scores.json`.

The file was written from the results.json of the grader *before* verdicts became data (issue 17:
the commit before `records.Verdict`), which graded the fixture class's notebooks 01 and 03 (every
student, so missing rows too; `--assignment 01_axis_names --assignment 03_nested_axes`).
`test_fixture_scores_and_status` checks the specs; this checks each of those rows against what the
previous code gave. Fixture students added to the class since (notebooks 09's and 10's `honest_wrong_NN`,
`tamper_NN` and `equivalent_NN`) hand in neither notebook: their rows of 01 and 03 are `missing`, with the same scores
as every such student's (those of the `*_08` students). Regenerate it only when a change is meant to change a
grade, and say so in the commit:

    python tests/autograder/test_golden_scores.py OUT/results.json > tests/autograder/golden_scores.json
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

GOLDEN = Path(__file__).with_name("golden_scores.json")
ISOLATED = shutil.which("bwrap") is not None
# rows whose outcome depends on the machine, not on the code: the sandbox probe scores only where
# bubblewrap isolates it (test_fixture_scores_and_status skips it likewise)
MACHINE_DEPENDENT = {"sandbox_probe"}


def scores(rows: list[dict]) -> dict[str, dict]:
    """What a grade is, row by row: score, maximum, status and the passed cells (no words)."""
    return {
        f"{r['student']} | {r['assignment']} | {r['origin']}": {
            "score": float(r["score"]),
            "max_score": float(r["max_score"]),
            "status": r["status"],
            "passed": sorted(c["grade_id"] for c in r["cells"] if c["passed"]),
            "points": sorted([c["grade_id"], float(c["points"])] for c in r["cells"]),
        }
        for r in rows
    }


def _golden() -> dict[str, dict]:
    return json.loads(GOLDEN.read_text(encoding="utf-8"))


def test_every_row_scores_as_before(graded_class):
    # The rows of the assignments graded then. A hand-in that is no assignment's (assignment "") is left
    # out: which those are depends on the assignments a run grades (that run graded 01 and 03 alone,
    # so a hand-in of 02 was one of them), not on the code.
    golden, got = _golden(), scores(graded_class.results)
    assignments = {key.split(" | ")[1] for key in golden} - {""}
    golden = {key: value for key, value in golden.items() if key.split(" | ")[1] in assignments}
    here = {key for key in got if key.split(" | ")[1] in assignments}
    assert sorted(here) == sorted(golden), "the same rows as before"
    differ = {
        key: (golden[key], got[key])
        for key in golden
        if golden[key] != got[key] and not (key.split(" | ")[0] in MACHINE_DEPENDENT and not ISOLATED)
    }
    assert not differ, differ
    assert any(v["passed"] for v in golden.values()) and any(not v["passed"] for v in golden.values())


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    rows = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))["rows"]
    print(json.dumps(scores(rows), indent=1, sort_keys=True, ensure_ascii=False))
