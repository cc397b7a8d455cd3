"""What matters: which per-device regions reach a program's results without a variant of their own, and
whether two runs' outputs differ beyond the comparison's tolerance (`changed`).

A collective inside a region reaches the results only through that region's results, so a description
whose collectives all sit in one region and reach the results shows that region to matter; so does a region
whose results the program returns (`proven_regions`). The rest is found out by running a variant
(variants.py; examined.py runs them).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import jax_private
from .hlo import describe_collective, group_axes
from .module_texts import module_text
from .stablehlo import outermost_region, returned_regions, stablehlo_collective, walk

__all__ = ["RTOL", "ATOL", "RegionFacts", "region_facts", "proven_regions", "changed"]

# The judge's one tolerance: two values agree within `allclose(rtol=RTOL, atol=ATOL)`, in the visible checks and
# in the grader (autograder.judge.compare imports it from here).
RTOL = 1e-5
ATOL = 1e-5


@dataclass(frozen=True)
class RegionFacts:
    """Where a module's per-device regions stand (indices into `regions(text)`): `by_collective`, description
    -> the set of regions its collectives sit in (outermost; None: outside every region), and `returned`,
    the regions one of whose results is a result of the program (`stablehlo.returned_regions`)."""

    by_collective: dict
    returned: frozenset


def region_facts(exp, names: tuple[str, ...], sizes: tuple[int, ...], text: str | None = None) -> RegionFacts:
    """The `RegionFacts` of an exported module (one parse). A collective inside a region reaches the results
    only through that region's results, so a description whose collectives all sit in one region and reach
    the results shows that region to matter; so does a region whose results the program returns
    (`proven_regions`: no variant of their own)."""
    ir = jax_private.ir()
    out: dict = {}
    with jax_private.ir_context(), ir.Location.unknown():
        module = ir.Module.parse(text if text is not None else module_text(exp))
        found, manual = walk(module)
        for op in found:
            kind, reducer, groups = stablehlo_collective(op, exp.nr_devices)
            where = outermost_region(op, manual)
            for a in group_axes(groups, names, sizes):
                out.setdefault(describe_collective(kind, reducer, a), set()).add(where)
        returned = returned_regions(module, manual)
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
