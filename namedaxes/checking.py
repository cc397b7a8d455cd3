"""The exercise core: student-facing checks, their feedback, and the notebook's progress.

Every check raises `CheckFailed` (an `AssertionError`, so nbgrader counts it as
a failed test; its `ename`/`evalue` are what the grader reads) with a message that
names the variable, says what was expected and what was seen. Checks go
type -> shape/dtype -> value, so the first message a student meets is about the
most basic problem.

Design, shared by every notebook (each `namedaxes/exercises/<topic>.py` only states
its own rules: inputs, expected values, hints and the diagnoses of its typical
mistakes):

- **Feedback, not crashes.** A failed check shows its message only, no traceback
  (`CheckFailed._render_traceback_`: IPython, the notebook's error output and hence
  nbgrader's Validate dialog show these lines instead of the frames), in red with a
  plain-text `evalue` for graders and exports; a passed check prints one green
  line. Colour is ANSI, which Jupyter, nbconvert and terminals render and nbgrader's
  command line strips; `NO_COLOR` turns it off.
- **Error translation lives here once** (`explained`): an answer that still raises
  `NotImplementedError` ("not written yet", naming the unwritten function it
  calls), a collective over an axis name nothing binds, a traced value turned into
  NumPy, and any other error raised in the student's own code (quoted with its
  cell line). Exercise modules add only rules of their own.
- **Progress.** Every `Exercise.check` records its verdict; `progress(module)`
  (exposed as `q.progress()` in each notebook) lists which exercises pass, fail,
  changed since their check, or were not checked yet.
- **Unwritten stubs in plain cells.** In a notebook, a cell that calls a
  function whose body is still `raise NotImplementedError()` shows the same one
  line "`loss_fn` is not written yet: ..." (an IPython exception hook registered
  on import), so an unanswered notebook shows messages, not stub tracebacks.
- Every student-facing sentence of the core is in `TEXT`, so it can be
  translated without touching the logic.
- **Languages** (`namedaxes.i18n`): every `TEXT` table is a `Messages` table, whose
  lookups come back in the kernel's language (the Chinese edition: `zh`); `Exercise`
  wraps the `TEXT` of the exercise module that creates it, and its hints are translated
  when shown, so exercise modules keep English templates only. A failure in a language
  written without spaces wraps by display width (two columns per CJK character), never
  inside a `code span`; English wraps exactly as before.
"""

from __future__ import annotations

import contextlib
import linecache
import os
import re
import sys
from collections.abc import Callable, Iterable
from typing import Any, NoReturn

import numpy as np

from .i18n import Messages, gettext, is_wide

__all__ = [
    "CheckFailed",
    "Exercise",
    "expect_array",
    "expect_close",
    "expect_replicated",
    "collectives",
    "collective_axes",
    "expect_collective",
    "expect_no_collective",
    "reaching_communication",
    "expect_reaching_collective",
    "examined",
    "expect_communication",
    "expect_regions",
    "expect_output_layouts",
    "describe_layout",
    "show_error",
    "assert_check_fails",
    "assert_check_passes",
    "fail",
    "show_values",
    "same_values",
    "NOT_WRITTEN_YET",
    "not_written_yet",
    "unbound_axis_name",
    "explained",
    "progress",
    "TEXT",
]

