"""A worker's kernels: the warm one it keeps for the next task, or the zygote of its slot that forks them.

Where the sandbox allows (`Sandbox.fork_why()`), the warm thing is a zygote in the worker's own slot
(zygote.py): each task's kernel is forked from it after the slot is emptied; a zygote that fails is closed,
that kernel starts the plain way and a fresh zygote serves the next task. Elsewhere each kernel starts the
plain way in a fresh working copy, and the next task's is started while this one is scored and written.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from ..sandbox import workcopy

__all__ = ["KernelSupply"]


class KernelSupply:
    """One worker's supply of sandboxed kernels (`wid`, its `WorkerConfig`)."""

    def __init__(self, wid: int, cfg):
        self.wid = wid
        self.cfg = cfg
        self.n = 0
        self.warm = None
        self.zygote = None  # this worker's slot (run/zygote.py), started by prestart() where the sandbox allows
        self.no_slot = False  # its zygote failed: kernels start the plain way

    def kernel(self, workdir: Path | None = None, label: str = "k0"):
        from .kernel import Kernel

        if self.zygote is not None and (workdir is None or workdir == self.zygote.workdir):
            kernel = self._forked(workdir is None, label)
            if kernel is not None:
                return kernel
        if workdir is None:
            workdir = self._fresh_workdir()
        return Kernel(workdir, self.cfg.sandbox, label=label, log_dir=self.cfg.log_dir).start()

    def _forked(self, fresh: bool, label: str):
        """A kernel forked in this worker's slot (emptied first for a new task), or None when the zygote
        cannot fork any more (it is closed and later kernels start the plain way)."""
        from .kernel import Kernel, KernelStartError
        from .zygote import ZygoteError

        try:
            if fresh:
                self.zygote.reset(self.cfg.mpl_cache)
            return Kernel(
                self.zygote.workdir, self.cfg.sandbox, label=label, log_dir=self.cfg.log_dir, zygote=self.zygote
            ).start()
        except (ZygoteError, KernelStartError, OSError):
            self.zygote.close()
            self.zygote = None
            return None

    def _fresh_workdir(self) -> Path:
        self.n += 1
        workdir = self.cfg.work_root / f"w{self.wid}-{self.n}"
        workdir.mkdir(parents=True)
        if self.cfg.mpl_cache is not None:
            try:  # another run may be replacing the shared copy
                shutil.copytree(self.cfg.mpl_cache, workdir / ".matplotlib")
            except OSError:
                workcopy.remove(workdir / ".matplotlib")
        return workdir

    def prestart(self) -> None:
        """Pay a kernel's start-up before the next task: the slot's zygote where there is one, else a kernel."""
        if self.zygote is not None:
            return
        if self.cfg.zygote and not self.no_slot:
            from .zygote import Zygote, ZygoteError

            try:
                self.zygote = Zygote(self.cfg.sandbox, self.cfg.work_root / f"z{self.wid}", self.cfg.log_dir).start()
                return
            except ZygoteError:
                self.no_slot = True  # kernels start the plain way in this worker
        try:
            self.warm = self.kernel()
        except Exception:  # noqa: BLE001 - a failed prestart just means a cold start later
            self.warm = None

    def take_kernel(self, prestart: bool = True):
        """The warm kernel (or a fresh one); boots the next one meanwhile unless no task may follow.
        A slot holds one kernel at a time: its next kernel is forked when this one is released."""
        kernel, self.warm = self.warm, None
        if kernel is None:
            kernel = self.kernel()
        if prestart and self.zygote is None:
            self.prestart()
        return kernel

    def release(self, workdir: Path, prestart: bool = False) -> None:
        """Remove a working copy once its kernel is dead; a slot's is emptied (and kept mounted) instead,
        and with `prestart` the next task's kernel is forked there at once (it boots while this task is
        scored and written)."""
        if self.zygote is not None and workdir == self.zygote.workdir:
            if self.warm is None and prestart:
                self.warm = self._forked(True, "k0")
            else:
                try:
                    self.zygote.reset(self.cfg.mpl_cache)
                except Exception:  # noqa: BLE001 - the next fork resets it again, or the slot is closed
                    pass
            return
        workcopy.remove_with_scratch(workdir)

    def close(self) -> None:
        if self.warm is not None:
            self.warm.kill()
            if self.warm.zygote is None:  # a slot's kernel goes with its zygote's slot below
                workcopy.remove_with_scratch(self.warm.workdir)  # unmounts its quota tmpfs and scratch
            self.warm = None
        if self.zygote is not None:
            self.zygote.close()  # its sandbox, any kernel in it, and the slot's mounts
            self.zygote = None
