"""Unit tests of namedaxes/checking/stubs.py.

An unwritten stub stops a plain cell with one line, in the kernel and in a worker process.
"""

from __future__ import annotations

import pytest
from checking_helpers import run_cell

from namedaxes import checking
from namedaxes.checking import (
    TEXT,
)


def test_a_stub_stops_a_plain_cell_with_one_line():
    ns = run_cell("def train(p):\n    raise NotImplementedError()\n", number=7)
    with pytest.raises(NotImplementedError) as err:
        ns["train"](1.0)
    assert checking.stubs._stub_message(err.value) == TEXT["uses_unwritten"].format(name="train")
    with pytest.raises(NotImplementedError) as err:
        run_cell("raise NotImplementedError()\n", number=8)
    assert checking.stubs._stub_message(err.value) == TEXT["cell_not_written_yet"]
    with pytest.raises(NotImplementedError) as err:
        raise NotImplementedError("a library feature")  # a real NotImplementedError keeps its traceback
    assert checking.stubs._stub_message(err.value) is None


def test_a_stub_that_raised_in_a_worker_process_gets_the_same_line():
    class WorkerError(RuntimeError):  # the shape of multiprocess.WorkerError: text + remote_type
        remote_type = "NotImplementedError"

    text = (
        "process 0 of 2 raised NotImplementedError (so did process 1)\n(while running `run_on_devices`)\n\n"
        '  Traceback (most recent call last):\n    File "<shipped run_on_devices>", line 7, in run_on_devices\n'
        "      return jax.pmap(fn, axis_name=axis_name)(local_x)\n"
        '    File "<shipped global_sum>", line 3, in global_sum\n      raise NotImplementedError()\n'
        "  NotImplementedError"
    )
    assert checking.stubs._stub_message(WorkerError(text)) == TEXT["uses_unwritten"].format(name="global_sum")
    WorkerError.remote_type = "ValueError"
    assert checking.stubs._stub_message(WorkerError(text)) is None
