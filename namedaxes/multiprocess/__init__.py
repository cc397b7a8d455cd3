"""Run JAX on several processes of this machine, from a notebook, and supervise them.

    from namedaxes import multiprocess
    with multiprocess.Cluster(num_processes=2, local_devices=4) as cluster:
        views = cluster.run(process_view)        # one result per process

`Cluster` starts each worker as a subprocess of this Python (`sys.executable -c
<worker code>`), in its own session, so that it and anything it starts can be
killed as one process group. Every worker:

1. pins JAX to the CPU with `local_devices` simulated devices and gloo CPU
   collectives on the loopback address, right after `import jax`;
2. joins the others with `jax.distributed.initialize` (process 0 hosts the
   coordinator on a free port of 127.0.0.1);
3. serves jobs until its stdin closes: `cluster.run(job, *args)` runs
   `job(*args)` in every process and returns the results, one per process.

Functions travel as source text (`ship`): the same program runs in every
process, as it would on a real cluster. Data travels as NumPy arrays (pickled
into a temporary folder), results come back the same way, and each worker's
stdout/stderr go to files there (the gloo connection lines filtered out).

Supervision: a job that raises, a worker that dies and a job that runs past its
timeout all raise `WorkerError` (`WorkerTimeout`) with the failing worker's
stderr tail. A timeout, a dead worker or an interrupted wait kill every worker's
whole process group (SIGKILL: JAX catches SIGTERM) and reap the workers; a
worker whose parent disappears exits on its own.

One job per module: `cluster` (the parent side: start, run, supervise), `worker`
(what each process runs), `shipping` (functions as source text), `payload`
(arguments and results between processes), `errors`, `output` (what workers print,
made readable), `processes` (ports, live pids), `shared` (one cluster per kernel),
`text` (every sentence a student can read, translated).

This package imports no JAX at import time: the workers must configure JAX
before anything initialises it.
"""

from __future__ import annotations

from .cluster import Cluster
from .errors import ShipError, WorkerError, WorkerTimeout
from .output import filter_noise
from .processes import free_port, process_alive
from .shared import get_cluster
from .shipping import Shipped, ship
from .text import TEXT

__all__ = [
    "Cluster",
    "WorkerError",
    "WorkerTimeout",
    "ShipError",
    "Shipped",
    "ship",
    "free_port",
    "get_cluster",
    "filter_noise",
    "process_alive",
    "TEXT",
]