# Every sentence a student can read from the core, in one place (translate here, nowhere else).
TEXT = Messages(
    {
        "not_written_yet": (
            "`{name}`{calls} is not written yet: replace `raise NotImplementedError()` in its cell "
            "with your code, then run that cell again."
        ),
        "calls": " (or a function it calls, such as `{callee}`)",
        "cell_not_written_yet": (
            "This cell is not written yet: replace `raise NotImplementedError()` with your code, then run it again."
        ),
        "uses_unwritten": "This cell runs `{name}`, which is not written yet: replace `raise NotImplementedError()` "
        "in its cell with your code, run that cell, then this one again.",
        "unbound_axis": (
            '`{name}` failed with JAX\'s error "NameError: {jax_error}" It means: `{name}` calls a '
            "collective over '{axis}', and no enclosing pmap/vmap/shard_map binds that name.{binds_only} "
            "{fix}"
        ),
        "binds_only": " {run} binds only {bound}.",
        "the_check": "The check",
        "fix_one_axis": "Write the axis name as the constant `{const}`: `axis_name={const}`.",
        "fix_axes": "Use the constants {consts} for the names.",
        "traced_to_numpy": (
            "`{name}` turns a traced value into a NumPy array or a Python number (`np.…`, "
            "`float(...)`, `.item()`) inside `jax.grad`, `jax.jit`, `jax.pmap` or `lax.scan`, where "
            "values are abstract. Compute with `jnp` and keep JAX arrays. JAX said: {jax_error}"
        ),
        "raised_in_your_code": "`{name}` raised {error} at line {line} of its cell: `{code}`.",
        "raised": "`{name}` raised {error}.",
        "passed": "✓ `{name}` passes the visible checks.",
        "failed_mark": "✗ ",
        "hint_line": "Stuck? Run `q.{attr}.hint()` for a hint.",
        "need_devices": (
            "These checks need {need} devices, but JAX has {have}. Run the set-up cell at the top of "
            "the notebook (`setup_devices()`) first; if it says JAX is already running, restart the "
            "kernel and run the notebook from the top."
        ),
        "no_hint": "No hint for this one: re-read the section above the exercise.",
        "hint": "Hint {i}/{n} for `{name}`{more}: {text}",
        "hint_more": " (run hint() again for another)",
        "progress_title": "{passed} of {total} exercises pass",
        "progress_pass": "✓ {name}",
        "progress_fail": "✗ {name}: {why}",
        "progress_changed": "• {name}: changed since its test cell ran; run that cell again",
        "progress_unchecked": "• {name}: not checked yet; run its test cell",
        "progress_done": "All exercises pass their visible checks. The hidden tests run when your work is graded.",
        # the generic checks (expect_*)
        "numpy_array": "`{name}` is a NumPy array; expected a `jax.Array` (compute it with jax/jnp/lax).",
        "not_an_array": "`{name}` should be a `jax.Array`, but it is a `{type}`: {value}",
        "wrong_shape": "`{name}` should have shape {want}, but it has shape {got}.",
        "wrong_dtype": "`{name}` should have dtype {want}, but it has dtype {got}.",
        "wrong_values": (
            "`{name}` has the wrong values: expected {want}, got {got} (first difference at index {where}). {hint}"
        ),
        "not_replicated": (
            "`{name}` returned different values on different devices: {values}. Every device should "
            "hold the same result: a collective such as `lax.psum` over '{axis}' is missing. {hint}"
        ),
        "collective_missing": "`{name}` should communicate over '{axis}' with {want}, but it performs {seen}. {hint}",
        "collective_missing_none": (
            "`{name}` should communicate over '{axis}' with {want}, but it performs no collective at all. {hint}"
        ),
        "collective_unwanted": (
            "`{name}` should not communicate over '{axis}', but it performs {found} over it. {hint}"
        ),
        "not_recordable": (
            "`{name}` gives the right results here, but the grader cannot record it as one compiled "
            "program (it exports your function with `jax.jit` on abstract inputs and judges that): "
            "{why}"
        ),
        "collective_unused": (
            "`{name}` performs {collective}, but its result never reaches what `{name}` returns "
            "(read from the compiled program: scaling what it delivers changes nothing, e.g. it is "
            "multiplied by zero or discarded). Communication that does not reach the result counts "
            "for nothing. {hint}"
        ),
        "a_collective": "a collective",
        # layouts and communication, read from the compiled program as the grader reads them (issue 16)
        "layout_replicated": "whole on every device (replicated)",
        "layout_split": "split {dims}",
        "layout_dim": "along dimension {dim} over {axes}",
        "layout_region_input": (
            "`{name}` gives the right results here, but its per-device program over {axes} takes "
            "its input {n} {got}, where the exercise's takes it {want}: every device would hold "
            "more than its shard. {hint}"
        ),
        "layout_no_region": (
            "`{name}` gives the right results here, but it has no per-device program over {axes} "
            "that takes its inputs split as the exercise's does ({want}). {hint}"
        ),
        "layout_region_dead": (
            "`{name}` gives the right results here, but its per-device program over {axes} that takes its "
            "inputs split as the exercise's does ({want}) does not reach the results: changing what it "
            "returns leaves them as they are (what it returns is discarded, multiplied by zero, say). "
            "{hint}"
        ),
        "layout_output": (
            "`{name}` gives the right results here, but its result {n} is {got} once compiled, where "
            "the exercise's is {want}. {hint}"
        ),
        "list_sep": ", ",
        "or": " or ",
        "and": " and ",
        "over": "{primitive} over {axes}",
    }
)


