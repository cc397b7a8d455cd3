"""Judging: observations -> verdicts -> points, outside any kernel (writes no files).

Its face for the grader's clients (tools/): `FACE`, loaded lazily (namedaxes/faces.py).
"""

from namedaxes.faces import lazy_face

FACE = {
    ".compare": ("load_observations",),
    ".compiling": ("compiled_for", "judged_work"),
    ".exported": ("read_program", "is_program_observation"),
    ".formulas": ("solution_answers", "formula_run", "is_formula_observation"),
    ".hidden_inputs": ("draw_inputs", "hidden_rng"),
    ".mistakes": ("mistake_source",),
    ".programs": ("Judge",),
}
lazy_face(__name__, FACE)
