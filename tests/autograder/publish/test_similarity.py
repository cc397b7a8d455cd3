"""The similarity report (autograder/publish/similarity.py) on a generated class of notebook 04's `train`:
one copied pair (renamed names, new comments), honest answers written differently, and three students
who hand in the reference solution's way word for word (the one way many are right alike)."""

from __future__ import annotations

import json

import nbformat
import pytest

from autograder.course.discovery import repo_root
from autograder.course.notebooks import SourceNotebook
from autograder.intake.placement import Intake, Placed
from autograder.publish.similarity import SHOWN_AT, write_similarity

AID = "04_gradient_averaging"
ORIGINAL = """def train(params, sharded_batch, steps):
    history = []
    for step in range(steps):
        params, loss = p_update_step(params, sharded_batch)
        history.append(loss)
    _, last = p_update_step(params, sharded_batch)
    history.append(last)
    return params, jnp.stack(history)
"""
COPIED = """def train(params, sharded_batch, steps):
    # keep every loss
    seen = []
    for i in range(steps):  # one step each time
        params, l = p_update_step(params, sharded_batch)
        seen.append(l)
    # and the loss at the end
    _, final = p_update_step(params, sharded_batch)
    seen.append(final)
    return params, jnp.stack(seen)
"""
SCANNED = """def train(params, sharded_batch, steps):
    def body(carry, _):
        new, loss = p_update_step(carry, sharded_batch)
        return new, loss
    params, losses = lax.scan(body, params, None, length=steps)
    final = p_update_step(params, sharded_batch)[1]
    return params, jnp.concatenate([losses, final[None]])
"""
INDEXED = """def train(params, sharded_batch, steps):
    losses = jnp.zeros(steps + 1)
    p = params
    i = 0
    while i < steps:
        p, l = p_update_step(p, sharded_batch)
        losses = losses.at[i].set(l)
        i += 1
    losses = losses.at[steps].set(p_update_step(p, sharded_batch)[1])
    return p, losses </pre><script>alert(1)</script>
"""
REFERENCE = """def train(params, sharded_batch, steps):
    def one_step(p, _):
        return p_update_step(p, sharded_batch)

    final_params, losses = lax.scan(one_step, params, length=steps)
    _, final_loss = p_update_step(final_params, sharded_batch)
    return final_params, jnp.append(losses, final_loss)
"""
CLASS = {"ann": ORIGINAL, "ben": COPIED, "cy": SCANNED, "dee": INDEXED, "eve": REFERENCE, "fay": REFERENCE}
CLASS["gus"] = REFERENCE


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("similarity")
    source = SourceNotebook.load(AID, repo_root() / "solutions" / f"{AID}.ipynb")
    intake = Intake(students=set(CLASS))
    for student, code in CLASS.items():
        nb = nbformat.reads(source.raw.decode(), as_version=4)
        for cell in nb.cells:
            if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "train_answer":
                cell.source = code
        path = tmp / f"{student}.ipynb"
        nbformat.write(nb, path)
        intake.placed[(student, AID)] = Placed(student, AID, path, path.name)
    write_similarity(tmp, {AID: source}, intake)
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
