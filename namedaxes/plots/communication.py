"""Communication pictures (notebooks 07 and 08): a collective as its textbook schedule of messages, the bytes
each device sends and receives, and the picture of both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from matplotlib.figure import Figure

from ..i18n import gettext as _
from .style import COLORS, localized, translated

__all__ = [
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


@localized
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
    fig.suptitle(translated(title) if note is None else f"{translated(title)}\n{translated(note)}", fontsize=11)
    return fig
