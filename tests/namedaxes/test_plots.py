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


# ---------------------------------------------------------------- communication pictures (notebook 07)
def _simulate_gather(steps, k):
    """Which blocks each device holds after a schedule; a device may only send what it holds."""
    held = [{i} for i in range(k)]
    for step in steps:
        arriving = []
        for t in step:
            assert t.chunk in held[t.src], f"{t}: device {t.src} sends a block it does not hold"
            arriving.append((t.dst, t.chunk))
        for dst, chunk in arriving:
            held[dst].add(chunk)
    return held


def _simulate_reduce_scatter(steps, k):
    """Which devices' contributions each device's partial sum of each chunk contains."""
    partial = [[{i} for _ in range(k)] for i in range(k)]
    for step in steps:
        arriving = [(t.dst, t.chunk, set(partial[t.src][t.chunk])) for t in step]
        for dst, chunk, contributions in arriving:
            assert not contributions & partial[dst][chunk], "a contribution would be added twice"
            partial[dst][chunk] |= contributions
    return partial


@pytest.mark.parametrize("k", [2, 4, 8])
def test_ring_schedules_do_what_their_collective_does(k):
    gather = plots.all_gather_steps(k, block_bytes=8)
    assert len(gather) == k - 1 and _simulate_gather(gather, k) == [set(range(k))] * k
    scatter = plots.psum_scatter_steps(k, nbytes=8 * k)
    partial = _simulate_reduce_scatter(scatter, k)
    assert all(partial[i][i] == set(range(k)) for i in range(k)), "device i must end with the whole sum of chunk i"
    psum = plots.psum_steps(k, nbytes=8 * k)
    assert len(psum) == 2 * (k - 1) and psum[: k - 1] == scatter
    finished = [{i} for i in range(k)]  # after the reduce-scatter, device i owns chunk i
    for step in psum[k - 1 :]:
        for t in step:
            assert t.chunk in finished[t.src] and t.label == f"s{t.chunk}"
        for t in step:
            finished[t.dst].add(t.chunk)
    assert finished == [set(range(k))] * k


@pytest.mark.parametrize("k", [2, 4, 8])
def test_collective_matmul_steps_follow_the_notebooks_ring(k):
    """Notebook 08: in step s device i holds (and multiplies) chunk (i + s) mod k; over k steps it sees every chunk."""
    steps = plots.collective_matmul_steps(k, block_bytes=16)
    assert len(steps) == k - 1
    held = list(range(k))  # step 0: every device holds its own chunk
    seen = [{i} for i in range(k)]
    for s, step in enumerate(steps):
        for t in step:
            assert t.dst == (t.src - 1) % k and t.chunk == held[t.src] == (t.src + s) % k and t.label == f"x{t.chunk}"
        held = [next(t.chunk for t in step if t.dst == i) for i in range(k)]
        for i in range(k):
            seen[i].add(held[i])
    assert seen == [set(range(k))] * k
    sent, received = plots.bytes_moved(steps, k)
    gather_sent, _ = plots.bytes_moved(plots.all_gather_steps(k, 16), k)
    assert (sent == gather_sent).all() and (received == sent).all()


