"""The clean scorer: exported programs judged outside the kernel; references that fail closed; the guard.

Programs are recorded in a separate "kernel" process (a plain Python process that
imports the course and calls `record`), judged by `autograder.judge.scorer_process.Scorer` in
its own child process, as the grader does.
"""

from __future__ import annotations

import json
import os
import re
import sys
import textwrap
from pathlib import Path

import machine
import numpy as np
import pytest
from judge_helpers import said

from autograder.judge.scorer_process import Scorer, ScorerReferenceError
from namedaxes.judging import group_axes, hlo_collectives

REPO = Path(__file__).resolve().parents[3]

KERNEL = textwrap.dedent("""
    import jax, jax.numpy as jnp, numpy as np
    from namedaxes import setup_devices
    setup_devices(quiet=True)
    from jax import lax
    from namedaxes.grading import record
    from namedaxes.exercises import scaled_sum as q
    D = "devices"
    record("ref", q.scaled_sum.observe(lambda x: lax.psum(x * 2.0, D)))
    record("equivalent", q.scaled_sum.observe(lambda x: lax.psum(x, D) * 2.0))
    record("wrong", q.scaled_sum.observe(lambda x: x * 2.0 * 8))
    record("discarded_psum", q.scaled_sum.observe(lambda x: (lax.psum(x, D), x * 16.0)[1]))
    record("ref_structure", q.scaled_sum_uses_psum.observe(lambda x: lax.psum(x * 2.0, D)))
    record("axis_index_only", q.scaled_sum_uses_psum.observe(lambda x: jnp.sum(x) + 0 * lax.axis_index(D)))
    record("pmean", q.scaled_sum_uses_psum.observe(lambda x: lax.pmean(x, D) * lax.psum(1, D) * 2.0))
    def loops(x):
        return lax.while_loop(lambda c: c[0] < jnp.inf, lambda c: (c[0] + 1.0, c[1] * 1.0001),
                              (0.0, lax.psum(x * 2.0, D)))[1]
    record("loops", q.scaled_sum.observe(loops))
    # a forged program that calls into the host (what a callback lowers to), export checks disabled
    target = "xla_ffi_python_cpu_callback"
    forged = q.scaled_sum.observe(lambda x: lax.psum(x * 2.0, D))
    for key in [k for k in forged if k.startswith("program:")]:
        shape = (int(key.split("_k")[-1].split("_")[0]) if "_k" in key else 2,)
        fn = lambda x: jax.ffi.ffi_call(target, jax.ShapeDtypeStruct(x.shape, x.dtype))(x)
        exp = jax.export.export(jax.jit(fn), disabled_checks=[jax.export.DisabledSafetyCheck.custom_call(target)])(
            jax.ShapeDtypeStruct((2,), jnp.float32))
        forged[key] = np.frombuffer(exp.serialize(), np.uint8)
    record("host_callback", forged)
    garbage = dict(q.scaled_sum.observe(lambda x: lax.psum(x * 2.0, D)))
    for key in [k for k in garbage if k.startswith("program:")]:
        garbage[key] = np.frombuffer(b"\\x00\\x01not a flatbuffer" * 40, np.uint8)
    record("garbage", garbage)
""")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("observations")
    env = {**os.environ, "NAMEDAXES_OBSERVE_DIR": str(folder)}
    machine.run(
        [sys.executable, "-c", KERNEL],
        env=env,
        cwd=REPO,
        check=True,
        quiet_s=300,
        what="grading for the record",
        capture_output=True,
    )
    return {
        p.stem: ((folder / f"{p.stem}.npz").read_bytes(), (folder / f"{p.stem}.json").read_bytes())
        for p in folder.glob("*.json")
    }


LOOP_TIMEOUT = 4  # s: the never-ending program's scorer (the shared one allows 20 s)


@pytest.fixture(scope="module")
def scorer():
    with Scorer(b"test secret for the scorer", timeout=20) as s:
        yield s


