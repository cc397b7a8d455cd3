"""Compare a test cell's observations with the reference solution's (trusted, no kernel).

Observations are what `namedaxes.grading.record` saved: a dict whose array
values went to `<grade_id>.npz` and whose other (JSON) values went to
`<grade_id>.json`. The rules (docs/maintainers.md):

- arrays: same shape and dtype, values `allclose(rtol=RTOL, atol=ATOL, equal_nan=True)` (the judge's one
  tolerance, `namedaxes.judging.RTOL`/`ATOL`: 1e-5 each)
  (exact equality for booleans and strings);
- the key `axes`: a list of axis names; the student's list must contain every
  name in the reference's (extra axes are fine);
- any other JSON value: equal (numbers within the same tolerance).

The verdict is data (`reasons.Verdict`: each difference a `Phrase` whose kind and fields say which
key and which property failed: shape, dtype, values, axes); its words are written when publishing
(`autograder/publish/words.py`). What a difference says is a fact about the *property* that
failed (a missing key, shape and dtype, "values differ", the axes); never a number computed on the inputs (neither the
reference's values nor how far the student's are from them): the reference's values were
computed on hidden inputs, and a distance printed run after run is an oracle for them. Nor does it quote
what the program recorded where it recorded the wrong kind of value: it says which kind came (`kind_of`: "a
string of 12 characters"), and a recorded axis name only when it is a short identifier (`axis_name`). A verdict's
words are the judge's, and the class's misconception map shows them under the judge's name.

Every key of the reference must be present in the student's observations;
extra keys are ignored. Exercise tests judge two `observe(...)` results with
`tests/helpers/judge_helpers.py` (test-only: it holds a fixed test secret, so it is not here).
"""

from __future__ import annotations

import io
import json
import math
from typing import Any

import numpy as np

from namedaxes.judging import ATOL, RTOL

from ..limits import MAX_ARRAYS, MAX_ECHO_ITEMS, MAX_OBSERVATION_BYTES
from ..reasons import Phrase, Property, Verdict, Words, phrase

__all__ = ["RTOL", "ATOL", "AXES_KEY", "normalize", "load_observations", "compare", "MAX_OBSERVATION_BYTES"]

AXES_KEY = "axes"


def _is_array(value: Any) -> bool:
    return isinstance(value, np.ndarray) or (
        hasattr(value, "__array__") and not isinstance(value, (str, bytes, list, tuple, dict))
    )


def normalize(observations: dict) -> dict:
    """What `record` would save for `observations`: arrays as NumPy, the rest through JSON."""
    out = {}
    for key, value in dict(observations).items():
        if _is_array(value):
            out[str(key)] = np.asarray(value)
        else:
            out[str(key)] = json.loads(json.dumps(value, sort_keys=True, default=str))
    return out


def load_observations(npz: bytes | None, values: bytes | None) -> dict:
    """Observations from the bytes of `<grade_id>.npz` and `<grade_id>.json` (no pickles)."""
    out: dict[str, Any] = {}
    if values:
        if len(values) > MAX_OBSERVATION_BYTES:
            raise ValueError("recorded values are too large")
        loaded = json.loads(values.decode("utf-8"))
        if not isinstance(loaded, dict):
            raise ValueError("recorded values are not a JSON object")
        out.update({str(k): v for k, v in loaded.items()})
    if npz:
        if len(npz) > MAX_OBSERVATION_BYTES:
            raise ValueError("recorded arrays are too large")
        _check_npz(npz)
        with np.load(io.BytesIO(npz), allow_pickle=False) as arrays:
            for key in arrays.files:
                out[str(key)] = np.asarray(arrays[key])
    return out


def _check_npz(npz: bytes) -> None:
    """Refuse an `.npz` before inflating anything: it is a zip written by student code.

    Checked from the zip's directory and each member's `.npy` header only: at most
    MAX_ARRAYS members, each stored or deflated, whose declared sizes (what
    `zipfile` will inflate at most) add up to at most MAX_OBSERVATION_BYTES, each
    holding a plain-dtype array whose declared shape fits in its member (so neither
    a deflate bomb nor a header declaring a huge shape allocates memory)."""
    import zipfile

    from numpy.lib import format as npy

    try:
        zf = zipfile.ZipFile(io.BytesIO(npz))
    except (zipfile.BadZipFile, ValueError, OSError) as err:
        raise ValueError(f"recorded arrays are not a valid .npz file ({err})") from err
    with zf:
        infos = zf.infolist()
        if len(infos) > MAX_ARRAYS:
            raise ValueError(f"too many recorded arrays ({len(infos)} > {MAX_ARRAYS})")
        if sum(i.file_size for i in infos) > MAX_OBSERVATION_BYTES:
            raise ValueError(f"recorded arrays would inflate to more than {MAX_OBSERVATION_BYTES // 2**20} MiB")
        for info in infos:
            if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                raise ValueError(f"recorded array {info.filename!r} uses an unsupported compression")
            try:
                with zf.open(info) as fh:
                    version = npy.read_magic(fh)
                    shape, _, dtype = (
                        npy.read_array_header_1_0(fh, max_header_size=4096)
                        if version == (1, 0)
                        else npy.read_array_header_2_0(fh, max_header_size=4096)
                    )
            except Exception as err:  # any malformed header: unreadable
                raise ValueError(f"recorded array {info.filename!r} has a malformed header ({err})") from err
            if dtype.hasobject:
                raise ValueError(f"recorded array {info.filename!r} holds Python objects")
            if math.prod(shape) * dtype.itemsize > info.file_size:
                raise ValueError(f"recorded array {info.filename!r} declares more data than it holds")