@pytest.mark.parametrize("k", [2, 4, 8])
def test_bytes_moved_match_the_textbook_formulas(k):
    n = 8 * k  # bytes per device
    sent, received = plots.bytes_moved(plots.all_gather_steps(k, n), k)
    assert (sent == (k - 1) * n).all() and (received == (k - 1) * n).all()
    sent, _ = plots.bytes_moved(plots.psum_scatter_steps(k, n), k)
    assert (sent == (k - 1) * n // k).all()
    sent, received = plots.bytes_moved(plots.psum_steps(k, n), k)
    assert (sent == 2 * (k - 1) * n // k).all() and (received == sent).all()
    sent, received = plots.bytes_moved(plots.all_to_all_steps(k, n), k)
    assert (sent == (k - 1) * n // k).all() and (received == sent).all()
    sent, received = plots.bytes_moved(plots.ppermute_steps([(0, k - 1)], n), k)
    assert sent.tolist() == [n] + [0] * (k - 1) and received.tolist() == [0] * (k - 1) + [n]


def test_schedules_reject_what_the_collective_rejects():
    with pytest.raises(ValueError, match="each device at most once"):
        plots.ppermute_steps([(0, 1), (2, 1)], 8)
    with pytest.raises(ValueError, match="cannot be cut into 4 equal chunks"):
        plots.psum_scatter_steps(4, 6)
    with pytest.raises(ValueError, match="at least 2 devices"):
        plots.all_gather_steps(1, 8)
    with pytest.raises(ValueError, match="outside 0..3"):
        plots.bytes_moved(plots.ppermute_steps([(0, 5)], 8), 4)


def test_plot_communication_draws_every_message_and_the_bytes():
    steps = plots.psum_steps(4, 32)
    fig = plots.plot_communication(steps, 4, title="psum", note="p = partial")
    diagram, bars = fig.axes
    labels = [t.get_text() for t in diagram.texts]
    assert sorted(labels) == sorted(t.label for step in steps for t in step)
    assert len(diagram.get_yticks()) == len(steps) and diagram.get_xticklabels()[3].get_text() == "device 3"
    assert bars.get_title() == "bytes per device: sent 48, received 48" and len(bars.patches) == 8
    assert fig._suptitle.get_text() == "psum\np = partial"


def test_plot_schedule_shades_idle_cells_and_says_their_share():
    grid = np.array([[0, 1, -1], [-1, 0, 1]])
    fig = plots.plot_schedule(grid, title="GPipe", note="a note")
    (ax,) = fig.axes
    shaded = [p for p in ax.patches if p.get_facecolor()[:3] == (0.85, 0.85, 0.85)]
    assert len(shaded) == 2
    assert "33%" in ax.get_title()
    assert sorted(t.get_text() for t in ax.texts) == ["0", "0", "1", "1"]


def test_plot_expert_load_stacks_the_dropped_tokens_on_the_kept_ones():
    fig = plots.plot_expert_load([3, 5], [3, 3], capacity=3, title="load")
    (ax,) = fig.axes
    heights = [p.get_height() for p in ax.patches]
    assert heights == [3, 3, 0, 2]


def test_plot_loss_curves_draws_both_runs_labelled():
    fig = plots.plot_loss_curves([3.0, 2.0, 1.5], [3.0, 2.1, 1.4], title="runs", first_label="one", second_label="two")
    (ax,) = fig.axes
    assert [line.get_label() for line in ax.lines] == ["one", "two"]
    assert ax.lines[1].get_ydata().tolist() == [3.0, 2.1, 1.4] and ax.get_title() == "runs"


def test_plot_layout_memory_stacks_optimizer_state_on_parameters():
    fig = plots.plot_layout_memory(["(1, 1, 1)", "(1, 8, 1)"], [2048, 256], [4096, 512], title="memory")
    (ax,) = fig.axes
    tops = sorted(round(p.get_y() + p.get_height(), 6) for p in ax.patches)
    assert tops == [0.25, 0.75, 2.0, 6.0]  # KiB: parameters, then parameters + optimizer state
    assert [t.get_text() for t in ax.get_xticklabels()] == ["(1, 1, 1)", "(1, 8, 1)"]


def test_plot_roofline_draws_each_roof_and_each_point():
    chips = {"chip": (100.0, 10.0)}
    fig = plots.plot_roofline(chips, {((8, 1, 1), 16): (2.0, 20.0), ((8, 1, 1), 64): (50.0, 100.0)}, title="roof")
    (ax,) = fig.axes
    roof = ax.lines[0]
    assert np.allclose(roof.get_ydata(), np.minimum(100.0, roof.get_xdata() * 10.0))
    labels = [line.get_label() for line in ax.lines]
    assert "(8, 1, 1), batch 16" in labels and "(8, 1, 1), batch 64" in labels
