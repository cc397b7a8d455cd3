"""Checks of values: type -> shape/dtype -> value, and the small helpers exercise modules compare with."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

import numpy as np

from .failures import fail, fail_paragraph
from .text import TEXT

__all__ = [
    "show_values",
    "show_number",
    "f32",
    "first_line",
    "same_values",
    "which_mistake",
    "mistake_sentence",
    "fail_values",
    "expect_array",
    "expect_float32",
    "expect_close",
    "expect_replicated",
    "result_layout",
    "spec_text",
    "expect_layout",
    "expect_result",
    "SAID_IN_NOTEBOOK_WORDS",
]

# The sentences these helpers say in a notebook's own words: each helper, the keys of the `text` it is handed
# (`layout_error`: the kinds it returns, each the key of the sentence its notebook says for it).
SAID_IN_NOTEBOOK_WORDS = {
    "expect_float32": ("result_type",),
    "expect_layout": ("layout", "layout_replicated"),
    "expect_result": ("result_type", "shape", "layout", "layout_replicated"),
    "layout_error": ("in_specs", "varying_output", "ring_size"),
}


def show_values(
    value: Any,
    *,
    dtype: Any = None,
    threshold: int = 16,
    separator: str = ", ",
    one_line: bool = False,
    scalar_as_number: bool = False,
) -> str:
    """`value` for a message: 4 decimals, arrays of more than `threshold` entries summarised, entries
    separated by `separator`; `one_line`: never broken into lines (the message is wrapped when shown);
    `scalar_as_number`: a single number as `show_number` writes it (`8`, not `8.`).

    `dtype` (e.g. `float`) converts first, so integers print as `1.` like the floats beside them.
    """
    array = np.asarray(value, dtype=dtype)
    if scalar_as_number and array.ndim == 0:
        return show_number(array)
    text = np.array2string(array, precision=4, threshold=threshold, separator=separator)
    return " ".join(text.split()) if one_line else text


def show_number(value: Any) -> str:
    """One number for a message, to 6 significant digits (`1.5`, `0.333333`, `1e+06`)."""
    return f"{float(value):g}"


def f32(values: Any) -> np.ndarray:
    """`values` as a float32 NumPy array (the checks' inputs and expected values)."""
    return np.asarray(values, np.float32)


def first_line(err: BaseException, limit: int = 260) -> str:
    """The first line of an error's message for a message of the checks (its type when it says nothing),
    at most `limit` characters."""
    text = str(err)
    return (text.splitlines()[0] if text else type(err).__name__)[:limit]


def same_values(a: Any, b: Any, tol: float = 1e-5, *, dtype: Any = None) -> bool:
    """`a` and `b` have the same shape and agree within `tol` (used as both rtol and atol).

    `dtype` (e.g. `float`) converts both before comparing; never raises on a shape mismatch.
    """
    a, b = np.asarray(a, dtype=dtype), np.asarray(b, dtype=dtype)
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=tol, atol=tol))