_RED, _GREEN, _BOLD, _RESET = "\x1b[31m", "\x1b[32m", "\x1b[1m", "\x1b[0m"


def _color(code: str, text: str) -> str:
    """`text` in an ANSI colour, unless `NO_COLOR` is set (https://no-color.org)."""
    return text if os.environ.get("NO_COLOR") else f"{code}{text}{_RESET}"


class CheckFailed(AssertionError):
    """A student-facing check failed; the message says what to fix.

    IPython shows `_render_traceback_()` instead of a traceback: the message in red,
    then how to get a hint. Those lines are also the `traceback` of the notebook's
    error output, which is what nbgrader's Validate dialog and feedback show;
    `ename` stays `CheckFailed` and `evalue` the plain message.
    """

    hint_line: str = ""

    def _render_traceback_(self) -> list[str]:
        return _render_failure(str(self), self.hint_line)


# nbgrader's command-line `validate` cuts every line at 87 characters (4 of them indent): wrap before that.
_WIDTH = 80


def _wrap(text: str, first: str, width: int = _WIDTH) -> list[str]:
    """`text` in lines of at most `width` characters, `first` before the first line, continuation lines aligned."""
    import textwrap

    pad = " " * len(first)
    lines: list[str] = []
    for paragraph in text.split("\n"):
        if any(is_wide(ch) for ch in paragraph):
            lines += _wrap_wide(paragraph, first if not lines else pad, pad, width) or [pad]
            continue
        lines += textwrap.wrap(
            paragraph,
            width=width,
            initial_indent=first if not lines else pad,
            subsequent_indent=pad,
            break_long_words=False,
            break_on_hyphens=False,
        ) or [pad]
    return lines


# Pieces a wide-script line may break between: a code span, a run of non-space narrow text, one wide
# character with the punctuation that must not start a line, or spaces.
_PIECES = re.compile(r"`[^`]*`|[^\s`\u2e80-\uffff]+|[\u2e80-\uffff][，。、：；！？）」』》,.:;!?)]*|\s+|`")


def _columns(text: str) -> int:
    return sum(2 if is_wide(ch) else 1 for ch in text)


def _wrap_wide(paragraph: str, first: str, pad: str, width: int) -> list[str]:
    """Greedy wrap by display width for text written without spaces (Chinese): see the module docstring."""
    lines, line = [], first
    for piece in _PIECES.findall(paragraph.strip()):
        if piece.isspace():
            piece = " "
        if _columns(line) + _columns(piece) > width and line.strip():
            lines.append(line.rstrip())
            line = pad
            if piece == " ":
                continue
        line += piece
    if line.strip():
        lines.append(line.rstrip())
    return lines


def _render_failure(message: str, hint_line: str = "") -> list[str]:
    """The lines a failed check shows instead of a traceback: the message in red, then the hint line."""
    lines = [_color(_RED, line) for line in _wrap(message, TEXT["failed_mark"])]
    lines[0] = (
        lines[0].replace(TEXT["failed_mark"], _color(_BOLD, TEXT["failed_mark"]) + _RED, 1)
        if not os.environ.get("NO_COLOR")
        else lines[0]
    )
    return lines + ([hint_line] if hint_line else [])


_SPACE_AFTER_FULL_WIDTH = re.compile(r"(?<=[，。：；？！、）])[ \t]+")
_FULL_STOP_IN_QUOTE = re.compile(r"[.](?=[\"”']?[。，；：！？])")


