"""Building blocks for student-facing checks.

Every check raises `CheckFailed` (an `AssertionError`, so nbgrader counts it as
a failed test) with a message that names the variable, says what was expected
and what was seen. Checks go type -> shape/dtype -> value, so the first message
a student meets is about the most basic problem.
"""
from __future__ import annotations

import contextlib
import re
from typing import Any, Callable, Iterable, NoReturn

import numpy as np

__all__ = [
    "CheckFailed", "Exercise", "expect_array", "expect_close", "expect_replicated",
    "collectives", "collective_axes", "expect_collective", "expect_no_collective",
    "show_error", "assert_check_fails", "assert_check_passes",
    "fail", "show_values", "same_values", "NOT_WRITTEN_YET", "not_written_yet", "unbound_axis_name",
]


class CheckFailed(AssertionError):
    """A student-facing check failed; the message says what to fix."""


def fail(msg: str) -> NoReturn:
    """Raise `CheckFailed` with `msg` exactly as given (see `_fail` for the reflowing variant)."""
    raise CheckFailed(msg)


def _fail(msg: str) -> NoReturn:
    """Raise with the message as one paragraph (source indentation removed)."""
    fail(" ".join(line.strip() for line in msg.strip().splitlines() if line.strip()))


# ---------------------------------------------------------------- small helpers for exercise modules
def show_values(value: Any, *, dtype: Any = None) -> str:
    """`value` for a message: 4 decimals, long arrays summarised, entries separated by ", ".

    `dtype` (e.g. `float`) converts first, so integers print as `1.` like the floats beside them.
    """
    return np.array2string(np.asarray(value, dtype=dtype), precision=4, threshold=16, separator=", ")


def same_values(a: Any, b: Any, tol: float = 1e-5, *, dtype: Any = None) -> bool:
    """`a` and `b` have the same shape and agree within `tol` (used as both rtol and atol).

    `dtype` (e.g. `float`) converts both before comparing; never raises on a shape mismatch.
    """
    a, b = np.asarray(a, dtype=dtype), np.asarray(b, dtype=dtype)
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=tol, atol=tol))


NOT_WRITTEN_YET = ("`{name}`{calls} is not written yet: replace `raise NotImplementedError()`{where} "
                   "with your code{then}.")


def not_written_yet(name: str, *, calls: str = "", where: str = "", then: str = "") -> str:
    """The message for an answer that still raises `NotImplementedError`.

    `calls` follows the name (" (or a function it calls)"), `where` follows the raise
    (" in its cell"), `then` ends the sentence (" and run that cell again"):

        >>> not_written_yet("total")
        '`total` is not written yet: replace `raise NotImplementedError()` with your code.'
    """
    return NOT_WRITTEN_YET.format(name=name, calls=calls, where=where, then=then)


def unbound_axis_name(err: BaseException) -> str | None:
    """The axis name in JAX's "Found an unbound axis name: batch. ..." `NameError`, else None.

    None means `err` is some other error (re-raise it); a string means a collective named an
    axis that no enclosing pmap/vmap/shard_map binds.
    """
    text = str(err)
    if not isinstance(err, NameError) or "unbound axis name" not in text:
        return None
    return text.split("unbound axis name:")[-1].split(".")[0].strip()


def expect_array(name: str, value: Any, *, shape: tuple | None = None, dtype: Any = None) -> None:
    """`value` is a `jax.Array` (type), with `shape` and `dtype` if given."""
    import jax
    if isinstance(value, np.ndarray) and not isinstance(value, jax.Array):
        _fail(f"`{name}` is a NumPy array; expected a `jax.Array` (compute it with jax/jnp/lax).")
    if not isinstance(value, jax.Array):
        _fail(f"`{name}` should be a `jax.Array`, but it is a `{type(value).__name__}`: {value!r:.80}")
    if shape is not None and tuple(value.shape) != tuple(shape):
        _fail(f"`{name}` should have shape {tuple(shape)}, but it has shape {tuple(value.shape)}.")
    if dtype is not None and np.dtype(value.dtype) != np.dtype(dtype):
        _fail(f"`{name}` should have dtype {np.dtype(dtype).name}, but it has dtype {np.dtype(value.dtype).name}.")


