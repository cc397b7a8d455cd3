"""Every picture in the course, in one place.

Each function returns a `matplotlib.figure.Figure` built without pyplot, so it
is shown exactly once when it is the last expression of a cell (and never
leaks into the next cell). Figures have an opaque white background, so they
stay readable in dark JupyterLab themes too.

Languages: every word a figure shows passes through `namedaxes.i18n.gettext` when
the figure is drawn, the titles and labels a notebook passes in included (they
are extracted from the notebooks into the catalog). In a language that needs CJK
glyphs the figure's texts use the family list `[DejaVu Sans, <a CJK font>]`
(matplotlib falls back glyph by glyph): the first of `CJK_FONTS` that matplotlib
knows or that is installed on the system (Debian's `fonts-wqy-microhei`, which
`make system-deps` installs). Without one, a warning says what to install and the
figure is drawn anyway.
"""

from __future__ import annotations

import functools
import itertools
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
from matplotlib.figure import Figure

from .axes import GRID_AXES, GRID_SHAPE
from .i18n import gettext as _
from .i18n import language

__all__ = [
    "cjk_font",
    "CJK_FONTS",
    "plot_device_values",
    "plot_collective_groups",
    "plot_loss_curve",
    "plot_gradients",
    "plot_schedule",
    "plot_expert_load",
    "collective_groups",
    "COLORS",
]


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

# Fonts with the Simplified Chinese glyphs, in order of preference (family name, file name pattern).
CJK_FONTS = [
    ("WenQuanYi Micro Hei", "wqy-microhei"),
    ("WenQuanYi Zen Hei", "wqy-zenhei"),
    ("Noto Sans CJK SC", "NotoSansCJK"),
    ("Noto Sans SC", "NotoSansSC"),
    ("Source Han Sans SC", "SourceHanSans"),
    ("Microsoft YaHei", "msyh"),
    ("SimHei", "simhei"),
    ("PingFang SC", "PingFang"),
]
_NEEDS_CJK = ("zh",)
_FONT_STATE: dict[str, str | None] = {}


def cjk_font() -> str | None:
    """The family name of an installed CJK font matplotlib can use (registering its file if needed), or None."""
    if "cjk" not in _FONT_STATE:
        from matplotlib import font_manager

        known = {f.name for f in font_manager.fontManager.ttflist}
        found = next((name for name, _pattern in CJK_FONTS if name in known), None)
        if found is None:  # installed after matplotlib cached its font list: register the file itself
            files = font_manager.findSystemFonts()
            for _name, pattern in CJK_FONTS:
                path = next((f for f in sorted(files) if pattern.lower() in Path(f).name.lower()), None)
                if path:
                    font_manager.fontManager.addfont(path)
                    found = font_manager.FontProperties(fname=path).get_name()
                    break
        _FONT_STATE["cjk"] = found
    return _FONT_STATE["cjk"]


def _font_rc() -> dict:
    if language() not in _NEEDS_CJK:
        return {}
    font = cjk_font()
    if font is None:
        if "warned" not in _FONT_STATE:
            _FONT_STATE["warned"] = "yes"
            warnings.warn(
                "No CJK font found: the figures' Chinese text shows as boxes. Install one, e.g. "
                "`apt-get install fonts-wqy-microhei` (`make system-deps` does it).",
                stacklevel=3,
            )
        return {}
    return {"font.family": ["DejaVu Sans", font]}


def _localized(plot):
    """Build the figure with the fonts the current language needs (its texts keep them when drawn later)."""

    @functools.wraps(plot)
    def build(*args, **kwargs):
        import matplotlib

        with matplotlib.rc_context(_font_rc()):
            return plot(*args, **kwargs)

    return build


def _bold() -> str:
    """ "bold", or "normal" where the text needs a CJK font: the CJK fonts looked for have one weight, and
    matplotlib would log "findfont: Failed to find font weight bold" into the notebook (the Chinese
    edition's notebook 03 showed it) before drawing the glyphs in their regular weight anyway."""
    return "normal" if language() in _NEEDS_CJK else "bold"


