"""Error translation, once for every notebook: crashes of an answer become feedback.

An answer that still raises `NotImplementedError` ("not written yet", naming the unwritten function it
calls: a `NotAttempted`), a collective over an axis name nothing binds, a traced value turned into
NumPy, an operation JAX cannot apply to an `unreduced` array (divided before its reduction), and any
other error raised in the student's own code (quoted with its cell line). Exercise modules add only
rules of their own (`rules=`).
"""

from __future__ import annotations

import contextlib
import linecache
import re
from collections.abc import Callable, Iterable

from .failures import CheckFailed, NotAttempted
from .text import TEXT

__all__ = [
    "not_written_yet",
    "not_started",
    "unbound_axis_name",
    "layout_error",
    "unreduced_operation",
    "explain_error",
    "explained",
]


def not_started(err: BaseException) -> bool:
    """`err` is a stub's bare `raise NotImplementedError()`: raised here, or in a worker process of
    notebook 06 (`multiprocess.WorkerError`, which carries the remote error's type). A library's
    `NotImplementedError("...")` has a message, and is an error like any other."""
    if isinstance(err, NotImplementedError):
        return not str(err)
    return getattr(err, "remote_type", None) == "NotImplementedError"


def not_written_yet(name: str, *, callee: str | None = None) -> str:
    """The message for an answer that still raises `NotImplementedError`.

    `callee` names the unwritten function `name` calls, when that is where the raise is:

        >>> not_written_yet("total")
        '`total` is not written yet: replace `raise NotImplementedError()` in its cell with your code, then run that cell again.'
    """  # noqa: E501 - a doctest's output is one line
    calls = TEXT["calls"].format(callee=callee) if callee and callee != name else ""
    return TEXT["not_written_yet"].format(name=name, calls=calls)


def unbound_axis_name(err: BaseException) -> str | None:
    """The axis name in JAX's "Found an unbound axis name: batch. ..." `NameError`, else None.

    None means `err` is some other error (re-raise it); a string means a collective named an
    axis that no enclosing pmap/vmap/shard_map binds.
    """
    text = str(err)
    if not isinstance(err, NameError) or "unbound axis name" not in text:
        return None
    return text.split("unbound axis name:")[-1].split(".")[0].strip()


# JAX's errors of a sharded program that several notebooks explain in their own words, each recognised here once
# (a JAX release that rewords one is fixed in one place): the kind, the key of the notebook's sentence for it.
_LAYOUT_ERRORS = (
    ("in_specs", lambda text: "does not match the specs of the input" in text),
    ("varying_output", lambda text: "out_specs" in text and ("replicat" in text or "varying" in text)),
    ("ring_size", lambda text: "ppermute" in text and ("unique" in text or "range" in text)),
)


def layout_error(err: BaseException) -> str | None:
    """Which of JAX's usual errors of a sharded program `err` is: "in_specs" (an input not laid out as the
    `in_specs` say), "varying_output" (an `out_specs` that says replicated of a per-device value), "ring_size" (a
    `ppermute` whose permutation is not one of the axis's devices); None for any other error."""
    if not isinstance(err, ValueError):
        return None
    text = str(err)
    return next((kind for kind, says in _LAYOUT_ERRORS if says(text)), None)


def unreduced_operation(err: BaseException) -> str | None:
    """The operation JAX refused to apply to an `unreduced` array (one partial sum per device), else None: its
    `NotImplementedError` "unreduced rule for div is not implemented" (jax 0.10), or its `ValueError`
    "Denominator should be reduced along the same axes numerator is unreduced on" (the newest line)."""
    found = re.search(r"unreduced rule for (\w+) is not implemented", str(err))
    if isinstance(err, NotImplementedError) and found:
        return found.group(1)
    if isinstance(err, ValueError) and "should be reduced along the same axes numerator is unreduced on" in str(err):
        return "div"
    return None


# ---------------------------------------------------------------- error translation (one place for every notebook)
def _is_cell_file(filename: str) -> bool:
    """A notebook cell's code: ipykernel names it .../ipykernel_<pid>/<hash>.py, plain IPython <ipython-input-...>."""
    return "ipykernel_" in filename or filename.startswith("<ipython-input")


def user_frames(tb) -> list:
    """The traceback's frames in notebook cells (the student's code), outermost first."""
    frames = []
    while tb is not None:
        if _is_cell_file(tb.tb_frame.f_code.co_filename):
            frames.append(tb)
        tb = tb.tb_next
    return frames


def _where_in_cell(tb) -> tuple[int, str]:
    """(line number, source line) of a traceback entry in a notebook cell."""
    code = tb.tb_frame.f_code
    return tb.tb_lineno, linecache.getline(code.co_filename, tb.tb_lineno).strip()


def _axis_constants() -> dict[str, str]:
    """Axis name -> the course constant that spells it ('devices' -> 'DEVICES')."""
    from .. import axes

    return {v: k for k, v in vars(axes).items() if k.isupper() and isinstance(v, str)}