def fail(msg: str) -> NoReturn:
    """Raise `CheckFailed` with `msg` as given (see `_fail` for the reflowing variant), with one rule of
    composition: a sentence appended to another starts with a space in English (" That is ..."), but
    full-width punctuation carries its own space, so a space after it (。 这是 ...) is dropped; and a quoted
    English text (JAX's error) that ends with a full stop, quoted in a Chinese sentence, loses that stop
    (`"... device."。` reads `"... device"。`)."""
    raise CheckFailed(_FULL_STOP_IN_QUOTE.sub("", _SPACE_AFTER_FULL_WIDTH.sub("", msg)))


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


NOT_WRITTEN_YET = TEXT.english("not_written_yet")  # the English template (TEXT[...] gives the translated one)


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


# ---------------------------------------------------------------- error translation (one place for every notebook)
def _is_cell_file(filename: str) -> bool:
    """A notebook cell's code: ipykernel names it .../ipykernel_<pid>/<hash>.py, plain IPython <ipython-input-...>."""
    return "ipykernel_" in filename or filename.startswith("<ipython-input")


def _user_frames(tb) -> list:
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
    from . import axes

    return {v: k for k, v in vars(axes).items() if k.isupper() and isinstance(v, str)}


def _quoted(names: Iterable[str]) -> str:
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
    binds_only = TEXT["binds_only"].format(run=run or TEXT["the_check"], bound=_quoted(binds)) if binds else ""
    text = TEXT["unbound_axis"].format(name=name, jax_error=jax_error, axis=axis, binds_only=binds_only, fix=fix or "")
    return text.strip()


def translate(
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
    frames = _user_frames(err.__traceback__)
    if isinstance(err, NotImplementedError) and not str(err):
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
    """Run an answer; the usual crashes become `CheckFailed` with the message of `translate`.

    with explained("scaled_sum", run="`jax.pmap(scaled_sum, axis_name=DEVICES)`", binds=(DEVICES,)):
        out = jax.pmap(fn, axis_name=DEVICES)(x)
    """
    try:
        yield
    except CheckFailed:
        raise
    except Exception as err:  # translated or re-raised unchanged
        message = translate(err, name, run=run, binds=binds, fix=fix, rules=rules)
        if message is None:
            raise
        raise CheckFailed(message) from err


def expect_array(name: str, value: Any, *, shape: tuple | None = None, dtype: Any = None) -> None:
    """`value` is a `jax.Array` (type), with `shape` and `dtype` if given."""
    import jax

    if isinstance(value, np.ndarray) and not isinstance(value, jax.Array):
        _fail(TEXT["numpy_array"].format(name=name))
    if not isinstance(value, jax.Array):
        _fail(TEXT["not_an_array"].format(name=name, type=type(value).__name__, value=f"{value!r:.80}"))
    if shape is not None and tuple(value.shape) != tuple(shape):
        _fail(TEXT["wrong_shape"].format(name=name, want=tuple(shape), got=tuple(value.shape)))
    if dtype is not None and np.dtype(value.dtype) != np.dtype(dtype):
        _fail(TEXT["wrong_dtype"].format(name=name, want=np.dtype(dtype).name, got=np.dtype(value.dtype).name))


def expect_close(
    name: str, value: Any, expected: Any, *, rtol: float = 1e-5, atol: float = 1e-5, hint: str = ""
) -> None:
    """Values of `value` equal `expected` within tolerance (shapes must already match)."""
    got, want = np.asarray(value), np.asarray(expected)
    if got.shape != want.shape:
        _fail(TEXT["wrong_shape"].format(name=name, want=want.shape, got=got.shape))
    if not np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True):
        bad = np.argwhere(~np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True))
        where = tuple(int(i) for i in bad[0]) if bad.size else ()
        _fail(
            TEXT["wrong_values"].format(
                name=name,
                want=np.array2string(want, precision=4, threshold=16),
                got=np.array2string(got, precision=4, threshold=16),
                where=where,
                hint=hint,
            )
        )


def expect_replicated(name: str, value: Any, *, axis_name: str, hint: str = "") -> None:
    """Every device (leading axis of a pmap output) holds the same value."""
    got = np.asarray(value)
    if got.ndim == 0 or got.shape[0] < 2:
        return
    if not all(np.allclose(got[i], got[0], rtol=1e-5, atol=1e-5, equal_nan=True) for i in range(1, got.shape[0])):
        per_device = np.array2string(got, precision=4, threshold=16)
        _fail(TEXT["not_replicated"].format(name=name, values=per_device, axis=axis_name, hint=hint))


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
            for sub in param if isinstance(param, (tuple, list)) else (param,):
                inner = getattr(sub, "jaxpr", sub)  # ClosedJaxpr -> Jaxpr
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


