"""The secret hidden inputs: drawn here, from a seed the student's kernel never sees.

Used by the judge (`autograder.judge.programs`) inside the clean scorer process. Threat model: a
program's inputs are drawn *here*, from a secret seed the kernel never sees (the grader hands it to
the scorer over its pipe), with the distribution the **reference** observation names (a student
cannot pick easy inputs), so no output can be precomputed. The scale by which `perturbed` changes a
collective's results is drawn from the same secret: the student cannot know it either.
"""

from __future__ import annotations

import hashlib
import hmac

import numpy as np

from namedaxes.judging import draw_input

from .compiling import Compiled

__all__ = ["perturb_factor", "hidden_rng", "draw_inputs", "hidden_outputs"]


def perturb_factor(secret: bytes, grade_id: str, case: str) -> float:
    """A scale for `perturbed` the student cannot know: in [1.5, 3.5), drawn from the secret."""
    return float(1.5 + 2.0 * hidden_rng(secret, grade_id, "perturb\0" + case).random())


def hidden_rng(secret: bytes, grade_id: str, case: str) -> np.random.Generator:
    """The generator of one case's hidden inputs, seeded from the secret."""
    digest = hmac.new(secret, f"{grade_id}\0{case}".encode(), hashlib.sha256).digest()
    return np.random.default_rng(int.from_bytes(digest[:16], "little"))


def draw_inputs(exp, draw: dict, r: np.random.Generator) -> list[np.ndarray]:
    """The program's inputs (its arguments' leaves, in order) drawn from `r` as `draw` says: what
    `hidden_outputs` feeds it, drawn from a generator seeded the same way."""
    return [draw_input(a, draw, r) for a in exp.in_avals]


def hidden_outputs(prog: Compiled, exp, draw: dict, r: np.random.Generator) -> dict[str, np.ndarray]:
    """The compiled program's outputs (by pytree path) on inputs drawn from `r` as `draw` says, each
    input placed with the layout the program was compiled for."""
    import jax

    leaves = [jax.device_put(a, s) for a, s in zip(draw_inputs(exp, draw, r), prog.in_shardings)]
    out = prog.compiled(*leaves)
    flat, _ = jax.tree_util.tree_flatten_with_path(out)
    return {jax.tree_util.keystr(path): np.asarray(v) for path, v in flat}
