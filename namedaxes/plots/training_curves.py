"""Training as it goes: the loss against the step (one run, or two to compare), each device's gradient and
their average.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure

from ..i18n import gettext as _
from .style import COLORS, localized, new_figure, translated

__all__ = ["plot_loss_curve", "plot_loss_curves", "plot_gradients"]


@localized
def plot_loss_curve(losses, *, title: str = "Training loss", ylabel: str = "loss", log: bool = True) -> Figure:
    """Loss against training step."""
    losses = np.asarray(losses, dtype=float).ravel()
    fig, (ax,) = new_figure(5.5, 3.2)
    ax.plot(np.arange(losses.size), losses, color=COLORS[0], lw=2)
    if log and np.all(losses > 0):
        ax.set_yscale("log")
    ax.set_xlabel(_("step"))
    ax.set_ylabel(
        (_("{label} (log scale)") if log and np.all(losses > 0) else "{label}").format(label=translated(ylabel))
    )
    ax.set_title(translated(title))
    ax.grid(True, color="0.9")
    ax.annotate(
        _("final {value}").format(value=f"{losses[-1]:.3g}"),
        (losses.size - 1, losses[-1]),
        textcoords="offset points",
        xytext=(-60, 12),
        fontsize=9,
    )
    return fig


@localized
def plot_loss_curves(first, second, *, title: str, first_label: str, second_label: str) -> Figure:
    """Loss against training step, two runs: the first a solid line, the second dashed over it (where they
    agree, the dashes lie on the line)."""
    fig, (ax,) = new_figure(5.5, 3.2)
    for i, (losses, label) in enumerate(((first, first_label), (second, second_label))):
        losses = np.asarray(losses, dtype=float).ravel()
        style = {"lw": 3.0, "ls": "-"} if i == 0 else {"lw": 1.5, "ls": "--"}
        ax.plot(np.arange(losses.size), losses, color=COLORS[i], label=translated(label), **style)
    ax.set_xlabel(_("step"))
    ax.set_ylabel(_("loss"))
    ax.set_title(translated(title))
    ax.grid(True, color="0.9")
    ax.legend(fontsize=8)
    return fig


@localized
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
    fig, axes = new_figure(3.6 * len(names), 3.2, ncols=len(names))
    for i, (ax, name) in enumerate(zip(axes, names)):
        ax.bar(np.arange(n_dev), per[:, i], color=COLORS[0], label=_("per-device gradient"))
        ax.axhline(avg[i], color=COLORS[5], ls="--", lw=2, label=_("average = {value}").format(value=f"{avg[i]:.3g}"))
        ax.axhline(0, color="0.4", lw=0.8)
        ax.set_xticks(np.arange(n_dev), [str(d) for d in range(n_dev)])
        ax.set_xlabel(_("device"))
        ax.set_title(_("d loss / d {name}").format(name=name))
        ax.legend(loc="best", frameon=False, fontsize=8)
    if title:
        fig.suptitle(translated(title))
    return fig
