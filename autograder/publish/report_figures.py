"""The class report's figures: histograms of total scores and of points per exercise, as base64 PNG
(matplotlib, Agg). Numbers only: no submission text is drawn except exercise names the course wrote.
"""

from __future__ import annotations

import base64
import io
from collections import Counter, OrderedDict

from .class_results import Row

__all__ = ["score_counts", "total_figure", "exercise_figure", "BAR", "ZERO"]

BAR = "#0072B2"  # Okabe-Ito blue, as in namedaxes.plots
ZERO = "#D55E00"  # zero scores stand out


# ---------------------------------------------------------------- figures
def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, facecolor="white")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _bins(values: list[float], maximum: float) -> list[float]:
    """The score values to draw a bar for: 0..maximum in steps of 1 (or 0.5 if needed)."""
    step = 1.0 if all(float(v).is_integer() for v in values + [maximum]) else 0.5
    n = int(round(maximum / step)) if maximum > 0 else 0
    return [i * step for i in range(n + 1)]


def score_counts(values: list[float], maximum: float) -> list[tuple[float, int]]:
    """(score, number of students) for every score from 0 to `maximum` (the bars of a histogram)."""
    values = [min(max(float(v), 0.0), maximum) for v in values]
    bins = _bins(values, maximum)
    counts = Counter(min(bins, key=lambda b: abs(b - v)) for v in values)
    return [(b, counts.get(b, 0)) for b in bins]


def _histogram(ax, values: list[float], maximum: float, *, title: str, xlabel: str) -> None:
    from matplotlib.ticker import MaxNLocator

    pairs = score_counts(values, maximum)
    bins, heights = [b for b, _ in pairs], [h for _, h in pairs]
    width = 0.8 * (bins[1] - bins[0]) if len(bins) > 1 else 0.8
    bars = ax.bar(bins, heights, width=width, color=[ZERO if b == 0 else BAR for b in bins])
    ax.bar_label(bars, labels=[str(h) if h else "" for h in heights], fontsize=8)
    ax.set_xticks(bins, [f"{b:g}" for b in bins] if len(bins) <= 16 else None)
    if len(bins) > 16:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel(xlabel)
    ax.set_ylabel("students")
    ax.set_title(title, fontsize=10)
    ax.set_ylim(0, max(heights + [1]) * 1.2)
    ax.set_facecolor("white")


def total_figure(aid: str, rows: list[Row]) -> str:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.0, 2.8), layout="constrained", facecolor="white")
    ax = fig.add_subplot()
    maximum = max(r.max_score for r in rows)
    _histogram(
        ax,
        [r.score for r in rows],
        maximum,
        title=f"{aid}: total score ({len(rows)} graded)",
        xlabel=f"score (out of {maximum:g})",
    )
    return _png(fig)


def exercise_figure(aid: str, exercises: OrderedDict[str, list[dict]]) -> str:
    from matplotlib.figure import Figure

    n = len(exercises)
    cols = min(n, 4)
    nrows = (n + cols - 1) // cols
    fig = Figure(figsize=(3.0 * cols, 2.5 * nrows), layout="constrained", facecolor="white")
    for i, (gid, cells) in enumerate(exercises.items()):
        ax = fig.add_subplot(nrows, cols, i + 1)
        maximum = max(float(c.get("max_points", 0) or 0) for c in cells)
        _histogram(
            ax,
            [float(c.get("points", 0) or 0) for c in cells],
            maximum,
            title=gid,
            xlabel=f"points (out of {maximum:g})",
        )
    fig.suptitle(f"{aid}: points per exercise", fontsize=11)
    return _png(fig)


# ---------------------------------------------------------------- HTML
