"""The class report's figures: histograms of total scores and of points per exercise, drawn as SVG.

Numbers only: no submission text is drawn, only exercise and assignment names the course wrote, and
those are escaped as XML text. The report shows each figure as `<img src="data:image/svg+xml;base64,...">`:
an SVG loaded as an image runs no script and loads nothing, whatever it contains, and the page's CSP
(`img-src data:`) already allows it.

Why SVG written here and not matplotlib: the report is written after the last notebook, while the other
cores sit idle, and matplotlib (constrained layout, Agg, PNG) spent about 0.55 s of CPU per figure, 5 s for
a class of four notebooks: the end of every batch. Bars, counts and labels as SVG take milliseconds, are
sharp at any zoom and keep their text selectable.
"""

from __future__ import annotations

import base64
from collections import Counter, OrderedDict
from xml.sax.saxutils import escape

from .class_results import ClassRow

__all__ = ["score_counts", "total_figure", "exercise_figure", "histogram_svg", "MIME", "BAR", "ZERO"]

MIME = "image/svg+xml"  # what total_figure and exercise_figure return, base64-encoded
BAR = "#0072B2"  # Okabe-Ito blue, as in namedaxes.plots
ZERO = "#D55E00"  # zero scores stand out
INK, GRID = "#333333", "#DDDDDD"
FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
LABELLED_BARS = 16  # more bins than this: a label on every k-th bar only


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


def _y_ticks(top: int) -> list[int]:
    """Whole numbers of students from 0 to at least `top`, 1-2-5 spaced, at most six of them."""
    step, k = 1, 0
    while top > 5 * step:
        k += 1
        step = (1, 2, 5)[k % 3] * 10 ** (k // 3)
    return list(range(0, -(-top // step) * step + 1, step))


def _text(x: float, y: float, s: str, size: int, anchor: str = "middle", extra: str = "") -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" fill="{INK}"{extra}>'
        f"{escape(s)}</text>"
    )


def histogram_svg(
    pairs: list[tuple[float, int]], *, title: str, xlabel: str, x: float, y: float, width: float, height: float
) -> list[str]:
    """One histogram (score_counts' bars) as SVG elements in the box (x, y, width, height)."""
    left, right, top, bottom = x + 44, x + width - 10, y + 24, y + height - 38
    counts = [h for _, h in pairs] or [0]
    ticks = _y_ticks(max(1, int(max(counts) * 1.2 + 0.999)))
    ymax = ticks[-1]
    scale = (bottom - top) / ymax
    slot = (right - left) / max(1, len(pairs))
    every = 1 if len(pairs) <= LABELLED_BARS else -(-len(pairs) // LABELLED_BARS)
    out = [_text(x + width / 2, y + 15, title, 12)]
    for t in ticks:
        ty = bottom - t * scale
        out.append(f'<line x1="{left:.1f}" y1="{ty:.1f}" x2="{right:.1f}" y2="{ty:.1f}" stroke="{GRID}"/>')
        out.append(_text(left - 5, ty + 3.5, str(t), 10, "end"))
    for i, (b, h) in enumerate(pairs):
        cx = left + (i + 0.5) * slot
        bw, bh = 0.8 * slot, h * scale
        colour = ZERO if b == 0 else BAR
        out.append(
            f'<rect class="bar" x="{cx - bw / 2:.1f}" y="{bottom - bh:.1f}" width="{bw:.1f}" height="{bh:.1f}" '
            f'fill="{colour}"><title>{escape(f"{b:g}")}: {h}</title></rect>'
        )
        if h:
            out.append(_text(cx, bottom - bh - 3, str(h), 9))
        if i % every == 0:
            out.append(_text(cx, bottom + 13, f"{b:g}", 10))
    out.append(f'<line x1="{left:.1f}" y1="{bottom:.1f}" x2="{right:.1f}" y2="{bottom:.1f}" stroke="{INK}"/>')
    out.append(_text((left + right) / 2, bottom + 30, xlabel, 11))
    mid = (top + bottom) / 2
    out.append(_text(x + 12, mid, "students", 11, extra=f' transform="rotate(-90 {x + 12:.1f} {mid:.1f})"'))
    return out


def _svg(width: float, height: float, label: str, parts: list[str]) -> str:
    """The document, base64-encoded for a data: URL."""
    doc = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="{FONT}" role="img">'
        f"<title>{escape(label)}</title>"
        f'<rect width="100%" height="100%" fill="white"/>' + "".join(parts) + "</svg>"
    )
    return base64.b64encode(doc.encode("utf-8")).decode("ascii")


def total_figure(aid: str, rows: list[ClassRow]) -> str:
    maximum = max(r.max_score for r in rows)
    title = f"{aid}: total score ({len(rows)} graded)"
    pairs = score_counts([r.score for r in rows], maximum)
    width, height = 500, 280
    parts = histogram_svg(
        pairs, title=title, xlabel=f"score (out of {maximum:g})", x=0, y=0, width=width, height=height
    )
    return _svg(width, height, title, parts)


def exercise_figure(aid: str, exercises: OrderedDict[str, list[dict]]) -> str:
    n = len(exercises)
    cols = min(n, 4)
    nrows = (n + cols - 1) // cols
    cell_w, cell_h, head = 300, 250, 28
    title = f"{aid}: points per exercise"
    parts = [_text(cols * cell_w / 2, 19, title, 13)]
    for i, (gid, cells) in enumerate(exercises.items()):
        maximum = max(float(c.get("max_points", 0) or 0) for c in cells)
        pairs = score_counts([float(c.get("points", 0) or 0) for c in cells], maximum)
        parts += histogram_svg(
            pairs,
            title=gid,
            xlabel=f"points (out of {maximum:g})",
            x=(i % cols) * cell_w,
            y=head + (i // cols) * cell_h,
            width=cell_w,
            height=cell_h,
        )
    return _svg(cols * cell_w, head + nrows * cell_h, title, parts)
