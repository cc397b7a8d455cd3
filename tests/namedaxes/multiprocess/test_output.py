"""namedaxes.multiprocess.output: what the workers print, without gloo's noise."""

from namedaxes import multiprocess as mp


def test_filter_noise_drops_gloo_lines_only():
    text = (
        "[Gloo] Rank 3 is connected to 7 peer ranks. Expected number of connected peer ranks is : 7\n"
        "Traceback (most recent call last):\nValueError: boom\n"
        # two threads printing at once
        "[Gloo] Rank [Gloo] Rank 5 is connected to 7 peer ranks. Expected number of connected peer ranks is : 7\n"
        "4 is connected to 7 peer ranks. Expected number of connected peer ranks is : 7\n"
        "a rank 4 result\n"
    )
    assert mp.filter_noise(text) == "Traceback (most recent call last):\nValueError: boom\na rank 4 result"
