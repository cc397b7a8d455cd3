"""Intake: which hand-ins there are and who handed them in (the exchange's inbound/, submission folders, zips).

Its face for the grader's clients (tools/): `FACE`, loaded lazily (autograder/faces.py).
"""

from ..faces import face

FACE = {
    "Limits": "inbound",
    "stage": "inbound",
    "printable": "inbound",
    "Intake": "placement",
    "Placed": "placement",
}
__all__ = sorted(FACE)
__getattr__ = face(__name__, FACE)
