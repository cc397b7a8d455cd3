"""How every figure of the course looks: shown once in Jupyter (a PNG, without pyplot), drawn in the fonts its
language needs (the package's docstring), in a colour-blind-safe palette on an opaque white background.
"""

from __future__ import annotations

import functools
import warnings
from pathlib import Path

from matplotlib.figure import Figure

from ..i18n import gettext as _
from ..i18n import language

__all__ = [
    "figure_png",
    "CJK_FONTS",
    "cjk_font",
    "localized",
    "bold_weight",
    "translated",
    "COLORS",
    "new_figure",
    "cell_patch",
]


def figure_png(fig: Figure) -> bytes:
    """The figure as the PNG Jupyter shows (tight, 100 dpi)."""
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
        shell.display_formatter.formatters["image/png"].for_type(Figure, figure_png)


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


def localized(plot):
    """Build the figure with the fonts the current language needs (its texts keep them when drawn later)."""

    @functools.wraps(plot)
    def build(*args, **kwargs):
        import matplotlib

        with matplotlib.rc_context(_font_rc()):
            return plot(*args, **kwargs)

    return build


def bold_weight() -> str:
    """ "bold", or "normal" where the text needs a CJK font: the CJK fonts looked for have one weight, and
    matplotlib would log "findfont: Failed to find font weight bold" into the notebook (the Chinese
    edition's notebook 03 showed it) before drawing the glyphs in their regular weight anyway."""
    return "normal" if language() in _NEEDS_CJK else "bold"


def translated(text: str | None) -> str | None:
    """A title or label a notebook passed in, in the current language."""
    return _(text) if text else text


# Colour-blind-safe (Okabe-Ito) palette, readable on white.
COLORS = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"]


def new_figure(width: float, height: float, ncols: int = 1):
    fig = Figure(figsize=(width, height), layout="constrained", facecolor="white")
    axes = [fig.add_subplot(1, ncols, i + 1) for i in range(ncols)]
    for ax in axes:
        ax.set_facecolor("white")
    return fig, axes


def cell_patch(x, y, color):
    from matplotlib.patches import Rectangle

    return Rectangle((x + 0.04, y + 0.04), 0.92, 0.92, facecolor=color, edgecolor="white", lw=2)
