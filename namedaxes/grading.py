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

Exported programs (issue 9). Whatever a kernel says about itself can be
rewritten by the student who owns it, so graded observations no longer carry
*results*: `programs(cases)` exports each case's program with `jax.export` on
abstract inputs (`jax.ShapeDtypeStruct`, the hidden shapes and dtypes, no
values) and returns the serialized bytes. A clean grader process that never
ran student code (`autograder/judge/scorer_process.py`) deserializes them, draws the inputs
itself from a secret seed the kernel never sees, runs them, compares the
outputs with the reference solution's exported programs on the same inputs,
and reads which collectives really communicate from the *optimized* HLO.
A forged observation is therefore just another program: to score, it has to
compute the right values on unseen inputs with the right communication.
"""

from __future__ import annotations

import json as _json
import os as _os
import zlib as _zlib

import numpy as _np

__all__ = [
    "record",
    "rng",
    "programs",
    "one_case",
    "export_also_for",
    "PLATFORMS_PREFIX",
    "Case",
    "OBSERVE_DIR_ENV",
    "ARRAYS_SUFFIX",
    "VALUES_SUFFIX",
    "PROGRAM_PREFIX",
    "PROGRAMS_KEY",
    "PROGRAMS_FORMAT",
    "pmapped",
    "spec",
    "hidden_cases",
    "HIDDEN_CASES_ENV",
    "FORMULA_KEY",
    "MISTAKES_KEY",
    "JUDGED_OUTSIDE_ENV",
    "judged_outside",
]

OBSERVE_DIR_ENV = "NAMEDAXES_OBSERVE_DIR"
PROGRAM_PREFIX = "program:"  # array key of one case's serialized program (uint8 bytes)
PLATFORMS_PREFIX = "platforms:"  # a tool's second export of a case, for other platforms (`export_also_for`)
PROGRAMS_KEY = "programs"  # JSON key: {"format": ..., "cases": {case: {"draw": ..., "rtol": ...}}}
PROGRAMS_FORMAT = "namedaxes-exported-1"
# in the programs' metadata: {"module", "exercise"} whose `known_mistakes` the judge asks which known mistake a
# wrong program's values are (`namedaxes.checking.Exercise.observe` adds it; only the reference's counts)
MISTAKES_KEY = "mistakes"
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
_loads = _json.loads
_list = list


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


# ---------------------------------------------------------------- exported programs
class Case:
    """One graded program: `fn` exported on abstract `args`, and how the grader draws its inputs.

    `args` is a tuple of pytrees of `jax.ShapeDtypeStruct` (shapes, dtypes and, for
    mesh programs, shardings). `draw` tells the grader which values to feed, e.g.
    `{"kind": "normal"}`, `{"kind": "uniform", "low": 0.25, "high": 4.0}`,
    `{"kind": "quarters", "low": -12, "high": 13}` (multiples of 1/4, exact in
    float16), `{"kind": "integers", "low": 0, "high": 10}`; `"share": "<name>"` gives
    cases with the same name the same inputs. Only the reference's draw counts
    (the grader reads it from the reference observation).
    `rtol`/`atol` loosen the comparison for long float computations;
    `values=False` grades only the program's communication (a structure cell).
    `only_axes=True` also rejects communication over axes the reference does not use;
    `only_collectives=True` rejects any collective the reference does not perform (a `psum`
    added beside the required `ppermute`, say).
    `context` (a callable returning a context manager) is entered while exporting,
    e.g. to trace an answer as another process of a cluster.
    `out_layout=False` leaves where the results live open (by default the grader requires the
    reference's layout of every result: split or replicated, over the same mesh axes).
    `work={"flops": 2.0}` judges how the work is split: each fact named (`namedaxes.judging.WORK_FACTS`:
    per-device FLOPs, peak memory, largest array) of the compiled per-device program may be at most
    that factor times the reference's.
    """

    def __init__(
        self,
        fn,
        *args,
        draw: dict | None = None,
        rtol: float | None = None,
        atol: float | None = None,
        values: bool = True,
        only_axes: bool = False,
        only_collectives: bool = False,
        context=None,
        out_layout: bool = True,
        work: dict | None = None,
    ):
        self.fn, self.args, self.context, self.only_axes = fn, args, context, only_axes
        self.work = _dict(work or {})
        self.out_layout = out_layout
        self.only_collectives = only_collectives
        self.draw = _dict(draw or {"kind": "normal"})
        self.rtol, self.atol, self.values = rtol, atol, values


def _jax_export():
    """`jax.export.export` and `jax.jit` as they were when this module was imported (the locked set-up
    cell), so an added cell that rebinds them does not change what a hidden test exports. Defense in
    depth only: the grader judges the exported program itself, layout and communication included."""
    import jax
    import jax.export

    return jax.export.export, jax.jit


EXPORT, JIT = _jax_export()


def _export(fn, args, platforms: tuple[str, ...] | None = None) -> bytes:
    jitted = fn if hasattr(fn, "trace") and hasattr(fn, "lower") else JIT(fn)
    exporter = EXPORT(jitted) if platforms is None else EXPORT(jitted, platforms=platforms)
    return bytes(exporter(*args).serialize())


def pmapped(fn, k: int, axis_name: str, **kwargs):
    """`jax.pmap(fn, axis_name=...)` over the first `k` devices: what a pmap case exports."""
    import jax

    return jax.pmap(fn, axis_name=axis_name, devices=jax.devices()[:k], **kwargs)


def spec(shape, dtype, sharding=None):
    """An abstract input (`jax.ShapeDtypeStruct`): the hidden shape and dtype, no values."""
    import jax

    return jax.ShapeDtypeStruct(tuple(shape), dtype, sharding=sharding)


_ONE_CASE: list = []  # non-empty: `programs` exports only the first case (the visible checks' probe)


class one_case:
    """`with one_case(): exercise.observe(answer)`: export only each observation's first case.

    What a visible check uses to prove that the grader can record the answer as a compiled program
    (no `float(...)` of a traced value, no host callback...) without paying for every hidden case.
    A hidden test that ran under it would record too few programs and score 0, so it helps no one."""

    def __enter__(self):
        _ONE_CASE.append(True)
        return self

    def __exit__(self, *exc):
        _ONE_CASE.pop()
        return False


_ALSO_FOR: list = []  # (platforms, precision) of `export_also_for`: a tool's run; empty in every grader kernel


def export_also_for(platforms: tuple[str, ...] | None, precision: str | None = None) -> None:
    """Tools only: from now on `programs` also exports every case for `platforms` (`jax.export`'s `platforms`,
    e.g. `("tpu",)`: lowering for a TPU needs no TPU), under `"platforms:<case>"`, beside the grader's own
    `"program:<case>"`, which is exported as always. `precision`: the default matmul precision that export is
    traced at (`jax.default_matmul_precision`; the course sets `"highest"` where it runs on real accelerators,
    `namedaxes.devices`). `None` stops it.

    `tools/export_references.py` sets it in its run of the solution notebooks, so that the reference programs
    can be compiled for TPU topologies elsewhere (`tools/compile_for_topology.py --references`). The grader
    never sets it and reads no such key (its judge reads only `"program:<case>"`)."""
    _ALSO_FOR.clear()
    if platforms:
        _ALSO_FOR.append((tuple(_str(p) for p in platforms), precision))


def _exported_for(case: Case, platforms: tuple[str, ...], precision: str | None) -> bytes:
    """`case`'s program exported for `platforms` at `precision` (`export_also_for`), in its context as the
    grader's export is."""
    import contextlib

    import jax

    with jax.default_matmul_precision(precision) if precision else contextlib.nullcontext():
        if case.context is None:
            return _export(case.fn, case.args, platforms)
        with case.context():
            return _export(case.fn, case.args, platforms)


def programs(cases: dict, **values) -> dict:
    """Export every case (name -> `Case`): the observation a hidden test records.

    Returns `{"program:<case>": uint8 array of the serialized program, ...,
    "programs": {"format": ..., "cases": {case: {"draw": ..., "rtol": ..., "atol": ...}}}}`
    plus `values` (small JSON facts that need no program, e.g. a structure checked
    by the grader itself). Exporting only traces and lowers: nothing runs, no
    input value exists in the kernel.
    """
    out, meta = {}, {}
    items = list(_dict(cases).items())
    for name, case in items[:1] if _ONE_CASE else items:
        if case.context is not None:
            with case.context():
                blob = _export(case.fn, case.args)
        else:
            blob = _export(case.fn, case.args)
        out[PROGRAM_PREFIX + _str(name)] = _np.frombuffer(blob, dtype=_np.uint8)
        if _ALSO_FOR:
            out[PLATFORMS_PREFIX + _str(name)] = _np.frombuffer(_exported_for(case, *_ALSO_FOR[0]), dtype=_np.uint8)
        entry = {"draw": case.draw, "values": bool(case.values)}
        if case.only_axes:
            entry["only_axes"] = True
        if case.only_collectives:
            entry["only_collectives"] = True
        if not case.out_layout:
            entry["out_layout"] = False
        if case.work:
            entry["work"] = {_str(k): float(v) for k, v in case.work.items()}
        if case.rtol is not None:
            entry["rtol"] = float(case.rtol)
        if case.atol is not None:
            entry["atol"] = float(case.atol)
        meta[_str(name)] = entry
    out[PROGRAMS_KEY] = {"format": PROGRAMS_FORMAT, "cases": meta}
    out.update(values)
    return out


# ---------------------------------------------------------------- the grader's own runs
JUDGED_OUTSIDE_ENV = "NAMEDAXES_JUDGED_OUTSIDE"  # set by the grader's prelude in every kernel it runs


def judged_outside() -> bool:
    """True in a kernel the grader runs: there a visible check leaves the judging to the grader's judge,
    which decides every test cell outside the kernel on hidden inputs (`Exercise.check`).

    Only the kernel's own feedback depends on it: a kernel that sets it elsewhere skips its own checks."""
    return _environ_get(JUDGED_OUTSIDE_ENV) == "1"


# ---------------------------------------------------------------- formula exercises' hidden cases
HIDDEN_CASES_ENV = "NAMEDAXES_HIDDEN_CASES"  # set by the grader's prelude: {"<module>:<exercise>": [case, ...]}
FORMULA_KEY = "formula"  # JSON value of a formula exercise's observation: {"module", "exercise", "answers"}
_MAX_CASES_CHARS = 1 << 20


def hidden_cases(key: str) -> list | None:
    """The hidden cases the grader drew for the formula exercise `key` ("<module>:<exercise>") from this
    run's secret, or None outside the grader (a student's JupyterLab, nbval, the reference run).

    A formula runs only in a kernel, so the grader hands the kernel the cases themselves (its trusted
    prelude sets `NAMEDAXES_HIDDEN_CASES`), drawn afresh every run: no table made before the run holds
    their figures. The grader never trusts what a kernel echoes of them: it computes the reference's
    figures on the cases it drew (`autograder.judge.formulas`)."""
    text = _environ_get(HIDDEN_CASES_ENV)
    if not text or len(text) > _MAX_CASES_CHARS:
        return None
    try:
        cases = _loads(text).get(key)
    except (ValueError, AttributeError):
        return None
    return _list(cases) if _isinstance(cases, _list) else None