def test_kernel_records_programs_not_results(recorded):
    npz, js = recorded["ref"]
    meta = json.loads(js)["programs"]
    assert meta["format"] == "namedaxes-exported-1" and len(meta["cases"]) == 7
    with np.load(__import__("io").BytesIO(npz)) as arrays:
        assert all(k.startswith("program:") and arrays[k].dtype == np.uint8 for k in arrays.files)


def test_scorer_accepts_equivalent_and_rejects_wrong(scorer, recorded):
    assert scorer.judge("scaled_sum_total", recorded["ref"], recorded["equivalent"]).passed
    wrong = said(scorer.judge("scaled_sum_total", recorded["ref"], recorded["wrong"]))
    assert not wrong.passed and "values differ" in wrong.reason()
    discarded = scorer.judge("scaled_sum_total", recorded["ref"], recorded["discarded_psum"])
    assert not discarded.passed


def test_structure_comes_from_the_optimized_hlo(scorer, recorded):
    ref = recorded["ref_structure"]
    assert scorer.judge("scaled_sum_uses_psum", ref, ref).passed
    assert scorer.judge("scaled_sum_uses_psum", ref, recorded["pmean"]).passed  # a pmean is a psum, divided
    # (times the device count here: a bare pmean, which does not grow with the device count, gets no psum point)
    fake = said(scorer.judge("scaled_sum_uses_psum", ref, recorded["axis_index_only"]))
    assert not fake.passed and "expected psum over 'devices'" in fake.reason(20)  # after the 6 cases' differences


def test_forged_and_unreadable_programs_score_zero(scorer, recorded):
    host = said(scorer.judge("scaled_sum_total", recorded["ref"], recorded["host_callback"]))
    assert not host.passed and "host callbacks are not allowed" in host.reason()
    garbage = said(scorer.judge("scaled_sum_total", recorded["ref"], recorded["garbage"]))
    assert not garbage.passed and "could not be read" in garbage.reason()
    not_npz = scorer.judge("scaled_sum_total", recorded["ref"], (b"PK\x03\x04junk", b"{}"))
    assert not not_npz.passed


def test_a_program_that_never_ends_gets_zero_and_the_scorer_is_replaced(recorded):
    """A scorer of its own with a short timeout: the loop burns a core until the scorer is killed."""
    with Scorer(b"test secret for the scorer", timeout=LOOP_TIMEOUT) as scorer:
        before = scorer.restarts
        verdict = said(scorer.judge("scaled_sum_total", recorded["ref"], recorded["loops"]))
        assert not verdict.passed and f"longer than {LOOP_TIMEOUT} s" in verdict.reason()
        assert scorer.restarts == before + 1
        scorer.timeout = 60.0  # the fresh scorer compiles the reference again: no race with a busy machine
        assert scorer.judge("scaled_sum_total", recorded["ref"], recorded["equivalent"]).passed


def test_an_unusable_reference_raises(scorer, recorded):
    with pytest.raises(ScorerReferenceError):
        scorer.judge(
            "scaled_sum_total", recorded["wrong"][:1] + (b'{"programs": {"format": "x"}}',), recorded["equivalent"]
        )


def test_hidden_inputs_depend_on_the_secret_and_no_reason_tells_them(recorded):
    """Another secret draws other inputs (other outputs); the same wrong answer gets the same words
    under both secrets, with no number in them: a reason never measures a hidden output."""
    from autograder.judge.compare import load_observations
    from autograder.judge.programs import Judge

    ref = load_observations(*recorded["ref"])
    first, second = (Judge(s).derive("scaled_sum_total", ref) for s in (b"first secret", b"second secret"))
    cases = [k for k in first if k not in ("axes", "communication")]
    assert cases and all(not np.allclose(first[k], second[k]) for k in cases)
    reasons = []
    for secret in (b"first secret", b"second secret"):
        with Scorer(secret, timeout=60) as s:
            reasons.append(said(s.judge("scaled_sum_total", recorded["ref"], recorded["wrong"])).reason(9))
    assert reasons[0] == reasons[1] and "values differ" in reasons[0]
    assert not re.search(r"\d\.\d|max abs|difference \d", reasons[0]), reasons[0]


