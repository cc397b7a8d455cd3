"""The parent side: `Cluster` starts the workers, sends them jobs and supervises them.

Supervision: a job that raises, a worker that dies and a job that runs past its timeout all raise
`WorkerError` (`WorkerTimeout`) with the failing worker's stderr tail. A timeout, a dead worker or an
interrupted wait kill every worker's whole process group (SIGKILL: JAX catches SIGTERM) and reap the
workers; clusters still running when Python exits are killed too.
"""

from __future__ import annotations

import atexit
import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable

from courseinfo.validate_limit import busy_factor

from .errors import WorkerError, WorkerTimeout
from .output import filter_noise, main_thread_stack
from .payload import pack
from .processes import free_port
from .shipping import ship
from .text import TEXT

__all__ = ["Cluster", "DEFAULT_TIMEOUT", "DEFAULT_START_TIMEOUT"]

DEFAULT_TIMEOUT = 20.0  # per job on a quiet machine, times its busy factor (courseinfo.validate_limit.busy_factor)
DEFAULT_START_TIMEOUT = 25.0  # start-up: Python + jax import + distributed init
STDERR_TAIL_LINES = 15
_POLL_S = 0.005


def _headline(result: dict) -> str:
    return f"{result['type']}: {result['message']}" if result["message"] else result["type"]


def _processes(indices: list[int]) -> str:
    return (
        TEXT["process_one"].format(i=indices[0])
        if len(indices) == 1
        else TEXT["process_many"].format(ids=TEXT["id_sep"].join(str(i) for i in indices))
    )


_WORKER_CODE = """\
from namedaxes.multiprocess.worker import gloo_listens_on, serve, watch_parent
watch_parent()
import jax
jax.config.update("jax_platforms", "cpu")
jax.config.update("jax_num_cpu_devices", {local_devices})
jax.config.update("jax_cpu_collectives_implementation", "gloo")
gloo_listens_on("{host}")
jax.distributed.initialize(coordinator_address="{coordinator}", num_processes={num_processes},
                           process_id={process_id}, initialization_timeout={init_timeout})
serve({job_dir!r}, process_id={process_id})
"""

_LIVE: set = set()  # clusters with workers that may still run: killed at exit, even if forgotten


def _without_compilation_cache(env: dict) -> None:
    """The workers compile every program themselves: JAX's persistent compilation cache stays off in them,
    whatever cache this process's environment names (a test run's shared one, a student's own:
    tools/compile_cache.py). On jax 0.12.1 (not 0.10.2) a program with a collective across the processes (a
    `lax.psum` in `jax.shard_map`) that process 0 loads from the cache never finishes: only process 0 writes
    entries and process 1's cache key differs, so process 0 runs the loaded executable, process 1 the one it
    compiled, and both wait in the all-reduce forever (issue 59: notebook 06's second answer compiling to the same
    program; tests/namedaxes/multiprocess/test_compilation_cache.py). No upstream report found; related:
    openxla/xla#18286 (executables loaded from the cache on processes other than 0)."""
    env["JAX_ENABLE_COMPILATION_CACHE"] = "false"
    env.pop("JAX_COMPILATION_CACHE_DIR", None)