def _t(text: str | None) -> str | None:
    """A title or label a notebook passed in, in the current language."""
    return _(text) if text else text


# Colour-blind-safe (Okabe-Ito) palette, readable on white.
COLORS = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"]


def _figure(width: float, height: float, ncols: int = 1):
    fig = Figure(figsize=(width, height), layout="constrained", facecolor="white")
    axes = [fig.add_subplot(1, ncols, i + 1) for i in range(ncols)]
    for ax in axes:
        ax.set_facecolor("white")
    return fig, axes


@_localized
def plot_device_values(
    before, after, *, title: str, before_label: str = "before", after_label: str = "after"
) -> Figure:
    """Grouped bars: each device's value before and after a collective."""
    before, after = np.asarray(before, dtype=float).ravel(), np.asarray(after, dtype=float).ravel()
    if before.shape != after.shape:
        raise ValueError(f"before has {before.size} values but after has {after.size}: one per device each")
    n = before.size
    fig, (ax,) = _figure(max(4.0, 0.7 * n + 2), 3.2)
    x = np.arange(n)
    b1 = ax.bar(x - 0.2, before, 0.4, label=_t(before_label), color=COLORS[0])
    b2 = ax.bar(x + 0.2, after, 0.4, label=_t(after_label), color=COLORS[1])
    ax.bar_label(b1, fmt="%g", fontsize=8)
    ax.bar_label(b2, fmt="%g", fontsize=8)
    ax.set_xticks(x, [_("device {i}").format(i=i) for i in range(n)], rotation=30 if n > 4 else 0)
    ax.set_ylabel(_("value"))
    ax.set_title(_t(title))
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