def test_replica_groups_are_read_in_every_format():
    text = textwrap.dedent("""\
        %region_0 (a: f32[], b: f32[]) -> f32[] {
          ROOT %add.0 = f32[] add(%a, %b)
        }
        %region_1 (a: f32[], b: f32[]) -> f32[] {
          ROOT %maximum.0 = f32[] maximum(%a, %b)
        }
        ENTRY %main {
          %t = (f32[3]{0}, f32[]) all-reduce(%x, %y), channel_id=1, replica_groups={{0,1,2,3},{4,5,6,7}}, to_apply=%region_0
          %m = f32[3]{0} all-reduce-start(%x), replica_groups=[4,2]<=[2,4]T(1,0), to_apply=%region_1
          %d = f32[3]{0} all-reduce-done(%m)
          %p = f32[3]{0} collective-permute(%x), source_target_pairs={{0,1},{1,0}}
          %u = f32[3]{0} add(%all-reduce.1, %x)
        }""")  # noqa: E501 - HLO as XLA prints it
    found = hlo_collectives(text, 8)
    assert [(op, red) for op, red, _ in found] == [
        ("all-reduce", "add"),
        ("all-reduce", "maximum"),
        ("collective-permute", ""),
    ]
    names, shape = ("data_shards", "model_replicas"), (2, 4)
    assert group_axes(found[0][2], names, shape) == ("model_replicas",)
    assert group_axes(found[1][2], names, shape) == ("data_shards",)  # {0,4},{1,5},...: down the columns
    assert group_axes(found[2][2], names, shape) == ("model_replicas",)


# ---------------------------------------------------------------- references fail closed
@pytest.fixture()
def saved(tmp_path):
    from autograder.course.notebooks import SourceNotebook
    from autograder.run.references import save_references

    source = SourceNotebook.load("02_scaled_sum", REPO / "solutions" / "02_scaled_sum.ipynb")
    obs = {
        gid: (b"npz-bytes-" + gid.encode(), json.dumps({"axes": ["devices"], "gid": gid}).encode())
        for gid in source.test_ids()
    }
    folder = tmp_path / "cache" / "02_scaled_sum-abc"
    save_references(folder, source, obs)
    return folder, source


def _load(folder, source):
    from autograder.run.references import load_references

    return load_references(folder, source)


def test_references_load_with_their_hashes(saved, tmp_path):
    from autograder.run.references import ReferenceCacheError, save_references

    folder, source = saved
    info = json.loads((folder / "meta.json").read_text())
    assert set(info["files"]) == {f"{g}.npz" for g in source.test_ids()} | {f"{g}.json" for g in source.test_ids()}
    assert (folder.parent / ".secret").stat().st_mode & 0o077 == 0
    with pytest.raises(ReferenceCacheError, match="recorded nothing"):
        save_references(tmp_path / "cache" / "other", source, {source.test_ids()[0]: (None, None)})
    assert _load(tmp_path / "cache" / "never-run", source) is None


