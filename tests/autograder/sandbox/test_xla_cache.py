"""Attacks on the student sandbox, each with its exact outcome asserted.

The shared XLA cache (xla_cache.py): reusable by name, never listable; publishing keeps recent versions.

Each test starts a small sandboxed Python (the view, identity and limits a kernel gets, through
`Sandbox.wrap`) that tries one attack and prints what happened as JSON. Limits are scaled down (MiB,
not GiB) so each attack takes seconds. Skips are per mechanism and say why (no bubblewrap, not root,
no cgroup); on such a machine the protections report must say the same (test_protections.py).
"""

from __future__ import annotations

import dataclasses
import os

from sandbox_helpers import MiB, run

COMPILE = """
    import json, os
    {prelude}
    import jax, jax.numpy as jnp
    events = []
    jax.monitoring.register_event_listener(lambda name, **kw: events.append(name))
    jax.jit(lambda x: jnp.sin(x) * 2 + 1)(jnp.arange(8.0)).block_until_ready()
    folder = {folder!r}
    try:
        listing = len(os.listdir(folder))
    except OSError as e:
        listing = type(e).__name__
    print(json.dumps({{"hits": sum("cache_hits" in e for e in events),
                       "misses": sum("cache_misses" in e for e in events), "listing": listing}}))
    """


def test_xla_cache_is_reused_by_name_but_not_listable(sandbox, copies, tmp_path):
    """The reference kernel fills the cache in its own working copy, the grader copies it out and publishes
    it; a student kernel gets cache hits, cannot list or change it."""
    from autograder.sandbox.xla_cache import (
        REFERENCE_CACHE,
        keep_reference_cache,
        publish_xla_cache,
        reference_xla_prelude,
        xla_prelude,
    )

    root = tmp_path / "xla-cache"
    tmp, final = root / "02_scaled_sum-0123456789abcdef.tmp", root / "02_scaled_sum-0123456789abcdef"
    tmp.mkdir(parents=True)
    os.chmod(tmp, 0o300)
    sb = dataclasses.replace(sandbox, exposed=sandbox.exposed + [str(root)], memory_bytes=2048 * MiB)
    ref_work = copies("reference", sb)
    inside = str(ref_work / REFERENCE_CACHE)
    prelude = reference_xla_prelude(inside).replace("\n", "\n    ")
    code, ref_res, _, err = run(sb, ref_work, COMPILE.format(prelude=prelude, folder=inside), timeout=120)
    assert code == 0, err
    assert ref_res["hits"] == 0 and ref_res["misses"] >= 1, ref_res
    keep_reference_cache(ref_work, tmp)  # as the worker does, before the working copy is emptied
    publish_xla_cache(tmp, final)
    entries = [e for e in os.listdir(final) if e != ".complete"]
    assert entries, "the reference run wrote nothing into the cache"
    assert final.stat().st_mode & 0o777 == 0o111
    assert {(final / e).stat().st_mode & 0o777 for e in entries} == {0o444}
    student = copies("student", sb)
    prelude = xla_prelude(str(final)).replace("\n", "\n    ")
    code, res, _, err = run(sb, student, COMPILE.format(prelude=prelude, folder=str(final)), timeout=120)
    assert code == 0, err
    # every program the reference compiled is a hit; the student cannot list the folder
    assert res == {"hits": ref_res["misses"], "misses": 0, "listing": "PermissionError"}, (res, ref_res)
    assert sorted(os.listdir(final)) == sorted(entries + [".complete"])  # nothing added by the student


def test_publishing_keeps_other_recent_versions_of_the_cache(tmp_path):
    """Two runs grading different versions of one assignment at once must not delete each other's cache."""
    from autograder.sandbox.xla_cache import KEEP_VERSIONS, publish_xla_cache

    root = tmp_path / "xla-cache"
    names = [f"02_scaled_sum-{i:016x}" for i in range(KEEP_VERSIONS + 2)]
    for i, name in enumerate(names):
        tmp = root / (name + ".tmp")
        tmp.mkdir(parents=True)
        (tmp / "entry-cache").write_bytes(b"compiled")
        publish_xla_cache(tmp, root / name)
        os.utime(root / name, (1_000_000 + i, 1_000_000 + i))
    other = root / "03_nested_axes-0000000000000000"
    other.mkdir()
    tmp = root / "02_scaled_sum-ffffffffffffffff.tmp"
    tmp.mkdir()
    publish_xla_cache(tmp, root / "02_scaled_sum-ffffffffffffffff")
    left = sorted(p.name for p in root.iterdir())
    assert left == sorted(names[-(KEEP_VERSIONS - 1) :] + ["02_scaled_sum-ffffffffffffffff", other.name])


def test_publishing_a_version_that_is_already_there_keeps_it(tmp_path):
    """A second reference run of the same version (its references were recomputed, or a concurrent run)
    must not fail the batch: the published cache stays, the new copy is dropped."""
    from autograder.sandbox.xla_cache import publish_xla_cache

    final = tmp_path / "01_axis_names-0123456789abcdef"
    for content in (b"first", b"second"):
        tmp = tmp_path / (final.name + ".tmp")
        tmp.mkdir()
        (tmp / "k-cache").write_bytes(content)
        publish_xla_cache(tmp, final)
        assert not tmp.exists()
    assert (final / "k-cache").read_bytes() == b"first" and (final / ".complete").exists()


def test_caches_published_by_older_graders_get_the_new_modes(tmp_path):
    from autograder.sandbox.xla_cache import protect_published

    old = tmp_path / "01_axis_names-0123456789abcdef"
    old.mkdir()
    (old / ".complete").write_text("")
    (old / "k-cache").write_bytes(b"compiled")
    os.chmod(old / "k-cache", 0o400)
    os.chmod(old, 0o100)  # the owner-only scheme of the userns days
    half = tmp_path / "02_scaled_sum-0123456789abcdef"
    half.mkdir()  # no .complete: not to be used, not listable
    protect_published(tmp_path)
    assert old.stat().st_mode & 0o777 == 0o111 and (old / "k-cache").stat().st_mode & 0o777 == 0o444
    assert half.stat().st_mode & 0o777 == 0o100