@_localized
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
    fig, axes = _figure(3.3 * len(reductions), 0.9 * rows + 1.6, ncols=len(reductions))
    for ax, over in zip(axes, reductions):
        over = (over,) if isinstance(over, str) else tuple(over)
        groups = collective_groups(grid_shape, axis_names, over)
        for r, c in itertools.product(range(rows), range(cols)):
            g = groups[r, c]
            ax.add_patch(_rect(c, rows - 1 - r, COLORS[g % len(COLORS)]))
            ax.text(
                c + 0.5,
                rows - 1 - r + 0.55,
                _("device {i}").format(i=r * cols + c),
                ha="center",
                va="center",
                fontsize=8,
                color="white",
                fontweight=_bold(),
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
        fig.suptitle(_t(title))
    return fig


def _rect(x, y, color):
    from matplotlib.patches import Rectangle

    return Rectangle((x + 0.04, y + 0.04), 0.92, 0.92, facecolor=color, edgecolor="white", lw=2)


@_localized
def plot_loss_curve(losses, *, title: str = "Training loss", ylabel: str = "loss", log: bool = True) -> Figure:
    """Loss against training step."""
    losses = np.asarray(losses, dtype=float).ravel()
    fig, (ax,) = _figure(5.5, 3.2)
    ax.plot(np.arange(losses.size), losses, color=COLORS[0], lw=2)
    if log and np.all(losses > 0):
        ax.set_yscale("log")
    ax.set_xlabel(_("step"))
    ax.set_ylabel((_("{label} (log scale)") if log and np.all(losses > 0) else "{label}").format(label=_t(ylabel)))
    ax.set_title(_t(title))
    ax.grid(True, color="0.9")
    ax.annotate(
        _("final {value}").format(value=f"{losses[-1]:.3g}"),
        (losses.size - 1, losses[-1]),
        textcoords="offset points",
        xytext=(-60, 12),
        fontsize=9,
    )
    return fig


@_localized
def plot_gradients(per_device, averaged, *, names: Sequence[str] | None = None, title: str | None = None) -> Figure:
    """Each device's gradient (bars) and the averaged gradient (dashed line), one panel per parameter."""
    if isinstance(per_device, Mapping):
        names = list(names or per_device.keys())
        per = np.stack([np.asarray(per_device[n], dtype=float).ravel() for n in names], axis=1)
        avg = np.array([float(np.asarray(averaged[n]).ravel()[0]) for n in names])
    else:
        per = np.asarray(per_device, dtype=float)
        per = per.reshape(per.shape[0], -1)
        avg = np.asarray(averaged, dtype=float).ravel()
        names = list(names or [_("param {i}").format(i=i) for i in range(per.shape[1])])
    if avg.size != per.shape[1]:
        raise ValueError(f"averaged has {avg.size} values but there are {per.shape[1]} parameters")
    n_dev = per.shape[0]
    fig, axes = _figure(3.6 * len(names), 3.2, ncols=len(names))
    for i, (ax, name) in enumerate(zip(axes, names)):
        ax.bar(np.arange(n_dev), per[:, i], color=COLORS[0], label=_("per-device gradient"))
        ax.axhline(avg[i], color=COLORS[5], ls="--", lw=2, label=_("average = {value}").format(value=f"{avg[i]:.3g}"))
        ax.axhline(0, color="0.4", lw=0.8)
        ax.set_xticks(np.arange(n_dev), [str(d) for d in range(n_dev)])
        ax.set_xlabel(_("device"))
        ax.set_title(_("d loss / d {name}").format(name=name))
        ax.legend(loc="best", frameon=False, fontsize=8)
    if title:
        fig.suptitle(_t(title))
    return fig


# ---------------------------------------------------------------- communication pictures (notebook 07)
# A collective is drawn as its textbook schedule: a list of steps, each a list of
# `Transfer`s (who sends which chunk to whom, and how many bytes). The ring
# schedules are the bandwidth-optimal algorithms; a backend may pick another
# algorithm (a tree, direct sends), but no algorithm moves fewer bytes per
# device than these all-gather, reduce-scatter and all-reduce rings.


class Transfer(NamedTuple):
    """One message: device `src` sends `nbytes` bytes of chunk `chunk` to device `dst`."""

    src: int
    dst: int
    chunk: int
    nbytes: int
    label: str


def _chunk_bytes(nbytes: int, k: int) -> int:
    if nbytes % k:
        raise ValueError(f"{nbytes} bytes cannot be cut into {k} equal chunks: give a multiple of {k}")
    return nbytes // k


def _check_devices(k: int) -> None:
    if k < 2:
        raise ValueError(f"a collective needs at least 2 devices, got {k}")


def all_gather_steps(k: int, block_bytes: int) -> list[list[Transfer]]:
    """Ring all-gather: in step s, device i passes block (i - s) mod k on to device i + 1.

    Label `x3` is device 3's block. After k - 1 steps every device holds all k blocks.
    """
    _check_devices(k)
    return [
        [Transfer(i, (i + 1) % k, (i - s) % k, block_bytes, f"x{(i - s) % k}") for i in range(k)] for s in range(k - 1)
    ]


def psum_scatter_steps(k: int, nbytes: int) -> list[list[Transfer]]:
    """Ring reduce-scatter of an `nbytes` array per device, cut into k chunks.

    In step s, device i sends its partial sum of chunk (i - s - 1) mod k to device i + 1, which
    adds its own copy of that chunk. Label `p2` is a partial sum of chunk 2. After k - 1 steps
    device i holds the complete sum of chunk i.
    """
    _check_devices(k)
    size = _chunk_bytes(nbytes, k)
    return [
        [Transfer(i, (i + 1) % k, (i - s - 1) % k, size, f"p{(i - s - 1) % k}") for i in range(k)] for s in range(k - 1)
    ]


def psum_steps(k: int, nbytes: int) -> list[list[Transfer]]:
    """Ring all-reduce = reduce-scatter, then an all-gather of the complete chunks (label `s2`)."""
    size = _chunk_bytes(nbytes, k)
    gather = [[t._replace(nbytes=size, label=f"s{t.chunk}") for t in step] for step in all_gather_steps(k, size)]
    return psum_scatter_steps(k, nbytes) + gather


def ppermute_steps(perm: Sequence[tuple[int, int]], nbytes: int) -> list[list[Transfer]]:
    """`lax.ppermute(x, axis, perm)`: one step, device `src` sends its whole `x` (label `x<src>`) to `dst`."""
    perm = [(int(s), int(d)) for s, d in perm]
    sources, destinations = [s for s, _ in perm], [d for _, d in perm]
    if len(set(sources)) != len(sources) or len(set(destinations)) != len(destinations):
        raise ValueError(f"perm must send from each device at most once and to each at most once: {perm}")
    return [[Transfer(s, d, s, nbytes, f"x{s}") for s, d in perm]]


def all_to_all_steps(k: int, nbytes: int) -> list[list[Transfer]]:
    """`lax.all_to_all`: one step, device i sends chunk j of its block (label `x1.2`: device 1's
    chunk 2) to device j, for every j != i (chunk i stays where it is)."""
    _check_devices(k)
    size = _chunk_bytes(nbytes, k)
    return [[Transfer(i, j, j, size, f"x{i}.{j}") for i in range(k) for j in range(k) if j != i]]


def collective_matmul_steps(k: int, block_bytes: int) -> list[list[Transfer]]:
    """The collective matmul's ring (notebook 08): in step s device i multiplies the x chunk it holds,
    chunk (i + s) mod k (label `x3`), and sends it on to device i - 1, which multiplies it next.

    The same messages as a ring all-gather, in the other direction: k - 1 chunks per device. What
    differs is when: each message travels while a partial matmul runs, not before all of them.
    """
    _check_devices(k)
    return [
        [Transfer(i, (i - 1) % k, (i + s) % k, block_bytes, f"x{(i + s) % k}") for i in range(k)] for s in range(k - 1)
    ]


def bytes_moved(steps: Sequence[Sequence[Transfer]], k: int) -> tuple[np.ndarray, np.ndarray]:
    """Bytes each of the `k` devices sends and receives over the whole schedule: (sent, received)."""
    sent, received = np.zeros(k, dtype=int), np.zeros(k, dtype=int)
    for step in steps:
        for t in step:
            if not (0 <= t.src < k and 0 <= t.dst < k):
                raise ValueError(f"{t} names a device outside 0..{k - 1}")
            sent[t.src] += t.nbytes
            received[t.dst] += t.nbytes
    return sent, received


def _same_or_range(values: np.ndarray) -> str:
    return f"{values.min()}" if values.min() == values.max() else f"{values.min()}-{values.max()}"


@_localized
def plot_communication(steps: Sequence[Sequence[Transfer]], k: int, *, title: str, note: str | None = None) -> Figure:
    """Left: who sends what to whom, one row per step (an arrow per message, labelled with its
    chunk). Right: the bytes each device sends and receives in total."""
    from matplotlib.patches import FancyArrowPatch

    sent, received = bytes_moved(steps, k)
    n_steps = len(steps)
    # a ring schedule (every message goes to a neighbour) draws its wrap-around at the edges
    ring = all((t.dst - t.src) % k in (1, k - 1) for step in steps for t in step)
    busiest = max((len(step) for step in steps), default=0)
    row = 0.75 if busiest <= k else 0.75 * busiest / k
    fig = Figure(figsize=(3.2 + 1.5 * k, 1.4 + row * n_steps), layout="constrained", facecolor="white")
    grid = fig.add_gridspec(1, 2, width_ratios=(1.2 * k, 2.4))
    ax, bars = fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[0, 1])
    for level in range(n_steps + 1):
        ax.scatter(np.arange(k), np.full(k, -level), s=60, color=COLORS[0], zorder=3)
    for s, step in enumerate(steps):
        for t in step:
            top, bottom = -s, -(s + 1)
            if ring and {t.src, t.dst} == {0, k - 1} and k > 2:
                # the ring's wrap-around: leave at one edge, come back in at the other
                edge = k - 0.5 if t.src == k - 1 else -0.5
                pieces = [((t.src, top), (edge, top - 0.5)), ((k - 1 - edge, top - 0.5), (t.dst, bottom))]
                at = (t.src + 0.5 * (edge - t.src) * 0.6, top - 0.15)
            else:
                pieces = [((t.src, top), (t.dst, bottom))]
                f = 0.18 + 0.12 * abs(t.dst - t.src)
                at = (t.src + f * (t.dst - t.src), top - f)
            for a, b in pieces:
                ax.add_patch(
                    FancyArrowPatch(
                        a,
                        b,
                        arrowstyle="-|>",
                        mutation_scale=10,
                        lw=1.2,
                        color=COLORS[2],
                        shrinkA=5,
                        shrinkB=5,
                        zorder=2,
                    )
                )
            ax.text(
                *at,
                t.label,
                fontsize=7,
                ha="center",
                va="center",
                color="0.1",
                zorder=4,
                bbox=dict(boxstyle="round,pad=0.1", facecolor="white", edgecolor="none", alpha=0.85),
            )
    ax.set_xticks(np.arange(k), [_("device {i}").format(i=i) for i in range(k)], fontsize=8)
    ax.set_yticks(
        [-(s + 0.5) for s in range(n_steps)], [_("step {s}").format(s=s + 1) for s in range(n_steps)], fontsize=8
    )
    ax.set_xlim(-0.55, k - 0.45)
    ax.set_ylim(-n_steps - 0.3, 0.3)
    ax.tick_params(length=0)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    ax.set_title(_("who sends what to whom (time runs down)"), fontsize=10)
    x = np.arange(k)
    b1 = bars.bar(x - 0.2, sent, 0.4, color=COLORS[0], label=_("sent"))
    b2 = bars.bar(x + 0.2, received, 0.4, color=COLORS[1], label=_("received"))
    bars.bar_label(b1, fontsize=7)
    bars.bar_label(b2, fontsize=7)
    bars.set_xticks(x, [str(i) for i in range(k)])
    bars.set_xlabel(_("device"))
    bars.set_ylabel(_("bytes"))
    bars.set_title(
        _("bytes per device: sent {sent}, received {received}").format(
            sent=_same_or_range(sent), received=_same_or_range(received)
        ),
        fontsize=10,
    )
    bars.legend(loc="lower right", frameon=False, fontsize=8)
    bars.margins(y=0.2)
    fig.suptitle(_t(title) if note is None else f"{_t(title)}\n{_t(note)}", fontsize=11)
    return fig


