"""Publishing: every file the grader writes (grades, results, feedback pages, class report, gradebook).

Its face for the grader's clients (tools/): `FACE`, loaded lazily (namedaxes/faces.py).
"""

from namedaxes.faces import lazy_face

FACE = {
    ".outputs": ("public", "write_outputs"),
    ".report": ("write_report",),
    ".similarity": ("write_similarity",),
}
lazy_face(__name__, FACE)
