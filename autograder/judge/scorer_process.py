"""The clean scorer process: judges recorded programs where no student code ever ran.

Threat model. The student's kernel is the student's: anything it reports about
itself (values, flags, which functions it called) can be forged by code in that
kernel, and the in-kernel guard is only defense in depth. What a graded test
cell records is therefore treated as hostile *data*: serialized `jax.export`
programs (see `autograder/judge/programs.py`). This module runs them in a separate
Python process that

- was started by the grader, imports only jax, numpy, the grader's own
  modules and the course's (`namedaxes`: the judging readers, and the exercise module a reference names
  for its known mistakes, `mistakes.py`), and never executes a notebook cell (so nothing the student
  defined or patched exists in it);
- learns the secret seed of the hidden inputs from the grader over its pipe (the
  kernel never sees it, so no output can be precomputed);
- runs under resource limits (address space for data, no core files, no file
  writes, few open files), and is killed by the grader when one request takes
  longer than its timeout (an exported `while_loop` can run forever), or dies:
  that cell then scores 0 with the reason, and a fresh scorer takes the next
  request. It never stops the batch.

Protocol (stdin/stdout of the child, nothing else): frames of a 4-byte
big-endian length and a JSON object. Requests: `{"op": "secret", "hex": ...}`
once, then `{"op": "reference", ...}` (compile and check one reference
observation; an error here means the reference is unusable and grading that
assignment must stop) and `{"op": "judge", "grade_id", "reference": [npz, json],
"observed": [npz, json]}` with bytes as base64. Replies: `{"ok": true,
"verdict": Verdict.to_json()}` (data: kinds and fields, no words; the parent adds the words when
it publishes, in the student's language) or `{"ok": false, "error": "..."}`. The
parent parses replies as JSON only, into a typed `reasons.Verdict` (`Verdict.from_json`: a closed
set of kinds, bounded fields), so even a subverted scorer can do no more than return a wrong
verdict for the request it is answering.

One scorer per grading worker: reference programs are compiled once per scorer
and cached, and a student's program that equals the reference's (up to source
locations) is not compiled again.
"""

from __future__ import annotations

import base64
import json
import os
import select
import signal
import struct
import subprocess
import sys
import time

from ..limits import MAX_ERROR_CHARS, MAX_FRAME, MAX_REPLY, SCORER_MEMORY_MB, SCORER_TIMEOUT
from ..reasons import Verdict, phrase

__all__ = ["Scorer", "ScorerReferenceError", "DEFAULT_TIMEOUT", "DEFAULT_MEMORY_MB"]

DEFAULT_TIMEOUT = SCORER_TIMEOUT
DEFAULT_MEMORY_MB = SCORER_MEMORY_MB


class ScorerReferenceError(RuntimeError):
    """The reference programs of a test cell cannot be used: stop grading that assignment."""


# ---------------------------------------------------------------- framing
def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def _unb64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text.encode("ascii"), validate=True)


