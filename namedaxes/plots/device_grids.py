"""What the devices hold and which of them reduce together (notebooks 01 to 05): each device's value before and
after a collective, the device grid coloured by a reduction's groups.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence

import numpy as np
from matplotlib.figure import Figure

from ..axes import GRID_AXES, GRID_SHAPE
from ..i18n import gettext as _
from .style import COLORS, bold_weight, cell_patch, localized, new_figure, translated

__all__ = ["plot_device_values", "collective_groups", "plot_collective_groups"]


@localized
def plot_device_values(
    before, after, *, title: str, before_label: str = "before", after_label: str = "after"
) -> Figure:
    """Grouped bars: each device's value before and after a collective."""
    before, after = np.asarray(before, dtype=float).ravel(), np.asarray(after, dtype=float).ravel()
    if before.shape != after.shape:
        raise ValueError(f"before has {before.size} values but after has {after.size}: one per device each")
    n = before.size
    fig, (ax,) = new_figure(max(4.0, 0.7 * n + 2), 3.2)
    x = np.arange(n)
    b1 = ax.bar(x - 0.2, before, 0.4, label=translated(before_label), color=COLORS[0])
    b2 = ax.bar(x + 0.2, after, 0.4, label=translated(after_label), color=COLORS[1])
    ax.bar_label(b1, fmt="%g", fontsize=8)
    ax.bar_label(b2, fmt="%g", fontsize=8)
    ax.set_xticks(x, [_("device {i}").format(i=i) for i in range(n)], rotation=30 if n > 4 else 0)
    ax.set_ylabel(_("value"))
    ax.set_title(translated(title))
    ax.axhline(0, color="0.4", lw=0.8)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    ax.margins(y=0.15)
    return fig


def collective_groups(grid_shape: Sequence[int], axis_names: Sequence[str], over: Iterable[str]) -> np.ndarray:
    """Group number of each grid position for a collective over the axes `over`.

    Devices that differ only in their coordinates along `over` reduce together;
    so the group is identified by the coordinates along the *other* axes.
    """
    over = set(over)
    unknown = over - set(axis_names)
    if unknown:
        raise ValueError(f"unknown axis name(s) {sorted(unknown)}; the grid has {list(axis_names)}")
    keep = [i for i, name in enumerate(axis_names) if name not in over]
    groups = np.zeros(tuple(grid_shape), dtype=int)
    labels: dict[tuple, int] = {}
    for coord in itertools.product(*(range(s) for s in grid_shape)):
        key = tuple(coord[i] for i in keep)
        groups[coord] = labels.setdefault(key, len(labels))
    return groups


@localized
def plot_collective_groups(
    grid_shape: Sequence[int] = GRID_SHAPE,
    axis_names: Sequence[str] = GRID_AXES,
    reductions: Sequence[Sequence[str]] | None = None,
    *,
    title: str | None = None,
) -> Figure:
    """One panel per reduction: the device grid, coloured by which devices reduce together."""
    if len(grid_shape) != 2 or len(axis_names) != 2:
        raise ValueError("plot_collective_groups draws 2-D device grids: give two sizes and two axis names")
    if reductions is None:
        reductions = [(axis_names[0],), (axis_names[1],), tuple(axis_names)]
    rows, cols = grid_shape
    fig, axes = new_figure(3.3 * len(reductions), 0.9 * rows + 1.6, ncols=len(reductions))
    for ax, over in zip(axes, reductions):
        over = (over,) if isinstance(over, str) else tuple(over)
        groups = collective_groups(grid_shape, axis_names, over)
        for r, c in itertools.product(range(rows), range(cols)):
            g = groups[r, c]
            ax.add_patch(cell_patch(c, rows - 1 - r, COLORS[g % len(COLORS)]))
            ax.text(
                c + 0.5,
                rows - 1 - r + 0.55,
                _("device {i}").format(i=r * cols + c),
                ha="center",
                va="center",
                fontsize=8,
                color="white",
                fontweight=bold_weight(),
            )
            ax.text(
                c + 0.5,
                rows - 1 - r + 0.25,
                _("group {g}").format(g=g),
                ha="center",
                va="center",
                fontsize=7,
                color="white",
            )
        ax.set_xlim(0, cols)
        ax.set_ylim(0, rows)
        ax.set_aspect("equal")
        ax.set_xticks(np.arange(cols) + 0.5, [str(c) for c in range(cols)])
        ax.set_yticks(np.arange(rows) + 0.5, [str(r) for r in reversed(range(rows))])
        ax.set_xlabel(_("{axis} index").format(axis=axis_names[1]))
        ax.set_ylabel(_("{axis} index").format(axis=axis_names[0]))
        ax.tick_params(length=0)
        n_groups = groups.max() + 1
        ax.set_title(
            _("psum over {axes}\n{n} group(s) of {size}").format(
                axes=" + ".join(over), n=n_groups, size=groups.size // n_groups
            ),
            fontsize=10,
        )
    if title:
        fig.suptitle(translated(title))
    return fig
