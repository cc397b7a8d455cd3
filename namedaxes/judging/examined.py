"""One program, examined the grader's way (`examine`): compiled and run on some inputs, its collectives, those
that reach its outputs, its per-device regions and which of them are live, and where its results live.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from .compiled_run import device_mesh, run_exported
from .hlo import describe_collective, group_axes, hlo_collectives
from .layouts import placed_layout, region_takes, regions
from .matters import changed, proven_regions, region_facts
from .module_texts import module_text
from .variants import perturbed

__all__ = ["Examined", "examine", "communication_that_matters"]


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

    mesh = device_mesh(exp)  # a variant runs on its program's mesh
    names, sizes = tuple(mesh.axis_names), tuple(mesh.devices.shape)
    text = module_text(exp)
    base, compiled = run_exported(exp, values, mesh)

    def reaches(variant) -> bool:
        if variant is exp:
            return False  # its collectives of that kind send no data made from an input
        return variant is None or changed(base, run_exported(variant, values, mesh)[0], rtol, atol)

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


def communication_that_matters(
    exp, values: list, factor: float = 2.5, rtol: float | None = None, atol: float | None = None
) -> list[str]:
    """The collectives of an exported program (read from its optimized HLO) whose results reach its outputs
    on `values` (its flat inputs): what the grader decides on hidden inputs, for the visible checks, which
    run on public ones and so need no secret. Sorted descriptions ("psum over 'devices'"); `examine`'s
    `matters`."""
    return list(examine(exp, values, factor, rtol, atol).matters)