def _write_frame(fd: int, obj: dict) -> None:
    data = json.dumps(obj).encode()
    buf = struct.pack(">I", len(data)) + data
    while buf:
        n = os.write(fd, buf)
        buf = buf[n:]


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes | None:
    chunks, left = [], n
    while left:
        if deadline is not None:
            wait = deadline - time.monotonic()
            if wait <= 0:
                raise TimeoutError
            ready, _, _ = select.select([fd], [], [], wait)
            if not ready:
                raise TimeoutError
        chunk = os.read(fd, min(left, 2**20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _read_frame(fd: int, limit: int, deadline: float | None = None) -> dict | None:
    head = _read_exact(fd, 4, deadline)
    if head is None:
        return None
    (n,) = struct.unpack(">I", head)
    if n > limit:
        raise ValueError(f"frame of {n} bytes is over the limit")
    body = _read_exact(fd, n, deadline)
    if body is None:
        return None
    obj = json.loads(body.decode("utf-8"))
    if not isinstance(obj, dict):
        raise ValueError("frame is not a JSON object")
    return obj


# ---------------------------------------------------------------- the child
def _limit(memory_mb: int) -> None:
    import resource

    for what, value in (
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_FSIZE, 0),
        (resource.RLIMIT_NOFILE, 256),
        (resource.RLIMIT_DATA, memory_mb * 2**20),
    ):
        try:
            resource.setrlimit(what, (value, value))
        except (ValueError, OSError):
            pass


def _die_with_parent() -> None:
    """SIGKILL this process when the grader that started it dies (Linux), even mid-computation."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() == 1:
            os._exit(1)
    except (OSError, AttributeError):
        pass


def serve(memory_mb: int = DEFAULT_MEMORY_MB) -> int:
    """The child's main loop (stdin: requests, stdout: replies)."""
    out_fd = os.dup(1)
    os.dup2(2, 1)  # anything printed goes to stderr, never into the protocol
    in_fd = 0
    _die_with_parent()
    _limit(memory_mb)
    from namedaxes.devices import setup_devices

    setup_devices(quiet=True)  # the device set-up of the kernels that exported the programs
    from .programs import Judge

    judge = None
    while True:
        req = _read_frame(in_fd, MAX_FRAME)
        if req is None:
            return 0
        try:
            op = req.get("op")
            if op == "secret":
                judge = Judge(bytes.fromhex(req["hex"]))
                reply = {"ok": True}
            elif judge is None:
                reply = {"ok": False, "error": "no secret yet"}
            elif op == "reference":
                pair = (_unb64(req["reference"][0]), _unb64(req["reference"][1]))
                try:
                    judge.check_reference(pair)
                    reply = {"ok": True}
                except Exception as err:  # noqa: BLE001 - reported to the grader, which stops the assignment
                    reply = {"ok": False, "reference_error": f"{type(err).__name__}: {err}"}
            elif op == "judge":
                ref = (_unb64(req["reference"][0]), _unb64(req["reference"][1]))
                obs = (_unb64(req["observed"][0]), _unb64(req["observed"][1]))
                try:
                    verdict = judge.judge(str(req["grade_id"]), ref, obs)
                    reply = {"ok": True, "verdict": Verdict(verdict.passed, verdict.differences[:50]).to_json()}
                    reply["compile_stats"] = _compile_stats()  # timings only, never part of a verdict
                except Exception as err:  # noqa: BLE001 - the reference is unusable
                    reply = {"ok": False, "reference_error": f"{type(err).__name__}: {err}"}
            else:
                reply = {"ok": False, "error": f"unknown op {op!r}"}
        except Exception as err:  # noqa: BLE001 - a malformed request is the grader's bug: say so
            reply = {"ok": False, "error": f"{type(err).__name__}: {err}"}
        _write_frame(out_fd, reply)


def _compile_stats() -> dict:
    from .compiling import COMPILE_STATS

    return dict(COMPILE_STATS)


# ---------------------------------------------------------------- the parent's handle
class Scorer:
    """A scorer child process, started on first use and replaced after a timeout or crash."""

    def __init__(
        self,
        secret: bytes,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        memory_mb: int = DEFAULT_MEMORY_MB,
        env: dict | None = None,
        python: str = sys.executable,
    ):
        if not secret:
            raise ValueError("the scorer needs a non-empty secret")
        self.secret, self.timeout, self.memory_mb = secret, float(timeout), int(memory_mb)
        self.env, self.python = env, python
        self.proc: subprocess.Popen | None = None
        self._booting: float | None = None  # when the secret was sent, until its reply is read
        self.checked: set[bytes] = set()  # references checked by the current child
        self.compile_stats: dict = {}  # the current child's compiles (compiling.COMPILE_STATS)
        self.start_seconds = 0.0  # spent starting children
        self.restarts = 0
        self.log: list[str] = []

    # -- process management
    def _start(self) -> None:
        env = dict(os.environ if self.env is None else self.env)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        self.proc = subprocess.Popen(
            [self.python, "-m", "autograder.judge.scorer_process", "--memory-mb", str(self.memory_mb)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=root,
            start_new_session=True,
        )
        self.checked = set()
        self.compile_stats = {}
        # The secret goes now; its reply is read by the next request (`_call`), so the child imports
        # jax and sets up its devices while the worker starts the student's kernel, not before.
        self._booting = time.monotonic()
        try:
            _write_frame(self.proc.stdin.fileno(), {"op": "secret", "hex": self.secret.hex()})
        except OSError:
            pass  # it died at once: the reply read by the next request says so

    def _booted(self) -> None:
        """Read the reply to the secret (sent by `_start`) once, before the first request's."""
        if self._booting is None:
            return
        t0, self._booting = self._booting, None
        self._call({}, timeout=120.0, send=False)  # raises as any request does when the child died or hung
        self.start_seconds += time.monotonic() - t0  # its start-up (python, jax, devices), for timings

    def cpu_seconds(self) -> float:
        """CPU the current child has used so far (Linux /proc; 0 if unknown), for timings."""
        if self.proc is None:
            return 0.0
        try:
            with open(f"/proc/{self.proc.pid}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            return 0.0

    def close(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            proc.stdin.close()
        except OSError:
            pass
        try:
            proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self._kill(proc)

    @staticmethod
    def _kill(proc: subprocess.Popen) -> None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # its own session: the child and nothing else
        except OSError:
            pass
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        for f in (proc.stdin, proc.stdout):
            try:
                f.close()
            except OSError:
                pass

    def _call(self, req: dict, timeout: float, send: bool = True) -> dict:
        """One request; raises TimeoutError (child killed) or EOFError (child died).
        `send=False`: only read the reply to a request already sent (the secret, `_start`)."""
        if send:
            self._booted()
        proc = self.proc
        if proc is None:
            raise EOFError("the scorer is not running")
        try:
            if send:
                _write_frame(proc.stdin.fileno(), req)
            reply = _read_frame(proc.stdout.fileno(), MAX_REPLY, time.monotonic() + timeout)
        except TimeoutError:
            self._kill(proc)
            self.proc = None
            self.restarts += 1
            raise
        except (OSError, ValueError) as err:
            self._kill(proc)
            self.proc = None
            self.restarts += 1
            raise EOFError(str(err)) from None
        if reply is None:
            code = proc.poll()
            self._kill(proc)
            self.proc = None
            self.restarts += 1
            raise EOFError(_death(code))
        return reply

    # -- requests
    def _ensure(self, ref_pair) -> None:
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        self._booted()  # a child that does not start raises here, as before (not a reference error)
        key = (ref_pair[0] or b"") + b"\0" + (ref_pair[1] or b"")
        import hashlib

        digest = hashlib.sha256(key).digest()
        if digest in self.checked:
            return
        try:
            reply = self._call(
                {"op": "reference", "reference": [_b64(ref_pair[0]), _b64(ref_pair[1])]},
                timeout=max(self.timeout, 120.0),
            )
        except (TimeoutError, EOFError) as err:
            raise ScorerReferenceError(
                f"the scorer could not load the reference programs ({err or 'timeout'})"
            ) from err
        if not reply.get("ok"):
            raise ScorerReferenceError(reply.get("reference_error") or reply.get("error") or "unknown error")
        self.checked.add(digest)

    def start(self) -> None:
        """Start the child now, if it is not running. Call it from the thread that judges: the child dies
        with the thread that started it (`PR_SET_PDEATHSIG` follows the parent *thread*), so a child started
        from a short-lived thread would be killed the moment that thread ends."""
        if self.proc is None or self.proc.poll() is not None:
            self._start()

    def prepare(self, ref_pair) -> None:
        """Load (compile) one reference observation ahead of its first verdict, in a child already started
        (`start`). Safe from a helper thread: it never starts a child itself (see `start`), so when there
        is none it does nothing and the first verdict loads the reference instead."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self._ensure(ref_pair)

    def judge(self, grade_id: str, ref_pair, student_pair) -> Verdict:
        """The verdict for one test cell. Raises `ScorerReferenceError` when the reference is unusable."""
        self._ensure(ref_pair)
        req = {
            "op": "judge",
            "grade_id": grade_id,
            "reference": [_b64(ref_pair[0]), _b64(ref_pair[1])],
            "observed": [_b64(student_pair[0]), _b64(student_pair[1])],
        }
        try:
            reply = self._call(req, self.timeout)
        except TimeoutError:
            self.log.append(f"{grade_id}: scorer timed out after {self.timeout:g} s")
            return Verdict(False, (phrase("scorer_timeout", seconds=f"{self.timeout:g}"),), on_hidden_inputs=False)
        except EOFError as err:
            self.log.append(f"{grade_id}: scorer died: {err}")
            return Verdict(False, (phrase("scorer_died", error=str(err)),), on_hidden_inputs=False)
        if not reply.get("ok"):
            if reply.get("reference_error"):
                raise ScorerReferenceError(reply["reference_error"])
            error = str(reply.get("error", "unknown error"))[:MAX_ERROR_CHARS]
            return Verdict(False, (phrase("scorer_failed", error=error),), on_hidden_inputs=False)
        stats = reply.get("compile_stats")
        if isinstance(stats, dict):
            self.compile_stats = {
                str(k)[:40]: float(v) for k, v in list(stats.items())[:20] if isinstance(v, (int, float))
            }
        try:  # the edge: the child's reply becomes a typed verdict here, once
            return Verdict.from_json(reply.get("verdict"))
        except ValueError as err:
            self.log.append(f"{grade_id}: unreadable verdict from the scorer: {err}")
            return Verdict(False, (phrase("scorer_failed", error="unreadable verdict"),), on_hidden_inputs=False)

    def __enter__(self) -> Scorer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _death(code: int | None) -> str:
    if code is None:
        return "it closed its pipe"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m autograder.judge.scorer_process", description=__doc__.splitlines()[0])
    ap.add_argument("--memory-mb", type=int, default=DEFAULT_MEMORY_MB)
    args = ap.parse_args(argv)
    return serve(args.memory_mb)


if __name__ == "__main__":
    sys.exit(main())