def expect_collective(
    name: str, fn: Callable, *args, axis_name: str, axis_env, primitives: Iterable[str] | None = None, hint: str = ""
) -> None:
    """`fn` performs a collective over `axis_name` (optionally one of `primitives`)."""
    found = collectives(fn, *args, axis_env=axis_env)
    ok = [p for p, axes in found if axis_name in axes and (primitives is None or p in set(primitives))]
    if not ok:
        seen = TEXT["list_sep"].join(TEXT["over"].format(primitive=p, axes=axes) for p, axes in sorted(found))
        want = TEXT["or"].join(f"`{p}`" for p in primitives) if primitives else TEXT["a_collective"]
        template = TEXT["collective_missing"] if seen else TEXT["collective_missing_none"]  # whole sentences
        _fail(template.format(name=name, axis=axis_name, want=want, seen=seen, hint=hint))


def reaching_communication(fn: Callable, *args) -> list[str]:
    """The collectives of `jax.jit(fn)(*args)` whose results reach its outputs, read the grader's way
    (`examined`). Descriptions such as "psum over 'devices'"."""
    return list(examined(fn, *args).matters)


def examined(fn: Callable, *args, rtol: float | None = None, atol: float | None = None):
    """`jax.jit(fn)(*args)` exported and examined as the grader examines a program (`namedaxes.judging.examine`:
    compiled, run on `args`, its collectives read from the optimized HLO, each kind perturbed to see whether
    it reaches the outputs, its per-device regions and where its results live)."""
    import jax

    from .grading import _EXPORT, _JIT
    from .judging import examine

    leaves, tree = jax.tree_util.tree_flatten(args)
    abstract = [
        jax.ShapeDtypeStruct(
            v.shape,
            v.dtype,
            sharding=getattr(v, "sharding", None)
            if getattr(getattr(v, "sharding", None), "mesh", None) is not None
            else None,
        )
        for v in leaves
    ]
    exp = _EXPORT(_JIT(fn))(*jax.tree_util.tree_unflatten(tree, abstract))
    return examine(exp, [np.asarray(v) for v in leaves], rtol=rtol, atol=atol)


def describe_layout(layout: tuple) -> str:
    """A layout (`namedaxes.judging`: per dimension, the mesh axes it is split over) in words."""
    parts = [
        TEXT["layout_dim"].format(dim=d, axes=" x ".join(repr(a) for a in axes))
        for d, axes in enumerate(layout)
        if axes
    ]
    return TEXT["layout_split"].format(dims=TEXT["list_sep"].join(parts)) if parts else TEXT["layout_replicated"]


def expect_communication(
    name: str, facts, axis_name: str, primitive: str | None = None, hint: str = "", reaching: bool = True
) -> None:
    """The examined program (`examined`) performs a collective over `axis_name` (a `primitive` such as "psum",
    as the compiled program names it: a pmean is a psum there) whose result reaches its outputs
    (`reaching=False`: present is enough, for a check that looks at other things in between)."""

    def wanted(desc: str) -> bool:
        return desc.endswith(f" over '{axis_name}'") and (primitive is None or desc.startswith(f"{primitive} over"))

    if not any(wanted(d) for d in facts.present):
        seen = TEXT["list_sep"].join(facts.present)
        want = f"`{primitive}`" if primitive else TEXT["a_collective"]
        template = TEXT["collective_missing"] if seen else TEXT["collective_missing_none"]  # whole sentences
        _fail(template.format(name=name, axis=axis_name, want=want, seen=seen, hint=hint))
    if reaching and not any(wanted(d) for d in facts.matters):
        dead = next(d for d in facts.present if wanted(d))
        _fail(TEXT["collective_unused"].format(name=name, collective=dead, hint=hint))


