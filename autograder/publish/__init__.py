"""Publishing: every file the grader writes (grades, results, feedback pages, class report, gradebook).

Its face for the grader's clients (tools/): `FACE`, loaded lazily (autograder/faces.py).
"""

from ..faces import face

FACE = {
    "public": "outputs",
    "write_outputs": "outputs",
    "write_report": "report",
    "write_similarity": "similarity",
}
__all__ = sorted(FACE)
__getattr__ = face(__name__, FACE)
