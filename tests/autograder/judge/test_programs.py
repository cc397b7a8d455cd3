"""The judge imposes the reference's layout and counts only communication that reaches the results.

Attack fixtures (issue 16): each asserts the exact verdict and the message a student reads. They are
judged by `autograder.judge.programs.Judge` in this process (what the clean scorer process runs), on the
programs the hidden test cells export.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from fsdp_model import loss_fn
from jax import lax
from jax.sharding import PartitionSpec as P
from judge_helpers import judge_observations

from autograder.judge.programs import layout_phrase
from autograder.publish.words import say
from namedaxes import DATA_PARALLEL, DATA_SHARDS, DEVICES, MODEL_REPLICAS, grading
from namedaxes.exercises import collectives as q07
from namedaxes.exercises import nested_axes as q03
from namedaxes.exercises import scaled_sum as q02
from namedaxes.exercises.scaled_sum import running as scaled_sum_running

D, M = DATA_SHARDS, MODEL_REPLICAS
SPLIT_0 = "split along dimension 0 over 'devices'"
WHOLE = "whole on every device (replicated)"


def scaled_sum_ref(x):
    return lax.psum(x * 2.0, DEVICES)


def _local_total(k):
    """The issue's forged recording: a shard_map over *replicated* inputs that computes the global total on
    every device, plus a collective whose result is multiplied by zero."""
    mesh = jax.make_mesh((k,), (DEVICES,))

    def body(x):
        return jnp.broadcast_to(2.0 * x.sum(axis=0), (1,) + x.shape[1:]) + 0.0 * lax.psum(x, DEVICES).sum()

    return jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P(), out_specs=P(DEVICES)))


def _forged(observation: dict, cases) -> dict:
    """`observation` with every program replaced by what `_local_total` exports on the same abstract inputs."""
    forged = dict(observation)
    for name, case in cases.items():
        blob = grading.EXPORT(_local_total(case.args[0].shape[0]))(*case.args).serialize()
        forged[grading.PROGRAM_PREFIX + name] = np.frombuffer(bytes(blob), np.uint8)
    return forged


def test_layouts_in_words():
    assert say(layout_phrase(()), "en") == WHOLE
    assert say(layout_phrase(((DEVICES,),)), "en") == SPLIT_0
    assert say(layout_phrase(((), (M, D))), "en") == "split along dimension 1 over 'model_replicas' x 'data_shards'"


def test_a_forged_recording_over_replicated_inputs_scores_zero():
    reference = q02.scaled_sum.observe(scaled_sum_ref)
    forged = _forged(reference, scaled_sum_running._program_cases(scaled_sum_ref))
    verdict = judge_observations(reference, forged)
    assert not verdict.passed
    assert len(verdict.differences) == 7
    assert verdict.differences[0] == (
        f"k2_shape3_float32: layout: the per-device program over 'devices' takes its input 1 {WHOLE}; the "
        f"exercise's takes it {SPLIT_0}"
    )


def test_rebinding_jax_export_from_an_added_cell_changes_nothing(monkeypatch):
    """An added cell rebinds `jax.export.export` to record a forged program: the hidden test still exports the
    answer itself (bound at import of the locked set-up cell), so a wrong answer stays wrong."""
    real = jax.export.export
    monkeypatch.setattr(jax.export, "export", lambda fn, **kw: real(_local_total(8), **kw))
    reference = q02.scaled_sum.observe(scaled_sum_ref)
    wrong = q02.scaled_sum.observe(lambda x: x * 16.0)
    verdict = judge_observations(reference, wrong)
    assert not verdict.passed and all("values differ" in d for d in verdict.differences[:7])
    assert verdict.differences[7:] == [
        "communication: expected communication over 'devices' (read from the "
        "compiled program), but it performs no communication at all"
    ]


def test_a_dead_psum_earns_no_psum_point():
    reference = q02.scaled_sum_uses_psum.observe(scaled_sum_ref)
    assert judge_observations(reference, q02.scaled_sum_uses_psum.observe(lambda x: lax.psum(x, DEVICES) * 2.0)).passed
    dead = q02.scaled_sum_uses_psum.observe(
        lambda x: jnp.sum(lax.all_gather(x, DEVICES), axis=0) * 2.0 + 0.0 * lax.psum(x, DEVICES)
    )
    verdict = judge_observations(reference, dead)
    assert not verdict.passed
    assert verdict.differences == [
        "communication: expected psum over 'devices' (read from the compiled program), but it performs "
        "all_gather over 'devices'"
    ]
    cancelled = q02.scaled_sum_uses_psum.observe(
        lambda x: jnp.sum(lax.all_gather(x, DEVICES), axis=0) * 2.0 + (lax.psum(x, DEVICES) - lax.psum(x, DEVICES))
    )
    assert judge_observations(reference, cancelled).differences == verdict.differences


# ---------------------------------------------------------------- 03: tp_dp_step with all of w on every device
def _tp(body, w_spec=P(M)):
    def tp_dp_step(w, batch, mesh):
        return jax.shard_map(body, mesh=mesh, in_specs=(w_spec, P(D, M), P(D)), out_specs=P(M))(
            w, batch["x"], batch["y"]
        )

    return tp_dp_step


def _grad(xb, pred, yb):
    return 2.0 * xb.T @ (pred - yb) / xb.shape[0]


def _tp_ref_body(wb, xb, yb):
    prediction = lax.psum(xb @ wb, M)
    return wb - q03.LEARNING_RATE * lax.pmean(_grad(xb, prediction, yb), D)


def _tp_whole_w_body(w_all, xb, yb):
    """Every device holds all of w and cuts its own part out: right values, the reference's psums."""
    k = xb.shape[1]
    return _tp_ref_body(lax.dynamic_slice_in_dim(w_all, lax.axis_index(M) * k, k), xb, yb)


