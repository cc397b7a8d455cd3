"""The similarity report (autograder/publish/similarity.py) on a generated class of notebook 04's `train`:
one copied pair (renamed names, new comments), honest answers written differently, and three students
who hand in the reference solution's way word for word (the one way many are right alike)."""

from __future__ import annotations

import json

import pytest
from answer_class import AID, COPY, INDEXED, LOOP, REFERENCE, SCAN, hand_ins, source

from autograder.publish.similarity import SHOWN_AT, write_similarity

CLASS = {"ann": LOOP, "ben": COPY, "cy": SCAN, "dee": INDEXED + "# </pre><script>alert(1)</script>\n"}
CLASS |= {"eve": REFERENCE, "fay": REFERENCE, "gus": REFERENCE}


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("similarity")
    write_similarity(tmp, {AID: source()}, hand_ins(tmp, CLASS))
    data = {r["grade_id"]: r for r in json.loads((tmp / "similarity.json").read_text())}
    return data, (tmp / "similarity.html").read_text()


def test_the_copied_pair_ranks_first_and_honest_pairs_are_not_listed(report):
    data, _ = report
    train = data["train_answer"]
    assert train["answers"] == 7
    pairs = [(p["a"], p["b"], p["score"]) for p in train["pairs"]]
    assert pairs[0][:2] == ("ann", "ben") and pairs[0][2] >= 0.9
    assert len(pairs) == 1, pairs  # cy, dee and the reference's way: below SHOWN_AT with everyone
    assert SHOWN_AT > 0.5


def test_the_reference_solution_written_alike_is_too_short_to_accuse(report):
    data, _ = report
    assert data["train_answer"]["too_short"] == 3  # eve, fay and gus: nothing distinctive is left
    assert all(r["pairs"] == [] for gid, r in data.items() if gid != "train_answer")  # answered as released


def test_the_page_shows_both_answers_as_inert_text(report):
    _, page = report
    assert "Content-Security-Policy" in page and "<script>" not in page
    assert "seen.append(l)" in page and "history.append(loss)" in page
    assert "&lt;/pre&gt;&lt;script&gt;" not in page  # dee is listed with nobody, so not shown at all


def test_a_batch_of_other_assignments_keeps_this_ones_pairs(tmp_path):
    """`make grade ASSIGNMENT=...` of another assignment rewrites only that one's sections: 04's copied pair and
    its two answers stay listed (from the last similarity.json), and 04 is not listed twice."""
    write_similarity(tmp_path, {AID: source()}, hand_ins(tmp_path, CLASS))
    write_similarity(tmp_path, {}, hand_ins(tmp_path, {}))  # a batch whose assignments are all others
    data = [r for r in json.loads((tmp_path / "similarity.json").read_text()) if r["grade_id"] == "train_answer"]
    assert len(data) == 1 and data[0]["pairs"][0]["a"] == "ann" and data[0]["pairs"][0]["b"] == "ben"
    page = (tmp_path / "similarity.html").read_text()
    assert page.count("ann &amp; ben") == 1 and "seen.append(l)" in page


@pytest.mark.parametrize(
    "previous",
    [
        "[{]",
        '[{"assignment": "x"}]',
        '[{"assignment": "x", "grade_id": "g", '
        '"answers": 2, "too_short": 0, "pairs": [{"a": "a", "b": "b", "score": 1, '
        '"shared": 9}], "shown": {}}]',
    ],
)
def test_a_previous_file_that_is_not_ours_is_redone_not_trusted(tmp_path, previous):
    """Unreadable, incomplete, or listing a pair without its answers: nothing of it is kept (this batch's
    sections are written; the others come back with the next whole batch)."""
    (tmp_path / "similarity.json").write_text(previous)
    write_similarity(tmp_path, {AID: source()}, hand_ins(tmp_path, CLASS))
    assert {r["assignment"] for r in json.loads((tmp_path / "similarity.json").read_text())} == {AID}


def test_a_linked_previous_file_is_never_followed(tmp_path):
    secret = tmp_path / "elsewhere.json"
    secret.write_text('[{"assignment": "x", "grade_id": "g", "answers": 0, "too_short": 0, "pairs": [], "shown": {}}]')
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "similarity.json").symlink_to(secret)
    write_similarity(tmp_path / "out", {AID: source()}, hand_ins(tmp_path, CLASS))
    assert {r["assignment"] for r in json.loads((tmp_path / "out" / "similarity.json").read_text())} == {AID}
