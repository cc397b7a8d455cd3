"""The course: which assignments there are (source notebooks and their editions), read and rebuilt trusted.

Its face for the grader's clients (tools/): `FACE`, loaded lazily (namedaxes/faces.py).
"""

from namedaxes.faces import lazy_face

FACE = {
    ".discovery": ("repo_root", "edition_problem"),
    ".notebooks": ("SourceNotebook",),
}
lazy_face(__name__, FACE)
