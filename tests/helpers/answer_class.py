"""A generated class of notebook 04's `train` answers for the similarity report's tests: one copied pair
(`ann`'s loop, and `ben`'s copy of it with other names and new comments), two honest answers written
differently (`cy`'s scan, `dee`'s indexed loop), and answers written the reference solution's way."""

from __future__ import annotations

from pathlib import Path

import nbformat

from autograder.course.discovery import repo_root
from autograder.course.notebooks import SourceNotebook
from autograder.intake.placement import Intake, Placed

AID = "04_gradient_averaging"
LOOP = """def train(params, sharded_batch, steps):
    history = []
    for step in range(steps):
        params, loss = p_update_step(params, sharded_batch)
        history.append(loss)
    _, last = p_update_step(params, sharded_batch)
    history.append(last)
    return params, jnp.stack(history)
"""
COPY = """def train(params, sharded_batch, steps):
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
SCAN = """def train(params, sharded_batch, steps):
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
    return p, losses
"""
REFERENCE = """def train(params, sharded_batch, steps):
    def one_step(p, _):
        return p_update_step(p, sharded_batch)

    final_params, losses = lax.scan(one_step, params, length=steps)
    _, final_loss = p_update_step(final_params, sharded_batch)
    return final_params, jnp.append(losses, final_loss)
"""


def source(assignment: str = AID) -> SourceNotebook:
    return SourceNotebook.load(assignment, repo_root() / "solutions" / f"{assignment}.ipynb")


def hand_ins(folder: Path, answers: dict[str, str], assignment: str = AID, grade_id: str = "train_answer") -> Intake:
    """Each student's notebook (the solution with their answer in the cell `grade_id`, by default 04's `train`)
    in `folder`, placed as the grader places it."""
    src = source(assignment)
    intake = Intake(students=set(answers))
    for student, code in answers.items():
        nb = nbformat.reads(src.raw.decode(), as_version=4)
        for cell in nb.cells:
            if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id:
                cell.source = code
        path = folder / f"{student}.ipynb"
        nbformat.write(nb, path)
        intake.placed[(student, assignment)] = Placed(student, assignment, path, path.name)
    return intake
