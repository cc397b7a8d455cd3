"""Attacks on the student sandbox, each with its exact outcome asserted.

A real kernel (launch.py through run/kernel.py): its start and kill use the cgroup and the quota working copy.

Each test starts a small sandboxed Python (the view, identity and limits a kernel gets, through
`Sandbox.wrap`) that tries one attack and prints what happened as JSON. Limits are scaled down (MiB,
not GiB) so each attack takes seconds. Skips are per mechanism and say why (no bubblewrap, not root,
no cgroup); on such a machine the protections report must say the same (test_protections.py).
"""

from __future__ import annotations

import dataclasses
import textwrap

from sandbox_helpers import FLOOD, SHM_FILE, MiB, finish, need, popen, workdir

from autograder.sandbox import mounts, workcopy


def test_kernel_start_and_kill_use_the_cgroup_and_quota(sandbox, tmp_path):
    need(sandbox, "memory", "quota")
    from autograder.run.kernel import Kernel

    sb = dataclasses.replace(sandbox, memory_bytes=512 * MiB, shm_bytes=2048 * MiB)
    w = tmp_path / "kernel-work"
    kernel = Kernel(w, sb, label="k0", log_dir=tmp_path).start()
    try:
        kernel.wait_ready(120)
        assert mounts.is_quota_mount(w)
        assert kernel.cgroup is not None and kernel.post_mortem() is None
        ok = kernel.execute("import os; print(os.getuid(), len(os.listdir('/proc/self/fd')))", 30)
        assert ok.status == "ok"
        dead = kernel.execute(textwrap.dedent(SHM_FILE), 60)
        assert dead.status == "died"
        hit = kernel.post_mortem()
        assert hit is not None and hit.status == "memory"
    finally:
        kernel.kill()
    dirs = [p for _, p in kernel.cgroup.groups.values()]
    assert not any(d.exists() for d in dirs)
    assert kernel.post_mortem().status == "memory"  # still known after the clean-up
    assert workcopy.remove_with_scratch(w) and not w.exists()


def test_a_kernel_gets_the_graders_jax_settings_but_never_its_compile_cache(monkeypatch, tmp_path):
    """JAX and XLA settings of the grader's environment reach the kernel; its compilation-cache settings do not
    (the grader sets a kernel's cache itself, read-only: a host folder named by the grader's environment is
    not in the kernel's view, and a lower threshold would have the kernel write every compile)."""
    from autograder.sandbox.launch import Sandbox

    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", str(tmp_path / "host-cache"))
    monkeypatch.setenv("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
    monkeypatch.setenv("JAX_ENABLE_COMPILATION_CACHE", "true")
    env = Sandbox().env(tmp_path, tmp_path / "observe")
    assert env["XLA_FLAGS"] == "--xla_force_host_platform_device_count=8" and env["JAX_PLATFORMS"] == "cpu"
    assert not [k for k in env if k.startswith(("JAX_COMPILATION_CACHE", "JAX_PERSISTENT_CACHE", "JAX_ENABLE_COMP"))]


def test_a_plain_kernels_tmp_and_shm_have_inode_caps_and_go_with_its_working_copy(sandbox, tmp_path):
    """Issue 33: where the grader is root, a kernel started the plain way (not forked in a slot) gets its
    /tmp and /dev/shm as tmpfs mounts beside its working copy, with the slot's caps: an inode flood stops
    with ENOSPC there, and removing the working copy detaches both."""
    need(sandbox, "quota")
    sb = dataclasses.replace(sandbox, tmp_files=300, shm_files=200)
    w = workdir(tmp_path, sb)
    code = FLOOD + "import json\nprint(json.dumps(flood(['/tmp', '/dev/shm'])))"
    proc, launch = popen(sb, w, sb.wrap(w, [sb.python, "-c", code], scratch=sb.scratch_for(w)))
    code, (tmp, shm), _, err = finish(proc, launch)
    assert code == 0, err
    assert tmp[1] == shm[1] == "ENOSPC", (tmp, shm)
    assert 250 < tmp[0] < 300 and 150 < shm[0] < 200, (tmp, shm)
    scratch = mounts.scratch_of(w)
    assert all(mounts.is_quota_mount(p) for p in scratch)
    assert workcopy.remove_with_scratch(w)
    assert not any(p.exists() for p in (w, *scratch))
