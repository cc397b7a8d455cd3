"""The sandbox: what a student kernel may see and do (view, uid, cgroups, seccomp, working copies, XLA cache).

Its face for the grader's clients (tools/): `FACE`, loaded lazily (autograder/faces.py).
"""

from ..faces import face

FACE = {
    "grading_xla_flags": "build",
}
__all__ = sorted(FACE)
__getattr__ = face(__name__, FACE)
