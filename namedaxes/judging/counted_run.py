"""A program's work with its loops whose trip count only their data decide counted by running it (issue 56): the
one step the grader (on its hidden inputs, `autograder.judge.loop_runs`) and the visible checks (on inputs drawn
the way the grader draws them by default, `exported_work`) share.

Its counted variant (`loop_counters.counted`: every loop carries how often its body ran and how often it was
entered, per device) is compiled and run as the program is, and each loop the program does not count is counted
as often as it ran on the busiest device (`measured_trips`, `work.recounted`). Where that cannot be done (no loop
the rewrite reaches, a variant that fails to compile or run), the work stays as read: `UNKNOWN_TRIPS` runs for
each such loop, said by `Work.uncounted`.

The reductions a program's types make (`typed.typed_reductions`, `Work.reduced_bytes`), once read, are counted the
same way (`counted_reductions`): a loop holding a reduction whose trip count only its data decide is counted as
often as the same counted variant's loop of its tag ran. Where that cannot be done, the loop stays uncounted
(`Reductions.uncounted`) and the judge refuses the figure as unknown rather than taking `UNKNOWN_TRIPS` for a fact
(`work.work_excess`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .compiled_run import compile_exported, device_mesh, run_exported
from .loop_counters import counted
from .measured_trips import measured_trips, tag_trips
from .module_texts import module_text
from .typed import Reductions, exported_reductions, typed_reductions
from .work import Work, recounted, work_of

__all__ = ["counted_work", "counted_reductions", "reductions_on", "exported_work", "draw_input", "drawn_inputs"]


def counted_work(work: Work, text: str, n_devices: int, exp, run: Callable) -> Work:
    """`work` (of `exp`, whose optimized HLO is `text`) with its loops whose count only their data decide counted
    as often as they ran: `run(variant)` compiles and runs an exported program as the program was, on the same
    inputs, and returns (its outputs by pytree path, its optimized HLO). `work` itself where there is no such
    loop or the variant cannot be made or run."""
    if not work.uncounted:
        return work
    ran = _ran_variant(exp, run)
    if ran is None:  # its loops stay counted UNKNOWN_TRIPS times, said by `Work.uncounted`
        return work
    _, counts, variant_text = ran
    return recounted(work, text, n_devices, measured_trips(text, variant_text, counts))


def counted_reductions(read: Reductions, exp, names: tuple, sizes: tuple, run: Callable) -> Reductions:
    """`read`, the reductions `exp`'s types make over the mesh's axes (`names`, `sizes`) as read from its module
    (`typed.exported_reductions`; not read again here), with a loop holding one whose trip count only its data
    decide counted as often as it ran: `run(variant)` compiles and runs an exported program as the program was, on
    the same inputs, and returns (its outputs by pytree path, anything). `read` itself (its loops `uncounted`) where
    there is no such loop or the variant cannot be made or run."""
    if not read.uncounted:
        return read
    ran = _ran_variant(exp, run)
    if ran is None:  # its loops stay uncounted, and the judge says so
        return read
    variant, counts, _ = ran
    return typed_reductions(module_text(variant), names, sizes, tag_trips(counts))


def _ran_variant(exp, run: Callable) -> tuple | None:
    """(the counted variant of `exp`, each loop's body runs and entries as its outputs hold them, what `run`
    returned beside its outputs), or None where the rewrite reaches no loop or the variant cannot be made or run."""
    try:
        found = counted(exp)
        if found is None:
            return None
        out, beside = run(found.exp)
        return found.exp, [out[f"[{i}]"] for i in range(found.first, found.first + 2 * found.loops)], beside
    except Exception:  # noqa: BLE001 - a hostile or unusual module: the caller keeps what it read
        return None


def reductions_on(exp, values: list) -> Reductions:
    """The visible checks' `counted_reductions`: the reductions `exp`'s types make over the axes of the mesh it runs
    on (`device_mesh`), its loops that hold one and whose count only their data decide run on `values` (the check's
    own inputs, its leaves in order: the figures the check shows are its own)."""
    mesh = device_mesh(exp)

    def run(variant) -> tuple[dict, None]:
        return run_exported(variant, values, mesh)[0], None

    names, sizes = tuple(mesh.axis_names), tuple(mesh.devices.shape)
    return counted_reductions(exported_reductions(exp, names, sizes), exp, names, sizes, run)


def draw_input(aval, draw: dict, r: np.random.Generator) -> np.ndarray:
    """One input of shape and dtype `aval` drawn from `r` as `draw` says (an exercise's distribution: `kind`
    normal, the default, with `mean` and `scale`; uniform or integers from `low` to `high`; quarters), booleans
    and integers as themselves: how the grader draws its hidden inputs (`autograder.judge.hidden_inputs`, from a
    secret seed) and the visible checks theirs (`drawn_inputs`, from a public one)."""
    shape, dtype = tuple(aval.shape), np.dtype(aval.dtype)
    kind = draw.get("kind", "normal")
    if dtype == np.bool_:
        return r.integers(0, 2, size=shape).astype(bool)
    if dtype.kind in "iu" or kind == "integers":
        return r.integers(int(draw.get("low", 0)), int(draw.get("high", 10)), size=shape).astype(dtype)
    if kind == "uniform":
        values = r.uniform(float(draw.get("low", 0.0)), float(draw.get("high", 1.0)), size=shape)
    elif kind == "quarters":
        values = r.integers(int(draw.get("low", -12)), int(draw.get("high", 13)), size=shape) / 4
    else:
        values = r.normal(float(draw.get("mean", 0.0)), float(draw.get("scale", 1.0)), size=shape)
    return np.asarray(values).astype(dtype)


def drawn_inputs(exp, seed: int = 0) -> list[np.ndarray]:
    """Inputs for `exp` drawn as the grader draws them unless an exercise says otherwise (`draw_input` with its
    defaults), from a public seed: what the visible checks run a loop on to count it."""
    rng = np.random.default_rng(seed)
    return [draw_input(aval, {}, rng) for aval in exp.in_avals]


def exported_work(exp) -> Work:
    """The `Work` of one device of an exported program compiled as the grader compiles it (`compiled_run`), its
    loops whose count only their data decide counted by running it on `drawn_inputs` (for the visible checks: the
    facts the grader reads, on the same compile, the grader running the loops on its hidden inputs)."""
    compiled, _, mesh = compile_exported(exp)
    text = compiled.as_text()
    work = work_of(compiled, tuple(mesh.axis_names), tuple(mesh.devices.shape), exp.nr_devices, text=text)
    inputs = drawn_inputs(exp)

    def run(variant) -> tuple[dict, str]:
        out, ran = run_exported(variant, inputs, mesh)
        return out, ran.as_text()

    return counted_work(work, text, exp.nr_devices, exp, run)