def quoted_names(names: Iterable[str]) -> str:
    return TEXT["and"].join(f"'{n}'" for n in names)


def _unbound_message(name: str, err: NameError, axis: str, run: str | None, binds: tuple, fix: str | None) -> str:
    jax_error = str(err).strip().splitlines()[0]
    if fix is None and binds:
        consts = _axis_constants()
        if len(binds) == 1:
            fix = TEXT["fix_one_axis"].format(const=consts.get(binds[0], repr(binds[0])))
        else:
            fix = TEXT["fix_axes"].format(consts=TEXT["and"].join(f"`{consts.get(b, b)}` ('{b}')" for b in binds))
    # nothing to compare with: no "binds only" sentence
    binds_only = TEXT["binds_only"].format(run=run or TEXT["the_check"], bound=quoted_names(binds)) if binds else ""
    text = TEXT["unbound_axis"].format(name=name, jax_error=jax_error, axis=axis, binds_only=binds_only, fix=fix or "")
    return text.strip()


def _refused_by_this_line(err: BaseException, name: str) -> str | None:
    """An answer that jax 0.10.2 ran and this line refuses (tests/namedaxes/exercises/test_divergent_answers.py):
    a partial sum returned under `out_specs=P(..., unreduced=...)` unmarked, a ppermute over axes named out of
    the mesh's order (which the checks read from the traced program first, where they can)."""
    import jax

    text = str(err)
    first = (text.strip().splitlines() or [""])[0][:300]
    if isinstance(err, ValueError) and "should be equal to the unreduced present on the out_aval" in text:
        return TEXT["unreduced_unmarked"].format(name=name, version=jax.__version__, jax_error=first)
    if isinstance(err, RuntimeError) and "same order as the axis_names declared on the mesh" in text:
        return TEXT["ppermute_order_raised"].format(name=name, version=jax.__version__)
    return None


def explain_error(
    err: BaseException,
    name: str,
    *,
    run: str | None = None,
    binds: Iterable[str] = (),
    fix: str | None = None,
    rules: Iterable[Callable[[BaseException], str | None]] = (),
) -> str | None:
    """The student-facing message for an error raised while checking `name`, or None (re-raise it).

    `rules` are the exercise module's own translations, tried first (each returns a message or None).
    Then, for every notebook alike: still `NotImplementedError` ("not written yet", naming the unwritten
    function it calls), a collective over an axis name nothing binds (`run`: how the check runs the
    answer, `binds`: the axis names it binds, `fix`: what to write instead), a traced value turned into
    NumPy, and any other error raised in the student's own notebook code (quoted with its line).
    """
    for rule in rules:
        message = rule(err)
        if message:
            return message
    op = unreduced_operation(err)
    if op is not None:
        said = str(err).strip().splitlines()[0].split(". ")[0]  # JAX's first sentence: no request, no types
        return TEXT["unreduced_op"].format(name=name, op=op, jax_error=said[:200])
    frames = user_frames(err.__traceback__)
    if not_started(err) and isinstance(err, NotImplementedError):
        callee = frames[-1].tb_frame.f_code.co_name if frames else None
        return not_written_yet(name, callee=callee if callee not in (None, "<module>") else None)
    axis = unbound_axis_name(err)
    if axis is not None:
        return _unbound_message(name, err, axis, run, tuple(binds), fix)
    import jax

    if isinstance(
        err,
        (
            jax.errors.TracerArrayConversionError,
            jax.errors.ConcretizationTypeError,
            jax.errors.TracerBoolConversionError,
            jax.errors.TracerIntegerConversionError,
        ),
    ):
        return TEXT["traced_to_numpy"].format(name=name, jax_error=str(err).strip().splitlines()[0])
    line_refused = _refused_by_this_line(err, name)
    if line_refused is not None:
        return line_refused
    if frames:
        first = (str(err).strip().splitlines() or [""])[0][:300]
        error = f"`{type(err).__name__}: {first}`" if first else f"`{type(err).__name__}`"
        line, code = _where_in_cell(frames[-1])
        if code:
            return TEXT["raised_in_your_code"].format(name=name, error=error, line=line, code=code)
        return TEXT["raised"].format(name=name, error=error)
    return None


@contextlib.contextmanager
def explained(
    name: str,
    *,
    run: str | None = None,
    binds: Iterable[str] = (),
    fix: str | None = None,
    rules: Iterable[Callable[[BaseException], str | None]] = (),
):
    """Run an answer; the usual crashes become `CheckFailed` with the message of `explain_error` (`NotAttempted`
    when the answer is not started: `not_started`).

    with explained("scaled_sum", run="`jax.pmap(scaled_sum, axis_name=DEVICES)`", binds=(DEVICES,)):
        out = jax.pmap(fn, axis_name=DEVICES)(x)
    """
    try:
        yield
    except CheckFailed:
        raise
    except Exception as err:  # translated or re-raised unchanged
        message = explain_error(err, name, run=run, binds=binds, fix=fix, rules=rules)
        if message is None:
            raise
        raise (NotAttempted if not_started(err) else CheckFailed)(message) from err