def expect_close(name: str, value: Any, expected: Any, *, rtol: float = 1e-5, atol: float = 1e-5,
                 hint: str = "") -> None:
    """Values of `value` equal `expected` within tolerance (shapes must already match)."""
    got, want = np.asarray(value), np.asarray(expected)
    if got.shape != want.shape:
        _fail(f"`{name}` should have shape {want.shape}, but it has shape {got.shape}.")
    if not np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True):
        bad = np.argwhere(~np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True))
        where = tuple(int(i) for i in bad[0]) if bad.size else ()
        _fail(f"""`{name}` has the wrong values: expected {np.array2string(want, precision=4, threshold=16)},
               got {np.array2string(got, precision=4, threshold=16)} (first difference at index {where}).
               {hint}""")


def expect_replicated(name: str, value: Any, *, axis_name: str, hint: str = "") -> None:
    """Every device (leading axis of a pmap output) holds the same value."""
    got = np.asarray(value)
    if got.ndim == 0 or got.shape[0] < 2:
        return
    if not all(np.allclose(got[i], got[0], rtol=1e-5, atol=1e-5, equal_nan=True) for i in range(1, got.shape[0])):
        per_device = np.array2string(got, precision=4, threshold=16)
        _fail(f"""`{name}` returned different values on different devices: {per_device}.
               Every device should hold the same result: a collective such as `lax.psum` over
               '{axis_name}' is missing. {hint}""")


# ---------------------------------------------------------------- collectives
_COLLECTIVE_PARAM_KEYS = ("axes", "axis_name")
# Primitives that only change how a value is typed across an axis (shard_map's
# varying-manual-axes bookkeeping): they name an axis but move no data.
_TYPE_ONLY = {"pvary", "pcast"}
# Inside shard_map a psum of an axis-invariant value shows up under another name.
_ALIASES = {"psum_invariant": "psum", "psum2": "psum"}


def _walk_eqns(jaxpr) -> Iterable:
    for eqn in jaxpr.eqns:
        yield eqn
        for param in eqn.params.values():
            for sub in (param if isinstance(param, (tuple, list)) else (param,)):
                inner = getattr(sub, "jaxpr", sub)          # ClosedJaxpr -> Jaxpr
                if hasattr(inner, "eqns"):
                    yield from _walk_eqns(inner)


def collectives(fn: Callable, *args, axis_env: list[tuple[str, int]] | None = None) -> set[tuple[str, tuple[str, ...]]]:
    """The collectives `fn(*args)` performs: {(primitive, (axis names...)), ...}.

    Traces with `jax.make_jaxpr(fn, axis_env=...)`, so per-device functions
    (the `f` in `pmap(f, axis_name=...)`) can be inspected without running
    them; also looks inside `shard_map`, `jit`, `cond`, `scan`, ... bodies.
    """
    import jax
    closed = jax.make_jaxpr(fn, axis_env=axis_env or [])(*args)
    found = set()
    for eqn in _walk_eqns(closed.jaxpr):
        for key in _COLLECTIVE_PARAM_KEYS:
            if key in eqn.params:
                axes = eqn.params[key]
                axes = axes if isinstance(axes, (tuple, list)) else (axes,)
                named = tuple(str(a) for a in axes if isinstance(a, str))
                name = _ALIASES.get(eqn.primitive.name, eqn.primitive.name)
                if named and name not in _TYPE_ONLY:
                    found.add((name, named))
    return found


def collective_axes(fn: Callable, *args, axis_env=None) -> list[str]:
    """Sorted axis names that some collective in `fn(*args)` communicates over."""
    return sorted({a for _, axes in collectives(fn, *args, axis_env=axis_env) for a in axes})


def expect_collective(name: str, fn: Callable, *args, axis_name: str, axis_env,
                      primitives: Iterable[str] | None = None, hint: str = "") -> None:
    """`fn` performs a collective over `axis_name` (optionally one of `primitives`)."""
    found = collectives(fn, *args, axis_env=axis_env)
    ok = [p for p, axes in found if axis_name in axes and (primitives is None or p in set(primitives))]
    if not ok:
        seen = ", ".join(f"{p} over {axes}" for p, axes in sorted(found)) or "no collective at all"
        want = " or ".join(f"`{p}`" for p in primitives) if primitives else "a collective"
        _fail(f"`{name}` should communicate over '{axis_name}' with {want}, but it performs {seen}. {hint}")


