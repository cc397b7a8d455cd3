"""Every picture in the course, in one place.

Each function returns a `matplotlib.figure.Figure` built without pyplot, so it
is shown exactly once when it is the last expression of a cell (and never
leaks into the next cell). Figures have an opaque white background, so they
stay readable in dark JupyterLab themes too.
"""
from __future__ import annotations

import itertools
from typing import Iterable, Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure

from .axes import GRID_AXES, GRID_SHAPE

__all__ = ["plot_device_values", "plot_collective_groups", "plot_loss_curve", "plot_gradients",
           "collective_groups", "COLORS"]

def _figure_png(fig: Figure) -> bytes:
    import io
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight", dpi=100)
    return buf.getvalue()


def _register_png_display() -> None:
    """Show a returned Figure as a picture in Jupyter without pyplot or %matplotlib."""
    try:
        from IPython import get_ipython
    except ImportError:  # plain Python: nothing to register
        return
    shell = get_ipython()
    if shell is not None:
        shell.display_formatter.formatters["image/png"].for_type(Figure, _figure_png)


_register_png_display()

# Colour-blind-safe (Okabe-Ito) palette, readable on white.
COLORS = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"]


def _figure(width: float, height: float, ncols: int = 1):
    fig = Figure(figsize=(width, height), layout="constrained", facecolor="white")
    axes = [fig.add_subplot(1, ncols, i + 1) for i in range(ncols)]
    for ax in axes:
        ax.set_facecolor("white")
    return fig, axes


def plot_device_values(before, after, *, title: str, before_label: str = "before",
                       after_label: str = "after") -> Figure:
    """Grouped bars: each device's value before and after a collective."""
    before, after = np.asarray(before, dtype=float).ravel(), np.asarray(after, dtype=float).ravel()
    if before.shape != after.shape:
        raise ValueError(f"before has {before.size} values but after has {after.size}: one per device each")
    n = before.size
    fig, (ax,) = _figure(max(4.0, 0.7 * n + 2), 3.2)
    x = np.arange(n)
    b1 = ax.bar(x - 0.2, before, 0.4, label=before_label, color=COLORS[0])
    b2 = ax.bar(x + 0.2, after, 0.4, label=after_label, color=COLORS[1])
    ax.bar_label(b1, fmt="%g", fontsize=8)
    ax.bar_label(b2, fmt="%g", fontsize=8)
    ax.set_xticks(x, [f"device {i}" for i in range(n)], rotation=30 if n > 4 else 0)
    ax.set_ylabel("value")
    ax.set_title(title)
    ax.axhline(0, color="0.4", lw=0.8)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    ax.margins(y=0.15)
    return fig


def collective_groups(grid_shape: Sequence[int], axis_names: Sequence[str],
                      over: Iterable[str]) -> np.ndarray:
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


def plot_collective_groups(grid_shape: Sequence[int] = GRID_SHAPE, axis_names: Sequence[str] = GRID_AXES,
                           reductions: Sequence[Sequence[str]] | None = None, *,
                           title: str | None = None) -> Figure:
    """One panel per reduction: the device grid, coloured by which devices reduce together."""
    if len(grid_shape) != 2 or len(axis_names) != 2:
        raise ValueError("plot_collective_groups draws 2-D device grids: give two sizes and two axis names")
    if reductions is None:
        reductions = [(axis_names[0],), (axis_names[1],), tuple(axis_names)]
    rows, cols = grid_shape
    fig, axes = _figure(3.3 * len(reductions), 0.9 * rows + 1.6, ncols=len(reductions))
    for ax, over in zip(axes, reductions):
        over = (over,) if isinstance(over, str) else tuple(over)
        groups = collective_groups(grid_shape, axis_names, over)
        for r, c in itertools.product(range(rows), range(cols)):
            g = groups[r, c]
            ax.add_patch(_rect(c, rows - 1 - r, COLORS[g % len(COLORS)]))
            ax.text(c + 0.5, rows - 1 - r + 0.55, f"device {r * cols + c}", ha="center", va="center",
                    fontsize=8, color="white", fontweight="bold")
            ax.text(c + 0.5, rows - 1 - r + 0.25, f"group {g}", ha="center", va="center", fontsize=7,
                    color="white")
        ax.set_xlim(0, cols)
        ax.set_ylim(0, rows)
        ax.set_aspect("equal")
        ax.set_xticks(np.arange(cols) + 0.5, [str(c) for c in range(cols)])
        ax.set_yticks(np.arange(rows) + 0.5, [str(r) for r in reversed(range(rows))])
        ax.set_xlabel(f"{axis_names[1]} index")
        ax.set_ylabel(f"{axis_names[0]} index")
        ax.tick_params(length=0)
        n_groups = groups.max() + 1
        ax.set_title(f"psum over {' + '.join(over)}\n{n_groups} group(s) of {groups.size // n_groups}",
                     fontsize=10)
    if title:
        fig.suptitle(title)
    return fig


def _rect(x, y, color):
    from matplotlib.patches import Rectangle
    return Rectangle((x + 0.04, y + 0.04), 0.92, 0.92, facecolor=color, edgecolor="white", lw=2)


def plot_loss_curve(losses, *, title: str = "Training loss", ylabel: str = "loss", log: bool = True) -> Figure:
    """Loss against training step."""
    losses = np.asarray(losses, dtype=float).ravel()
    fig, (ax,) = _figure(5.5, 3.2)
    ax.plot(np.arange(losses.size), losses, color=COLORS[0], lw=2)
    if log and np.all(losses > 0):
        ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel(ylabel + (" (log scale)" if log and np.all(losses > 0) else ""))
    ax.set_title(title)
    ax.grid(True, color="0.9")
    ax.annotate(f"final {losses[-1]:.3g}", (losses.size - 1, losses[-1]), textcoords="offset points",
                xytext=(-60, 12), fontsize=9)
    return fig


def plot_gradients(per_device, averaged, *, names: Sequence[str] | None = None,
                   title: str | None = None) -> Figure:
    """Each device's gradient (bars) and the averaged gradient (dashed line), one panel per parameter."""
    if isinstance(per_device, Mapping):
        names = list(names or per_device.keys())
        per = np.stack([np.asarray(per_device[n], dtype=float).ravel() for n in names], axis=1)
        avg = np.array([float(np.asarray(averaged[n]).ravel()[0]) for n in names])
    else:
        per = np.asarray(per_device, dtype=float)
        per = per.reshape(per.shape[0], -1)
        avg = np.asarray(averaged, dtype=float).ravel()
        names = list(names or [f"param {i}" for i in range(per.shape[1])])
    if avg.size != per.shape[1]:
        raise ValueError(f"averaged has {avg.size} values but there are {per.shape[1]} parameters")
    n_dev = per.shape[0]
    fig, axes = _figure(3.6 * len(names), 3.2, ncols=len(names))
    for i, (ax, name) in enumerate(zip(axes, names)):
        ax.bar(np.arange(n_dev), per[:, i], color=COLORS[0], label="per-device gradient")
        ax.axhline(avg[i], color=COLORS[5], ls="--", lw=2, label=f"average = {avg[i]:.3g}")
        ax.axhline(0, color="0.4", lw=0.8)
        ax.set_xticks(np.arange(n_dev), [str(d) for d in range(n_dev)])
        ax.set_xlabel("device")
        ax.set_title(f"d loss / d {name}")
        ax.legend(loc="best", frameon=False, fontsize=8)
    if title:
        fig.suptitle(title)
    return fig
