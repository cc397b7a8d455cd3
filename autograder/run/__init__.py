"""Running notebooks: the worker pool, the workers, one kernel cell by cell, and the reference runs' cache.

Its face for the grader's clients (tools/): `FACE`, loaded lazily (autograder/faces.py).
"""

from ..faces import face

FACE = {
    "References": "references",
    "load_references": "references",
    "reference_key": "references",
}
__all__ = sorted(FACE)
__getattr__ = face(__name__, FACE)