def expect_no_collective(name: str, fn: Callable, *args, axis_name: str, axis_env, hint: str = "") -> None:
    """`fn` performs no collective over `axis_name`."""
    found = [(p, axes) for p, axes in collectives(fn, *args, axis_env=axis_env) if axis_name in axes]
    if found:
        _fail(f"`{name}` should not communicate over '{axis_name}', but it performs "
              f"{', '.join(p for p, _ in found)} over it. {hint}")


# ---------------------------------------------------------------- errors on purpose
@contextlib.contextmanager
def show_error(exc_type: type[BaseException] | tuple = Exception, match: str | None = None):
    """Run a cell that demonstrates an error: print the real error, prove it raised.

        with show_error(ValueError, match="context mesh"):
            jax.pmap(jax.pmap(f, axis_name="inner"), axis_name="outer")(x)

    Raises `AssertionError` if nothing (or something else) was raised, so a
    pitfall cell can never silently stop demonstrating its pitfall.
    """
    try:
        yield
    except exc_type as err:  # noqa: PERF203 - the point of the cell
        text = str(err)
        if match is not None and not re.search(match, text):
            raise AssertionError(f"expected an error matching {match!r}, got {type(err).__name__}: {text}") from err
        first = "\n".join(line for line in text.splitlines() if line.strip() and not set(line) <= {"-"})[:600]
        print(f"{type(err).__name__}: {first}")
    else:
        names = exc_type.__name__ if isinstance(exc_type, type) else " or ".join(e.__name__ for e in exc_type)
        raise AssertionError(f"this cell should raise {names}, but it ran without an error")


# ---------------------------------------------------------------- proving checks both ways
def assert_check_fails(check: Callable, *args, match: str | None = None) -> str:
    """`check(*args)` rejects a plausible wrong answer (and, optionally, says `match`)."""
    try:
        check(*args)
    except CheckFailed as err:
        if match is not None and not re.search(match, str(err)):
            raise AssertionError(f"check failed, but its message does not mention {match!r}: {err}") from err
        return str(err)
    raise AssertionError("the check accepted an answer it should reject")


def assert_check_passes(check: Callable, *args) -> None:
    """`check(*args)` accepts a correct (e.g. an equivalent alternative) answer."""
    check(*args)


# ---------------------------------------------------------------- exercises
def _expect_course_devices() -> None:
    """The checks run on the course's 8 devices: say so plainly if the set-up cell was skipped."""
    import jax
    from .axes import N_DEVICES
    if jax.device_count() < N_DEVICES:
        raise CheckFailed(
            f"These checks need {N_DEVICES} devices, but JAX has {jax.device_count()}. Run the set-up cell at "
            f"the top of the notebook (`setup_devices()`) first; if it says JAX is already running, restart "
            f"the kernel and run the notebook from the top.") from None


class Exercise:
    """One exercise: `check(answer)` raises with a specific message, `hint()` nudges.

    `observe(answer)` (optional) returns the observations the autograder
    compares with the reference solution's: a dict of arrays / JSON values
    computed on seeded random inputs. It must be deterministic.
    """

    def __init__(self, name: str, check: Callable, hints: Iterable[str] = (),
                 observe: Callable | None = None):
        self.name = name
        self._check = check
        self._hints = list(hints)
        self._observe = observe
        self._shown = 0

    def check(self, *answer) -> None:
        __tracebackhide__ = True  # noqa: F841 - IPython hides this frame in tracebacks
        _expect_course_devices()
        try:
            self._check(*answer)
        except CheckFailed as err:
            # A fresh exception without the checker's internal frames: the student sees the message,
            # not 40 lines of traceback through namedaxes.
            raise CheckFailed(str(err)) from None
        print(f"Correct: `{self.name}` passes the visible checks.")

    def hint(self) -> None:
        if not self._hints:
            print("No hint for this one: re-read the section above the exercise.")
            return
        i = min(self._shown, len(self._hints) - 1)
        self._shown += 1
        more = " (run hint() again for another)" if i + 1 < len(self._hints) else ""
        print(f"Hint {i + 1}/{len(self._hints)} for `{self.name}`{more}: {self._hints[i]}")

    def observe(self, *answer) -> dict:
        if self._observe is None:
            raise NotImplementedError(f"{self.name} has no observe()")
        return self._observe(*answer)

    def __repr__(self) -> str:
        return f"<Exercise {self.name}: .check(...), .hint()>"
