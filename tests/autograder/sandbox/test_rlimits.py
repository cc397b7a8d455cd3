"""Attacks on the student sandbox, each with its exact outcome asserted.

Resource limits (rlimits.py) where a cgroup is missing.

Each test starts a small sandboxed Python (the view, identity and limits a kernel gets, through
`Sandbox.wrap`) that tries one attack and prints what happened as JSON. Limits are scaled down (MiB,
not GiB) so each attack takes seconds. Skips are per mechanism and say why (no bubblewrap, not root,
no cgroup); on such a machine the protections report must say the same (test_protections.py).
"""

from __future__ import annotations

import dataclasses

from sandbox_helpers import FORK_BOMB, need, run

from autograder.sandbox.cgroups import CgroupSupport


def test_without_a_pids_cgroup_rlimit_nproc_bounds_the_dedicated_uid(sandbox, copies):
    """The documented fallback: RLIMIT_NPROC works because the kernel's uid is not root (own uid here)."""
    need(sandbox, "dedicated")
    sb = dataclasses.replace(
        sandbox,
        cgroups=CgroupSupport(memory=sandbox.cgroups.memory if sandbox.cgroups else None),
        uid=64_321,
        gid=64_321,
        pids_max=64,
    )
    w = copies(sb=sb)
    code, res, verdict, err = run(sb, w, FORK_BOMB)
    assert code == 0, err
    assert res[0] == "EAGAIN" and 40 <= res[1] < 64, res
    assert verdict is None  # no pids cgroup: the fallback cannot tell afterwards
    report = {p.key: p for p in sb.protections()}
    assert not report["process_limit"].available and "RLIMIT_NPROC 64 for uid 64321" in report["process_limit"].detail
