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

It also snapshots every function object it finds there (the modules' functions,
the methods of their classes, the `Exercise` objects' check/observe callables,
the locked cells' functions): `__code__`, `__defaults__`, `__kwdefaults__` and
the contents of `__closure__` cells, because an in-place swap
(`f.__code__ = g.__code__`) keeps a function's identity. Its callback is
registered for both `pre_run_cell` and `pre_execute`, in callback lists that
refuse to drop it, and each run puts itself back in both.

Threat model: this is **defense in depth only; no score relies on it**. The
guard lives in the student's process, so code that deliberately attacks it is
out of its reach. Scores come from exported programs judged by the clean
scorer (`autograder/judge/scorer_process.py`): whatever the kernel is tricked into exporting
is just another program that has to compute the right values on secret inputs
with the right communication.
"""

from __future__ import annotations

__all__ = ["GUARD_CODE", "split_hidden"]

BEGIN_HIDDEN = "### BEGIN HIDDEN TESTS"

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
    _function = type(__autograder_guard)
    funcs, fseen = [], set()

    def add_function(f):
        if _type(f) is _function and id(f) not in fseen:
            fseen.add(id(f))
            cells = f.__closure__ or ()
            contents = []
            for c in cells:
                try:
                    contents.append(c.cell_contents)
                except ValueError:
                    contents.append(_missing)
            funcs.append((f, f.__code__, f.__defaults__, f.__kwdefaults__, cells, contents))

    for d, snap in _list(spaces):
        for v in _list(snap.values()):
            add_function(v)
            if _type(v) in (staticmethod, classmethod):
                add_function(v.__func__)
    for cls, snap in classes:
        for v in _list(snap.values()):
            add_function(v)
            add_function(_getattr(v, "__func__", None))

    def restore_functions():
        for f, code, defaults, kwdefaults, cells, contents in funcs:
            try:
                if f.__code__ is not code:
                    f.__code__ = code
                if f.__defaults__ is not defaults:
                    f.__defaults__ = defaults
                if f.__kwdefaults__ is not kwdefaults:
                    f.__kwdefaults__ = kwdefaults
                for c, v in zip(cells, contents):
                    if v is _missing:
                        continue
                    try:
                        if c.cell_contents is not v:
                            c.cell_contents = v
                    except ValueError:
                        c.cell_contents = v
            except Exception:
                pass

    class _Kept(list):
        """A callback list that keeps `restore` in it."""
        def remove(self, item):
            if item is not restore:
                list.remove(self, item)
        def clear(self):
            keep = [c for c in self if c is restore]
            list.clear(self)
            list.extend(self, keep)
        def pop(self, *a):
            i = a[0] if a else -1
            if self[i] is restore:
                return restore
            return list.pop(self, *a)
        def __delitem__(self, i):
            pass
        def __setitem__(self, i, v):
            pass

    events = get_ipython().events

    def keep_registered():
        for name in ("pre_run_cell", "pre_execute"):
            lst = events.callbacks.get(name)
            if _type(lst) is not _Kept:
                lst = _Kept(lst or [])
                events.callbacks[name] = lst
            if restore not in lst:
                list.insert(lst, 0, restore)

    def restore(*_args):
        keep_registered()
        restore_functions()
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
    keep_registered()
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
