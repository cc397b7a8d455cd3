"""The cluster's workers never use JAX's persistent compilation cache (issue 59).

On jax 0.12.1 a program with a collective across the processes that process 0 loads from a shared cache
never finishes: process 0 runs the loaded executable, process 1 (which writes no entries and whose cache
key differs) the one it compiled, and both wait in the all-reduce. A test run names a shared cache in its
environment (conftest.py) and a student's kernel its own (tools/compile_cache.py); the workers inherit
that environment, so `Cluster` turns the cache off in them. Here the same program is compiled twice in the
workers with a cache named in the environment: without that, the second job hangs on jax 0.12.1 (a
`WorkerTimeout` here, within `JOB_SECONDS`), and the workers' settings say the cache is on (every line).
"""

import os

import numpy as np
import pytest
from multiprocess_jobs import block_total, compilation_cache_settings

from namedaxes import DEVICES
from namedaxes import multiprocess as mp
from namedaxes.exercises.multi_process.running import global_job

JOB_SECONDS = 60  # a job takes well under a second; a hung one fails the test instead of hanging it


@pytest.fixture(scope="module")
def cluster_beside_a_cache(tmp_path_factory):
    """A cluster started from an environment that names a persistent compilation cache, every program kept."""
    folder = tmp_path_factory.mktemp("jax-cache")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("JAX_COMPILATION_CACHE_DIR", str(folder))
        env.setenv("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
        env.setenv("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")
        env.setenv("JAX_ENABLE_COMPILATION_CACHE", "true")
        with mp.Cluster(num_processes=2, local_devices=4) as cluster:
            yield cluster, folder


def test_the_workers_run_without_the_persistent_compilation_cache(cluster_beside_a_cache):
    cluster, folder = cluster_beside_a_cache
    assert cluster.run(compilation_cache_settings, timeout=JOB_SECONDS) == [(False, None)] * 2


def test_a_program_compiled_again_in_the_workers_finishes(cluster_beside_a_cache):
    cluster, folder = cluster_beside_a_cache
    rows = np.arange(16, dtype=np.float32).reshape(8, 2)
    for _ in range(2):  # global_job jits a new function each time: the second compiles the same program again
        results = cluster.run(global_job, block_total, [(DEVICES, [(True, rows)])], timeout=JOB_SECONDS)
        assert [float(total) for (total,) in results] == [rows.sum()] * 2
    assert os.listdir(folder) == []
