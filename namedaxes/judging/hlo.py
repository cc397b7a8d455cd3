"""Reading an optimized HLO module's text: its collectives, the device groups each one connects, and the mesh
axes those groups run along (`hlo_collectives`, `group_axes`, `describe_collective`); the arrays an instruction's
type holds (`array_bytes`, `result_bytes`).

The patterns and readers the work of one device (work.py, runs.py) reads the same text with are public here
too (`HEAD_RE`, `OP_RE`, `INSTRUCTION_RE`, `ARRAY_RE`, `collective_lines`, `collectives_where`, `reducers`,
`device_groups`); the package's face (`namedaxes.judging`) gives only the three above.
"""

from __future__ import annotations

import math
import re

import numpy as np

__all__ = [
    "hlo_collectives",
    "group_axes",
    "describe_collective",
    "OP_RE",
    "HEAD_RE",
    "INSTRUCTION_RE",
    "NAME_RE",
    "ARRAY_RE",
    "array_bytes",
    "result_bytes",
    "collective_lines",
    "collectives_where",
    "reducers",
    "device_groups",
]

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
OP_RE = re.compile(r"^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*.*?\s(" + "|".join(_COLLECTIVE_OPS) + r")(?:-start)?\(")
# A computation's first line, `[ENTRY ]%name (params) -> type {`: group 1 is "ENTRY " for the entry computation.
HEAD_RE = re.compile(r"^\s*(ENTRY\s+)?%?([\w.\-]+)\s*\(.*\)\s*->.*\{\s*$")
_REDUCER_NAMES = {"add": "psum", "maximum": "pmax", "minimum": "pmin", "multiply": "pprod", "and": "pand", "or": "por"}
_KIND_NAMES = {
    "all-gather": "all_gather",
    "reduce-scatter": "psum_scatter",
    "all-to-all": "all_to_all",
    "collective-permute": "ppermute",
    "collective-broadcast": "pbroadcast",
    "ragged-all-to-all": "ragged_all_to_all",
}