def _same_results(a: Any, b: Any, tol: float) -> bool:
    """`same_values` as floats, NaN where NaN is: the comparison the grader's judge makes of a known mistake."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=tol, atol=tol, equal_nan=True))


def which_mistake(got: Any, mistakes, tol: float = 1e-5) -> tuple[str, dict] | None:
    """`(key, fields)` of the first known mistake `(values, key, fields)` whose values `got` has (within `tol`,
    as floats, NaN where NaN is); None when it has none's, or the first it has is another answer's (key None:
    values that are no known mistake, listed so that the grader does not name a mistake they coincide with). A
    mistake of several results gives them as a dict, and `got` is then a dict with those keys (a training
    step's new parameters): all of them must agree.

    An exercise lists its mistakes' results in one function that its check and the grader's judge both call
    (the judge on its hidden inputs, `autograder/judge/mistakes.py`): the check names the mistake with the
    sentence `TEXT[key]` holds, and the class's misconception map with the same sentence."""
    for values, key, fields in mistakes:
        if isinstance(values, dict):
            same = isinstance(got, dict) and all(k in got and _same_results(got[k], v, tol) for k, v in values.items())
        else:
            same = not isinstance(got, dict) and _same_results(got, values, tol)
        if same:
            return None if key is None else (key, dict(fields))
    return None


def mistake_sentence(say: Callable[..., str], got: Any, mistakes, tol: float = 1e-5, otherwise: str = "") -> str:
    """The check's sentence for the known mistake whose values `got` has (`which_mistake`), through its notebook's
    `say` (`TEXT.say`: the key of the mistake, its fields); `otherwise` (a sentence already said) when none."""
    found = which_mistake(got, mistakes, tol)
    return otherwise if found is None else say(found[0], **found[1])


def fail_values(
    say: Callable[..., str],
    key: str,
    want: Any,
    got: Any,
    /,
    *,
    dtype: Any = None,
    threshold: int = 16,
    separator: str = ", ",
    one_line: bool = False,
    **fields,
) -> NoReturn:
    """Fail with the check's sentence `key` for wrong values (through its notebook's `say`), the values expected
    and seen shown as every check shows values (`show_values` with `dtype`, `threshold`, `separator`,
    `one_line`), with its other `fields` (`name`, `where`, `hint`, ...)."""
    shown = {"dtype": dtype, "threshold": threshold, "separator": separator, "one_line": one_line}
    fail(say(key, want=show_values(want, **shown), got=show_values(got, **shown), **fields))


def expect_array(name: str, value: Any, *, shape: tuple | None = None, dtype: Any = None) -> None:
    """`value` is a `jax.Array` (type), with `shape` and `dtype` if given."""
    import jax

    if isinstance(value, np.ndarray) and not isinstance(value, jax.Array):
        fail_paragraph(TEXT["numpy_array"].format(name=name))
    if not isinstance(value, jax.Array):
        fail_paragraph(TEXT["not_an_array"].format(name=name, type=type(value).__name__, value=f"{value!r:.80}"))
    if shape is not None and tuple(value.shape) != tuple(shape):
        fail_paragraph(TEXT["wrong_shape"].format(name=name, want=tuple(shape), got=tuple(value.shape)))
    if dtype is not None and np.dtype(value.dtype) != np.dtype(dtype):
        fail_paragraph(TEXT["wrong_dtype"].format(name=name, want=np.dtype(dtype).name, got=np.dtype(value.dtype).name))


def expect_float32(name: str, out: Any, text, **fields) -> None:
    """`out` is a float32 `jax.Array`: anything else than an array is said in its notebook's words
    (`text.say("result_type", name=..., type=..., **fields)`, `fields` being where it ran), a wrong dtype as
    `expect_array` says it."""
    import jax
    import jax.numpy as jnp

    if not isinstance(out, jax.Array):
        fail(text.say("result_type", name=name, type=type(out).__name__, **fields))
    expect_array(name, out, dtype=jnp.float32)


def result_layout(out: Any) -> tuple:
    """How a result is laid out: its PartitionSpec as a tuple, one entry per dimension (padded with Nones, so that
    P(a) == P(a, None)), an entry of several mesh axes as a tuple."""
    entries = list(out.sharding.spec) if hasattr(out.sharding, "spec") else []
    entries = [tuple(e) if isinstance(e, list) else e for e in entries]
    return tuple(entries + [None] * (out.ndim - len(entries)))


def spec_text(entries: tuple, replicated: str) -> str:
    """A layout (`result_layout`) as the notebook writes it, `P('data', None)`; `replicated` (its words) when
    no dimension is split."""
    if all(e is None for e in entries):
        return replicated
    return "P(" + ", ".join("None" if e is None else repr(e) for e in entries) + ")"


def expect_layout(name: str, out: Any, want: tuple, text, **fields) -> None:
    """`out` is laid out as `want` (PartitionSpec entries; trailing Nones may be left out), else the notebook's
    sentence `text.say("layout", name=..., got=..., want=..., **fields)`, layouts in its words
    (`text["layout_replicated"]`)."""
    got, want = result_layout(out), tuple(want) + (None,) * (out.ndim - len(want))
    if got != want:
        replicated = text["layout_replicated"]
        fail(text.say("layout", name=name, got=spec_text(got, replicated), want=spec_text(want, replicated), **fields))


def expect_result(
    name: str,
    out: Any,
    shape: tuple,
    layout: tuple,
    text,
    *,
    shape_hints: dict | None = None,
    layout_hint: str = "",
    **fields,
) -> None:
    """A result laid out over a mesh, in the checks' order and in its notebook's words: a float32 `jax.Array`
    (`expect_float32`), of `shape` (`text.say("shape", name=..., want=..., got=..., hint=...)`, the hint the one
    `shape_hints` gives a known wrong shape), laid out as `layout` (`expect_layout`, with `layout_hint`); `fields`
    say where it ran."""
    expect_float32(name, out, text, **fields)
    got = tuple(out.shape)
    if got != tuple(shape):
        fail(text.say("shape", name=name, want=tuple(shape), got=got, hint=(shape_hints or {}).get(got, ""), **fields))
    expect_layout(name, out, layout, text, hint=layout_hint, **fields)


def expect_close(
    name: str, value: Any, expected: Any, *, rtol: float = 1e-5, atol: float = 1e-5, hint: str = ""
) -> None:
    """Values of `value` equal `expected` within tolerance (shapes must already match)."""
    got, want = np.asarray(value), np.asarray(expected)
    if got.shape != want.shape:
        fail_paragraph(TEXT["wrong_shape"].format(name=name, want=want.shape, got=got.shape))
    if not np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True):
        bad = np.argwhere(~np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True))
        where = tuple(int(i) for i in bad[0]) if bad.size else ()
        fail_paragraph(
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
        fail_paragraph(TEXT["not_replicated"].format(name=name, values=per_device, axis=axis_name, hint=hint))