def expect_regions(name: str, facts, want: tuple, hint: str = "") -> None:
    """Every per-device region of `want` ((manual axes, input layouts), as `namedaxes.judging.regions` reads
    them) has a counterpart in the examined program that splits each input over at least those mesh axes:
    the grader's layout step (`namedaxes.judging.region_difference`)."""
    from .judging import region_difference

    found = region_difference(want, facts.regions)
    if found is None:
        return
    if region_difference(want, facts.regions + facts.dead_regions) is None:  # only dead regions match
        _fail(
            TEXT["layout_region_dead"].format(
                name=name,
                axes=_quoted(want[0][0]),
                hint=hint,
                want=TEXT["list_sep"].join(describe_layout(i) for i in want[0][1]),
            )
        )
    if found.kind == "input":
        _fail(
            TEXT["layout_region_input"].format(
                name=name,
                axes=_quoted(found.axes),
                n=found.n,
                got=describe_layout(found.got),
                want=describe_layout(found.want),
                hint=hint,
            )
        )
    axes, ins = want[0][0], want[0][1]
    _fail(
        TEXT["layout_no_region"].format(
            name=name, axes=_quoted(axes), hint=hint, want=TEXT["list_sep"].join(describe_layout(i) for i in ins)
        )
    )


def expect_output_layouts(name: str, facts, want: tuple, hint: str = "") -> None:
    """Each result of the examined program lives where `want` says once compiled (the grader's output layout
    step: split or replicated, over which mesh axes)."""
    for n, (w, g) in enumerate(zip(want, facts.out_layouts)):
        if tuple(w) != tuple(g):
            _fail(
                TEXT["layout_output"].format(
                    name=name, n=n + 1, got=describe_layout(g), want=describe_layout(w), hint=hint
                )
            )


def expect_reaching_collective(name: str, fn: Callable, *args, collective: str, hint: str = "") -> None:
    """`jax.jit(fn)(*args)` performs `collective` (a description such as "psum over 'devices'") and its
    result reaches the outputs (`reaching_communication`)."""
    if collective not in reaching_communication(fn, *args):
        _fail(TEXT["collective_unused"].format(name=name, collective=collective, hint=hint))


def expect_no_collective(name: str, fn: Callable, *args, axis_name: str, axis_env, hint: str = "") -> None:
    """`fn` performs no collective over `axis_name`."""
    found = [(p, axes) for p, axes in collectives(fn, *args, axis_env=axis_env) if axis_name in axes]
    if found:
        _fail(
            TEXT["collective_unwanted"].format(
                name=name, axis=axis_name, found=TEXT["list_sep"].join(p for p, _ in found), hint=hint
            )
        )


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
    except exc_type as err:  # the point of the cell
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
        raise CheckFailed(TEXT["need_devices"].format(need=N_DEVICES, have=jax.device_count())) from None


def _say(text: str) -> None:
    print(text)


# Module state lives in mutated containers (the autograder restores module globals between cells).
_REGISTRY: dict[str, dict[tuple, Exercise]] = {}  # exercise module -> its Exercise objects, in order
_RESULTS: dict[tuple, dict] = {}  # Exercise._key -> its last verdict


