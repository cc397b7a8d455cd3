"""Running notebooks: the worker pool, the workers, one kernel cell by cell, and the reference runs' cache.

Its face for the grader's clients (tools/): `FACE`, loaded lazily (namedaxes/faces.py).
"""

from namedaxes.faces import lazy_face

FACE = {
    ".references": ("References", "load_references", "reference_key"),
}
lazy_face(__name__, FACE)