@pytest.mark.parametrize("damage", ["delete", "change", "empty", "meta", "mac", "extra", "secret", "link"])
def test_damaged_references_stop_grading(saved, damage):
    from autograder.run.references import ReferenceCacheError

    folder, source = saved
    gid = source.test_ids()[0]
    if damage == "delete":
        (folder / f"{gid}.json").unlink()
    elif damage == "change":
        (folder / f"{gid}.json").write_bytes(b'{"axes": []}')
    elif damage == "empty":
        (folder / f"{gid}.npz").write_bytes(b"")
    elif damage == "meta":
        (folder / "meta.json").unlink()
    elif damage == "mac":
        info = json.loads((folder / "meta.json").read_text())
        info["files"].pop(f"{gid}.npz")
        (folder / "meta.json").write_text(json.dumps(info))
    elif damage == "extra":
        (folder / "unexpected.npz").write_bytes(b"x")
        info = json.loads((folder / "meta.json").read_text())
        (folder / f"{gid}.npz").unlink()
        info["files"].pop(f"{gid}.npz")
        (folder / "meta.json").write_text(json.dumps(info))
    elif damage == "secret":
        (folder.parent / ".secret").write_text(os.urandom(32).hex())
    elif damage == "link":
        real = folder.with_name("real")
        folder.rename(real)
        folder.symlink_to(real)
    with pytest.raises(ReferenceCacheError, match="damaged|link"):
        _load(folder, source)


# ---------------------------------------------------------------- the guard (defense in depth)
def test_guard_restores_code_defaults_closures_and_stays_registered():
    from IPython.testing.globalipapp import start_ipython

    from autograder.run.namespace_guard import GUARD_CODE

    ip = start_ipython()
    ip.run_cell(
        "import namedaxes.exercises.scaled_sum as q\nfrom namedaxes.grading import rng\n"
        "def mine(x, k=2):\n    return x * k\n"
    )
    assert ip.run_cell(GUARD_CODE).success
    ip.run_cell(
        "def other(x, k=2):\n    return 42\n"
        "mine.__code__ = other.__code__\nmine.__defaults__ = (5,)\n"
        "q.totals._observe_scaled_sum.__code__ = other.__code__\n"
        "ip = get_ipython()\n"
        "for n in ('pre_run_cell', 'pre_execute'):\n"
        "    for cb in list(ip.events.callbacks[n]):\n        ip.events.unregister(n, cb)\n"
        "    ip.events.callbacks[n].clear()\n"
    )
    ip.run_cell("result = (mine(1), q.totals._observe_scaled_sum.__code__.co_name)")
    assert ip.user_ns["result"] == (2, "_observe_scaled_sum")


# ---------------------------------------------------------------- no oracle: a fresh secret every run
def test_a_constant_that_matched_a_previous_runs_hidden_output_scores_0_in_a_new_run(tmp_path):
    """Issue 16: three graded hand-ins once turned a hidden case into an accepted constant, because every
    run drew the same hidden inputs. Now each run has its own secret (never the cache key): the
    outputs of run 1's hidden inputs, hard-coded, match in run 1 and fail in run 2."""
    import jax.numpy as jnp
    from jax import lax

    from autograder.course.notebooks import SourceNotebook
    from autograder.judge.compare import load_observations, normalize
    from autograder.judge.programs import Judge
    from autograder.run.references import grading_secret, load_references, new_run_secret, save_references
    from namedaxes.exercises import scaled_sum as q

    D = "devices"
    reference = normalize(q.scaled_sum.observe(lambda x: lax.psum(x * 2.0, D)))
    source = SourceNotebook.load("02_scaled_sum", REPO / "solutions" / "02_scaled_sum.ipynb")
    pair = _recorded_pair(tmp_path, reference)
    others = {gid: (None, json.dumps({"axes": [D]}).encode()) for gid in source.test_ids()}
    folder = tmp_path / "cache" / "02_scaled_sum-run"
    save_references(folder, source, {**others, "scaled_sum_total": pair})
    run1 = load_references(folder, source, new_run_secret())
    run2 = load_references(folder, source, new_run_secret())
    key = grading_secret(folder.parent)
    assert len({run1.secret, run2.secret, key}) == 3  # the cache key seeds nothing
    assert load_references(folder, source).secret not in (run1.secret, run2.secret, key)

    seen = Judge(run1.secret).derive("scaled_sum_total", load_observations(*run1.pairs["scaled_sum_total"]))
    cases = reference["programs"]["cases"]
    constants = {}
    for case in cases:  # e.g. k4_shape3_float16: the case's devices, shape, dtype
        n, shape, dtype = case.split("_")
        constants[(int(n[1:]), shape, dtype)] = np.asarray(seen[case])[0]

    def hard_coded(x):
        n = lax.axis_size(D)
        shape = "shapescalar" if x.ndim == 0 else "shape" + "x".join(map(str, x.shape))
        value = jnp.asarray(constants[(n, shape, x.dtype.name)], x.dtype)
        return lax.psum(x, D) - lax.psum(x, D) + value  # uses psum; its values are the constant

    student = normalize(q.scaled_sum.observe(hard_coded))
    in_run1 = said(Judge(run1.secret).judge_observations("scaled_sum_total", reference, student))
    in_run2 = said(Judge(run2.secret).judge_observations("scaled_sum_total", reference, student))
    assert not any("values differ" in d for d in in_run1.differences), in_run1.differences
    assert not in_run2.passed
    for case in cases:  # every case fails in run 2: its values (or, judged first, its layout)
        assert any(
            d.startswith(f"{case}:") and ("values differ" in d or ": layout:" in d) for d in in_run2.differences
        ), (case, in_run2.differences)
    for d in in_run2.differences:  # it says which property failed, never a number on hidden inputs
        assert not re.search(r"\d\.\d|difference \d|max abs", d), d