def test_tp_dp_step_that_holds_all_of_w_on_every_device_scores_zero():
    reference = q03.tp_dp_step.observe(_tp(_tp_ref_body))
    whole = q03.tp_dp_step.observe(_tp(_tp_whole_w_body, w_spec=P()))
    verdict = judge_observations(reference, whole)
    assert not verdict.passed
    assert verdict.differences[0] == (
        f"2x2: layout: the per-device program over 'data_shards', 'model_replicas' takes its input 1 {WHOLE}; "
        "the exercise's takes it split along dimension 0 over 'model_replicas'"
    )
    assert len(verdict.differences) == 5  # 2x4, 4x2, 2x2, collectives and the work case (issue 34)
    assert any(d.startswith("work: layout: the per-device program over") for d in verdict.differences)


# ---------------------------------------------------------------- 07: a result replicated where it stays split
def _fsdp(step, out_specs=P(DATA_PARALLEL)):
    def answer(w, batch, mesh):
        k = mesh.shape[DATA_PARALLEL]
        return jax.shard_map(
            lambda ws, lb: step(ws, lb, k),
            mesh=mesh,
            check_vma=out_specs != P(),
            in_specs=(P(DATA_PARALLEL), P(DATA_PARALLEL)),
            out_specs=out_specs,
        )(w, batch)

    return answer


def _fsdp_step(w_shard, local_batch, k):
    local_grads = jax.grad(loss_fn)(lax.all_gather(w_shard, DATA_PARALLEL, tiled=True), local_batch)
    return w_shard - q07.LEARNING_RATE * lax.psum_scatter(local_grads, DATA_PARALLEL, tiled=True) / k


def test_fsdp_step_that_returns_w_replicated_scores_zero():
    reference = q07.fsdp_step.observe(_fsdp(_fsdp_step))
    replicated = q07.fsdp_step.observe(
        _fsdp(lambda ws, lb, k: lax.all_gather(_fsdp_step(ws, lb, k), DATA_PARALLEL, tiled=True), out_specs=P())
    )
    verdict = judge_observations(reference, replicated)
    assert not verdict.passed
    assert verdict.differences[0] == (
        f"collectives: layout: result 1 is {WHOLE}; the exercise's is split along dimension 0 over '{DATA_PARALLEL}'"
    )


# ---------------------------------------------------------------- 07: a ring whose ppermute is multiplied by zero
def _ring_ref(x, mesh):
    k = mesh.shape[DEVICES]
    ring = [(i, (i + 1) % k) for i in range(k)]

    def body(block):
        total, travelling = block, block
        for _ in range(k - 1):
            travelling = lax.ppermute(travelling, DEVICES, perm=ring)
            total = total + travelling
        return total

    return jax.shard_map(body, mesh=mesh, in_specs=P(DEVICES), out_specs=P(DEVICES))(x)


def _ring_dead_ppermute(x, mesh):
    """The total computed outside shard_map (the compiler adds its own communication), plus a dead ppermute."""
    k = mesh.shape[DEVICES]
    total = jnp.tile(x.reshape(k, -1).sum(axis=0), k)
    dummy = jax.shard_map(
        lambda b: 0.0 * lax.ppermute(b, DEVICES, [(i, (i + 1) % k) for i in range(k)]),
        mesh=mesh,
        in_specs=P(DEVICES),
        out_specs=P(DEVICES),
    )(x)
    return total + dummy


def test_a_ring_whose_ppermute_is_multiplied_by_zero_scores_zero():
    reference = q07.ring_all_reduce.observe(_ring_ref)
    verdict = judge_observations(reference, q07.ring_all_reduce.observe(_ring_dead_ppermute))
    assert not verdict.passed
    assert any(
        d.startswith(
            "communication: expected ppermute over 'devices' (read from the compiled program), but it performs "
        )
        for d in verdict.differences
    ), verdict.differences


@pytest.mark.parametrize("answer", [lambda x: lax.psum(x * 2.0, DEVICES), lambda x: 2.0 * lax.psum(x, DEVICES)])
def test_right_answers_keep_their_points(answer):
    reference = q02.scaled_sum.observe(scaled_sum_ref)
    assert judge_observations(reference, q02.scaled_sum.observe(answer)).passed


# ---------------------------------------------------------------- the visible checks read communication the same way
def test_the_visible_psum_check_rejects_a_dead_psum():
    from namedaxes.checking import assert_check_fails, assert_check_passes

    assert_check_passes(q02.scaled_sum_uses_psum.check, scaled_sum_ref)
    assert_check_fails(
        q02.scaled_sum_uses_psum.check,
        lambda x: jnp.sum(lax.all_gather(x, DEVICES), axis=0) * 2.0 + 0.0 * lax.psum(x, DEVICES),
        match=r"^`scaled_sum` performs psum over 'devices', but nothing it carries between devices reaches what "
        r"`scaled_sum` returns "
        r"\(read from the compiled program",
    )


def test_the_visible_ring_check_rejects_a_dead_ppermute():
    from namedaxes.checking import assert_check_fails, assert_check_passes

    assert_check_passes(q07.ring_all_reduce.check, _ring_ref)
    assert_check_fails(
        q07.ring_all_reduce.check,
        _ring_dead_ppermute,
        # read from the compiled program, as the grader reads it: the total outside shard_map is the compiler's
        # psum, a collective this exercise does not allow (the grader's surplus test); its ppermute earns nothing
        match=r"^`ring_all_reduce` returns the right values, but it uses psum over 'devices'\. Build the all-reduce "
        r"from `lax\.ppermute` only",
    )
