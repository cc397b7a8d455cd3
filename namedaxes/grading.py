"""Kernel-side half of autograding: record observations, never decide scores.

A hidden test cell ends with

    record("scaled_sum_random", q.scaled_sum.observe(scaled_sum))

`observe` runs the student's function on inputs drawn from `rng(grade_id)`
(deterministic, so the reference run sees the very same inputs) and returns a
dict of arrays and JSON values: outputs, per-device results, the axis names its
collectives communicate over. `record` writes that dict to the folder named by
`NAMEDAXES_OBSERVE_DIR`, which only the autograder sets; elsewhere (a student's
JupyterLab, nbval) it does nothing.

The autograder (outside the student's kernel) compares each recorded dict with
the one recorded when it ran the reference solution notebook. Nothing the
student can rebind in the kernel (np.allclose, lax.psum, builtins, the
traceback display) takes part in that comparison. The references used here are
bound at import time, i.e. in the notebook's locked set-up cell, before any
student code runs.
"""
from __future__ import annotations

import json as _json
import os as _os
import zlib as _zlib

import numpy as _np

__all__ = ["record", "rng", "OBSERVE_DIR_ENV", "ARRAYS_SUFFIX", "VALUES_SUFFIX"]

OBSERVE_DIR_ENV = "NAMEDAXES_OBSERVE_DIR"
ARRAYS_SUFFIX = ".npz"
VALUES_SUFFIX = ".json"

_asarray = _np.asarray
_savez = _np.savez
_dumps = _json.dumps
_environ_get = _os.environ.get
_join = _os.path.join
_open = open
_isinstance = isinstance
_str = str
_dict = dict
_ndarray = _np.ndarray
_crc32 = _zlib.crc32
_RandomState = _np.random.RandomState


def rng(grade_id: str, salt: int = 0) -> _np.random.RandomState:
    """Deterministic random inputs for one graded test: same in every run."""
    return _RandomState((_crc32(grade_id.encode()) + salt) % (2**32))


def _is_array(value) -> bool:
    return _isinstance(value, _ndarray) or hasattr(value, "__array__") and not _isinstance(value, (_str, bytes))


def record(grade_id: str, observations: dict) -> None:
    """Save `observations` for the autograder (a no-op outside autograding).

    Values that are arrays (jax or numpy) go to `<grade_id>.npz`, everything
    else (str, int, float, lists of str) to `<grade_id>.json`.
    """
    folder = _environ_get(OBSERVE_DIR_ENV)
    if not folder:
        return
    arrays, values = {}, {}
    for key, value in _dict(observations).items():
        if _is_array(value) and not _isinstance(value, (list, tuple)):
            arrays[_str(key)] = _asarray(value)
        else:
            values[_str(key)] = value
    with _open(_join(folder, grade_id + ARRAYS_SUFFIX), "wb") as fh:
        _savez(fh, **arrays)
    with _open(_join(folder, grade_id + VALUES_SUFFIX), "w") as fh:
        fh.write(_dumps(values, sort_keys=True, default=_str))