class Exercise:
    """One exercise: `check(answer)` raises with a specific message, `hint()` nudges.

    `observe(answer)` (optional) returns the observations the autograder
    compares with the reference solution's: a dict of arrays / JSON values
    computed on seeded random inputs. It must be deterministic.

    `check` runs the module's check inside `explained(name)`, so crashes the module
    does not translate itself still read as feedback; then, once the hidden test's first program
    exports (`_expect_recordable`), `judge(answer)` if given (the grader's judging steps that need an
    exportable program: layout, communication that matters); it records its verdict for
    `progress`. Several `Exercise` objects may share a `name` (one per test cell of an
    exercise): the exercise passes when all of them do.
    """

    def __init__(
        self,
        name: str,
        check: Callable,
        hints: Iterable[str] = (),
        observe: Callable | None = None,
        *,
        module: str | None = None,
        judge: Callable | None = None,
    ):
        self.name = name
        self._check = check
        self._judge = judge  # the grader's steps on the answer's program, once it is known to export
        self._hints = list(hints)
        self._observe = observe
        self._shown = 0
        caller = sys._getframe(1).f_globals
        self.module = module or caller.get("__name__", "__main__")
        if module is None and self.module.startswith("namedaxes.exercises."):
            caller.setdefault("progress", progress_of(self.module))  # every exercise module has q.progress()
        if module is None and type(caller.get("TEXT")) is dict:
            caller["TEXT"] = Messages(caller["TEXT"])  # the module's messages, shown in the kernel's language
        # Keyed by what the exercise is, so re-importing the module replaces it rather than adding a copy.
        code = getattr(check, "__code__", None)
        self._key = (self.module, name, getattr(check, "__qualname__", repr(check)), getattr(code, "co_firstlineno", 0))
        _REGISTRY.setdefault(self.module, {})[self._key] = self

    def _attr(self) -> str:
        """The name this exercise has in its module (`q.<attr>` in the notebook)."""
        module = sys.modules.get(self.module)
        for attr, value in vars(module).items() if module else ():
            if value is self:
                return attr
        return self.name

    def check(self, *answer) -> None:
        __tracebackhide__ = True  # pytest: report the caller's line
        try:
            _expect_course_devices()
            with explained(self.name):
                self._check(*answer)
            self._expect_recordable(answer)
            if self._judge is not None:
                with explained(self.name):
                    self._judge(*answer)
        except CheckFailed as err:
            _RESULTS[self._key] = {"status": "failed", "why": str(err), "answer": answer}
            # A fresh exception without the checker's internal frames; IPython shows only its message.
            failure = CheckFailed(str(err))
            failure.hint_line = TEXT["hint_line"].format(attr=self._attr()) if self._hints else ""
            raise failure from None
        except BaseException as err:
            _RESULTS[self._key] = {"status": "failed", "why": f"{type(err).__name__}: {err}", "answer": answer}
            raise
        _RESULTS[self._key] = {"status": "passed", "why": "", "answer": answer}
        _say(_color(_GREEN, TEXT["passed"].format(name=self.name)))

    def _expect_recordable(self, answer: tuple) -> None:
        """The grader judges the program the hidden test exports: an answer that passes here but cannot be
        exported (a traced value turned into a Python number, say) would get 0 there, so it fails here."""
        if self._observe is None:
            return
        from .grading import one_case

        try:
            with one_case():
                self._observe(*answer)
        except CheckFailed:
            raise
        except Exception as err:  # noqa: BLE001 - translated for the student
            why = translate(err, self.name) or TEXT["raised"].format(
                name=self.name, error=f"`{type(err).__name__}: {(str(err).strip().splitlines() or [''])[0][:300]}`"
            )
            raise CheckFailed(TEXT["not_recordable"].format(name=self.name, why=why)) from None

    def hint(self) -> None:
        if not self._hints:
            print(TEXT["no_hint"])
            return
        i = min(self._shown, len(self._hints) - 1)
        self._shown += 1
        more = TEXT["hint_more"] if i + 1 < len(self._hints) else ""
        print(TEXT["hint"].format(i=i + 1, n=len(self._hints), name=self.name, more=more, text=gettext(self._hints[i])))

    def observe(self, *answer) -> dict:
        if self._observe is None:
            raise NotImplementedError(f"{self.name} has no observe()")
        return self._observe(*answer)

    def __repr__(self) -> str:
        return f"<Exercise {self.name}: .check(...), .hint()>"


# ---------------------------------------------------------------- progress
def _user_namespace() -> dict | None:
    shell = _ipython()
    return getattr(shell, "user_ns", None) if shell is not None else None


def _changed_since_check(answer: tuple, namespace: dict | None) -> bool:
    """Some checked function has been redefined (under its own name) since its check ran."""
    if namespace is None:
        return False
    for obj in answer:
        name = getattr(obj, "__name__", None)
        if callable(obj) and name in namespace and namespace[name] is not obj:
            return True
    return False


