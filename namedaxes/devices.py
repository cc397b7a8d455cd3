"""Give every notebook the same 8 devices, wherever it runs.

`setup_devices()` is the first thing each notebook calls. It must run before
JAX initialises its backends: the number of simulated CPU devices is fixed at
that moment and cannot be changed afterwards without restarting the kernel.
"""

from __future__ import annotations

import glob
import os
import sys

from .axes import N_DEVICES
from .i18n import Messages

__all__ = ["setup_devices", "count_accelerators", "DeviceSetupError", "TEXT"]

# What the set-up cell prints and raises, in the notebook's language (locale/zh/namedaxes.po).
TEXT = Messages(
    {
        "banner": "namedaxes: {n} devices ({platform}, {how}): {ids}",
        "how_initialised": "already initialised",
        "how_accelerators": "{count} {kind}s found",
        "how_simulated": "simulated on the CPU",
        "how_too_few": "{count} {kind}(s) found, fewer than {n}; simulated on the CPU",
        "id_sep": ", ",
        "too_few_devices": (
            "JAX is already running with {count} device(s) ({platform}), and the number of simulated "
            "devices can only be set before JAX starts. Restart the kernel (Kernel > Restart Kernel) "
            "and run this cell first, before any other JAX code."
        ),
    }
)


class DeviceSetupError(RuntimeError):
    """JAX was initialised with too few devices before `setup_devices()` ran."""


def count_accelerators() -> tuple[str | None, int]:
    """Count GPUs/TPUs *without* initialising JAX (it must stay uninitialised).

    Looks at device files: NVIDIA GPUs as /dev/nvidia0.., TPUs as /dev/accel*
    or /dev/vfio/<n>. `CUDA_VISIBLE_DEVICES` narrows the GPU count.
    """
    gpus = sorted(glob.glob("/dev/nvidia[0-9]*"))
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if gpus and visible is not None:
        gpus = [g for g in visible.split(",") if g.strip() not in ("", "-1")]
    if gpus:
        return "gpu", len(gpus)
    tpus = glob.glob("/dev/accel*") or [p for p in glob.glob("/dev/vfio/*") if p[-1].isdigit()]
    if tpus:
        return "tpu", len(tpus)
    return None, 0


def _backends_initialised() -> bool:
    if "jax" not in sys.modules:
        return False
    try:
        from jax._src import xla_bridge

        return bool(xla_bridge.backends_are_initialized())
    except (ImportError, AttributeError):  # a future JAX moved it: assume initialised, then verify
        return True


def _append_xla_flag(flag: str) -> None:
    """Append to XLA_FLAGS without clobbering what the user set."""
    name = flag.split("=")[0]
    flags = [f for f in os.environ.get("XLA_FLAGS", "").split() if not f.startswith(name + "=")]
    os.environ["XLA_FLAGS"] = " ".join(flags + [flag])


def setup_devices(n: int = N_DEVICES, *, quiet: bool = False):
    """Make `n` devices available to JAX and return them.

    - With at least `n` GPUs/TPUs, those are used as they are.
    - Otherwise JAX is pinned to the CPU and splits it into `n` simulated
      devices (`jax_num_cpu_devices`), which is what the course is written for.
    - If JAX was already initialised (some JAX code ran before this call), the
      device count can no longer change: with fewer than `n` devices this
      raises `DeviceSetupError` asking you to restart the kernel.
    """
    from . import i18n

    i18n.detect_again()  # the cell running this is in the input history now: its language counts (i18n, rule 4)
    platform, n_acc = count_accelerators()
    if _backends_initialised():
        import jax

        devices = jax.devices()
        if len(devices) < n:
            raise DeviceSetupError(TEXT["too_few_devices"].format(count=len(devices), platform=devices[0].platform))
        how = TEXT["how_initialised"]
    else:
        import jax

        if n_acc >= n:
            how = TEXT["how_accelerators"].format(count=n_acc, kind=platform.upper())
        else:
            _append_xla_flag(f"--xla_force_host_platform_device_count={n}")
            jax.config.update("jax_platforms", "cpu")
            jax.config.update("jax_num_cpu_devices", n)
            how = (
                TEXT["how_too_few"].format(count=n_acc, kind=platform.upper(), n=n) if n_acc else TEXT["how_simulated"]
            )
        devices = jax.devices()
    if not quiet:
        print(
            TEXT["banner"].format(
                n=len(devices),
                platform=devices[0].platform,
                how=how,
                ids=TEXT["id_sep"].join(str(d.id) for d in devices),
            )
        )
    return devices
