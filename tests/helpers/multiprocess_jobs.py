"""Test-only: the jobs the `namedaxes.multiprocess` tests run on a cluster, and their small helpers.

The cluster's workers import a job by its module's name (`namedaxes.multiprocess.shipping`: an
importable function travels by reference), so the jobs live in a module of their own on the test
path (tests/helpers), shared by tests/namedaxes/multiprocess/test_*.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import types

import jax
import numpy as np
from jax import lax
from jax.sharding import PartitionSpec as P

from namedaxes import DEVICES
from namedaxes import multiprocess as mp

SCALE = 3.0
TABLE = np.arange(3.0)


def process_view():
    return {
        "process_index": jax.process_index(),
        "process_count": jax.process_count(),
        "local_devices": [d.id for d in jax.local_devices()],
        "device_count": jax.device_count(),
        "pid": os.getpid(),
    }


def scaled_total(x):
    return lax.psum(x * SCALE, DEVICES)


def block_total(block, mesh):
    """Every device's rows summed over the cluster: a `lax.psum` across the processes in `jax.shard_map` (the
    collective of notebook 06's answers), for `namedaxes.exercises.multi_process.running.global_job`."""
    return jax.shard_map(lambda b: lax.psum(b.sum(), DEVICES), mesh=mesh, in_specs=P(DEVICES), out_specs=P())(block)


def compilation_cache_settings():
    """This process's JAX persistent compilation cache: (on at all, its folder)."""
    return jax.config.jax_enable_compilation_cache, jax.config.jax_compilation_cache_dir


def on_devices(fn, global_x):
    n, i = jax.local_device_count(), jax.process_index()
    return jax.pmap(fn, axis_name=DEVICES)(global_x[i * n : (i + 1) * n])


def fail_everywhere():
    print("about to fail", file=sys.stderr)
    raise ValueError("broken on purpose")


def fail_quietly():
    raise KeyError("nothing printed")


def fail_in_process_1_then_collective(global_x):
    if jax.process_index() == 1:
        raise RuntimeError("process 1 gives up")
    return on_devices(scaled_total, global_x)  # process 0 waits in the psum for process 1


def exit_in_process_1():
    if jax.process_index() == 1:
        print("process 1 is leaving", file=sys.stderr, flush=True)
        os._exit(7)
    return "fine"


def hang_with_a_child(pid_folder):
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    with open(os.path.join(pid_folder, f"child-{jax.process_index()}"), "w") as fh:
        fh.write(str(child.pid))
    print(f"process {jax.process_index()} hangs now", file=sys.stderr, flush=True)
    time.sleep(120)


def sleep_a_while(seconds):
    time.sleep(seconds)


def uses_table():
    return TABLE.sum()


def as_notebook_function(fn, **notebook_globals):
    """A copy of `fn` that looks defined in a notebook (module __main__): it must travel as source."""
    namespace = {**fn.__globals__, **notebook_globals} if notebook_globals else fn.__globals__
    copy = types.FunctionType(fn.__code__, namespace, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__module__ = "__main__"
    return copy


def gone(pid: int) -> bool:
    """Our own (reaped) children: os.kill(pid, 0) must say the process no longer exists."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def wait_gone(pids, seconds=5.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(mp.process_alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if mp.process_alive(p)]
