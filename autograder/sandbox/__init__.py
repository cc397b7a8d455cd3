"""The sandbox: what a student kernel may see and do (view, uid, cgroups, seccomp, working copies, XLA cache).

Its face for the grader's clients (tools/): `FACE`, loaded lazily (namedaxes/faces.py).
"""

from namedaxes.faces import lazy_face

FACE = {
    ".build": ("grading_xla_flags",),
}
lazy_face(__name__, FACE)