def _fmt_shape(a: np.ndarray) -> Phrase:
    return phrase("shape_dtype", shape=str(tuple(a.shape)), dtype=a.dtype.name)


def kind_of(value: Any) -> Phrase:
    """What kind of value a program recorded, never its text: the words of a verdict are the judge's, and the
    class's misconception map shows them under the judge's name (a recorded string is described by its length)."""
    if value is None:
        return phrase("value_none")
    if isinstance(value, bool):
        return phrase("value_bool")
    if isinstance(value, (int, float)):
        return phrase("value_number")
    if isinstance(value, str):
        return phrase("value_text", n=len(value))
    if isinstance(value, list):
        return phrase("value_list", n=len(value))
    if isinstance(value, dict):
        return phrase("value_mapping", n=len(value))
    return phrase("value_other")


NAME_CHARS = 24  # a recorded axis name is shown when it is an identifier this short (no sentence, no markup)


def axis_name(name: Any) -> str | Phrase:
    """A recorded axis name for a verdict: itself, quoted, when it is a short identifier (every mesh axis name
    of the course is one), else what kind of text it is (`kind_of`): a name cannot carry a sentence."""
    if isinstance(name, str) and name.isidentifier() and name.isascii() and len(name) <= NAME_CHARS:
        return repr(name)
    return phrase("value_name", n=len(name)) if isinstance(name, str) else kind_of(name)


def _compare_arrays(
    key: str, want: np.ndarray, got: np.ndarray, rtol: float = RTOL, atol: float = ATOL
) -> Phrase | None:
    if want.shape != got.shape or want.dtype != got.dtype:
        failed = Property.SHAPE if want.shape != got.shape else Property.DTYPE
        return phrase("expected_got", prop=failed, key=key, want=_fmt_shape(want), got=_fmt_shape(got))
    if want.dtype.kind in "biufc":
        if want.dtype.kind in "b":
            same = np.array_equal(want, got)
        else:
            same = bool(np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True))
        if same:
            return None
        return phrase("values_differ", key=key)  # never how much: the reference's values are on hidden inputs
    return None if np.array_equal(want, got) else phrase("values_differ", key=key)


def _json_equal(want: Any, got: Any) -> bool:
    if isinstance(want, bool) or isinstance(got, bool):
        return type(want) is type(got) and want == got
    if isinstance(want, (int, float)) and isinstance(got, (int, float)):
        if isinstance(want, float) and math.isnan(want):
            return isinstance(got, float) and math.isnan(got)
        return math.isclose(got, want, rel_tol=RTOL, abs_tol=ATOL)
    if isinstance(want, list) and isinstance(got, list):
        return len(want) == len(got) and all(_json_equal(w, g) for w, g in zip(want, got))
    if isinstance(want, dict) and isinstance(got, dict):
        return want.keys() == got.keys() and all(_json_equal(want[k], got[k]) for k in want)
    return type(want) is type(got) and want == got


def _compare_axes(want: Any, got: Any) -> Phrase | None:
    if not isinstance(got, list) or not all(isinstance(a, str) for a in got):
        return phrase("axes_not_names", key=AXES_KEY, got=kind_of(got))
    wanted = [a for a in (want if isinstance(want, list) else [want])]
    missing = [a for a in wanted if a not in got]
    if not missing:
        return None
    more = (phrase("and_more", n=len(got) - MAX_ECHO_ITEMS),) if len(got) > MAX_ECHO_ITEMS else ()
    found = Words((Words(tuple(axis_name(a) for a in got[:MAX_ECHO_ITEMS]), ", "), *more)) if got else None
    seen = phrase("axes_seen", axes=found) if found else phrase("axes_none")
    return phrase("axes_missing", key=AXES_KEY, axes=", ".join(repr(a) for a in missing), seen=seen)


def compare(reference: dict, observed: dict, tolerances: dict | None = None) -> Verdict:
    """Do `observed` (a student's) match `reference` (the solution's)? With the differences.

    `tolerances` maps a key to (rtol, atol) (None: the default) for arrays that
    come from long float computations.
    """
    tolerances = tolerances or {}
    diffs: list[Phrase] = []
    for key in sorted(reference):
        want = reference[key]
        if key not in observed:
            diffs.append(phrase("key_missing", key=key))
            continue
        got = observed[key]
        if isinstance(want, np.ndarray):
            if not isinstance(got, np.ndarray):
                diffs.append(phrase("expected_array", key=key, got=kind_of(got)))
                continue
            rtol, atol = tolerances.get(key, (None, None))
            d = _compare_arrays(key, want, got, RTOL if rtol is None else rtol, ATOL if atol is None else atol)
        elif key == AXES_KEY:
            d = _compare_axes(want, got)
        elif isinstance(got, np.ndarray):
            d = phrase("expected_not_array", key=key)
        else:
            d = None if _json_equal(want, got) else phrase("values_differ", key=key)
        if d:
            diffs.append(d)
    return Verdict(not diffs, tuple(diffs))
