"""The grader's side of one kernel's sockets: a ZeroMQ client over IPC, capped, and watched for dropped connections.

Threat model: the kernel may send a flood of huge messages to exhaust the grader's memory. Every client socket is
made with `zmq.MAXMSGSIZE` (`MAX_MESSAGE_BYTES`) and a small receive high-water mark (`RCV_HWM` messages), so
libzmq refuses an oversized frame before Python ever buffers it, and drops the connection that sent it. A socket
monitor sees that disconnect (`KernelSockets.dropped`); what it means (an oversized message, or a kernel that died
and dropped its connections too) the kernel decides (kernel.py, with the known gap). Nothing read here decides
a score.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from queue import Empty

import zmq
from jupyter_client.blocking import BlockingKernelClient

from ..limits import MAX_MESSAGE_BYTES, RCV_HWM
from .cell_outputs import CellRun

__all__ = ["KernelSockets"]


def _zmq_context() -> zmq.Context:
    """A context whose sockets refuse oversized frames and queue few messages."""
    ctx = zmq.Context()
    ctx.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE_BYTES)
    ctx.setsockopt(zmq.RCVHWM, RCV_HWM)
    ctx.setsockopt(zmq.LINGER, 0)
    return ctx


class KernelSockets:
    """A client of the kernel whose connection file `info` names (its channels started, no heartbeat), the
    monitors of its IOPub and shell connections, and the requests the grader sends besides code."""

    def __init__(self, info: dict):
        self.context = _zmq_context()
        self.client: BlockingKernelClient | None = None
        self.monitors: list = []
        try:
            self.client = BlockingKernelClient(context=self.context)
            self.client.load_connection_info(info)
            self.client.start_channels(hb=False)
        except BaseException:
            self.close()
            raise
        for channel in (self.client.iopub_channel, self.client.shell_channel):
            try:
                self.monitors.append(channel.socket.get_monitor_socket(zmq.EVENT_DISCONNECTED))
            except zmq.ZMQError:
                pass

    def answered(self) -> bool:
        """Ask the kernel for its info once: True when it answers on the shell channel and IOPub is connected."""
        self.client.kernel_info()
        try:
            msg = self.client.shell_channel.get_msg(timeout=0.5)
        except Empty:
            msg = None
        if msg and msg.get("msg_type") == "kernel_info_reply":
            try:  # IOPub connected too?
                self.client.iopub_channel.get_msg(timeout=0.2)
            except Empty:
                pass
            else:
                return True
        return False

    def flush_iopub(self) -> None:
        """Drop what the kernel says on IOPub until it is quiet (its start-up chatter)."""
        while True:
            try:
                self.client.iopub_channel.get_msg(timeout=0.05)
            except Empty:
                break

    def interrupt(self) -> None:
        """Send an interrupt request on the control channel (best effort)."""
        try:
            self.client.control_channel.send(self.client.session.msg("interrupt_request", {}))
        except Exception:  # noqa: BLE001
            pass

    def dropped(self) -> bool:
        """True once libzmq dropped a connection to the kernel (an oversized message, or a kernel that died)."""
        for mon in self.monitors:
            try:
                if mon.poll(0):
                    return True
            except zmq.ZMQError:
                return True
        return False

    def drain_reply(self, msg_id: str, run: CellRun, alive: Callable[[], bool]) -> None:
        """Read the shell channel's reply to execution `msg_id` (two seconds at most, or until the kernel is not
        `alive`): an error it reports marks `run` failed where IOPub said nothing of one."""
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            try:
                msg = self.client.shell_channel.get_msg(timeout=0.5)
            except Empty:
                if not alive():
                    return
                continue
            except Exception:  # noqa: BLE001
                return
            if (msg.get("parent_header") or {}).get("msg_id") == msg_id:
                content = msg.get("content") or {}
                if content.get("status") == "error" and run.status == "ok":
                    run.status = "error"
                    run.ename = str(content.get("ename", ""))[:200]
                    run.evalue = str(content.get("evalue", ""))[:4000]
                return

    def close(self) -> None:
        """Close the monitors, stop the channels and destroy the context (each best effort)."""
        for mon in self.monitors:
            try:
                mon.close(linger=0)
            except Exception:  # noqa: BLE001
                pass
        self.monitors = []
        if self.client is not None:
            try:
                self.client.stop_channels()
            except Exception:  # noqa: BLE001
                pass
        try:
            self.context.destroy(linger=0)
        except Exception:  # noqa: BLE001
            pass
