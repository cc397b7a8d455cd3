"""What a program compiled for a TPU moves through its memory (HBM), tile by tile: a reader of an optimized HLO text.

A TPU stores an array in tiles over its two minor-most dimensions (in its layout's order, `minor_to_major`):
8 × 128 elements of 32 bits (a vector register's sublanes × lanes; bf16 packs two rows into each, 16 × 128),
and pads each dimension up to a whole number of tiles. An array (4096, 32) laid out with its 32 as the minor
dimension takes 4096 × 128 places: four times its bytes. XLA writes each array's tiling into its layout, after
the colon: `f32[4096,32]{0,1:T(8,128)}` is tiled 8 × 128 with the 4096 minor (no padding), `{1,0:T(8,128)}`
with the 32 minor (padded 4 ×). `S(1)` marks an array the compiler placed in the core's on-chip memory (VMEM),
not HBM. Sources: Google Cloud, *Cloud TPU performance guide* ("Padding", "Tensor dimensions": XLA rounds the
sizes of tensors stored in HBM up to tiles of 8 × 128, which costs memory and time); OpenXLA, *Tiled layout*
(the `T(...)` notation).

`passes` lists, for each operation of the entry computation (a fusion, a copy, a matmul: one pass over memory
each), its matmul FLOPs, as counted and as the matrix unit runs them, and the tiled bytes of the arrays it reads
and writes in HBM and on chip; `hbm_traffic` adds up their HBM bytes, tiled and as the arrays' own. The matrix
unit (MXU) of a v5e multiplies an (8, 128) block by a (128, 128) one (Austin et al., *How to Scale Your Model*,
2025, its chapter on TPUs): a contraction over 32 takes a whole pass of 128. Notebook 10's time model reads a
step's terms with it: on narrow models (d_model, seq or a head's width under 128) most of the bytes moved are
padding.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from .judging.hlo import DTYPE_BYTES
from .judging.instructions import elements, own_flops, parse_module

__all__ = ["Pass", "Traffic", "tiled_bytes", "passes", "hbm_traffic"]

_ARRAY_RE = re.compile(r"\b(" + "|".join(DTYPE_BYTES) + r")\[([\d,]*)\](\{[^}]*\})?")
MXU = 128  # the matrix unit's side on v5e (and v4, v5p): it multiplies (8, 128) by (128, 128) blocks
_TILE_RE = re.compile(r"T\(([\d,]+)\)")
_MEMORY_SPACE_RE = re.compile(r"S\((\d+)\)")
# instructions that move nothing through HBM themselves: names, views, and the second half of an asynchronous
# copy or slice (its first half, `copy-start`, reads the operand; the result lands in on-chip memory)
_NO_PASS = frozenset(
    {"parameter", "get-tuple-element", "tuple", "constant", "bitcast", "copy-done", "slice-done", "after-all"}
)

_SLICES = frozenset({"slice", "slice-start", "dynamic-slice"})  # each reads its slice, not its whole operand


def _slice_arrays(op: str, type_text: str) -> list[tuple[int, int, bool]]:
    """A slice's arrays: it reads from HBM as many bytes as its slice holds, and writes the slice where it lands
    (a `slice-start`'s type is (its operand), its slice, its bookkeeping)."""
    arrays = tiled_bytes(type_text)
    result = arrays[1] if op == "slice-start" and len(arrays) > 1 else arrays[0]
    read = (result[0], result[1], True)
    return [read] if op == "slice-start" else [read, result]


@dataclass(frozen=True)
class Pass:
    """One operation of a compiled program: its matmul FLOPs and the bytes it reads and writes in HBM."""

    name: str
    flops: float
    tiled: int  # bytes read and written in HBM, tiled
    logical: int  # the same arrays' own bytes
    on_chip: int = 0  # bytes read and written in the core's on-chip memory (VMEM), tiled
    mxu_flops: float = 0.0  # the matmuls' FLOPs as the 128 x 128 matrix unit runs them, padding included


@dataclass(frozen=True)
class Traffic:
    """Bytes a program's operations read and write in HBM: as tiled (padded) and as the arrays' own sizes."""

    tiled: int
    logical: int


def tiled_bytes(type_text: str) -> list[tuple[int, int, bool]]:
    """Each array of an HLO type: (its bytes as tiled, its own bytes, whether it lives in HBM). An array with no
    layout, or no tiles in it, counts its own bytes."""
    found = []
    for dtype, dims_text, layout in _ARRAY_RE.findall(type_text):
        dims = [int(d) for d in dims_text.split(",") if d]
        own = DTYPE_BYTES[dtype] * math.prod(dims)
        order, _, rest = layout.strip("{}").partition(":")
        space = _MEMORY_SPACE_RE.search(rest)
        in_hbm = space is None or space.group(1) == "0"
        tile = _TILE_RE.match(rest)
        minor_first = [dims[int(i)] for i in order.split(",") if i] if order else dims[::-1]
        if tile and len(minor_first) == len(dims):
            for i, size in enumerate(int(t) for t in reversed(tile.group(1).split(","))):
                if i < len(minor_first):
                    minor_first[i] = -(-minor_first[i] // size) * size
            found.append((DTYPE_BYTES[dtype] * math.prod(minor_first), own, in_hbm))
        else:
            found.append((own, own, in_hbm))
    return found


def _arrays(ins, types: dict) -> list[tuple[int, int, bool]]:
    """The arrays one operation reads and writes (`tiled_bytes` of each)."""
    if ins.op in _SLICES:
        return _slice_arrays(ins.op, ins.type)
    arrays = [] if ins.op == "copy-start" else tiled_bytes(ins.type)
    for name in ins.operands:
        arrays += tiled_bytes(types.get(name, ""))
    return arrays


def _mxu_flops(ins, flops: float) -> float:
    """A matmul's FLOPs as the matrix unit runs them: its contraction padded to whole passes of `MXU` and its
    result to whole tiles (the matrix unit multiplies (8, 128) by (128, 128) blocks)."""
    tiled, own, _ = (tiled_bytes(ins.type) or [(1, 1, True)])[0]
    out = elements(ins.type)
    if not flops or not out or not own:
        return flops
    contraction = flops / (2 * out)
    return 2 * out * (tiled / own) * math.ceil(contraction / MXU) * MXU


def _matmul_flops(module, ins, types: dict, depth: int = 0) -> tuple[float, float]:
    """The FLOPs of the matmuls (`dot`, `convolution`) one instruction runs, in it or in what it calls: as counted,
    and as the matrix unit runs them (`_mxu_flops`)."""
    flops = own_flops(ins, types, lambda _: 0.0) if ins.op in ("dot", "convolution") else 0.0
    mxu = _mxu_flops(ins, flops)
    for callee in (c for called in ins.calls.values() for c in called):
        inner = module.types(callee)
        for i in module.computations.get(callee, []) if depth < 8 else []:
            f, m = _matmul_flops(module, i, inner, depth + 1)
            flops, mxu = flops + f, mxu + m
    return flops, mxu


def passes(text: str) -> list[Pass]:
    """Each operation of the entry computation that makes a pass over memory (`_NO_PASS` make none): its matmul
    FLOPs and the tiled bytes of its results and operands in HBM and on chip. An asynchronous `copy-start` counts its
    operand (read from HBM), not its result (on chip); a slice the part it reads."""
    module = parse_module(text)
    instructions = module.computations.get(module.entry, [])
    types = {i.name: i.type for i in instructions}
    found = []
    for ins in instructions:
        if ins.op in _NO_PASS:
            continue
        arrays = _arrays(ins, types)
        tiled, logical = sum(a[0] for a in arrays if a[2]), sum(a[1] for a in arrays if a[2])
        on_chip = sum(a[0] for a in arrays if not a[2])
        flops, mxu = _matmul_flops(module, ins, types)
        found.append(Pass(ins.name, flops, tiled, logical, on_chip, mxu))
    return found


def hbm_traffic(text: str) -> Traffic:
    """What the entry computation's operations read and write in HBM, tiled and untiled (`passes`)."""
    found = passes(text)
    return Traffic(sum(p.tiled for p in found), sum(p.logical for p in found))
