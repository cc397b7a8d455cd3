"""The course: which assignments there are (source notebooks and their editions), read and rebuilt trusted.

Its face for the grader's clients (tools/): `FACE`, loaded lazily (autograder/faces.py).
"""

from ..faces import face

FACE = {
    "repo_root": "discovery",
    "edition_problem": "discovery",
    "SourceNotebook": "notebooks",
}
__all__ = sorted(FACE)
__getattr__ = face(__name__, FACE)