def progress_rows(module: str) -> list[tuple[str, str, str]]:
    """(exercise name, status, detail) for each exercise of `module`, in notebook order.

    Status: "passed" (every check of it passed), "failed" (detail: the first message),
    "changed" (redefined since its check ran), "unchecked" (some check never ran).
    """
    namespace = _user_namespace()
    groups: dict[str, list[dict | None]] = {}
    for ex in _REGISTRY.get(module, {}).values():
        groups.setdefault(ex.name, []).append(_RESULTS.get(ex._key))
    rows = []
    for name, results in groups.items():
        failed = [r for r in results if r and r["status"] == "failed"]
        if failed:
            rows.append((name, "failed", failed[0]["why"]))
        elif any(r is None for r in results):
            rows.append((name, "unchecked", ""))
        elif any(_changed_since_check(r["answer"], namespace) for r in results):
            rows.append((name, "changed", ""))
        else:
            rows.append((name, "passed", ""))
    return rows


def _short(text: str, width: int = 90) -> str:
    """The gist of a check's message for the progress list: up to its first ': ' or '. '."""
    first = re.split(r": |\. |\n|：|。", text.strip(), maxsplit=1)[0].rstrip(".")
    return first if len(first) <= width else first[: width - 1] + "…"


def progress(module: str) -> None:
    """Print which exercises of the notebook (exercise module `module`) pass their visible checks."""
    rows = progress_rows(module)
    passed = sum(status == "passed" for _, status, _ in rows)
    lines = [_color(_BOLD, TEXT["progress_title"].format(passed=passed, total=len(rows)))]
    for name, status, why in rows:
        if status == "passed":
            lines.append(_color(_GREEN, "  " + TEXT["progress_pass"].format(name=name)))
        elif status == "failed":
            lines.append(_color(_RED, "  " + TEXT["progress_fail"].format(name=name, why=_short(why))))
        elif status == "changed":
            lines.append("  " + TEXT["progress_changed"].format(name=name))
        else:
            lines.append("  " + TEXT["progress_unchecked"].format(name=name))
    if rows and passed == len(rows):
        lines.append(TEXT["progress_done"])
    print("\n".join(lines))


def progress_of(module: str) -> Callable[[], None]:
    """`q.progress()` for an exercise module: `progress = progress_of(__name__)`."""

    def module_progress() -> None:
        """Which exercises of this notebook pass their visible checks (run their test cells first)."""
        progress(module)

    return module_progress


# ---------------------------------------------------------------- unwritten stubs in plain notebook cells
def _ipython():
    if "IPython" not in sys.modules:  # not in IPython: nothing to hook into
        return None
    from IPython import get_ipython

    return get_ipython()


def _stub_message(value: BaseException) -> str | None:
    """One line for a cell stopped by a stub's bare `raise NotImplementedError()`, else None.

    Also for a stub that raised in a worker process of notebook 06 (`multiprocess.WorkerError`, whose
    text ends with the worker's traceback, shipped functions appearing as `<shipped name>`).
    """
    if getattr(value, "remote_type", None) == "NotImplementedError":
        shipped = re.findall(r'File "<shipped (\w+)>", line \d+, in \w+\n\s+raise NotImplementedError\(\)', str(value))
        return TEXT["uses_unwritten"].format(name=shipped[-1]) if shipped else None
    if not isinstance(value, NotImplementedError) or str(value):
        return None  # a library's NotImplementedError: keep its traceback
    frames = _user_frames(value.__traceback__)
    if not frames:
        return None
    where = frames[-1].tb_frame.f_code.co_name
    return TEXT["cell_not_written_yet"] if where == "<module>" else TEXT["uses_unwritten"].format(name=where)


def _show_stub_error(shell, etype, value, tb, tb_offset=None):
    """IPython custom exception handler for NotImplementedError (see the module docstring)."""
    message = _stub_message(value)
    if message is None:
        shell.showtraceback((etype, value, tb), tb_offset=tb_offset)  # anything else: IPython's own display
    else:  # the error output: ename/evalue unchanged, these lines as its traceback
        shell._showtraceback(etype, value, _render_failure(message))


def _install_stub_handler() -> None:
    shell = _ipython()
    if shell is None or getattr(shell, "custom_exceptions", None):
        return  # not a notebook, or someone else's handler: leave it alone
    # RuntimeError covers multiprocess.WorkerError; every other error is shown as IPython would show it.
    shell.set_custom_exc((NotImplementedError, RuntimeError), _show_stub_error)


_install_stub_handler()