class Cluster:
    """`num_processes` JAX processes on this machine, `local_devices` CPU devices each. Use as a context manager
    (`with Cluster() as cluster: ...`) or call `start()` and `close()`; `close()` also runs when Python exits."""

    def __init__(
        self,
        num_processes: int = 2,
        local_devices: int = 4,
        *,
        timeout: float | None = None,
        start_timeout: float = DEFAULT_START_TIMEOUT,
        host: str = "127.0.0.1",
        echo: bool = True,
    ):
        if num_processes < 1 or local_devices < 1:
            raise ValueError("num_processes and local_devices must be at least 1")
        self.num_processes = num_processes
        self.local_devices = local_devices
        self.timeout = timeout
        self.start_timeout = start_timeout
        self.host = host
        self.echo = echo
        self.port: int | None = None
        self.job_dir: str | None = None
        self.start_seconds: float | None = None
        self._procs: list[subprocess.Popen] = []
        self._out_offsets: list[int] = []
        self._err_offsets: list[int] = []
        self._jobs = 0
        self._logs: list = []

    # -- life cycle
    @property
    def coordinator(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self._procs]

    @property
    def alive(self) -> bool:
        return bool(self._procs) and all(p.poll() is None for p in self._procs)

    def worker_code(self, process_id: int) -> str:
        """The exact program worker `process_id` runs (`python -c <this>`)."""
        return _WORKER_CODE.format(
            local_devices=self.local_devices,
            coordinator=self.coordinator,
            host=self.host,
            num_processes=self.num_processes,
            process_id=process_id,
            init_timeout=max(1, int(self.start_timeout)),
            job_dir=self.job_dir,
        )

    def _environment(self) -> dict:
        env = dict(os.environ)
        flags = [
            f for f in env.get("XLA_FLAGS", "").split() if not f.startswith("--xla_force_host_platform_device_count=")
        ]
        env["XLA_FLAGS"] = " ".join(flags)
        env["JAX_PLATFORMS"] = "cpu"
        _without_compilation_cache(env)
        env["PYTHONUNBUFFERED"] = "1"
        # The workers import what this process can: this package and the user's folders
        # on sys.path (the notebook's folder, a test folder), not the interpreter's own.
        package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        prefixes = tuple(os.path.realpath(p) + os.sep for p in {sys.prefix, sys.base_prefix, sys.exec_prefix})
        paths = [package_root] + [os.path.abspath(p or os.curdir) for p in sys.path]
        paths = [p for p in paths if os.path.isdir(p) and not (os.path.realpath(p) + os.sep).startswith(prefixes)]
        paths += [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
        env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
        return env

    def start(self) -> Cluster:
        """Start the workers and wait until all of them joined (`jax.distributed.initialize`)."""
        if self._procs:
            raise RuntimeError("this cluster was already started; create a new Cluster")
        started = time.perf_counter()
        self.job_dir = tempfile.mkdtemp(prefix="namedaxes-cluster-")
        self.port = free_port(self.host)
        env = self._environment()
        try:
            for i in range(self.num_processes):
                # the process's output files, open while it runs: stop() closes self._logs
                out = open(os.path.join(self.job_dir, f"stdout-{i}.txt"), "wb")  # noqa: SIM115
                err = open(os.path.join(self.job_dir, f"stderr-{i}.txt"), "wb")  # noqa: SIM115
                self._logs += [out, err]
                self._procs.append(
                    subprocess.Popen(
                        [sys.executable, "-c", self.worker_code(i)],
                        stdin=subprocess.PIPE,
                        stdout=out,
                        stderr=err,
                        cwd=self.job_dir,
                        env=env,
                        start_new_session=True,
                    )
                )
                self._out_offsets.append(0)
                self._err_offsets.append(0)
            _LIVE.add(self)
            self._wait(
                [os.path.join(self.job_dir, f"ready-{i}") for i in range(self.num_processes)],
                self.start_timeout,
                TEXT["starting"],
            )
        except BaseException:
            self._kill()
            raise
        self.start_seconds = time.perf_counter() - started
        return self

    def close(self) -> None:
        """Stop every worker: close their stdin, give them a moment, then kill their process groups."""
        for p in self._procs:
            try:
                if p.stdin:
                    p.stdin.close()
            except OSError:
                pass
        deadline = time.monotonic() + 2.0
        for p in self._procs:
            try:
                p.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        self._kill()

    def _kill(self) -> None:
        """SIGKILL each worker's whole process group (JAX catches SIGTERM), reap, clean up."""
        self._kill_keep_logs()
        for p in self._procs:
            if p.stdin:
                try:
                    p.stdin.close()
                except OSError:
                    pass
        for fh in self._logs:
            fh.close()
        self._logs = []
        _LIVE.discard(self)
        if self.job_dir:
            shutil.rmtree(self.job_dir, ignore_errors=True)

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "running" if self.alive else ("stopped" if self._procs else "not started")
        return (
            f"<Cluster {self.num_processes} processes x {self.local_devices} devices, {state}"
            f"{', coordinator ' + self.coordinator if self.port else ''}>"
        )

    def __str__(self) -> str:
        """What `print(cluster)` shows a student: the repr's facts, in the notebook's language."""
        state = TEXT["state_running" if self.alive else "state_stopped" if self._procs else "state_not_started"]
        if self.port:
            return TEXT["cluster_coordinator"].format(
                n=self.num_processes, k=self.local_devices, state=state, address=self.coordinator
            )
        return TEXT["cluster"].format(n=self.num_processes, k=self.local_devices, state=state)

    # -- jobs
    def run(self, job: Callable, *args, timeout: float | None = None) -> list:
        """Run `job(*args)` in every process at once; return the results, one per process.

        `job` and any function among `args` are shipped (see `ship`); arrays
        arrive as NumPy arrays. If a job raises in every process, the cluster
        stays usable; if a worker dies, hangs or the wait is interrupted, all
        workers are killed. Either way a `WorkerError` says which process failed
        and shows its stderr.
        """
        if not self.alive:
            raise WorkerError(TEXT["not_running"])
        shipped = ship(job)
        payload = pickle.dumps((shipped, pack(list(args))))
        self._jobs += 1
        job_id = str(self._jobs)
        with open(os.path.join(self.job_dir, f"job-{job_id}.pkl"), "wb") as fh:
            fh.write(payload)
        paths = [os.path.join(self.job_dir, f"result-{job_id}-{i}.pkl") for i in range(self.num_processes)]
        what = TEXT["running"].format(name=shipped.name)
        self._err_offsets = [len(self._read(i, "stderr")) for i in range(self.num_processes)]
        try:
            for i, p in enumerate(self._procs):
                try:
                    p.stdin.write(f"{job_id}\n".encode())
                    p.stdin.flush()
                except OSError:
                    raise self._died(i, what) from None
            results = self._wait(paths, self._job_limit(timeout), what)
        except BaseException:
            self._echo()
            if not self.alive:
                self._kill()  # the workers are gone: remove their folder too
            raise
        self._echo()
        failed = [(i, r) for i, r in enumerate(results) if not r["ok"]]
        if failed:
            i, r = failed[0]
            said = (
                TEXT["raised_too"].format(
                    i=i,
                    n=self.num_processes,
                    error=_headline(r),
                    what=what,
                    others=_processes([j for j, _ in failed[1:]]),
                )
                if len(failed) > 1
                else TEXT["raised"].format(i=i, n=self.num_processes, error=_headline(r), what=what)
            )
            raise WorkerError(
                f"{said}\n\n{self._tail_text(i)}",
                process_index=i,
                stderr_tail=self._stderr_tail(i),
                remote_type=r["type"],
            )
        return [r["value"] for r in results]

    # -- supervision
    def _job_limit(self, timeout: float | None) -> float:
        """A job's seconds: the call's `timeout`, else the cluster's, else `DEFAULT_TIMEOUT` times how busy the
        machine is now (a fixed 20 s ran out under a loaded test suite while the processes still worked)."""
        if timeout is not None:
            return timeout
        return self.timeout if self.timeout is not None else DEFAULT_TIMEOUT * busy_factor()

    def _wait(self, paths: list[str], timeout: float, what: str) -> list:
        """Wait for one file per process; kill everything on death, timeout or interrupt."""
        deadline = time.monotonic() + timeout
        results: list = [None] * len(paths)
        first_failure: float | None = None
        try:
            while True:
                for i, path in enumerate(paths):
                    if results[i] is None and os.path.exists(path):
                        with open(path, "rb") as fh:
                            data = fh.read()
                        results[i] = pickle.loads(data) if path.endswith(".pkl") else data
                        if isinstance(results[i], dict) and not results[i]["ok"] and first_failure is None:
                            first_failure = time.monotonic()
                if all(r is not None for r in results):
                    return results
                for i, p in enumerate(self._procs):
                    if results[i] is None and p.poll() is not None:
                        raise self._died(i, what)
                now = time.monotonic()
                if first_failure is not None and now - first_failure > 2.0:
                    # a peer of a failed process waits forever in a collective: give up on them
                    i = next(j for j, r in enumerate(results) if r is not None and not r["ok"])
                    r = results[i]
                    self._kill_keep_logs()
                    raise WorkerError(
                        TEXT["raised_stuck"].format(i=i, n=self.num_processes, error=_headline(r), what=what)
                        + f"\n\n{self._tail_text(i)}",
                        process_index=i,
                        stderr_tail=self._stderr_tail(i),
                        remote_type=r["type"],
                    )
                if now > deadline:
                    slow = [i for i, r in enumerate(results) if r is None]
                    self._dump_stacks(slow)
                    tails = "\n\n".join(self._tail_text(i, where=True) for i in slow)
                    self._kill_keep_logs()
                    done = [i for i, r in enumerate(results) if r is not None]
                    said = TEXT["timed_out_some_done" if done else "timed_out"].format(
                        slow=_processes(slow),
                        n=self.num_processes,
                        what=what,
                        timeout=f"{timeout:g}",
                        done=_processes(done) if done else "",
                    )
                    raise WorkerTimeout(
                        f"{said}\n\n{tails}", process_index=slow[0], stderr_tail=self._stderr_tail(slow[0])
                    )
                time.sleep(_POLL_S)
        except BaseException:
            if self.alive:  # e.g. KeyboardInterrupt from the notebook
                self._kill_keep_logs()
            raise

    def _kill_keep_logs(self) -> None:
        """SIGKILL and reap every worker's process group; logs stay readable for the error message."""
        for p in self._procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        for p in self._procs:
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                pass

    def _died(self, i: int, what: str) -> WorkerError:
        code = self._procs[i].poll()
        if code is None:
            try:
                code = self._procs[i].wait(1)
            except subprocess.TimeoutExpired:
                code = "?"
        text = TEXT["died"].format(i=i, n=self.num_processes, code=code, what=what) + f"\n\n{self._tail_text(i)}"
        tail = self._stderr_tail(i)
        self._kill_keep_logs()
        return WorkerError(text, process_index=i, stderr_tail=tail)

    def _read(self, i: int, stream: str) -> str:
        try:
            with open(os.path.join(self.job_dir, f"{stream}-{i}.txt"), "rb") as fh:
                return fh.read().decode(errors="replace")
        except OSError:
            return ""

    def _dump_stacks(self, which: list[int], wait: float = 0.5) -> None:
        """Ask workers `which` to print their Python stacks on stderr (faulthandler), wait for it."""
        sizes = {i: len(self._read(i, "stderr")) for i in which}
        for i in which:
            try:
                os.kill(self._procs[i].pid, signal.SIGUSR1)
            except ProcessLookupError:
                sizes.pop(i)
        deadline = time.monotonic() + wait
        while sizes and time.monotonic() < deadline:
            sizes = {i: n for i, n in sizes.items() if len(self._read(i, "stderr")) == n}
            time.sleep(0.02)
        time.sleep(0.05)  # let the dump finish

    def _stderr_tail(self, i: int, lines: int = STDERR_TAIL_LINES, *, where: bool = False) -> str:
        """The end of what worker `i` wrote on stderr during the current job (or start-up)."""
        offsets = self._err_offsets
        text = filter_noise(self._read(i, "stderr")[offsets[i] if i < len(offsets) else 0 :])
        if where:
            text = main_thread_stack(text)
        return "\n".join(text.splitlines()[-lines:])

    def _tail_text(self, i: int, *, where: bool = False) -> str:
        tail = self._stderr_tail(i, where=where)
        body = textwrap.indent(tail, "  ") if tail else "  " + TEXT["stderr_nothing"]
        return TEXT["stderr_where" if where else "stderr_last"].format(i=i) + f"\n{body}"

    def _echo(self) -> None:
        """Print what the workers printed during the last job, one line per line, tagged."""
        for i in range(len(self._procs)):
            text = self._read(i, "stdout")
            new, self._out_offsets[i] = text[self._out_offsets[i] :], len(text)
            if self.echo:
                for line in filter_noise(new).splitlines():
                    print(TEXT["echo"].format(i=i, line=line))


@atexit.register
def _close_all() -> None:
    for cluster in list(_LIVE):
        cluster._kill()
