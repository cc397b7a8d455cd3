"""The sandbox the attack tests share (one per test session: building it probes the machine), and the
working copies a test makes, removed (mounts included) after it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from sandbox_helpers import REPO, MiB, workdir

from autograder.sandbox import workcopy
from autograder.sandbox.build import KERNEL_PACKAGES
from autograder.sandbox.launch import Sandbox


@pytest.fixture(scope="session")
def sandbox(tmp_path_factory) -> Sandbox:
    base = tmp_path_factory.mktemp("sandbox-base")
    exposed = [sys.prefix, sys.base_prefix, *(str(REPO / name) for name in KERNEL_PACKAGES)]
    sb = Sandbox(
        python=sys.executable,
        exposed=exposed,
        memory_bytes=192 * MiB,
        pids_max=256,
        disk_bytes=16 * MiB,
        max_files=1000,
        tmp_bytes=16 * MiB,
        shm_bytes=16 * MiB,
        cpu_seconds=60,
    ).setup(base)
    if not sb.isolate:
        pytest.skip(f"no sandbox on this machine: {sb.why.get('allow_list_view')}")
    return sb


@pytest.fixture
def copies(tmp_path, sandbox):
    """Working copies made for a test, removed (mounts included) afterwards."""
    made: list[Path] = []

    def make(name: str = "w", sb: Sandbox | None = None) -> Path:
        w = workdir(tmp_path, sb or sandbox, name)
        made.append(w)
        return w

    yield make
    for w in made:
        assert workcopy.remove(w), f"could not remove {w}"
