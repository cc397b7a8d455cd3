"""The work of one device.

What one device does and holds, read from the optimized per-device program (SPMD partitioning has already
split it): its FLOPs (every instruction as often as it runs, each run counted as XLA's cost analysis counts
it), its peak memory (XLA's memory analysis: arguments, results and temporaries), the largest array one of
its instructions materializes (outside fusions, which materialize only their results) and the bytes each kind
of collective delivers to it. An exercise that says how the work is split ("each device computes only its
share", "no device holds all of `w`") judges these against the reference's, within a stated factor
(`work_excess`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from .hlo import (
    HEAD_RE,
    INSTRUCTION_RE,
    array_bytes,
    collective_lines,
    describe_collective,
    group_axes,
    result_bytes,
)
from .instructions import parse_module
from .runs import program_totals

__all__ = ["WORK_FACTS", "Work", "largest_array", "work_of", "recounted", "moved_of", "work_excess", "overlap_of"]

# what `Case(work=...)` may judge
WORK_FACTS = ("flops", "peak_bytes", "largest_bytes", "sent_bytes", "overlap", "arithmetic_flops", "reduced_bytes")
_LOOP_OVERLAP = 1 << 20  # `Work.overlap` of a loop whose every step both sends and multiplies


@dataclass(frozen=True)
class Work:
    """What one device computes and holds in a compiled program (see above). `moved`: (description,
    bytes) of each kind of collective, the bytes its results hold on one device, summed. `overlap`: how
    many matmuls the optimized program's schedule runs before its last collective-permute (a loop whose body
    does both counts as overlapping throughout): a collective matmul multiplies while its blocks travel.
    `flops` and `sent_bytes` count every instruction as often as its computation runs (`runs.program_totals`:
    a loop's body as often as the loop runs, its condition once more, a conditional's fixed branch or else its
    costliest): XLA's cost analysis counts a loop's body once, so a schedule written as a `fori_loop` would
    otherwise look k times cheaper than the same schedule unrolled. `uncounted`: the loops whose trip count
    only the program's data decide and that were not run to count them (each counted `runs.UNKNOWN_TRIPS` times);
    `measured`: those counted by running the program on the hidden inputs (`measured_trips`). `arithmetic_flops`:
    the FLOPs of the arithmetic on floating-point numbers alone (`instructions.arithmetic_flops`: add, subtract,
    multiply, ..., one per element of each result, a matmul or convolution two per multiply-add, fusions' insides
    included; comparisons, selections, a sort's comparator and a reducer not), for a statement whose share is an
    arithmetic step beside a costlier one every device does whole (each device centres its own rows, however it
    writes the centring; every device sorts every row to find the medians).
    `reduced_bytes`: the bytes the exported program's types reduce over the mesh's axes, each reduction as often
    as it runs (`typed.typed_reductions`): the same wherever the program is compiled, where `sent_bytes` is what
    one backend's compiler kept (XLA on a TPU merges a loop's m all-reduces into one); `reductions_measured`: the
    loops holding a reduction whose count only their data decide, counted by running the program
    (`counted_run.counted_reductions`); `reductions_uncounted`: such loops that could not be run to count them:
    their figure is unknown, and a case that judges it refuses it (`work_excess`)."""

    flops: float
    peak_bytes: int
    largest_bytes: int
    moved: tuple = ()
    overlap: int = 0  # matmuls scheduled before the last `ppermute` (`overlap_of`): the schedule, where it matters
    sent_bytes: int = 0  # the bytes every collective delivers to the device in one call, as often as it runs
    uncounted: int = 0  # loops whose trip count only the program's data decide, not measured
    bounded: int = 0  # loops counted as often as a limit of their own lets them run (their data may stop them sooner)
    measured: tuple = ()  # loops counted by running them on the hidden inputs: each one's trips per entry
    arithmetic_flops: float = 0.0  # the FLOPs of arithmetic on floats alone (matmuls too), each as often as it runs
    reduced_bytes: int = 0  # the bytes the program's types reduce, as often as they run (`typed.typed_reductions`)
    reductions_measured: int = 0  # loops holding a reduction, counted by running the program on the hidden inputs
    reductions_uncounted: int = 0  # loops holding a reduction that could be neither read nor run to count them


def largest_array(text: str) -> int:
    """The bytes of the largest array an instruction of an optimized HLO module's text materializes: every
    computation but the fused ones and reducers (`calls=`, `to_apply=`), whose values live in registers;
    parameters (what the device is handed: the inputs as the caller lays them out), tuples and their elements
    and bitcasts (views of values made elsewhere) make nothing."""
    inlined = set(re.findall(r"(?:calls|to_apply)=%?([\w.\-]+)", text))
    largest, skip = 0, False
    for line in text.splitlines():
        head = HEAD_RE.match(line)
        if head:
            skip = head.group(2) in inlined
            continue
        m = None if skip else INSTRUCTION_RE.match(line)
        if m and m.group(2) not in ("parameter", "get-tuple-element", "tuple", "bitcast"):
            largest = max([largest, *array_bytes(m.group(1))])
    return largest


def overlap_of(text: str) -> int:
    """Matmuls (a `dot`, or a fusion or call that holds one) the optimized module's entry computation runs,
    in its scheduled order, before its last collective-permute; `_LOOP_OVERLAP` when a loop's body holds
    both a collective-permute and a matmul."""
    module = parse_module(text)
    bodies, entry = module.computations, module.entry
    memo: dict[str, tuple[bool, bool]] = {}

    def holds(name: str, depth: int = 0) -> tuple[bool, bool]:
        """(has a matmul, has a collective-permute), through the computations it calls."""
        if name in memo or depth > 32 or name not in bodies:
            return memo.get(name, (False, False))
        memo[name] = (False, False)
        dot = send = False
        for op, line in ((i.op, i.line) for i in bodies[name]):
            dot = dot or op in ("dot", "convolution")
            send = send or op.startswith("collective-permute")
            for callee in re.findall(r"(?:calls|to_apply|body|condition)=%?([\w.\-]+)", line):
                d, c = holds(callee, depth + 1)
                dot, send = dot or d, send or c
        memo[name] = (dot, send)
        return memo[name]

    order = []
    for op, line in ((i.op, i.line) for i in bodies.get(entry, [])):
        if op.startswith("collective-permute") and not op.endswith("-done"):
            order.append("send")
            continue
        callees = re.findall(r"(?:calls|to_apply|body)=%?([\w.\-]+)", line)
        found = [holds(c) for c in callees]
        if op == "while" and any(d and c for d, c in found):
            return _LOOP_OVERLAP
        if op in ("dot", "convolution") or any(d for d, _ in found):
            order.append("dot")
    if "send" not in order:
        return 0
    last = len(order) - 1 - order[::-1].index("send")
    return order[:last].count("dot")


def work_of(
    compiled, names: tuple, sizes: tuple, n_devices: int, text: str | None = None, measured: dict | None = None
) -> Work:
    """The `Work` of one device of a compiled program (`jax.stages.Compiled`), from its optimized HLO; `measured`:
    the trips of its loops whose count only their data decide, run on the hidden inputs (`measured_trips`)."""
    text = compiled.as_text() if text is None else text
    try:
        cost = compiled.cost_analysis()
        if isinstance(cost, list | tuple):
            cost = cost[0] if cost else {}
        flops = float((cost or {}).get("flops", 0.0) or 0.0)
    except Exception:  # noqa: BLE001 - a program XLA cannot cost is still judged on everything else
        flops = 0.0
    try:
        mem = compiled.memory_analysis()
        peak = int(mem.argument_size_in_bytes + mem.output_size_in_bytes + mem.temp_size_in_bytes)
        peak -= int(mem.alias_size_in_bytes)
    except Exception:  # noqa: BLE001 - a backend without memory analysis: the largest array stands for it
        peak = 0
    totals = program_totals(text, n_devices, measured=measured)
    # XLA's figure, each instruction's FLOPs added again for every run beyond the one XLA counted (and a
    # conditional's not-taken branch taken out): a program without loops or fixed branches reads XLA's figure
    flops += totals.flops - totals.xla_style
    moved = moved_of(text, names, sizes, n_devices)
    facts = (max(peak, 0), largest_array(text), moved, overlap_of(text), totals.sent_bytes)
    return Work(flops, *facts, totals.uncounted, totals.bounded, totals.measured, totals.arithmetic)


def recounted(work: Work, text: str, n_devices: int, measured: dict) -> Work:
    """`work` (`work_of` of the optimized HLO `text`) with its loops whose count only their data decide counted
    as often as they ran (`measured`: `measured_trips`) instead of `runs.UNKNOWN_TRIPS` times: FLOPs and bytes
    sent, the loops left uncounted, the measured ones."""
    before, after = program_totals(text, n_devices), program_totals(text, n_devices, measured=measured)
    flops = work.flops + after.flops - before.flops
    return replace(
        work,
        flops=flops,
        sent_bytes=after.sent_bytes,
        uncounted=after.uncounted,
        measured=after.measured,
        arithmetic_flops=after.arithmetic,
    )


def moved_of(text: str, names: tuple, sizes: tuple, n_devices: int) -> tuple:
    """(description, bytes) of each kind of collective in an optimized HLO module's text: the bytes its
    results hold on one device, summed (`Work.moved`)."""
    moved: dict[str, int] = {}
    for op, reducer, groups, line in collective_lines(text, n_devices):
        size = result_bytes(line)
        for axis in group_axes(groups, names, sizes):
            desc = describe_collective(op, reducer, axis)
            moved[desc] = moved.get(desc, 0) + size
    return tuple(sorted(moved.items()))


def work_excess(got: Work, want: Work, limits: dict) -> tuple[str, float, float] | None:
    """The first fact of `limits` (fact -> factor, facts of `WORK_FACTS`) in which `got` exceeds `factor`
    times the reference's `want` (for `overlap`, the schedule: falls short of 1 / `factor` of the reference's):
    (fact, got / want, factor); None when every one is within its factor. Reductions of a loop that could be
    neither read nor run to count them (`Work.reductions_uncounted`) are unknown: never within a factor (ratio
    infinite), where `UNKNOWN_TRIPS` runs would be a guess."""
    for fact in WORK_FACTS:
        factor = limits.get(fact)
        if factor is None:
            continue
        mine, theirs = float(getattr(got, fact)), float(getattr(want, fact))
        if fact == "reduced_bytes" and got.reductions_uncounted:
            return fact, float("inf"), float(factor)
        if fact == "overlap":  # the schedule: at least 1/factor of the reference's matmuls before its last send
            if mine * float(factor) < theirs:
                return fact, (mine / theirs if theirs > 0 else 1.0), float(factor)
            continue
        if mine > float(factor) * theirs:
            return fact, (mine / theirs if theirs > 0 else float("inf")), float(factor)
    return None
