"""Layouts.

A value's layout: per array dimension, the mesh axes it is split over (() = not split), trailing unsplit
dimensions dropped, so `()` is "replicated on every device". Read from the exported module (where each
per-device region takes and gives its values) and from the compiled program (where the results live):
never from what a kernel says about itself. The grader (judge/exported.py, programs.py) and the visible checks
read layouts the same way, here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

__all__ = [
    "norm_layout",
    "sdy_layouts",
    "regions",
    "placed_layout",
    "split_axes",
    "RegionDifference",
    "region_difference",
    "region_takes",
]

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
