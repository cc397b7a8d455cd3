"""The course's pictures: right groups, titled and labelled, one figure each."""
import numpy as np
import pytest
from matplotlib.figure import Figure

from namedaxes import DATA_SHARDS, GRID_AXES, MODEL_REPLICAS, plots


def test_collective_groups_match_the_axes_reduced_over():
    assert plots.collective_groups((2, 4), GRID_AXES, [DATA_SHARDS]).tolist() == [[0, 1, 2, 3], [0, 1, 2, 3]]
    assert plots.collective_groups((2, 4), GRID_AXES, [MODEL_REPLICAS]).tolist() == [[0, 0, 0, 0], [1, 1, 1, 1]]
    assert plots.collective_groups((2, 4), GRID_AXES, GRID_AXES).tolist() == [[0] * 4] * 2
    with pytest.raises(ValueError, match="unknown axis name"):
        plots.collective_groups((2, 4), GRID_AXES, ["devices"])


def test_plot_collective_groups_has_a_titled_panel_per_reduction():
    fig = plots.plot_collective_groups()
    assert isinstance(fig, Figure)
    titles = [ax.get_title() for ax in fig.axes]
    assert titles[0].startswith("psum over data_shards\n4 group(s) of 2")
    assert titles[1].startswith("psum over model_replicas\n2 group(s) of 4")
    assert titles[2].startswith("psum over data_shards + model_replicas\n1 group(s) of 8")
    assert all(ax.get_xlabel() and ax.get_ylabel() for ax in fig.axes)


def test_plot_device_values_draws_one_bar_pair_per_device():
    fig = plots.plot_device_values(np.arange(8), np.full(8, 56.0), title="psum")
    (ax,) = fig.axes
    assert ax.get_title() == "psum" and len(ax.patches) == 16
    with pytest.raises(ValueError, match="one per device"):
        plots.plot_device_values(np.arange(8), np.arange(4), title="x")


def test_loss_curve_and_gradients():
    fig = plots.plot_loss_curve(np.exp(-np.arange(50) / 10.0))
    assert fig.axes[0].get_yscale() == "log" and fig.axes[0].get_xlabel() == "step"
    fig = plots.plot_gradients({"w": np.arange(8.0), "b": np.ones(8)}, {"w": 3.5, "b": 1.0})
    assert [ax.get_title() for ax in fig.axes] == ["d loss / d w", "d loss / d b"]
    with pytest.raises(ValueError, match="parameters"):
        plots.plot_gradients(np.ones((8, 2)), np.ones(3))
