"""Compiling an exported program for the grader's devices, fed the reference's input layout.

Used by the judge (`autograder.judge.programs`) inside the clean scorer process. Threat model: the
program is hostile data (`autograder.judge.exported` read it); here it is compiled, never trusted:

- it is compiled for the grader's devices, on the mesh its shardings name (else the module's
  `sdy.mesh`), and run the way the **reference** lays out its inputs (issue 16): every input is fed
  with the reference's layout (`feed`), so each device is handed only the shard the reference's
  layout gives it, and where each result lives once compiled is read from the compiled program
  (`out_layouts`: split or replicated, over which axes), never from what the kernel says;
- it is compiled by `namedaxes.judging.compile_exported`, the judge's one compile, as the visible checks
  compile it (`COMPILER_OPTIONS`: LLVM's level 0, without its expensive passes: less compile time, the same
  optimized HLO); what is the grader's here is its policy: the layouts it is fed, the device count, the cache;
- what one device computes and holds (`work`: FLOPs, peak memory, largest array, bytes each collective
  delivers) is read from the same optimized per-device program, once per program;
- its communication is read from the *optimized* HLO (`compiled.as_text()`): a collective whose
  result is unused is gone, `axis_index`, `pvary`/`pcast` and constant folding are not
  communication; replica groups are mapped back to the reference mesh's axis names;
- a program that needs more devices than the grader has is `Rejected`.

Reference programs come from the solution notebook's run (trusted, stored with content hashes by
the reference cache); their compiled form is cached per process (at most `MAX_COMPILED`), so a batch
compiles each reference program once, and a student's program identical to the reference's (up to
source locations), fed the reference's layouts, reuses the reference's compile.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Any

from namedaxes.judging import (
    Reductions,
    Work,
    compile_exported,
    describe_collective,
    device_mesh,
    group_axes,
    hlo_collectives,
    placed_layout,
    read_reductions,
    with_reductions,
    work_of,
)

from ..limits import MAX_COMPILED
from ..reasons import phrase as say
from .exported import Program, Rejected

__all__ = ["Compiled", "COMPILE_STATS", "compiled_for", "judged_work"]


@dataclass
class Compiled:
    compiled: Any
    in_shardings: list
    signature: dict
    communication: list[str]
    axes: list[str]
    mesh_axes: tuple
    comm_axes: tuple = ()  # (description, axis) of each collective of `communication`
    entry_in: tuple = ()  # the layout the program's signature states for each input (None: unstated)
    regions: tuple = ()  # `program_regions`: where each per-device region takes its inputs
    out_layouts: tuple = ()  # where each result lives once compiled (`placed_layout`)
    work: Work | None = None  # what one device computes and holds (`namedaxes.judging.work_of`)
    # the reductions its types make as `judged_work` read them, passed on to `loop_runs.reductions_run` (None: not
    # read, or, where `work.reduced_bytes` is `UNREADABLE_REDUCTIONS`, its module could not be read)
    reductions: Reductions | None = None


_COMPILED: dict[str, Compiled] = {}
# What this process compiled (fresh compiles and their seconds, by kind: reference, student, variant),
# reported with each verdict (scorer.py) for the grader's timings: where the scorer's time goes.
COMPILE_STATS: dict[str, float] = {}


def compiled_for(
    program: Program, names: tuple[str, ...], sizes: tuple[int, ...], feed: tuple | None = None, kind: str = "student"
) -> Compiled:
    """`program` (read once, exported.Program) compiled for the grader's devices; identical programs (e.g. a
    student's that equals the reference's up to source locations) are compiled once per process.

    `feed`: the input layouts to run it with (the reference's, for a student's program: each device
    is handed only the shard the reference's layout gives it); None: the program's own."""
    if feed is None:  # the key names the layouts it runs with: a student's program identical to the
        feed = program.entry_layouts  # reference's, fed the reference's layouts, reuses the reference's compile
    key = program.fingerprint + repr((names, sizes, feed))
    if key not in _COMPILED:
        if len(_COMPILED) >= MAX_COMPILED:
            _COMPILED.pop(next(iter(_COMPILED)))
        t0 = time.monotonic()
        _COMPILED[key] = _compile_fresh(program, names, sizes, feed)
        COMPILE_STATS[kind] = COMPILE_STATS.get(kind, 0) + 1
        COMPILE_STATS[kind + "_s"] = COMPILE_STATS.get(kind + "_s", 0.0) + time.monotonic() - t0
    return _COMPILED[key]


def _compile_fresh(program: Program, names: tuple[str, ...], sizes: tuple[int, ...], feed: tuple) -> Compiled:
    import jax

    exp = program.exp
    compiled, shardings, mesh = compile_exported(exp, feed, _mesh(program))
    text = compiled.as_text()
    communication, axes, pairs = set(), set(), set()
    for op, reducer, groups in hlo_collectives(text, exp.nr_devices):
        for axis in group_axes(groups, names, sizes):
            communication.add(describe_collective(op, reducer, axis))
            axes.add(axis)
            pairs.add((describe_collective(op, reducer, axis), axis))
    mesh_names, mesh_shape = tuple(mesh.axis_names), tuple(mesh.devices.shape)
    out_layouts = tuple(
        placed_layout(sh, aval.shape, mesh_names, mesh_shape)
        for sh, aval in zip(jax.tree_util.tree_leaves(compiled.output_shardings), exp.out_avals)
    )
    return Compiled(
        compiled,
        shardings,
        program.signature,
        sorted(communication),
        sorted(axes),
        program.mesh[:2] if program.mesh else None,
        tuple(sorted(pairs)),
        program.entry_layouts,
        program.regions,
        out_layouts,
        work_of(compiled, mesh_names, mesh_shape, exp.nr_devices, text=text),
    )


def judged_work(compiled: Compiled, program: Program, names: tuple, sizes: tuple, limits: dict) -> Compiled:
    """`compiled` with the reductions its program's types make (`Work.reduced_bytes`: read from the exported
    module, the same on every backend, once: the reading kept as `Compiled.reductions`), where the case's work
    `limits` judge them; as it is otherwise."""
    if "reduced_bytes" not in limits or compiled.work is None:
        return compiled
    read = read_reductions(program.exp, names, sizes)
    return dataclasses.replace(compiled, work=with_reductions(compiled.work, read), reductions=read)


def _mesh(program: Program):
    """The mesh it runs on (`namedaxes.judging.device_mesh`: its shardings', else the module's `sdy.mesh`, else
    one axis over its devices) over the grader's devices. A program that needs more devices than the grader
    has is `Rejected`."""
    import jax

    if program.nr_devices > len(jax.devices()):
        raise Rejected(say("program_needs_devices", n=program.nr_devices))
    return device_mesh(program.exp)
