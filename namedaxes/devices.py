"""Give every notebook the same 8 devices, wherever it runs.

`setup_devices()` is the first thing each notebook calls. It must run before
JAX initialises its backends: the number of simulated CPU devices is fixed at
that moment and cannot be changed afterwards without restarting the kernel.

The choice, deliberately: **8 simulated CPU devices, even where there are accelerators**, because that is
where every check of the course is proven (CI runs every notebook, check and grade there), and the grader
judges on the CPU backend too. A TPU's or GPU's programs differ (asynchronous collectives, gathers in
bfloat16, float32 products at a lower default precision), so a check proven on the CPU could reject a right
answer there. The set-up cell says so when it finds accelerators. The other path is an opt-in:
`NAMEDAXES_DEVICES=accelerators` in the environment (or `setup_devices(accelerators=True)`) uses the
accelerators when JAX reports at least 8 devices. JAX itself is asked how many, in a child process, so this
process's JAX is not started before the choice is made (a TPU v3-8 is 4 chips but 8 devices); matrix
products then run at JAX's 'highest' precision, so that float32 results agree with the checks' NumPy.
"""

from __future__ import annotations

import glob
import os
import subprocess
import sys

from .axes import N_DEVICES
from .i18n import Messages

__all__ = ["setup_devices", "count_accelerators", "probe_devices", "DeviceSetupError", "TEXT", "OPT_IN"]

OPT_IN = "NAMEDAXES_DEVICES"  # =accelerators: use 8 or more real devices instead of simulating them
PROBE = "import jax; print('NAMEDAXES_PROBE', jax.default_backend(), jax.device_count())"

# What the set-up cell prints and raises, in the notebook's language (locale/zh/namedaxes.po).
TEXT = Messages(
    {
        "banner": "namedaxes: {n} devices ({platform}, {how}): {ids}",
        "how_initialised": "already initialised",
        "how_accelerators": "{count} {kind}s found",
        "how_simulated": "simulated on the CPU",
        "how_too_few": "{count} {kind}(s) found, fewer than {n}; simulated on the CPU",
        "how_chips_kept": (
            "{count} {kind} chip(s) found, not used: the course's checks are proven on simulated CPU devices "
            "(NAMEDAXES_DEVICES=accelerators uses the chips when JAX sees {n} devices)"
        ),
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


def probe_devices(timeout: float = 180.0) -> tuple[str, int] | None:
    """(platform, device count) as JAX reports them, asked in a child process so that this process's JAX
    stays unstarted (its device count can then still be chosen); None when the child fails. A TPU admits one
    process at a time: the child has let go of it when this returns."""
    env = {k: v for k, v in os.environ.items() if k not in ("JAX_PLATFORMS", "XLA_FLAGS")}
    try:
        done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in done.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "NAMEDAXES_PROBE" and parts[2].isdigit():
            return parts[1], int(parts[2])
    return None


def _simulate(n: int) -> None:
    _append_xla_flag(f"--xla_force_host_platform_device_count={n}")
    import jax

    jax.config.update("jax_platforms", "cpu")
    jax.config.update("jax_num_cpu_devices", n)


def _choose(n: int, accelerators: bool) -> str:
    """Fix JAX's devices before it starts (see the module's docstring); what the banner says of the choice."""
    kind, chips = count_accelerators()
    if chips and accelerators:
        found = probe_devices()
        if found and found[1] >= n:
            import jax

            jax.config.update("jax_default_matmul_precision", "highest")
            return TEXT["how_accelerators"].format(count=found[1], kind=found[0].upper())
        count = found[1] if found else chips
        _simulate(n)
        return TEXT["how_too_few"].format(count=count, kind=kind.upper(), n=n)
    _simulate(n)
    if chips:
        return TEXT["how_chips_kept"].format(count=chips, kind=kind.upper(), n=n)
    return TEXT["how_simulated"]


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


def setup_devices(n: int = N_DEVICES, *, quiet: bool = False, accelerators: bool | None = None):
    """Make `n` devices available to JAX and return them.

    - By default, `n` simulated CPU devices (`jax_num_cpu_devices`), also where there are GPUs or TPUs:
      the course's checks are proven there (the module's docstring says why); the banner says what was
      found and not used.
    - With `accelerators=True` (or `NAMEDAXES_DEVICES=accelerators`): the GPUs or TPUs, when JAX reports
      at least `n` devices (asked in a child process); otherwise simulated CPU devices, and the banner says why.
    - If JAX was already initialised (some JAX code ran before this call), the
      device count can no longer change: with fewer than `n` devices this
      raises `DeviceSetupError` asking you to restart the kernel.
    """
    from . import i18n

    i18n.detect_again()  # the cell running this is in the input history now: its language counts (i18n, rule 4)
    if accelerators is None:
        accelerators = os.environ.get(OPT_IN, "").strip().lower() == "accelerators"
    import jax

    from .jax_line import pin_flags

    pin_flags()  # the random draws and programs the course records, whatever this line's flags say (jax_line.py)

    if _backends_initialised():
        devices = jax.devices()
        if len(devices) < n:
            raise DeviceSetupError(TEXT["too_few_devices"].format(count=len(devices), platform=devices[0].platform))
        how = TEXT["how_initialised"]
    else:
        how = _choose(n, accelerators)
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