__all__ += [
    "Transfer",
    "all_gather_steps",
    "psum_scatter_steps",
    "psum_steps",
    "ppermute_steps",
    "all_to_all_steps",
    "collective_matmul_steps",
    "bytes_moved",
    "plot_communication",
]


@_localized
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
    fig, (ax,) = _figure(min(1.0 + 0.55 * steps, 11.0), 0.9 + 0.55 * rows)
    for r in range(rows):
        for t in range(steps):
            busy = grid[r, t] >= 0
            ax.add_patch(_rect(t, rows - 1 - r, COLORS[int(grid[r, t]) % 5] if busy else "0.85"))
            if busy:
                ax.text(t + 0.5, rows - 0.5 - r, str(int(grid[r, t])), ha="center", va="center", color="white")
    ax.set_xlim(0, steps)
    ax.set_ylim(0, rows)
    ax.set_xticks(np.arange(steps) + 0.5, [str(t) for t in range(steps)])
    row = _t(row_label) or _("stage {i}")
    ax.set_yticks(np.arange(rows) + 0.5, [row.format(i=r) for r in reversed(range(rows))])
    ax.set_xlabel(_t(step_label) or _("time step"))
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    idle = _t(idle_label) or _("idle (bubble)")
    share = f"{float((grid < 0).mean()):.0%}"
    ax.set_title(_t(title) + "\n" + _("{idle}: {share} of the cells").format(idle=idle, share=share))
    if note:
        fig.supxlabel(_t(note), fontsize=9)
    return fig


