"""setup_devices(): 8 devices before JAX starts, a kind error after."""

import os
import subprocess
import sys
import textwrap

import jax

from namedaxes import N_DEVICES, setup_devices
from namedaxes.devices import _append_xla_flag, count_accelerators


def _run(code: str, **env) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAX_PLATFORMS")}
    full_env.update(env)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=full_env, timeout=120
    )


def test_in_this_process_there_are_eight_devices():
    # conftest already ran setup_devices(); a second call is fine and returns the same devices
    devices = setup_devices(quiet=True)
    assert len(devices) == N_DEVICES == jax.device_count()


def test_fresh_process_gets_eight_simulated_cpu_devices_and_says_so():
    res = _run("""
        from namedaxes import setup_devices
        devs = setup_devices()
        import jax
        print("COUNT", jax.device_count(), devs[0].platform)
    """)
    assert res.returncode == 0, res.stderr
    assert "COUNT 8 cpu" in res.stdout
    assert "namedaxes: 8 devices (cpu, simulated on the CPU)" in res.stdout


def test_already_initialised_jax_gets_a_restart_message():
    res = _run("""
        import jax
        jax.numpy.zeros(1)  # initialises the backend with 1 CPU device
        from namedaxes import setup_devices, DeviceSetupError
        try:
            setup_devices()
        except DeviceSetupError as err:
            print("ERROR", err)
    """)
    assert res.returncode == 0, res.stderr
    assert "ERROR JAX is already running with 1 device(s)" in res.stdout
    assert "Restart the kernel" in res.stdout


def test_already_initialised_with_enough_devices_is_accepted():
    res = _run("""
        import jax
        jax.config.update("jax_num_cpu_devices", 8)
        jax.numpy.zeros(1)
        from namedaxes import setup_devices
        print("COUNT", len(setup_devices()))
    """)
    assert res.returncode == 0, res.stderr
    assert "COUNT 8" in res.stdout and "already initialised" in res.stdout


def test_xla_flags_are_appended_not_clobbered(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_dump_to=/somewhere --xla_force_host_platform_device_count=2")
    _append_xla_flag("--xla_force_host_platform_device_count=8")
    assert os.environ["XLA_FLAGS"] == "--xla_dump_to=/somewhere --xla_force_host_platform_device_count=8"


def test_count_accelerators_reads_device_files_without_starting_jax(monkeypatch):
    import glob as globmod

    fake = {"/dev/nvidia[0-9]*": ["/dev/nvidia0", "/dev/nvidia1"]}
    monkeypatch.setattr(globmod, "glob", lambda pattern: fake.get(pattern, []))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert count_accelerators() == ("gpu", 2)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    assert count_accelerators() == ("gpu", 1)
    fake.clear()
    assert count_accelerators() == (None, 0)


def test_chips_found_are_named_and_not_used_unless_asked():
    """A one-chip TPU machine (Colab's): the course simulates 8 CPU devices, where its checks are proven, and
    says what it found and how to use it instead."""
    res = _run("""
        import namedaxes.devices as d
        d.count_accelerators = lambda: ("tpu", 1)
        d.probe_devices = lambda: (_ for _ in ()).throw(AssertionError("no probe without the opt-in"))
        devs = d.setup_devices()
        print("COUNT", len(devs), devs[0].platform)
    """)
    assert res.returncode == 0, res.stderr
    assert "COUNT 8 cpu" in res.stdout
    assert "1 TPU chip(s) found, not used: the course's checks are proven on simulated CPU devices" in res.stdout
    assert "NAMEDAXES_DEVICES=accelerators" in res.stdout


def test_the_opt_in_asks_jax_and_falls_back_when_it_sees_too_few():
    """A TPU v3-8 is 4 chips but 8 JAX devices: the device count is JAX's, not the chips'."""
    res = _run(
        """
        import namedaxes.devices as d
        d.count_accelerators = lambda: ("tpu", 4)
        d.probe_devices = lambda: ("tpu", 4)
        devs = d.setup_devices()
        print("COUNT", len(devs), devs[0].platform)
    """,
        NAMEDAXES_DEVICES="accelerators",
    )
    assert res.returncode == 0, res.stderr
    assert "COUNT 8 cpu" in res.stdout and "4 TPU(s) found, fewer than 8; simulated on the CPU" in res.stdout


def test_the_opt_in_uses_eight_devices_jax_reports_at_the_highest_precision():
    res = _run(
        """
        import namedaxes.devices as d
        d.count_accelerators = lambda: ("gpu", 8)
        d.probe_devices = lambda: ("gpu", 8)
        devs = d.setup_devices(accelerators=True)
        import jax
        print("COUNT", len(devs), jax.config.jax_default_matmul_precision)
    """,
        XLA_FLAGS="--xla_force_host_platform_device_count=8",  # the 8 "accelerators" this machine has
    )
    assert res.returncode == 0, res.stderr
    assert "COUNT 8 highest" in res.stdout and "8 GPUs found" in res.stdout


def test_the_probe_is_jaxs_own_answer_from_a_child_process():
    import namedaxes.devices as d

    assert d.probe_devices() == ("cpu", 1)  # the child gets no XLA_FLAGS: one CPU device, as JAX says
    assert jax.device_count() == N_DEVICES  # and this process's JAX is untouched
