"""The worker side: what each process of a cluster runs (`Cluster.worker_code` starts it).

It exits as soon as its parent is gone, makes gloo use the loopback address, then serves one job per
line read from stdin until stdin closes, writing each result (or the failure) to a file.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import threading
import time

from .payload import to_host, unpack

__all__ = ["watch_parent", "gloo_listens_on", "serve"]


def watch_parent(interval: float = 0.5) -> None:
    """Exit this process as soon as its parent is gone (no orphaned workers)."""
    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(interval)
            if os.getppid() != parent:
                os._exit(3)

    threading.Thread(target=watch, name="namedaxes-watch-parent", daemon=True).start()


def gloo_listens_on(host: str) -> None:
    """Make gloo, JAX's CPU collectives, use the address `host` for this process.

    By default gloo looks up this machine's host name to find its own address.
    Where that name does not resolve (a sandbox without network, a renamed
    container), JAX cannot start its CPU backend; all workers here are on one
    machine, so the loopback address is the right one anyway. Call before JAX
    starts its backend. (This wraps a JAX-internal factory; on a JAX without it
    this does nothing.)
    """
    try:
        from jax._src.lib import _jax

        original = _jax.make_gloo_tcp_collectives
    except (ImportError, AttributeError):
        return
    original = getattr(original, "__wrapped__", original)

    def make_gloo_tcp_collectives(distributed_client, hostname=None, interface=None):
        return original(distributed_client=distributed_client, hostname=hostname or host, interface=interface)

    make_gloo_tcp_collectives.__wrapped__ = original
    _jax.make_gloo_tcp_collectives = make_gloo_tcp_collectives


def _write_atomic(path: str, data: bytes) -> None:
    tmp = path + ".part"
    with open(tmp, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


def serve(job_dir: str, process_id: int) -> None:
    """Worker loop: announce readiness, then run one job per line read from stdin.

    SIGUSR1 makes the worker print every thread's Python stack on stderr (the
    parent asks for it before killing a worker that ran out of time).
    """
    import faulthandler
    import traceback

    faulthandler.register(signal.SIGUSR1, all_threads=True)
    import jax

    jax.devices()  # start the backend now: failures are start-up failures
    _write_atomic(os.path.join(job_dir, f"ready-{process_id}"), str(os.getpid()).encode())
    cache: dict = {}
    for line in sys.stdin:
        job_id = line.strip()
        if not job_id:
            continue
        try:
            with open(os.path.join(job_dir, f"job-{job_id}.pkl"), "rb") as fh:
                job, args = pickle.load(fh)
            fn = unpack(job, cache)
            result = {"ok": True, "value": to_host(fn(*unpack(args, cache)))}
            data = pickle.dumps(result)
        except BaseException as err:  # noqa: BLE001 - every failure goes back to the parent
            tb = err.__traceback__.tb_next or err.__traceback__  # from the job's frame on
            traceback.print_exception(type(err), err, tb)
            data = pickle.dumps(
                {
                    "ok": False,
                    "type": type(err).__name__,
                    "message": str(err).strip().splitlines()[0] if str(err).strip() else "",
                }
            )
        sys.stdout.flush()
        sys.stderr.flush()
        _write_atomic(os.path.join(job_dir, f"result-{job_id}-{process_id}.pkl"), data)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # skip jax.distributed's shutdown barrier: the parent is closing every worker anyway