@_localized
def plot_expert_load(counts, kept, *, capacity: int, title: str) -> Figure:
    """Tokens routed to each expert (bars): those kept, and above them those dropped (over capacity)."""
    counts, kept = np.asarray(counts, dtype=int).ravel(), np.asarray(kept, dtype=int).ravel()
    fig, (ax,) = _figure(7.0, 3.0)
    x = np.arange(counts.size)
    ax.bar(x, kept, color=COLORS[0], label=_("kept"))
    ax.bar(x, counts - kept, bottom=kept, color=COLORS[5], label=_("dropped (over capacity)"))
    ax.axhline(capacity, color="0.3", ls="--", lw=1.5, label=_("capacity = {c}").format(c=capacity))
    ax.set_xticks(x, [_("expert {i}").format(i=i) for i in x])
    ax.set_ylabel(_("tokens"))
    ax.set_title(_t(title))
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


__all__ += ["plot_loss_curves", "plot_layout_memory", "plot_roofline"]


@_localized
def plot_loss_curves(first, second, *, title: str, first_label: str, second_label: str) -> Figure:
    """Loss against training step, two runs: the first a solid line, the second dashed over it (where they
    agree, the dashes lie on the line)."""
    fig, (ax,) = _figure(5.5, 3.2)
    for i, (losses, label) in enumerate(((first, first_label), (second, second_label))):
        losses = np.asarray(losses, dtype=float).ravel()
        style = {"lw": 3.0, "ls": "-"} if i == 0 else {"lw": 1.5, "ls": "--"}
        ax.plot(np.arange(losses.size), losses, color=COLORS[i], label=_t(label), **style)
    ax.set_xlabel(_("step"))
    ax.set_ylabel(_("loss"))
    ax.set_title(_t(title))
    ax.grid(True, color="0.9")
    ax.legend(fontsize=8)
    return fig


