"""Pictures of training at scale (notebooks 09 and 10): a pipeline's or a ring's schedule, the load per expert,
the memory per device by layout, the roofline.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure

from ..i18n import gettext as _
from .style import COLORS, cell_patch, localized, new_figure, translated

__all__ = ["plot_schedule", "plot_expert_load", "plot_layout_memory", "plot_roofline"]


@localized
def plot_schedule(
    grid,
    *,
    title: str,
    row_label: str | None = None,
    step_label: str | None = None,
    idle_label: str | None = None,
    note: str = "",
) -> Figure:
    """A schedule, rows (stages, devices) x time steps: each cell shows what that row works on (its number)
    or is shaded as idle where `grid` holds -1. `row_label` names a row ("stage {i}" by default)."""
    grid = np.asarray(grid)
    rows, steps = grid.shape
    fig, (ax,) = new_figure(min(1.0 + 0.55 * steps, 11.0), 0.9 + 0.55 * rows)
    for r in range(rows):
        for t in range(steps):
            busy = grid[r, t] >= 0
            ax.add_patch(cell_patch(t, rows - 1 - r, COLORS[int(grid[r, t]) % 5] if busy else "0.85"))
            if busy:
                ax.text(t + 0.5, rows - 0.5 - r, str(int(grid[r, t])), ha="center", va="center", color="white")
    ax.set_xlim(0, steps)
    ax.set_ylim(0, rows)
    ax.set_xticks(np.arange(steps) + 0.5, [str(t) for t in range(steps)])
    row = translated(row_label) or _("stage {i}")
    ax.set_yticks(np.arange(rows) + 0.5, [row.format(i=r) for r in reversed(range(rows))])
    ax.set_xlabel(translated(step_label) or _("time step"))
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    idle = translated(idle_label) or _("idle (bubble)")
    share = f"{float((grid < 0).mean()):.0%}"
    ax.set_title(translated(title) + "\n" + _("{idle}: {share} of the cells").format(idle=idle, share=share))
    if note:
        fig.supxlabel(translated(note), fontsize=9)
    return fig


@localized
def plot_expert_load(counts, kept, *, capacity: int, title: str) -> Figure:
    """Tokens routed to each expert (bars): those kept, and above them those dropped (over capacity)."""
    counts, kept = np.asarray(counts, dtype=int).ravel(), np.asarray(kept, dtype=int).ravel()
    fig, (ax,) = new_figure(7.0, 3.0)
    x = np.arange(counts.size)
    ax.bar(x, kept, color=COLORS[0], label=_("kept"))
    ax.bar(x, counts - kept, bottom=kept, color=COLORS[5], label=_("dropped (over capacity)"))
    ax.axhline(capacity, color="0.3", ls="--", lw=1.5, label=_("capacity = {c}").format(c=capacity))
    ax.set_xticks(x, [_("expert {i}").format(i=i) for i in x])
    ax.set_ylabel(_("tokens"))
    ax.set_title(translated(title))
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


@localized
def plot_layout_memory(layouts: Sequence[str], params, optimizer, *, title: str) -> Figure:
    """Stacked bars: the bytes of parameters and of optimizer state each device holds, per layout."""
    params, optimizer = np.asarray(params, dtype=float) / 1024, np.asarray(optimizer, dtype=float) / 1024
    fig, (ax,) = new_figure(6.5, 3.2)
    x = np.arange(len(layouts))
    ax.bar(x, params, color=COLORS[0], label=_("parameters"))
    ax.bar(x, optimizer, bottom=params, color=COLORS[1], label=_("optimizer state (Adam)"))
    ax.set_xticks(x, list(layouts), fontsize=8)
    ax.set_xlabel(_("layout (data, fsdp, tensor)"))
    ax.set_ylabel(_("KiB per device"))
    ax.set_title(translated(title))
    ax.legend(fontsize=8)
    return fig


@localized
def plot_roofline(
    chips: Mapping[str, tuple[float, float]], points: Mapping[tuple, tuple[float, float]], *, title: str
) -> Figure:
    """Attainable FLOP/s against FLOPs per byte communicated (log-log): each chip's roof, min(peak, intensity
    x bandwidth), from `chips` (name -> (peak FLOP/s, bytes/s)); `points`: (layout, batch) -> (intensity,
    FLOP/s)."""
    fig, (ax,) = new_figure(6.5, 3.8)
    x = np.logspace(-1, 5, 200)
    for i, (name, (peak, bandwidth)) in enumerate(chips.items()):
        ax.plot(x, np.minimum(peak, x * bandwidth), color=COLORS[i], lw=2, label=name)
        ax.axvline(peak / bandwidth, color=COLORS[i], lw=0.8, ls=":")
    for j, ((layout, batch), (intensity, rate)) in enumerate(points.items()):
        label = _("{layout}, batch {batch}").format(layout=layout, batch=batch)
        ax.plot([intensity], [rate], "o", color=COLORS[(j + 2) % len(COLORS)], label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(_("FLOPs per byte communicated"))
    ax.set_ylabel(_("attainable FLOP/s per device"))
    ax.set_title(translated(title))
    ax.grid(True, color="0.9")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig
