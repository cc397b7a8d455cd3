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

This module imports no JAX at import time: the workers must configure JAX
before anything initialises it.
"""

from __future__ import annotations

import ast
import atexit
import dis
import importlib
import inspect
import os
import pickle
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from namedaxes.i18n import Messages

# What a student reads when shipping or a worker fails, in the notebook's language (locale/zh/namedaxes.po).
TEXT = Messages(
    {
        "ship_not_function": "only functions can be shipped to the workers, not {type}",
        "ship_not_def": (
            "`{name}` is a {type}, not a function defined with `def`: it cannot be sent to the workers as source text"
        ),
        "ship_lambda": "`{name}` is a lambda: define it with `def` so that its source can be sent to the workers",
        "ship_closure": "`{name}` uses {names} from an enclosing function: define it at the top level of a cell",
        "ship_no_source": "the source of `{name}` is not available ({error}); define it in a notebook cell with `def`",
        "ship_variable": (
            "`{name}` uses the notebook variable `{var}` (a {type}), which cannot be sent to the workers "
            "as source: pass it as an argument instead"
        ),
        "not_running": "the cluster is not running: start a new one (multiprocess.get_cluster() or Cluster().start())",
        "running": "running `{name}`",
        "starting": "starting",
        "raised": "process {i} of {n} raised {error}\n(while {what})",
        "raised_too": "process {i} of {n} raised {error} (so did {others})\n(while {what})",
        "raised_stuck": (
            "process {i} of {n} raised {error}\n(while {what}; the other processes were stuck waiting for "
            "it and were killed)"
        ),
        "timed_out": "{slow} of {n} did not finish {what} within {timeout} s. All {n} worker processes were killed.",
        "timed_out_some_done": (
            "{slow} of {n} did not finish {what} within {timeout} s; {done} did finish (a process "
            "waiting in a collective that the others skipped never returns). All {n} worker "
            "processes were killed."
        ),
        "died": "process {i} of {n} exited with code {code} while {what}; all worker processes were killed.",
        "process_one": "process {i}",
        "process_many": "processes {ids}",
        "id_sep": ", ",
        "stderr_last": "stderr of process {i}, last lines:",
        "stderr_where": "stderr of process {i}, where it was waiting (its Python stack, most recent call first):",
        "stderr_nothing": "(nothing)",
        "echo": "[process {i}] {line}",
        "cluster": "<Cluster: {n} processes x {k} devices, {state}>",
        "cluster_coordinator": "<Cluster: {n} processes x {k} devices, {state}, coordinator {address}>",
        "state_running": "running",
        "state_stopped": "stopped",
        "state_not_started": "not started",
    }
)

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
]

DEFAULT_TIMEOUT = 20.0  # per job; below the autograder's 30 s per cell
DEFAULT_START_TIMEOUT = 25.0  # start-up: Python + jax import + distributed init
STDERR_TAIL_LINES = 15
_POLL_S = 0.005

# Lines that say nothing when things go right: gloo's peer connections (printed
# at the first collective) and JAX's notice that it caught a signal.
# (gloo's lines come from several threads at once and can be interleaved mid-line)
_NOISE = re.compile(
    r"\[Gloo\] Rank|^\d+ is connected to \d+ peer ranks\. Expected number of connected"
    r"|preemption_notifier\.cc:\d+\] SIGTERM caught"
    r"|^-{20}$|^For simplicity, JAX has removed its internal frames"
)


def filter_noise(text: str) -> str:
    """`text` without gloo's connection lines, JAX's SIGTERM notices and its traceback footnote."""
    return "\n".join(line for line in text.splitlines() if not _NOISE.search(line))


class WorkerError(RuntimeError):
    """A worker process failed: its job raised, it died, or it did not answer in time."""

    def __init__(
        self, message: str, *, process_index: int | None = None, stderr_tail: str = "", remote_type: str | None = None
    ):
        super().__init__(message)
        self.process_index = process_index
        self.stderr_tail = stderr_tail
        self.remote_type = remote_type


class WorkerTimeout(WorkerError):
    """A worker did not finish in time; the whole cluster was killed."""


class ShipError(TypeError):
    """A function cannot be sent to the workers as source text."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on `host` that nothing listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def process_alive(pid: int) -> bool:
    """Whether process `pid` still exists (a zombie waiting to be reaped counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


# ---------------------------------------------------------------- shipping functions
@dataclass(frozen=True)
class Shipped:
    """A function on its way to the workers: a program text that defines it,
    or the module it can be imported from."""

    name: str
    source: str | None = None  # program text that defines `name` (imports, constants, defs)
    module: str | None = None  # ... or import `name` from this module

    def load(self, cache: dict | None = None) -> Callable:
        """The function, rebuilt in this process (the program text runs once per process)."""
        if self.module is not None:
            obj: Any = importlib.import_module(self.module)
            for part in self.name.split("."):
                obj = getattr(obj, part)
            return obj
        cache = {} if cache is None else cache
        if self.source not in cache:
            import linecache

            filename = f"<shipped {self.name}>"
            linecache.cache[filename] = (len(self.source), None, self.source.splitlines(True), filename)
            namespace: dict = {"__name__": "__shipped__"}
            exec(compile(self.source, filename, "exec"), namespace)  # the point of shipping
            cache[self.source] = namespace
        return cache[self.source][self.name]

    def __str__(self) -> str:
        return self.source if self.source is not None else f"from {self.module} import {self.name}"


def _importable_name(obj: Any) -> tuple[str, str] | None:
    """(module, qualname) from which `obj` can be imported again, or None."""
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if not module or not qualname or module == "__main__" or "<" in qualname:
        return None
    parts = module.split(".")
    for i in range(1, len(parts) + 1):  # prefer the shortest (public) module path
        candidate = ".".join(parts[:i])
        try:
            found: Any = importlib.import_module(candidate)
            for part in qualname.split("."):
                found = getattr(found, part)
        except (ImportError, AttributeError):
            continue
        if found is obj:
            return candidate, qualname
    return None


def _is_literal(value: Any) -> bool:
    """A value whose repr() rebuilds it: numbers, strings, and containers of them."""
    if type(value) in (type(None), bool, int, float, complex, str, bytes):
        return True
    if type(value) in (tuple, list, frozenset, set):
        return all(_is_literal(v) for v in value)
    if type(value) is dict:
        return all(_is_literal(k) and _is_literal(v) for k, v in value.items())
    return False


def _global_names(fn: types.FunctionType, tree: ast.AST | None) -> list[str]:
    """Global names `fn` reads: in its body (bytecode) and in its decorators/defaults (source)."""
    names: list[str] = []

    def add(name: str) -> None:
        if name not in names:
            names.append(name)

    if tree is not None:
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                header = [*node.decorator_list, node.args, *([node.returns] if node.returns else [])]
                for part in header:
                    for sub in ast.walk(part):
                        if isinstance(sub, ast.Name):
                            add(sub.id)
                break

    def walk(code: types.CodeType) -> None:
        for ins in dis.get_instructions(code):
            if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME", "STORE_GLOBAL", "DELETE_GLOBAL"):
                add(str(ins.argval))
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                walk(const)

    walk(fn.__code__)
    return names


def ship(fn: Callable) -> Shipped:
    """Package `fn` for the workers.

    A function importable from a module (not the notebook) travels as
    `from module import name`. A function defined in the notebook travels as
    source text: its own `def`, plus what it uses from the notebook — imports
    for modules, `from ... import` for library functions, assignments for plain
    constants (numbers, strings, tuples...), and the source of other notebook
    functions it calls. Anything else (arrays, objects) raises `ShipError`:
    pass data as arguments instead.
    """
    if isinstance(fn, Shipped):
        return fn
    if not callable(fn):
        raise ShipError(TEXT["ship_not_function"].format(type=type(fn).__name__))
    ref = _importable_name(fn)
    if ref is not None:
        return Shipped(name=ref[1], module=ref[0])
    header: dict[str, str] = {}
    defs: list[str] = []
    done: dict[int, str] = {}

    def visit(obj: Callable, shown_as: str) -> str:
        inner = inspect.unwrap(obj)
        if id(inner) in done:
            return done[id(inner)]
        if not isinstance(inner, types.FunctionType):
            raise ShipError(TEXT["ship_not_def"].format(name=shown_as, type=type(obj).__name__))
        if inner.__name__ == "<lambda>":
            raise ShipError(TEXT["ship_lambda"].format(name=shown_as))
        if inner.__code__.co_freevars:
            raise ShipError(
                TEXT["ship_closure"].format(
                    name=inner.__name__, names=TEXT["id_sep"].join(f"`{v}`" for v in inner.__code__.co_freevars)
                )
            )
        try:
            source = textwrap.dedent(inspect.getsource(inner))
        except (OSError, TypeError) as err:
            raise ShipError(TEXT["ship_no_source"].format(name=inner.__name__, error=err)) from err
        try:
            tree = ast.parse(source)
        except SyntaxError:
            tree = None
        done[id(inner)] = inner.__name__
        for name in _global_names(inner, tree):
            if name in header or name == inner.__name__ or name not in inner.__globals__:
                continue  # already there, recursion, or a builtin
            value = inner.__globals__[name]
            if inspect.ismodule(value):
                header[name] = (
                    f"import {value.__name__}" if value.__name__ == name else f"import {value.__name__} as {name}"
                )
            elif _is_literal(value):
                header[name] = f"{name} = {value!r}"
            elif (where := _importable_name(value)) is not None:
                module, qualname = where
                if "." in qualname:
                    header[name] = f"import {module}\n{name} = {module}.{qualname}"
                else:
                    header[name] = (
                        f"from {module} import {qualname}"
                        if qualname == name
                        else f"from {module} import {qualname} as {name}"
                    )
            elif callable(value):
                defined = visit(value, name)
                if defined != name:
                    defs.append(f"{name} = {defined}\n")
                header.setdefault(name, "")  # mark as handled
            else:
                raise ShipError(TEXT["ship_variable"].format(name=inner.__name__, var=name, type=type(value).__name__))
        defs.append(source)
        return inner.__name__

    name = visit(fn, getattr(fn, "__name__", "function"))
    lines = [line for line in header.values() if line]
    program = ("\n".join(lines) + "\n\n\n" if lines else "") + "\n\n".join(d.rstrip() + "\n" for d in defs)
    return Shipped(name=name, source=program)


def _pack(value: Any) -> Any:
    """Arguments for the workers: functions shipped, jax arrays as NumPy arrays."""
    if isinstance(value, Shipped):
        return value
    if isinstance(value, dict):
        return {k: _pack(v) for k, v in value.items()}
    if type(value) in (list, tuple):
        return type(value)(_pack(v) for v in value)
    if "jax" in sys.modules and isinstance(value, sys.modules["jax"].Array):
        import numpy as np

        return np.asarray(value)
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType)) or (
        callable(value) and hasattr(value, "__wrapped__")
    ):
        return ship(value)
    return value


def _unpack(value: Any, cache: dict) -> Any:
    if isinstance(value, Shipped):
        return value.load(cache)
    if isinstance(value, dict):
        return {k: _unpack(v, cache) for k, v in value.items()}
    if type(value) in (list, tuple):
        return type(value)(_unpack(v, cache) for v in value)
    return value


def _to_host(value: Any) -> Any:
    """A job's result as plain Python/NumPy values (blocks until computed)."""
    if isinstance(value, dict):
        return {k: _to_host(v) for k, v in value.items()}
    if type(value) in (list, tuple):
        return type(value)(_to_host(v) for v in value)
    jax = sys.modules.get("jax")
    if jax is not None and isinstance(value, jax.Array):
        import numpy as np

        if not value.is_fully_addressable:
            raise TypeError(
                "a job returned a jax.Array that spans several processes; return "
                "process-local values (e.g. the output of pmap) instead"
            )
        return np.asarray(value)
    return value


# ---------------------------------------------------------------- worker side
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
            fn = _unpack(job, cache)
            result = {"ok": True, "value": _to_host(fn(*_unpack(args, cache)))}
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


# ---------------------------------------------------------------- parent side
def _headline(result: dict) -> str:
    return f"{result['type']}: {result['message']}" if result["message"] else result["type"]


def _processes(indices: list[int]) -> str:
    return (
        TEXT["process_one"].format(i=indices[0])
        if len(indices) == 1
        else TEXT["process_many"].format(ids=TEXT["id_sep"].join(str(i) for i in indices))
    )


def _main_thread_stack(text: str) -> str:
    """From a faulthandler dump, keep the job's thread: drop the other threads' stacks."""
    blocks = re.split(r"\n(?=Thread 0x|Current thread 0x)", text)
    dumps = [b for b in blocks if b.startswith(("Thread 0x", "Current thread 0x"))]
    if not dumps:
        return text
    kept = [b for b in dumps if "in serve" in b] or dumps
    before = [b for b in blocks if b not in dumps]
    return "\n".join(before + [kept[-1]])


_WORKER_CODE = """\
from namedaxes.multiprocess import gloo_listens_on, serve, watch_parent
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


class Cluster:
    """`num_processes` JAX processes on this machine, `local_devices` CPU devices each.

    Use as a context manager (`with Cluster() as cluster: ...`) or call
    `start()` and `close()`; `close()` also runs when Python exits.
    """

    def __init__(
        self,
        num_processes: int = 2,
        local_devices: int = 4,
        *,
        timeout: float = DEFAULT_TIMEOUT,
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
        payload = pickle.dumps((shipped, _pack(list(args))))
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
            results = self._wait(paths, self.timeout if timeout is None else timeout, what)
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
            text = _main_thread_stack(text)
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


# ---------------------------------------------------------------- one shared cluster per kernel
# Kept in a dict that is mutated, never rebound: the autograder's guard restores this module's
# names to their values before each cell, which would forget a rebound global (and start a new
# cluster in every cell).
_SHARED: dict = {}


def get_cluster(num_processes: int = 2, local_devices: int = 4) -> Cluster:
    """The kernel's shared cluster: started on first use, reused while it runs.

    Exercises and notebook cells share it, so the processes start once per
    notebook. After a timeout killed it, the next call starts a fresh one.
    """
    shared = _SHARED.get("cluster")
    if (
        shared is None
        or not shared.alive
        or shared.num_processes != num_processes
        or shared.local_devices != local_devices
    ):
        if shared is not None:
            shared.close()
        _SHARED["cluster"] = shared = Cluster(num_processes, local_devices).start()
    return shared


@atexit.register
def _close_all() -> None:
    for cluster in list(_LIVE):
        cluster._kill()
