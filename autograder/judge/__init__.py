"""Judging: observations -> verdicts -> points, outside any kernel (writes no files).

Its face for the grader's clients (tools/): `FACE`, loaded lazily (autograder/faces.py).
"""

from ..faces import face

FACE = {
    "load_observations": "compare",
    "compiled_for": "compiling",
    "judged_work": "compiling",
    "read_program": "exported",
    "is_program_observation": "exported",
    "solution_answers": "formulas",
    "formula_run": "formulas",
    "is_formula_observation": "formulas",
    "draw_inputs": "hidden_inputs",
    "hidden_rng": "hidden_inputs",
    "mistake_source": "mistakes",
    "Judge": "programs",
}
__all__ = sorted(FACE)
__getattr__ = face(__name__, FACE)
