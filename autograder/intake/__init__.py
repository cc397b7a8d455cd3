"""Intake: which hand-ins there are and who handed them in (the exchange's inbound/, submission folders, zips).

Its face for the grader's clients (tools/): `FACE`, loaded lazily (namedaxes/faces.py).
"""

from namedaxes.faces import lazy_face

FACE = {
    ".inbound": ("Limits", "stage", "printable"),
    ".placement": ("Intake", "Placed"),
}
lazy_face(__name__, FACE)