@_localized
def plot_layout_memory(layouts: Sequence[str], params, optimizer, *, title: str) -> Figure:
    """Stacked bars: the bytes of parameters and of optimizer state each device holds, per layout."""
    params, optimizer = np.asarray(params, dtype=float) / 1024, np.asarray(optimizer, dtype=float) / 1024
    fig, (ax,) = _figure(6.5, 3.2)
    x = np.arange(len(layouts))
    ax.bar(x, params, color=COLORS[0], label=_("parameters"))
    ax.bar(x, optimizer, bottom=params, color=COLORS[1], label=_("optimizer state (Adam)"))
    ax.set_xticks(x, list(layouts), fontsize=8)
    ax.set_xlabel(_("layout (data, fsdp, tensor)"))
    ax.set_ylabel(_("KiB per device"))
    ax.set_title(_t(title))
    ax.legend(fontsize=8)
    return fig


@_localized
def plot_roofline(
    chips: Mapping[str, tuple[float, float]], points: Mapping[tuple, tuple[float, float]], *, title: str
) -> Figure:
    """Attainable FLOP/s against FLOPs per byte communicated (log-log): each chip's roof, min(peak, intensity
    x bandwidth), from `chips` (name -> (peak FLOP/s, bytes/s)); `points`: (layout, batch) -> (intensity,
    FLOP/s)."""
    fig, (ax,) = _figure(6.5, 3.8)
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
    ax.set_title(_t(title))
    ax.grid(True, color="0.9")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig
