"""The two-process cluster the `namedaxes.multiprocess` tests share, one per test module."""

import pytest

from namedaxes import multiprocess as mp


@pytest.fixture(scope="module")
def cluster():
    with mp.Cluster(num_processes=2, local_devices=4) as c:
        yield c