def _recorded_pair(tmp_path, observations: dict) -> tuple[bytes, bytes]:
    """The bytes `namedaxes.grading.record` writes for `observations`."""
    from namedaxes import grading

    folder = tmp_path / "observe"
    folder.mkdir()
    old = os.environ.get(grading.OBSERVE_DIR_ENV)
    os.environ[grading.OBSERVE_DIR_ENV] = str(folder)
    try:
        grading.record("g", observations)
    finally:
        if old is None:
            os.environ.pop(grading.OBSERVE_DIR_ENV)
        else:
            os.environ[grading.OBSERVE_DIR_ENV] = old
    return (folder / "g.npz").read_bytes(), (folder / "g.json").read_bytes()


def test_a_reference_program_is_compiled_once_per_scorer_and_an_identical_answer_reuses_it(recorded):
    """Speed (issue 16): a right answer that records the reference's own program (what most students' answers
    compile to) is judged with the reference's compile; only a different program is compiled again."""
    with Scorer(b"a secret for counting compiles", timeout=60) as s:
        s.start()
        s.prepare(recorded["ref"])  # what the worker does while the kernel runs
        assert s.judge("scaled_sum_total", recorded["ref"], recorded["ref"]).passed
        cases = len(json.loads(recorded["ref"][1])["programs"]["cases"])
        assert s.compile_stats.get("reference") == cases and "student" not in s.compile_stats
        assert s.judge("scaled_sum_total", recorded["ref"], recorded["equivalent"]).passed
        assert s.compile_stats.get("reference") == cases and s.compile_stats.get("student", 0) >= 1
        assert s.start_seconds > 0 and s.cpu_seconds() > 0


def test_a_scorer_prepared_from_a_helper_thread_survives_the_thread(recorded):
    """The worker prepares the scorer in a helper thread while the kernel runs. The child is killed with the
    thread that started it (PR_SET_PDEATHSIG), so the helper must never start it: it was once started there,
    died when the thread ended, and every notebook's first graded cell scored 0 ("killed by SIGKILL")."""
    import threading

    with Scorer(b"a secret for a helper thread", timeout=60) as s:
        helper = threading.Thread(target=s.prepare, args=(recorded["ref"],))
        helper.start()
        helper.join()
        assert s.proc is None  # no child yet: the helper did not start one
        s.start()
        helper = threading.Thread(target=s.prepare, args=(recorded["ref"],))
        helper.start()
        helper.join()
        assert s.judge("scaled_sum_total", recorded["ref"], recorded["ref"]).passed
        assert s.restarts == 0 and s.compile_stats.get("reference")
