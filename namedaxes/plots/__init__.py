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

One module per kind of picture: `style` (display, fonts, palette), `device_grids`, `training_curves`,
`communication`, `scaling`; notebooks import them from here (`from namedaxes import plots`).
"""

from __future__ import annotations

from .communication import (
    Transfer,
    all_gather_steps,
    all_to_all_steps,
    bytes_moved,
    collective_matmul_steps,
    plot_communication,
    ppermute_steps,
    psum_scatter_steps,
    psum_steps,
)
from .device_grids import collective_groups, plot_collective_groups, plot_device_values
from .scaling import plot_expert_load, plot_layout_memory, plot_roofline, plot_schedule
from .style import CJK_FONTS, COLORS, cjk_font, figure_png
from .training_curves import plot_gradients, plot_loss_curve, plot_loss_curves

__all__ = [
    "cjk_font",
    "CJK_FONTS",
    "figure_png",
    "plot_device_values",
    "plot_collective_groups",
    "plot_loss_curve",
    "plot_gradients",
    "plot_schedule",
    "plot_expert_load",
    "collective_groups",
    "COLORS",
    "Transfer",
    "all_gather_steps",
    "psum_scatter_steps",
    "psum_steps",
    "ppermute_steps",
    "all_to_all_steps",
    "collective_matmul_steps",
    "bytes_moved",
    "plot_communication",
    "plot_loss_curves",
    "plot_layout_memory",
    "plot_roofline",
]
