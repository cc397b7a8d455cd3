"""Undo monkeypatching before every cell, so hidden tests run the course's own code.

Scores never depend on names the student can rebind (they come from the
observations, compared outside the kernel), but the observations are computed
in the kernel by `namedaxes` code. A student could patch that code (e.g.
`q.collectives = ...`, `jax.make_jaxpr = ...`, `record = ...`) to forge a
structure-only observation. So right after the notebook's locked set-up cells
(before any student code) the grader installs this guard: it snapshots the
namespaces of `builtins`, `numpy`, `jax`, `jax.numpy`, `jax.lax`, every
`namedaxes` module (with their classes and `Exercise` objects) and the names the
locked cells defined, and restores them before each cell (IPython's
`pre_run_cell` event). The grader also runs a test cell's hidden part as a
separate execution after its visible part, so a patch made while the visible
check calls the student's function is undone before the hidden test runs.

This defeats the usual tricks; code that deliberately attacks the guard itself
(it lives in the student's process) is out of its reach, which is why values on
hidden inputs, not structure flags, carry most points.
"""
from __future__ import annotations

__all__ = ["GUARD_CODE", "split_hidden"]

BEGIN_HIDDEN = "### BEGIN HIDDEN TESTS"
END_HIDDEN = "### END HIDDEN TESTS"

GUARD_CODE = r'''
def __autograder_guard():
    import sys, builtins
    _missing = object()
    _type_setattr = type.__setattr__
    _isinstance, _type, _vars, _dict, _list, _getattr = isinstance, type, vars, dict, list, getattr
    names = ["builtins", "numpy", "numpy.testing", "jax", "jax.numpy", "jax.lax", "jax.tree_util", "jax.tree"]
    mods = [sys.modules[n] for n in names if n in sys.modules]
    mods += [m for n, m in _list(sys.modules.items()) if (n == "namedaxes" or n.startswith("namedaxes.")) and m]
    spaces, classes, seen = [], [], set()
    for m in mods:
        d = _vars(m)
        spaces.append((d, _dict(d)))
        if not _getattr(m, "__name__", "").startswith("namedaxes"):
            continue
        for v in _list(d.values()):
            mod = _getattr(_type(v), "__module__", "") or ""
            if _isinstance(v, type) and (_getattr(v, "__module__", "") or "").startswith("namedaxes"):
                if id(v) not in seen:
                    seen.add(id(v))
                    classes.append((v, {k: w for k, w in _vars(v).items() if k not in ("__dict__", "__weakref__")}))
            elif mod.startswith("namedaxes") and hasattr(v, "__dict__") and id(v) not in seen:
                seen.add(id(v))
                spaces.append((_vars(v), _dict(_vars(v))))
    user = get_ipython().user_ns
    skip = {"In", "Out", "exit", "quit", "get_ipython", "open"}
    spaces.append((user, {k: v for k, v in user.items() if not k.startswith("_") and k not in skip}))

    def restore(*_args):
        for d, snap in spaces:
            for k, v in snap.items():
                if d.get(k, _missing) is not v:
                    d[k] = v
        for cls, snap in classes:
            cd = cls.__dict__
            for k, v in snap.items():
                if cd.get(k, _missing) is not v:
                    try:
                        _type_setattr(cls, k, v)
                    except Exception:
                        pass
            for k in [k for k in cd if k not in snap and k not in ("__dict__", "__weakref__")]:
                try:
                    delattr(cls, k)
                except Exception:
                    pass
    get_ipython().events.register("pre_run_cell", restore)
    return restore
__autograder_guard()
del __autograder_guard
'''


def split_hidden(source: str) -> tuple[str, str]:
    """(visible part, hidden part) of a test cell's source; hidden is '' if it has none."""
    lines = source.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if BEGIN_HIDDEN in line:
            return "".join(lines[:i]), "".join(lines[i:])
    return source, ""