_DTYPE_BYTES = {"pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "s32": 4, "u32": 4, "f32": 4}
_DTYPE_BYTES.update({"s64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16})
DTYPE_BYTES = _DTYPE_BYTES  # bytes per element of each HLO element type (namedaxes.traffic reads it too)
ARRAY_RE = re.compile(r"\b(" + "|".join(_DTYPE_BYTES) + r")\[([\d,]*)\]")
# `[ROOT ]%name = ...`: group 1 is "ROOT" for a computation's result, group 2 the instruction's name
NAME_RE = re.compile(r"^\s*(ROOT\s+)?%?([\w.\-]+)\s*=")
INSTRUCTION_RE = re.compile(r"^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*(.*?)\s([\w\-]+)\(")


def array_bytes(type_text: str) -> list[int]:
    return [
        _DTYPE_BYTES[dt] * int(np.prod([int(d) for d in dims.split(",") if d] or [1]))
        for dt, dims in ARRAY_RE.findall(type_text)
    ]


def result_bytes(line: str) -> int:
    """The bytes a collective's instruction delivers to one device. A `collective-permute-start`'s type is a
    tuple (its operand, its result, then the transfer's bookkeeping, `u32[]`s): its result is the second entry
    (a TPU runs its ppermutes so; the CPU backend's are synchronous). An `all-gather-start`'s is (its operands,
    its results): the second half."""
    typed = INSTRUCTION_RE.match(line)
    if not typed:
        return 0
    sizes = array_bytes(typed.group(1))
    if typed.group(2) == "collective-permute-start" and len(sizes) >= 2:
        return sizes[1]
    if typed.group(2) == "all-gather-start" and len(sizes) >= 2 and len(sizes) % 2 == 0:
        return sum(sizes[len(sizes) // 2 :])
    return sum(sizes)


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


def device_groups(line: str, n_devices: int) -> list[list[int]]:
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


_LANE_OPS = ("add", "maximum", "minimum", "multiply")


def reducers(text: str) -> dict[str, str]:
    """computation name -> the op of its ROOT instruction (add, maximum, ...). A reducer of packed lanes (a TPU
    all-reduces float16 values two to a 32-bit word: its reducer unpacks each word's halves with
    `bitcast-convert`, applies one op to each, and packs the results with `or`) is that op, not the packing."""
    out, current, ops = {}, None, {}
    for line in text.splitlines():
        head = HEAD_RE.match(line)
        if head:
            current = head.group(2)
            ops[current] = set()
            continue
        typed = INSTRUCTION_RE.match(line)
        if typed and current:
            ops[current].add(typed.group(2))
        root = re.match(r"^\s*ROOT\s+%?[\w.\-]+\s*=\s*\S+\s+([\w\-]+)\(", line)
        if root and current:
            out[current] = root.group(1)
    for name, op in out.items():
        lanes = ops.get(name, set()) & set(_LANE_OPS)
        if op == "or" and "bitcast-convert" in ops.get(name, ()) and len(lanes) == 1:
            out[name] = lanes.pop()
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
    typed = INSTRUCTION_RE.match(line)
    groups = re.search(r"(?:replica_groups|source_target_pairs)=(.*?)(?:, [a-z_]+=|$)", line)
    if not channel or not typed:
        return None
    shape = re.sub(r"\{[^{}]*\}", "", typed.group(1))  # the element types and dimensions, not the tiling
    return op, channel.group(1), shape, groups.group(1) if groups else ""


def collective_lines(text: str, n_devices: int) -> list[tuple[str, str, list[list[int]], str]]:
    """(op, reducer or '', device groups, its line) of every collective in an optimized HLO module's text.

    A TPU's asynchronous collective fusions put a collective inside fusions, and copy it into each fusion
    that continues it (one all-gather on up to seven lines of notebook 10's step compiled for v5e 2x4): inside
    fusion bodies, a line with the op, channel, result type and device groups of one met already is that
    collective again. Elsewhere every line is its own collective (the CPU backend gives distinct collectives
    the same channel, so the channel alone tells nothing there)."""
    return [found[:4] for found in collectives_where(text, n_devices)]


def _sliced_roots(text: str) -> dict[str, tuple[str, str]]:
    """computation name -> (the instruction its ROOT `dynamic-slice` slices, the slice's type)."""
    out, current = {}, None
    for line in text.splitlines():
        head = HEAD_RE.match(line)
        if head:
            current = head.group(2)
            continue
        root = re.match(r"^\s*ROOT\s+%?[\w.\-]+\s*=\s*(.*?)\s+dynamic-slice\(%?([\w.\-]+)", line)
        if root and current:
            out[current] = (root.group(2), root.group(1))
    return out


def _reduce_scattered(line: str, sliced: tuple[str, str] | None) -> str:
    """An all-reduce that a fusion's ROOT `dynamic-slice` slices (a TPU's `all-reduce-scatter` fusion: one
    collective that delivers each device its slice of the sum) written as the reduce-scatter it runs: its op
    `reduce-scatter`, its type the slice's. Any other line as it is."""
    name = re.match(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=", line)
    if sliced is None or not name or name.group(1) != sliced[0] or " all-reduce(" not in line:
        return line
    typed = INSTRUCTION_RE.match(line)
    return line[: typed.start(1)] + sliced[1] + " reduce-scatter(" + line[typed.end(2) + 1 :]


def collectives_where(text: str, n_devices: int) -> list[tuple[str, str, list[list[int]], str, str]]:
    """`collective_lines` with the computation each collective's line is in, last. An all-reduce inside a fusion
    whose result is the all-reduce's `dynamic-slice` (a TPU's `all-reduce-scatter` fusion) is the reduce-scatter
    it runs (`_reduce_scattered`)."""
    applied, fused, sliced = reducers(text), _fusion_bodies(text), _sliced_roots(text)
    found, seen, current = [], set(), None
    for line in text.splitlines():
        head = HEAD_RE.match(line)
        if head:
            current = head.group(2)
            continue
        m = OP_RE.search(line)
        if not m or "-done(" in line:
            continue
        if current in fused:
            line = _reduce_scattered(line, sliced.get(current))
            m = OP_RE.search(line)
        op = m.group(1)
        if current in fused:
            key = _clone_key(op, line)
            if key in seen:
                continue
            seen.add(key)
        reducer = ""
        apply = re.search(r"to_apply=%?([\w.\-]+)", line)
        if apply:
            reducer = applied.get(apply.group(1), "")
        found.append((op, reducer, device_groups(line, n_devices), line, current or ""))
    return found


def hlo_collectives(text: str, n_devices: int) -> list[tuple[str, str, list[list[int]]]]:
    """(op, reducer or '', device groups) of every collective in an optimized HLO module's text."""
    return [(op, reducer, groups) for op, reducer, groups, _ in collective_lines(text, n_devices)]


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


def each_collective(text: str, names: tuple[str, ...], sizes: tuple[int, ...]) -> list[tuple[str, str, int]]:
    """Each collective of an optimized HLO module's text, in the text's order, as `collectives_where` finds it
    (a TPU's copies in its asynchronous fusions counted once): (kind over its mesh axis, its result's element
    types joined by '+', the bytes it delivers to one device, `result_bytes`)."""
    found = []
    for op, reducer, groups, line, _ in collectives_where(text, math.prod(sizes)):
        typed = INSTRUCTION_RE.match(line)
        dtypes = "+".join(dict.fromkeys(re.findall(r"([a-z]+\d*)\[", typed.group(1)))) if typed else ""
        for axis in group_axes(groups, names, sizes):
            found.append((describe_collective(op, reducer, axis), dtypes, result_bytes(line)))
    return found
