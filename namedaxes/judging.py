"""Reading and probing compiled programs: the judging steps the visible checks and the grader share.

One place for what decides, from a program alone, which collectives it performs and whether they
matter (issue 16, "one judge"): the collectives of an optimized HLO module and the mesh axes their
device groups connect (`hlo_collectives`, `group_axes`, `describe_collective`), and a variant of an
exported program whose collectives of one kind have their results changed (`perturbed`), which tells
communication that reaches the outputs from communication that does not (`changed`,
`communication_that_matters`).

Imported by the kernel's visible checks (`namedaxes.checking`) and by the grader's clean scorer
process (`autograder.judge.programs`). It imports nothing of the course but JAX and NumPy, so
importing it in the scorer brings in nothing a student's code could have touched; the kernel's copy is
the student's to rebind, which is why the grader's verdict never comes from it. Its only state is a memo
of module texts (`module_text`): a pure function of a module's bytes, bounded in characters, so a
program's text is made once however many judging steps read it.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "hlo_collectives",
    "group_axes",
    "describe_collective",
    "perturbed",
    "changed",
    "mesh_of",
    "text_mesh",
    "communication_that_matters",
    "RTOL",
    "ATOL",
    "norm_layout",
    "sdy_layouts",
    "regions",
    "placed_layout",
    "split_axes",
    "RegionDifference",
    "region_difference",
    "Examined",
    "examine",
    "region_takes",
    "region_facts",
    "RegionFacts",
    "proven_regions",
    "module_text",
    "TEXT_MEMO_CHARS",
    "COMPILER_OPTIONS",
    "Work",
    "work_of",
    "WORK_FACTS",
    "work_excess",
    "exported_work",
    "moved_of",
    "largest_array",
    "Sends",
    "collective_sends",
]

RTOL = 1e-5  # autograder.judge.compare.RTOL
ATOL = 1e-5  # autograder.judge.compare.ATOL
# How the judge compiles a program (here and in `autograder.judge.compiling`). Its programs are small and
# run on a few inputs, so compiling is what costs: machine code made by LLVM at level 0 without its
# expensive passes compiles in 55-70 % of the time (a training step: 155 -> 121 ms). What the judge reads
# is untouched: the optimized HLO comes from XLA's HLO passes, which run before code generation (the same
# text over all 1515 compiles of the exercise tests of notebooks 02, 03, 04 and 07; tests/namedaxes/test_judging.py).
COMPILER_OPTIONS = {"xla_backend_optimization_level": 0, "xla_llvm_disable_expensive_passes": True}


_COLLECTIVE_OPS = (
    "all-reduce",
    "all-gather",
    "reduce-scatter",
    "all-to-all",
    "collective-permute",
    "collective-broadcast",
    "ragged-all-to-all",
)
# `%name = <shape, possibly a tuple with spaces> all-reduce(...)`: the op is the first word followed by `(`
# after the `=` that is not inside the result shape.
_OP_RE = re.compile(r"^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*.*?\s(" + "|".join(_COLLECTIVE_OPS) + r")(?:-start)?\(")
# A computation's first line, `[ENTRY ]%name (params) -> type {`: group 1 is "ENTRY " for the entry computation.
_HEAD_RE = re.compile(r"^\s*(ENTRY\s+)?%?([\w.\-]+)\s*\(.*\)\s*->.*\{\s*$")
_REDUCER_NAMES = {"add": "psum", "maximum": "pmax", "minimum": "pmin", "multiply": "pprod", "and": "pand", "or": "por"}
_KIND_NAMES = {
    "all-gather": "all_gather",
    "reduce-scatter": "psum_scatter",
    "all-to-all": "all_to_all",
    "collective-permute": "ppermute",
    "collective-broadcast": "pbroadcast",
    "ragged-all-to-all": "ragged_all_to_all",
}


# ---------------------------------------------------------------- an exported module's text
TEXT_MEMO_CHARS = 64 * 2**20  # the module texts `module_text` keeps, at most (the least recently read go first)
_TEXTS: OrderedDict[bytes, str] = OrderedDict()  # sha256 of a module's bytecode -> its text
_TEXTS_LOCK = threading.Lock()
_TEXT_CHARS = [0]


def module_text(exp) -> str:
    """`exp.mlir_module()`: the module's bytecode parsed into a fresh MLIR context and printed (about 6 ms,
    and the judging steps read it several times per program). Made once per module, remembered by the
    digest of its bytes (a pure function of them); the texts kept are bounded by `TEXT_MEMO_CHARS`."""
    key = hashlib.sha256(exp.mlir_module_serialized).digest()
    with _TEXTS_LOCK:
        text = _TEXTS.get(key)
        if text is not None:
            _TEXTS.move_to_end(key)
            return text
    text = exp.mlir_module()
    if len(text) <= TEXT_MEMO_CHARS:
        with _TEXTS_LOCK:
            if key not in _TEXTS:
                _TEXTS[key] = text
                _TEXT_CHARS[0] += len(text)
            while _TEXT_CHARS[0] > TEXT_MEMO_CHARS:
                _TEXT_CHARS[0] -= len(_TEXTS.popitem(last=False)[1])
    return text


# ---------------------------------------------------------------- reading optimized HLO
def _iota_groups(text: str) -> list[list[int]]:
    """`[G,S]<=[d0,d1,...]T(p...)` (XLA's iota replica-group list) as explicit groups."""
    m = re.fullmatch(r"\[(\d+),(\d+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?", text)
    if not m:
        raise ValueError(f"unknown replica group format {text!r}")
    g, s = int(m.group(1)), int(m.group(2))
    dims = [int(d) for d in m.group(3).split(",")]
    ids = np.arange(int(np.prod(dims))).reshape(dims)
    if m.group(4):
        ids = ids.transpose([int(p) for p in m.group(4).split(",")])
    return ids.reshape(g, s).tolist()


def _brace_groups(text: str) -> list[list[int]]:
    return [[int(v) for v in grp.split(",") if v.strip()] for grp in re.findall(r"\{([\d,\s]*)\}", text)]


def _groups(line: str, n_devices: int) -> list[list[int]]:
    m = re.search(r"source_target_pairs=(\{(?:\{[\d,]*\},?)*\})", line)
    if m:
        return _brace_groups(m.group(1)[1:-1])
    m = re.search(r"replica_groups=(\[[\d,]+\]<=\[[\d,]+\](?:T\([\d,]+\))?)", line)
    if m:
        return _iota_groups(m.group(1))
    m = re.search(
        r"replica_groups=mesh\[([^\]]*)\]"
        r"(?:,\s*device_ids=(?:\((\[[\d,]+\](?:T\([\d,]+\))?)\)|\[([\d,\s]*)\]))?\s*\{([^}]*)\}",
        line,
    )
    if m:
        return _mesh_groups(m.group(1), m.group(4), iota=m.group(2), listed=m.group(3))
    m = re.search(r"replica_groups=\{((?:\{[\d,]*\},?)*)\}", line)
    if m:
        groups = [g for g in _brace_groups(m.group(1)) if g]
        return groups or [list(range(n_devices))]  # `replica_groups={}`: all devices
    if "replica_groups=" in line:  # a format this reader does not know: never guess "all devices"
        raise ValueError(f"unknown replica group format in {line.strip()[:200]!r}")
    return [list(range(n_devices))]  # no groups written: all devices


def _mesh_groups(mesh_text: str, axes_text: str, iota: str | None = None, listed: str | None = None) -> list[list[int]]:
    """`replica_groups=mesh['a'=2,'b'=4] {'b'}` (XLA's named-mesh replica groups) as explicit groups: the
    mesh's devices grouped along the listed axes (each group varies only along them). The devices at the
    mesh's positions are row-major ids, or those of `device_ids=([d0,d1]T(p...))` (an iota list, `iota`)
    or `device_ids=[i,j,...]` (`listed`)."""
    dims = re.findall(r"'([^']+)'\s*=\s*(\d+)", mesh_text)
    if not dims or re.sub(r"'[^']+'\s*=\s*\d+|[\s,]", "", mesh_text):
        raise ValueError(f"unknown replica group mesh {mesh_text[:200]!r}")  # device ids or other attributes
    names, sizes = [n for n, _ in dims], [int(v) for _, v in dims]
    axes = re.findall(r"'([^']+)'", axes_text)
    if not set(axes) <= set(names):
        raise ValueError(f"replica group axes {axes!r} are not the mesh's {names!r}")
    inner = [names.index(a) for a in axes]
    outer = [i for i in range(len(names)) if i not in inner]
    n = int(np.prod(sizes))
    if iota:
        devices = np.asarray(_iota_groups(f"[1,{n}]<={iota[: iota.index(']') + 1]}{iota[iota.index(']') + 1 :]}")[0])
    elif listed is not None:
        devices = np.asarray([int(v) for v in listed.replace(" ", "").split(",") if v])
    else:
        devices = np.arange(n)
    if devices.size != n:
        raise ValueError(f"replica group device list of {devices.size} for a mesh of {n}")
    ids = devices.reshape(sizes).transpose(outer + inner)
    return ids.reshape(-1, int(np.prod([sizes[i] for i in inner]))).tolist()


def _reducers(text: str) -> dict[str, str]:
    """computation name -> the op of its ROOT instruction (add, maximum, ...)."""
    out, current = {}, None
    for line in text.splitlines():
        head = _HEAD_RE.match(line)
        if head:
            current = head.group(2)
            continue
        root = re.match(r"^\s*ROOT\s+%?[\w.\-]+\s*=\s*\S+\s+([\w\-]+)\(", line)
        if root and current:
            out[current] = root.group(1)
    return out


def _fusion_bodies(text: str) -> set[str]:
    """The computations a `fusion` instruction calls (their instructions run inside that one kernel)."""
    bodies = set()
    for line in text.splitlines():
        if re.search(r"\sfusion\(", line):
            bodies.update(re.findall(r"calls=%?([\w.\-]+)", line))
    return bodies


def _clone_key(op: str, line: str) -> tuple | None:
    """What a copy of one collective shares with the others: its op, channel, result type and device groups."""
    channel = re.search(r"\bchannel_id=(\d+)", line)
    typed = _INSTRUCTION_RE.match(line)
    groups = re.search(r"(?:replica_groups|source_target_pairs)=(.*?)(?:, [a-z_]+=|$)", line)
    if not channel or not typed:
        return None
    shape = re.sub(r"\{[^{}]*\}", "", typed.group(1))  # the element types and dimensions, not the tiling
    return op, channel.group(1), shape, groups.group(1) if groups else ""


def _collective_lines(text: str, n_devices: int) -> list[tuple[str, str, list[list[int]], str]]:
    """(op, reducer or '', device groups, its line) of every collective in an optimized HLO module's text.

    A TPU's asynchronous collective fusions put a collective inside fusions, and copy it into each fusion
    that continues it (one all-gather on up to seven lines of notebook 10's step compiled for v5e 2x4): inside
    fusion bodies, a line with the op, channel, result type and device groups of one met already is that
    collective again. Elsewhere every line is its own collective (the CPU backend gives distinct collectives
    the same channel, so the channel alone tells nothing there)."""
    return [found[:4] for found in _collectives_where(text, n_devices)]


def _collectives_where(text: str, n_devices: int) -> list[tuple[str, str, list[list[int]], str, str]]:
    """`_collective_lines` with the computation each collective's line is in, last."""
    reducers, fused = _reducers(text), _fusion_bodies(text)
    found, seen, current = [], set(), None
    for line in text.splitlines():
        head = _HEAD_RE.match(line)
        if head:
            current = head.group(2)
            continue
        m = _OP_RE.search(line)
        if not m or "-done(" in line:
            continue
        op = m.group(1)
        if current in fused:
            key = _clone_key(op, line)
            if key in seen:
                continue
            seen.add(key)
        reducer = ""
        apply = re.search(r"to_apply=%?([\w.\-]+)", line)
        if apply:
            reducer = reducers.get(apply.group(1), "")
        found.append((op, reducer, _groups(line, n_devices), line, current or ""))
    return found


def hlo_collectives(text: str, n_devices: int) -> list[tuple[str, str, list[list[int]]]]:
    """(op, reducer or '', device groups) of every collective in an optimized HLO module's text."""
    return [(op, reducer, groups) for op, reducer, groups, _ in _collective_lines(text, n_devices)]


def group_axes(groups: list[list[int]], names: tuple[str, ...], shape: tuple[int, ...]) -> tuple[str, ...]:
    """Mesh axes along which some group connects two devices (logical ids in row-major mesh order)."""
    size = int(np.prod(shape)) if shape else 1
    axes = set()
    for group in groups:
        coords = [np.unravel_index(i, shape) for i in group if 0 <= i < size]
        for j, name in enumerate(names):
            if len({c[j] for c in coords}) > 1:
                axes.add(name)
    return tuple(n for n in names if n in axes)


def describe_collective(op: str, reducer: str, axis: str) -> str:
    name = _REDUCER_NAMES.get(reducer, f"all-reduce ({reducer})") if op == "all-reduce" else _KIND_NAMES.get(op, op)
    return f"{name} over '{axis}'"


# ---------------------------------------------------------------- the work of one device
# What one device does and holds, read from the optimized per-device program (SPMD partitioning has already
# split it): its FLOPs (XLA's cost analysis), its peak memory (XLA's memory analysis: arguments, results and
# temporaries), the largest array one of its instructions materializes (outside fusions, which materialize
# only their results) and the bytes each kind of collective delivers to it. An exercise that says how the
# work is split ("each device computes only its share", "no device holds all of `w`") judges these against
# the reference's, within a stated factor (`work_excess`).
_DTYPE_BYTES = {"pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "s32": 4, "u32": 4, "f32": 4}
_DTYPE_BYTES.update({"s64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16})
_ARRAY_RE = re.compile(r"\b(" + "|".join(_DTYPE_BYTES) + r")\[([\d,]*)\]")
_INSTRUCTION_RE = re.compile(r"^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*(.*?)\s([\w\-]+)\(")
WORK_FACTS = ("flops", "peak_bytes", "largest_bytes", "sent_bytes", "overlap")  # what `Case(work=...)` may judge
_LOOP_OVERLAP = 1 << 20  # `Work.overlap` of a loop whose every step both sends and multiplies


@dataclass(frozen=True)
class Work:
    """What one device computes and holds in a compiled program (see above). `moved`: (description,
    bytes) of each kind of collective, the bytes its results hold on one device, summed. `overlap`: how
    many matmuls the optimized program's schedule runs before its last collective-permute (a loop whose body
    does both counts as overlapping throughout): a collective matmul multiplies while its blocks travel.
    `flops` and `sent_bytes` count a loop's body as often as the loop runs (`_runs`): XLA's cost analysis
    counts it once, so a schedule written as a `fori_loop` would otherwise look k times cheaper than the
    same schedule unrolled."""

    flops: float
    peak_bytes: int
    largest_bytes: int
    moved: tuple = ()
    overlap: int = 0  # matmuls scheduled before the last `ppermute` (`_overlap`): the schedule, where it matters
    sent_bytes: int = 0  # the bytes every collective delivers to the device in one call, as often as it runs


def _array_bytes(type_text: str) -> list[int]:
    return [
        _DTYPE_BYTES[dt] * int(np.prod([int(d) for d in dims.split(",") if d] or [1]))
        for dt, dims in _ARRAY_RE.findall(type_text)
    ]


def largest_array(text: str) -> int:
    """The bytes of the largest array an instruction of an optimized HLO module's text materializes: every
    computation but the fused ones and reducers (`calls=`, `to_apply=`), whose values live in registers;
    parameters (what the device is handed: the inputs as the caller lays them out), tuples and their elements
    and bitcasts (views of values made elsewhere) make nothing."""
    inlined = set(re.findall(r"(?:calls|to_apply)=%?([\w.\-]+)", text))
    largest, skip = 0, False
    for line in text.splitlines():
        head = _HEAD_RE.match(line)
        if head:
            skip = head.group(2) in inlined
            continue
        m = None if skip else _INSTRUCTION_RE.match(line)
        if m and m.group(2) not in ("parameter", "get-tuple-element", "tuple", "bitcast"):
            largest = max([largest, *_array_bytes(m.group(1))])
    return largest


def _overlap(text: str) -> int:
    """Matmuls (a `dot`, or a fusion or call that holds one) the optimized module's entry computation runs,
    in its scheduled order, before its last collective-permute; `_LOOP_OVERLAP` when a loop's body holds
    both a collective-permute and a matmul."""
    bodies: dict[str, list[tuple[str, str]]] = {}
    current, entry = None, None
    for line in text.splitlines():
        head = _HEAD_RE.match(line)
        if head:
            current = head.group(2)
            bodies[current] = []
            entry = current if head.group(1) else entry
            continue
        m = _INSTRUCTION_RE.match(line) if current else None
        if m:
            bodies[current].append((m.group(2), line))
    memo: dict[str, tuple[bool, bool]] = {}

    def holds(name: str, depth: int = 0) -> tuple[bool, bool]:
        """(has a matmul, has a collective-permute), through the computations it calls."""
        if name in memo or depth > 32 or name not in bodies:
            return memo.get(name, (False, False))
        memo[name] = (False, False)
        dot = send = False
        for op, line in bodies[name]:
            dot = dot or op in ("dot", "convolution")
            send = send or op.startswith("collective-permute")
            for callee in re.findall(r"(?:calls|to_apply|body|condition)=%?([\w.\-]+)", line):
                d, c = holds(callee, depth + 1)
                dot, send = dot or d, send or c
        memo[name] = (dot, send)
        return memo[name]

    order = []
    for op, line in bodies.get(entry, []):
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


def work_of(compiled, names: tuple, sizes: tuple, n_devices: int, text: str | None = None) -> Work:
    """The `Work` of one device of a compiled program (`jax.stages.Compiled`), from its optimized HLO."""
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
    runs = _runs(text)
    flops += _loop_dot_flops(text, runs)
    moved = moved_of(text, names, sizes, n_devices)
    return Work(flops, max(peak, 0), largest_array(text), moved, _overlap(text), _sent_bytes(text, n_devices, runs))


def _result_bytes(line: str) -> int:
    """The bytes a collective's instruction delivers to one device. A `collective-permute-start`'s type is a
    tuple (its operand, its result, then the transfer's bookkeeping, `u32[]`s): its result is the second entry
    (a TPU runs its ppermutes so; the CPU backend's are synchronous)."""
    typed = _INSTRUCTION_RE.match(line)
    if not typed:
        return 0
    sizes = _array_bytes(typed.group(1))
    if typed.group(2) == "collective-permute-start" and len(sizes) >= 2:
        return sizes[1]
    return sum(sizes)


def moved_of(text: str, names: tuple, sizes: tuple, n_devices: int) -> tuple:
    """(description, bytes) of each kind of collective in an optimized HLO module's text: the bytes its
    results hold on one device, summed (`Work.moved`)."""
    moved: dict[str, int] = {}
    for op, reducer, groups, line in _collective_lines(text, n_devices):
        size = _result_bytes(line)
        for axis in group_axes(groups, names, sizes):
            desc = describe_collective(op, reducer, axis)
            moved[desc] = moved.get(desc, 0) + size
    return tuple(sorted(moved.items()))


@dataclass(frozen=True)
class Sends:
    """How one device runs one kind of collective (`collective_sends`): `runs`, the times it runs in one
    call of the program (a loop's body counted as often as its known trip count says; 0 where a loop's
    count is unknown), and `largest`, the bytes the largest single instance of it delivers to the device."""

    runs: int
    largest: int


_UNKNOWN_TRIPS = 1 << 10  # how often `Work` counts a loop's body whose trip count XLA does not know
_MAX_RUNS = 1 << 40


def _trip_counts(text: str) -> tuple[dict[str, list[tuple[str, int]]], str | None]:
    """computation name -> the computations it runs and how often per run of it (a `while` body: its
    `known_trip_count`, -1 when unknown; anything else it calls: once), and the entry computation's name."""
    calls: dict[str, list[tuple[str, int]]] = {}
    current, entry = None, None
    for line in text.splitlines():
        head = _HEAD_RE.match(line)
        if head:
            current = head.group(2)
            calls[current] = []
            entry = current if head.group(1) else entry
            continue
        if current is None:
            continue
        body = re.search(r"\bbody=%?([\w.\-]+)", line)
        if body and " while(" in line:
            trips = re.search(r'"known_trip_count":\{"n":"(\d+)"\}', line)
            calls[current].append((body.group(1), int(trips.group(1)) if trips else -1))
            continue
        for callee in re.findall(r"(?:calls|to_apply|true_computation|false_computation)=%?([\w.\-]+)", line):
            calls[current].append((callee, 1))
        for group in re.findall(r"branch_computations=\{([^}]*)\}", line):
            calls[current].extend((c.strip().lstrip("%"), 1) for c in group.split(",") if c.strip())
    return calls, entry


def _runs(text: str, unknown: int = _UNKNOWN_TRIPS) -> dict[str, int]:
    """computation name -> how often one call of the program runs it: the entry once, a loop's body its
    known trip count times per run of the loop (`unknown` times where XLA does not know it), anything else
    once per run of its caller. Summed over callers with memory, so a program whose computations share
    callees costs one pass, whatever its shape (the text is a student's program: bounded work)."""
    calls, entry = _trip_counts(text)
    callers: dict[str, list[tuple[str, int]]] = {}
    for caller, callees in calls.items():
        for callee, n in callees:
            callers.setdefault(callee, []).append((caller, unknown if n < 0 else n))
    memo: dict[str, int] = {}

    def runs(name: str, depth: int = 0) -> int:
        if name == entry:
            return 1
        if name in memo or depth > 64:
            return memo.get(name, 0)
        memo[name] = 0  # a cycle (none in valid HLO) adds nothing
        memo[name] = min(sum(runs(c, depth + 1) * n for c, n in callers.get(name, [])), _MAX_RUNS)
        return memo[name]

    return {name: runs(name) for name in calls}


def _sent_bytes(text: str, n_devices: int, runs: dict[str, int]) -> int:
    """The bytes every collective of an optimized HLO module delivers to one device in one call of the
    program, each counted as often as its computation runs (`Work.sent_bytes`)."""
    lines = _collectives_where(text, n_devices)
    return sum(_result_bytes(line) * runs.get(where, 0) for _, _, _, line, where in lines)


_DOT_RE = re.compile(r"^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*(\S+)\s+dot\(%?([\w.\-]+)")
_TYPE_RE = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(\w+\[[\d,]*\])")


def _loop_dot_flops(text: str, runs: dict[str, int]) -> float:
    """The FLOPs of the matmuls (`dot`) in computations that run more than once per call, beyond their
    first run: what XLA's cost analysis, which counts a loop's body once, leaves out. 2 x the result's
    elements x the left operand's contracted elements per `dot`."""
    extra, current, types = 0.0, None, {}
    for line in text.splitlines():
        head = _HEAD_RE.match(line)
        if head:
            current, types = head.group(2), {}
            continue
        typed = _TYPE_RE.match(line)
        if typed:
            types[typed.group(1)] = typed.group(2)
        dot = _DOT_RE.match(line)
        if not dot or runs.get(current, 0) <= 1:
            continue
        lhs = _shape(types.get(dot.group(2), ""))
        contracted = re.search(r"lhs_contracting_dims=\{([\d,]*)\}", line)
        dims = [int(d) for d in contracted.group(1).split(",") if d] if contracted else []
        k = int(np.prod([lhs[d] for d in dims if d < len(lhs)] or [1]))
        extra += 2.0 * int(np.prod(_shape(dot.group(1)) or [1])) * k * (runs[current] - 1)
    return extra


def _shape(type_text: str) -> list[int]:
    """The dimensions of the first array type in `type_text` ("f32[16,8]{1,0}" -> [16, 8])."""
    m = _ARRAY_RE.search(type_text)
    return [int(d) for d in m.group(2).split(",") if d] if m else []


def collective_sends(text: str, names: tuple, sizes: tuple, n_devices: int) -> dict[str, Sends]:
    """Each kind of collective of an optimized HLO module ("ppermute over 'stage_axis'") with how often one
    call of the program runs it and the bytes its largest instance delivers (`Sends`): the schedule of a
    pipeline (m + k - 2 ppermutes of one microbatch each) or of a ring (k - 1 sends of one block), read from
    the program. A loop whose trip count XLA does not know counts its body's collectives 0 times here
    (`Work.sent_bytes` counts them `_UNKNOWN_TRIPS` times)."""
    runs = _runs(text, unknown=0)
    out: dict[str, list[int]] = {}
    for op, reducer, groups, line, where in _collectives_where(text, n_devices):
        for axis in group_axes(groups, names, sizes):
            seen = out.setdefault(describe_collective(op, reducer, axis), [0, 0])
            seen[0] += runs.get(where, 0)
            seen[1] = max(seen[1], _result_bytes(line))
    return {desc: Sends(r, b) for desc, (r, b) in sorted(out.items())}


def work_excess(got: Work, want: Work, limits: dict) -> tuple[str, float, float] | None:
    """The first fact of `limits` (fact -> factor, facts of `WORK_FACTS`) in which `got` exceeds `factor`
    times the reference's `want` (for `overlap`, the schedule: falls short of 1 / `factor` of the reference's):
    (fact, got / want, factor); None when every one is within its factor."""
    for fact in WORK_FACTS:
        factor = limits.get(fact)
        if factor is None:
            continue
        mine, theirs = float(getattr(got, fact)), float(getattr(want, fact))
        if fact == "overlap":  # the schedule: at least 1/factor of the reference's matmuls before its last send
            if mine * float(factor) < theirs:
                return fact, (mine / theirs if theirs > 0 else 1.0), float(factor)
            continue
        if mine > float(factor) * theirs:
            return fact, (mine / theirs if theirs > 0 else float("inf")), float(factor)
    return None


# ---------------------------------------------------------------- communication that matters
# A collective counts only if what the devices send through it reaches the results. XLA keeps
# `0.0 * lax.psum(x, ...)` for floats, a collective can feed a value that is later discarded by arithmetic,
# and a collective can carry no data at all (`total + lax.psum(x * 0.0, ...)`, a psum of a constant, the same
# in a `cond` branch or a `while_loop`): "present in the optimized HLO" is not "used", and neither is "its
# result reaches the outputs" (adding a psum of zeros to a total makes the total depend on the psum's result).
# The grader therefore builds a variant of the student's exported program in which every collective of one
# kind (say, every psum over 'devices') is sent *other data*: its operands computed again, inside the
# program, from shifted inputs (every block argument the operands are made from, the region's, the loop's or
# the function's, mapped through a -> c * a + c / 2, c drawn from the secret; integers 3 a + 1, booleans
# negated), everything else of the program left as it was. It recompiles that variant and runs it on the same
# hidden inputs: if no result changes beyond the comparison's tolerance, those collectives carry nothing that
# reaches the results and earn nothing. A psum of zeros, of a constant or of `x - x` sends the same data
# either way; `psum(x) * 0.0` changes nothing downstream; sending all collectives of a kind the same other
# data defeats `psum(x) - psum(x)` and `2 * psum(x) - psum(2 * x)`-style cancellation.
_STABLEHLO_COLLECTIVES = {
    "stablehlo.all_reduce": "all-reduce",
    "stablehlo.all_gather": "all-gather",
    "stablehlo.reduce_scatter": "reduce-scatter",
    "stablehlo.all_to_all": "all-to-all",
    "stablehlo.collective_permute": "collective-permute",
    "stablehlo.collective_broadcast": "collective-broadcast",
}


def _dense_groups(attr_text: str) -> list[list[int]]:
    """`dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>` (or a splat `dense<0>`) as lists of ids."""
    body = re.search(r"dense<(.*)>\s*:", attr_text, re.S)
    if not body:
        return []
    text = body.group(1).strip()
    rows = re.findall(r"\[([^\[\]]*)\]", text)
    if not rows:
        return [[int(v) for v in re.findall(r"-?\d+", text)]]
    return [[int(v) for v in re.findall(r"-?\d+", row)] for row in rows]


def _stablehlo_collective(op, n_devices: int) -> tuple[str, str, list[list[int]]]:
    """(HLO op name, reducer, device groups) of one StableHLO collective, as `hlo_collectives` reads them."""
    kind = _STABLEHLO_COLLECTIVES[op.name]
    reducer = ""
    if op.regions and len(op.regions) and op.regions[0].blocks:
        inner = [o.name for o in op.regions[0].blocks[0].operations]
        if inner and inner[0].startswith("stablehlo."):
            reducer = inner[0][len("stablehlo.") :]
    attrs = {name: str(op.attributes[name]) for name in op.attributes}
    if "source_target_pairs" in attrs:
        groups = _dense_groups(attrs["source_target_pairs"])
    elif "replica_groups" in attrs:
        groups = [g for g in _dense_groups(attrs["replica_groups"]) if g and min(g) >= 0]
    else:
        groups = []
    return kind, reducer, groups or [list(range(n_devices))]


def _as(kind, value):
    """`kind(value)` (an MLIR type cast), or None when `value` is not of that kind."""
    try:
        return kind(value)
    except (ValueError, TypeError):
        return None


_MANUAL_REGION = "sdy.manual_computation"  # a per-device region (`shard_map`, `pmap`) in an exported module


def _walk(module) -> tuple[list, list]:
    """(collectives, per-device regions) of a parsed module, each in the order the module's text has them
    (pre-order: `regions(text)`'s order)."""
    from jax._src.lib.mlir import ir

    found, manual = [], []

    def visit(op):
        if op.name in _STABLEHLO_COLLECTIVES:
            found.append(op)
        elif op.name == _MANUAL_REGION:
            manual.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found, manual


def _outermost_region(op, manual: list) -> int | None:
    """The index (in `manual`) of the outermost per-device region around `op`, None when it is outside all."""
    own = [getattr(m, "operation", m) for m in manual]
    found, parent = None, getattr(op, "operation", op).parent
    while parent is not None:
        parent = getattr(parent, "operation", parent)
        for i, m in enumerate(own):
            if m == parent:
                found = i
        parent = parent.parent
    return found


def _perturb_results(op, factor: float) -> bool:
    """Map every result of `op` through r -> factor * r + factor / 2 (integers 3 r + 1, booleans negated)
    for all its users; False when none of its results could be changed (complex numbers, tokens)."""
    from jax._src.lib.mlir import ir
    from jax._src.lib.mlir.dialects import hlo

    hit = False
    for result in op.results:
        ty = _as(ir.RankedTensorType, result.type)
        if ty is None:
            continue
        el = ty.element_type
        integer = _as(ir.IntegerType, el)
        with ir.InsertionPoint.after(op):
            if integer is not None and integer.width == 1:
                new = user = hlo.not_(result)
            elif integer is not None:
                scale = ir.DenseElementsAttr.get_splat(ty, ir.IntegerAttr.get(el, 3))
                shift = ir.DenseElementsAttr.get_splat(ty, ir.IntegerAttr.get(el, 1))
                user = hlo.multiply(result, hlo.constant(scale))
                new = hlo.add(user, hlo.constant(shift))
            elif _as(ir.ComplexType, el) is not None:
                continue
            else:
                scale = ir.DenseElementsAttr.get_splat(ty, ir.FloatAttr.get(el, factor))
                shift = ir.DenseElementsAttr.get_splat(ty, ir.FloatAttr.get(el, factor / 2))
                user = hlo.multiply(result, hlo.constant(scale))
                new = hlo.add(user, hlo.constant(shift))
        owner = user.owner
        result.replace_all_uses_except(new, owner.operation if hasattr(owner, "operation") else owner)
        hit = True
    return hit


_MAX_SLICE = 20000  # values followed back from one collective's operands (a module is hostile data)


def _shifted(value, factor: float):
    """`value` (a block argument) mapped through a -> factor * a + factor / 2 (integers 3 a + 1, booleans
    negated), built at the current insertion point; None when it cannot be (tokens, tuples, complex)."""
    from jax._src.lib.mlir import ir
    from jax._src.lib.mlir.dialects import hlo

    ty = _as(ir.RankedTensorType, value.type)
    if ty is None:
        return None
    el = ty.element_type
    integer = _as(ir.IntegerType, el)
    if integer is not None and integer.width == 1:
        return hlo.not_(value)
    if integer is not None:
        scale, shift = ir.IntegerAttr.get(el, 3), ir.IntegerAttr.get(el, 1)
    elif _as(ir.ComplexType, el) is not None:
        return None
    else:
        scale, shift = ir.FloatAttr.get(el, factor), ir.FloatAttr.get(el, factor / 2)
    scaled = hlo.multiply(value, hlo.constant(ir.DenseElementsAttr.get_splat(ty, scale)))
    return hlo.add(scaled, hlo.constant(ir.DenseElementsAttr.get_splat(ty, shift)))


def _send_other_data(op, factor: float) -> bool:
    """Give `op` (a collective) other operands: each computed again, just before it, from shifted block
    arguments (`_shifted`): the operations between the block arguments and its operands are cloned with
    their operands replaced, so only what this collective sends changes. False when none of its operands
    depends on a block argument (a collective of a constant sends the same data either way) or when the
    operands' history is longer than `_MAX_SLICE` values."""
    from jax._src.lib.mlir import ir

    own = getattr(op, "operation", op)
    # the values the operands are made from, in an order where each comes after what it is made from
    order, seen, depends = [], set(), {}
    stack = [(v, False) for v in own.operands]
    while stack:
        value, expanded = stack.pop()
        if expanded:
            owner = getattr(value.owner, "operation", value.owner)
            depends[value] = any(depends.get(v, False) for v in owner.operands)
            order.append(value)
            continue
        if value in seen:
            continue
        seen.add(value)
        if len(seen) > _MAX_SLICE:
            return False
        if isinstance(value.owner, ir.Block):
            depends[value] = True
            order.append(value)
            continue
        stack.append((value, True))
        stack.extend((v, False) for v in getattr(value.owner, "operation", value.owner).operands if v not in seen)
    if not any(depends.get(v, False) for v in own.operands):
        return False
    new: dict = {}
    with ir.InsertionPoint(own):
        for value in order:
            if not depends[value] or value in new:
                continue
            if isinstance(value.owner, ir.Block):
                new[value] = _shifted(value, factor) or value
                continue
            source = getattr(value.owner, "operation", value.owner)
            copy = source.clone()
            for i, operand in enumerate(source.operands):
                if operand in new:
                    copy.operands[i] = new[operand]
            for old, fresh in zip(source.results, copy.results):
                new[old] = fresh
    changed_any = False
    for i, operand in enumerate(own.operands):
        if operand in new and new[operand] != operand:
            own.operands[i] = new[operand]
            changed_any = True
    return changed_any


def perturbed(
    exp,
    wanted: str | None,
    names: tuple[str, ...],
    sizes: tuple[int, ...],
    factor: float,
    text: str | None = None,
    region: int | None = None,
):
    """`exp` with every collective described as `wanted` sent other data (`_send_other_data`: its operands
    computed from inputs mapped through a -> factor * a + factor / 2, integers 3 a + 1, booleans negated);
    with `region` (an index into `regions(text)`), the results of that per-device region mapped so instead.
    None when nothing of the module is described so; the program itself (`exp`, unchanged) when such
    collectives exist but none of them sends data made from an input."""
    import dataclasses

    from jax._src.export._export import _module_to_bytecode
    from jax._src.interpreters import mlir
    from jax._src.lib.mlir import ir

    with mlir.make_ir_context(), ir.Location.unknown():
        module = ir.Module.parse(text if text is not None else module_text(exp))
        found, manual = _walk(module)
        hit = False
        if region is not None:
            hit = region < len(manual) and _perturb_results(manual[region], factor)
        else:
            sends = False
            for op in found:
                kind, reducer, groups = _stablehlo_collective(op, exp.nr_devices)
                if wanted in {describe_collective(kind, reducer, a) for a in group_axes(groups, names, sizes)}:
                    hit = True
                    sends = _send_other_data(op, factor) or sends
            if hit and not sends:
                return exp  # its collectives send no data made from an input: nothing it sends can matter
        if not hit:
            return None
        blob = _module_to_bytecode(module)
    return dataclasses.replace(exp, mlir_module_serialized=blob)


@dataclass(frozen=True)
class RegionFacts:
    """Where a module's per-device regions stand (indices into `regions(text)`): `by_collective`, description
    -> the set of regions its collectives sit in (outermost; None: outside every region), and `returned`,
    the regions one of whose results is a result of the program (`_returned`)."""

    by_collective: dict
    returned: frozenset


# Operations that only move or relabel a value: a program result made from a region's result through them
# alone changes whenever that result does.
_MOVES = {"stablehlo.reshape", "stablehlo.transpose", "stablehlo.copy", "sdy.sharding_constraint", "sdy.reshard"}
_MAX_HOPS = 64  # calls and moves followed back from one program result (a module is hostile data)


def _returned(module, manual: list) -> frozenset:
    """The indices (in `manual`) of the regions one of whose results the program returns: followed back
    from what `main` returns, through `func.call`s into the callee's return and through `_MOVES`. Changing
    such a region's results changes the program's outputs, so it reaches them with no variant compiled."""
    from jax._src.lib.mlir import ir

    funcs = {}
    for op in module.body.operations:
        if op.operation.name == "func.func":
            funcs[ir.StringAttr(op.operation.attributes["sym_name"]).value] = op.operation
    own = [getattr(m, "operation", m) for m in manual]

    def terminator(func):
        blocks = list(func.regions[0].blocks) if func.regions else []
        ops = list(blocks[0].operations) if blocks else []
        return ops[-1].operation if ops else None

    def origin(value) -> int | None:
        for _ in range(_MAX_HOPS):
            owner = value.owner
            if not isinstance(owner, ir.Operation | ir.OpView):
                return None  # an argument of a block: not a region's result
            op = getattr(owner, "operation", owner)
            name = op.name
            if name == "sdy.manual_computation":
                return next((i for i, m in enumerate(own) if m == op), None)
            if name == "func.call":
                callee = funcs.get(ir.FlatSymbolRefAttr(op.attributes["callee"]).value)
                ret = terminator(callee) if callee is not None else None
                index = ir.OpResult(value).result_number
                if ret is None or index >= len(ret.operands):
                    return None
                value = ret.operands[index]
            elif name in _MOVES and len(op.operands) == 1:
                value = op.operands[0]
            else:
                return None
        return None

    def safely(value) -> int | None:
        try:
            return origin(value)
        except Exception:  # noqa: BLE001 - a module it cannot follow: the region is left to the variant
            return None

    main = funcs.get("main")
    ret = terminator(main) if main is not None else None
    found = {safely(v) for v in (ret.operands if ret is not None else ())}
    return frozenset(found - {None})


def region_facts(exp, names: tuple[str, ...], sizes: tuple[int, ...], text: str | None = None) -> RegionFacts:
    """The `RegionFacts` of an exported module (one parse). A collective inside a region reaches the results
    only through that region's results, so a description whose collectives all sit in one region and reach
    the results shows that region to matter; so does a region whose results the program returns
    (`proven_regions`: no variant of their own)."""
    from jax._src.interpreters import mlir
    from jax._src.lib.mlir import ir

    out: dict = {}
    with mlir.make_ir_context(), ir.Location.unknown():
        module = ir.Module.parse(text if text is not None else module_text(exp))
        found, manual = _walk(module)
        for op in found:
            kind, reducer, groups = _stablehlo_collective(op, exp.nr_devices)
            where = _outermost_region(op, manual)
            for a in group_axes(groups, names, sizes):
                out.setdefault(describe_collective(kind, reducer, a), set()).add(where)
        returned = _returned(module, manual)
    return RegionFacts({d: frozenset(w) for d, w in out.items()}, returned)


def proven_regions(facts: RegionFacts, matters) -> set[int]:
    """The regions shown to reach the results without a variant of their own: each one the only region
    that holds the collectives of a description in `matters`, and each one whose results the program
    returns (`region_facts` gives `facts`)."""
    by_region = facts.by_collective
    held = {next(iter(by_region[d])) for d in matters if len(by_region.get(d, ())) == 1} - {None}
    return held | set(facts.returned)


def changed(a: dict, b: dict, rtol=None, atol=None) -> bool:
    """Do the outputs `b` differ from `a` beyond the comparison's tolerance (exactly, for integers)?"""
    rtol, atol = (RTOL if rtol is None else rtol), (ATOL if atol is None else atol)
    for path, value in a.items():
        other = b.get(path)
        if other is None or other.shape != value.shape:
            return True
        if value.dtype.kind in "biu" or other.dtype.kind in "biu":
            if not np.array_equal(value, other):
                return True
        elif not np.allclose(
            np.asarray(other, np.float64), np.asarray(value, np.float64), rtol=rtol, atol=atol, equal_nan=True
        ):
            return True
    return False


def mesh_of(exp) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """(axis names, sizes) of the mesh an exported program runs on: its shardings' abstract mesh, else
    the module's first `sdy.mesh` of the right size (pmap programs), else one axis 'devices'."""
    for s in tuple(exp._in_named_shardings) + tuple(exp._out_named_shardings):
        mesh = getattr(s, "mesh", None)
        if mesh is not None and mesh.axis_names and int(np.prod(mesh.axis_sizes)) == exp.nr_devices:
            return tuple(mesh.axis_names), tuple(mesh.axis_sizes)
    return text_mesh(exp) or (("devices",), (exp.nr_devices,))


def text_mesh(exp) -> tuple[tuple[str, ...], tuple[int, ...]] | None:
    """The first `sdy.mesh` of the module whose size is the device count (pmap programs), or None."""
    for body in re.findall(r"sdy\.mesh\s+@[\w.\-]+\s*=\s*<\[([^\]]*)\]", module_text(exp)):
        pairs = re.findall(r'"([^"]+)"\s*=\s*(\d+)', body)
        if pairs and int(np.prod([int(s) for _, s in pairs])) == exp.nr_devices:
            return tuple(n for n, _ in pairs), tuple(int(s) for _, s in pairs)
    return None


def _compile_exported(exp, names, sizes) -> tuple[Any, list]:
    """`exp` compiled for the first devices as the grader compiles it (its own input layouts, unstated ones
    replicated; `COMPILER_OPTIONS`), and the input shardings."""
    import jax
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = Mesh(np.array(jax.devices()[: exp.nr_devices]).reshape(sizes), names)
    shardings = [
        NamedSharding(mesh, s.spec)
        if s is not None and getattr(s, "mesh", None) is not None and s.mesh.axis_names
        else NamedSharding(mesh, P())
        for s in exp._in_named_shardings
    ]

    def flat_call(*leaves):
        args, kwargs = jax.tree_util.tree_unflatten(exp.in_tree, leaves)
        return exp.call(*args, **kwargs)

    args = [jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=s) for a, s in zip(exp.in_avals, shardings)]
    return jax.jit(flat_call).lower(*args).compile(dict(COMPILER_OPTIONS)), shardings


def exported_work(exp) -> Work:
    """The `Work` of one device of an exported program compiled as the grader compiles it (for the visible
    checks: the same facts the grader reads, on the same compile)."""
    names, sizes = mesh_of(exp)
    compiled, _ = _compile_exported(exp, names, sizes)
    return work_of(compiled, names, sizes, exp.nr_devices)


def _run_exported(exp, values: list, names, sizes) -> tuple[dict, Any]:
    """Compile `exp` for the first devices (its own input layouts, unstated ones replicated), run it on
    `values`; its outputs by pytree path and the compiled program (optimized HLO, output shardings)."""
    import jax

    compiled, shardings = _compile_exported(exp, names, sizes)
    out = compiled(*[jax.device_put(np.asarray(v), s) for v, s in zip(values, shardings)])
    flat, _ = jax.tree_util.tree_flatten_with_path(out)
    return {jax.tree_util.keystr(path): np.asarray(v) for path, v in flat}, compiled


def communication_that_matters(
    exp, values: list, factor: float = 2.5, rtol: float | None = None, atol: float | None = None
) -> list[str]:
    """The collectives of an exported program (read from its optimized HLO) whose results reach its outputs
    on `values` (its flat inputs): what the grader decides on hidden inputs, for the visible checks, which
    run on public ones and so need no secret. Sorted descriptions ("psum over 'devices'"); `examine`'s
    `matters`."""
    return list(examine(exp, values, factor, rtol, atol).matters)


# ---------------------------------------------------------------- layouts
# A value's layout: per array dimension, the mesh axes it is split over (() = not split), trailing unsplit
# dimensions dropped, so `()` is "replicated on every device". Read from the exported module (where each
# per-device region takes and gives its values) and from the compiled program (where the results live):
# never from what a kernel says about itself. (Moved here from autograder/programs.py: the visible checks
# read layouts the same way.)
_SDY_SHARDING_RE = re.compile(r"<@[\w.\-]+\s*,\s*\[([^\]]*)\][^<>]*>")
_REGION_RE = re.compile(
    r"sdy\.manual_computation\([^)]*\)\s*in_shardings=\[((?:<[^<>]*>,?\s*)*)\]\s*"
    r"out_shardings=\[((?:<[^<>]*>,?\s*)*)\]\s*manual_axes=\{([^}]*)\}"
)


def norm_layout(dims) -> tuple:
    dims = [tuple(str(a) for a in d) for d in dims]
    while dims and not dims[-1]:
        dims.pop()
    return tuple(dims)


def sdy_layouts(text: str) -> tuple:
    """`<@mesh, [{"a"}, {}]>, <@mesh, [{}, {"b", "c"}]>` as layouts ((("a",),), ((), ("b", "c")))."""
    return tuple(
        norm_layout(tuple(re.findall(r'"([^"]+)"', dim)) for dim in re.findall(r"\{([^}]*)\}", body))
        for body in _SDY_SHARDING_RE.findall(text)
    )


def regions(text: str) -> tuple:
    """(manual axes, input layouts, output layouts) of every per-device region (`shard_map`, `pmap`) of an
    exported module's text, in the order they appear: where each device gets only its shard of a value."""
    found = []
    for ins, outs, axes in _REGION_RE.findall(text):
        found.append((tuple(sorted(re.findall(r'"([^"]+)"', axes))), sdy_layouts(ins), sdy_layouts(outs)))
    return tuple(found)


def placed_layout(sharding, shape, names: tuple[str, ...], sizes: tuple[int, ...]) -> tuple:
    """Where a compiled program's value lives, from the slice each device holds (`devices_indices_map`):
    per dimension, the mesh axes along which that dimension's slice changes. Devices are the mesh's,
    logical id = row-major mesh position."""
    shape = tuple(shape)
    if not shape:
        return ()
    index = sharding.devices_indices_map(shape)
    by_id = {
        d.id: tuple((s.start or 0, s.stop) if isinstance(s, slice) else (s, s) for s in idx) for d, idx in index.items()
    }
    ids = sorted(by_id)
    grid = np.array(ids[: int(np.prod(sizes))]).reshape(sizes) if sizes else np.array(ids)
    dims = []
    for d in range(len(shape)):
        axes = []
        for j, name in enumerate(names):
            moved = np.moveaxis(grid, j, 0)
            if any(by_id[int(a)][d] != by_id[int(b)][d] for a, b in zip(moved[0].ravel(), moved[-1].ravel())):
                axes.append(name)
        dims.append(tuple(axes))
    return norm_layout(dims)


def split_axes(layout) -> frozenset:
    """The mesh axes a value is split over, whatever the dimension (a transposed input split over the same
    axes still gives each device only its shard)."""
    return frozenset(a for axes in layout for a in axes)


@dataclass(frozen=True)
class RegionDifference:
    """Why a program's per-device regions do not match the wanted ones: `input` (region over `axes` takes
    its input `n` (1-based) with layout `got`, `want` wanted) or `regions` (no counterpart at all)."""

    kind: str
    axes: tuple = ()
    n: int = 0
    got: tuple = ()
    want: tuple = ()


def region_difference(want: tuple, got: tuple) -> RegionDifference | None:
    """Does every wanted per-device region (manual axes, input layouts, ...) have a counterpart in `got` over
    the same axes, with as many inputs, each split over at least the wanted mesh axes (a region that takes a
    split input whole makes every device hold all of it; one that splits it along another dimension is
    fine)? None when it does."""

    def covered(axes, ins) -> bool:
        return any(
            a == axes and len(i) == len(ins) and all(split_axes(w) <= split_axes(g) for w, g in zip(ins, i))
            for a, i, *_ in got
        )

    for axes, ins, *_ in want:
        if covered(axes, ins):
            continue
        for theirs in [i for a, i, *_ in got if a == axes and len(i) == len(ins)][:1]:
            for n, (w, g) in enumerate(zip(ins, theirs)):
                if not split_axes(w) <= split_axes(g):
                    return RegionDifference("input", axes, n + 1, g, w)
        return RegionDifference("regions")
    return None


def region_takes(regions: tuple, axes: tuple, ins: tuple) -> bool:
    """Is there a region over `axes` (sorted) with as many inputs as `ins` that splits each input over at
    least the mesh axes `ins` does (the grader's test of a reference region's counterpart,
    `region_difference`)?"""
    return region_difference(((axes, ins),), regions) is None


# ---------------------------------------------------------------- one program, examined the grader's way
@dataclass(frozen=True)
class Examined:
    """What the judge reads from one exported program run on some inputs: the collectives of its optimized
    HLO (`present`), those whose results reach the outputs (`matters`), its per-device regions (`found`, in
    program order) and of those the ones whose results reach the outputs (`regions`; `dead_regions`: those
    whose results do not, which count for nothing), where its results live once compiled, and its outputs
    by pytree path.

    A region's liveness costs a compile of a variant of the program, so it is found out only when asked
    (`live(i)`, once per region): `takes` stops at the first live region that fits, and a step run five
    times in a Python loop (five regions of one shape) is usually settled by its first region alone.
    `regions` and `dead_regions` ask of every region (the messages of a failed check)."""

    names: tuple
    sizes: tuple
    present: tuple
    matters: tuple
    found: tuple
    out_layouts: tuple
    outputs: dict
    is_live: Callable[[int], bool] = field(compare=False, repr=False)
    _known: dict = field(default_factory=dict, compare=False, repr=False)

    def live(self, i: int) -> bool:
        if i not in self._known:
            self._known[i] = bool(self.is_live(i))
        return self._known[i]

    @property
    def regions(self) -> tuple:
        return tuple(r for i, r in enumerate(self.found) if self.live(i))

    @property
    def dead_regions(self) -> tuple:
        return tuple(r for i, r in enumerate(self.found) if not self.live(i))

    def takes(self, axes: tuple, ins: tuple) -> bool:
        """`region_takes(self.regions, axes, ins)`, asking only the regions that fit, until one is live."""
        return any(region_takes((r,), axes, ins) and self.live(i) for i, r in enumerate(self.found))


def examine(exp, values: list, factor: float = 2.5, rtol: float | None = None, atol: float | None = None) -> Examined:
    """`exp` compiled and run on `values` (its flat inputs, fed with the layouts its signature states,
    unstated ones replicated), read as the grader reads a student's program: see `Examined`."""
    import jax

    names, sizes = mesh_of(exp)
    text = module_text(exp)
    base, compiled = _run_exported(exp, values, names, sizes)

    def reaches(variant) -> bool:
        if variant is exp:
            return False  # its collectives of that kind send no data made from an input
        return variant is None or changed(base, _run_exported(variant, values, names, sizes)[0], rtol, atol)

    present, kept = set(), set()
    for op, reducer, groups in hlo_collectives(compiled.as_text(), exp.nr_devices):
        for axis in group_axes(groups, names, sizes):
            desc = describe_collective(op, reducer, axis)
            if desc in present:
                continue
            present.add(desc)
            if reaches(perturbed(exp, desc, names, sizes, factor, text=text)):
                kept.add(desc)
    out_layouts = tuple(
        placed_layout(sh, aval.shape, names, sizes)
        for sh, aval in zip(jax.tree_util.tree_leaves(compiled.output_shardings), exp.out_avals)
    )
    found = regions(text)
    shown = proven_regions(region_facts(exp, names, sizes, text), kept) if found else set()
    return Examined(
        names,
        sizes,
        tuple(sorted(present)),
        tuple(sorted(kept)),
        tuple(found),
        out_layouts,
        base,
        lambda i: i in shown or reaches(perturbed(exp, None, names, sizes, factor, text=text, region=i)),
    )
