"""Notebook 11 (`11_step_anatomy`): every check and observation, proven both ways, and the ZeRO steps and
the accumulation's reduction count proven against their compiled programs.

For each exercise: the reference answer (the solution notebook's) and equivalent right answers pass the
visible check and match the reference's observations under the grader's judge; the natural wrong answers
(a float32 step, bf16 master weights, float16 matmuls; a stage's array kept whole or split one stage too
early; a reduction per microbatch, the sum for the mean) are rejected with the message that helps, and the
grader rejects them too, a reduction inside a `lax.scan` body among them: the judge counts a loop's body as
often as it runs.
"""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from exercise_text import NAMED, unused_text
from jax import lax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P
from judge_helpers import (
    agreement_test,
    assert_check_fails,
    assert_check_passes,
    judge_observations,
    matrix_rows,
    observations_match,
    observe,
)

from namedaxes import transformer as tm
from namedaxes import zero as zr
from namedaxes.exercises import step_anatomy as q
from namedaxes.judging import work_of

ZERO = zr.ZERO


def _not_written(*args):
    raise NotImplementedError()


# ---------------------------------------------------------------- 1. mixed_train_step
def ref_mixed_train_step(params, state, window):
    def loss_of(params):
        half = jax.tree.map(lambda a: a.astype(jnp.bfloat16), params)
        logits = tm.forward(half, window[:, :-1])
        return tm.cross_entropy(logits.astype(jnp.float32), window[:, 1:])

    loss, grads = jax.value_and_grad(loss_of)(params)
    updates, state = tm.OPTIMIZER.update(grads, state, params)
    return optax.apply_updates(params, updates), state, loss


def _mixed_cast_inside(params, state, window):
    """The copy made by a dict comprehension, the logits widened with `jnp.asarray`."""

    def loss_of(p):
        p = {k: v.astype(jnp.bfloat16) for k, v in p.items()}
        return tm.cross_entropy(jnp.asarray(tm.forward(p, window[:, :-1]), jnp.float32), window[:, 1:])

    loss, grads = jax.value_and_grad(loss_of)(params)
    updates, state = tm.OPTIMIZER.update(grads, state, params)
    return optax.apply_updates(params, updates), state, loss


MIXED_EQUIVALENT = {"cast inside, asarray": _mixed_cast_inside}


def _bf16_master(params, state, window):
    """Everything in bf16, master weights and Adam's state too."""
    params = jax.tree.map(lambda a: a.astype(jnp.bfloat16), params)
    state = jax.tree.map(lambda a: a.astype(jnp.bfloat16) if a.dtype == jnp.float32 else a, state)
    return ref_mixed_train_step(params, state, window)


def _float16(params, state, window):
    def loss_of(params):
        half = jax.tree.map(lambda a: a.astype(jnp.float16), params)
        return tm.cross_entropy(tm.forward(half, window[:, :-1]).astype(jnp.float32), window[:, 1:])

    loss, grads = jax.value_and_grad(loss_of)(params)
    updates, state = tm.OPTIMIZER.update(grads, state, params)
    return optax.apply_updates(params, updates), state, loss


def _bf16_logits(params, state, window):
    """Every matmul in bf16, and the loss's softmax too: the logits never cast to float32 (the loss is)."""

    def loss_of(params):
        half = jax.tree.map(lambda a: a.astype(jnp.bfloat16), params)
        return tm.cross_entropy(tm.forward(half, window[:, :-1]), window[:, 1:]).astype(jnp.float32)

    loss, grads = jax.value_and_grad(loss_of)(params)
    updates, state = tm.OPTIMIZER.update(grads, state, params)
    return optax.apply_updates(params, updates), state, loss


MIXED_WRONG = {
    "unanswered": (_not_written, r"`mixed_train_step` is not written yet"),
    "bf16 logits into the loss": (
        _bf16_logits,
        r"(?s)computes the loss's softmax on bf16 logits: cast the logits to float32 before `tm.cross_entropy`",
    ),
    "the float32 step": (tm.train_step, r"(?s)returns float32 results, but \d+ of its \d+ matmuls multiply float32"),
    "bf16 master weights": (_bf16_master, r"(?s)returns params\['\w+'\] as bfloat16: mixed precision keeps"),
    "float16 matmuls": (_float16, r"(?s)multiplies f16 arrays: the exercise asks for bfloat16"),
}


@pytest.mark.parametrize(
    "answer", [ref_mixed_train_step, *MIXED_EQUIVALENT.values()], ids=["reference", *MIXED_EQUIVALENT]
)
def test_mixed_train_step_accepts_equivalent_answers(answer):
    assert_check_passes(q.mixed_train_step.check, answer)


@pytest.mark.parametrize("answer, match", MIXED_WRONG.values(), ids=MIXED_WRONG.keys())
def test_mixed_train_step_rejects(answer, match):
    assert_check_fails(q.mixed_train_step.check, answer, match=match)


def test_mixed_train_step_grader_tells_float32_from_bf16_by_values():
    reference = observe(q.mixed_train_step, ref_mixed_train_step)
    assert {"program:2x4x1", "program:1x2x4"} <= set(reference)
    assert observations_match(reference, observe(q.mixed_train_step, _mixed_cast_inside))
    fp32 = judge_observations(reference, observe(q.mixed_train_step, tm.train_step))
    assert not fp32.passed and "values differ" in fp32.reason(limit=8), fp32.reason(limit=8)


# ---------------------------------------------------------------- 2. zero_specs
def ref_zero_specs(stage):
    return {
        "params": P(ZERO) if stage >= 3 else P(),
        "grads": P(ZERO) if stage >= 2 else P(),
        "opt_state": P(ZERO),
    }


_TABLE = {
    1: {"opt_state": P(ZERO, None), "grads": P(None), "params": P()},
    2: {"opt_state": P(ZERO, None), "grads": P(ZERO, None), "params": P(None, None)},
    3: {"opt_state": P(ZERO, None), "grads": P(ZERO, None), "params": P(ZERO, None)},
}


def _zero_table(stage):
    """A table of the three stages, the specs written with trailing `None`s."""
    return dict(_TABLE[stage])


ZERO_EQUIVALENT = {"a table, trailing Nones": _zero_table}


def _everything_split(stage):
    return {"params": P(ZERO), "grads": P(ZERO), "opt_state": P(ZERO)}


def _grads_whole(stage):
    return {**ref_zero_specs(stage), "grads": P()}


def _opt_state_whole(stage):
    return {**ref_zero_specs(stage), "opt_state": P()}


def _other_axis(stage):
    return {**ref_zero_specs(stage), "opt_state": P("model")}


def _a_tuple(stage):
    return (P(), P(), P(ZERO))


ZERO_WRONG = {
    "unanswered": (_not_written, r"`zero_specs` is not written yet"),
    "everything split from stage 1": (
        _everything_split,
        r"(?s)`zero_specs\(1\)` stores 'grads' split \(1/8 of the rows\) on each device, but ZeRO stage 1 stores "
        r"them whole\. Stage 1 keeps the gradients whole",
    ),
    "gradients never split": (
        _grads_whole,
        r"(?s)`zero_specs\(2\)` stores 'grads' whole.*stage 2 stores them split.*reduce-scattered",
    ),
    "optimizer state whole": (_opt_state_whole, r"(?s)`zero_specs\(1\)` stores 'opt_state' whole.*Every stage splits"),
    "another axis": (_other_axis, r"(?s)`zero_specs\(1\)\['opt_state'\]` is P\('model',\)"),
    "a tuple": (_a_tuple, r"(?s)`zero_specs\(1\)` should return a dict with the keys"),
}


@pytest.mark.parametrize("answer", [ref_zero_specs, *ZERO_EQUIVALENT.values()], ids=["reference", *ZERO_EQUIVALENT])
def test_zero_specs_accepts_equivalent_answers(answer):
    assert_check_passes(q.zero_specs.check, answer)


@pytest.mark.parametrize("answer, match", ZERO_WRONG.values(), ids=ZERO_WRONG.keys())
def test_zero_specs_rejects(answer, match):
    assert_check_fails(q.zero_specs.check, answer, match=match)


def _compiled_stage(specs, d=32, hidden=64, batch=64):
    mesh = zr.zero_mesh()
    with jax.set_mesh(mesh):
        params, state = zr.place(zr.mlp_params(d, hidden), mesh, specs)
        x, y = zr.regression_data((batch,), d)
        data = [jax.device_put(a, NamedSharding(mesh, P(ZERO))) for a in (x, y)]
        compiled = jax.jit(zr.zero_step(specs, mesh)).lower(params, state, *data).compile()
        return compiled, compiled(params, state, *data)


def test_every_zero_stage_computes_the_same_step_and_moves_what_it_should():
    """Stored bytes per device (arguments) and bytes each collective delivers, against the cost model; the
    updated parameters equal plain data parallelism's. The MLP: 4,096 parameters, 8 devices, batch 64."""
    p, data = 4096, 2 * 8 * 32 * 4
    want = {
        0: (12 * p + 4 + data, {"psum": 4 * p + 4}),
        1: (4 * p + 8 * p // 8 + 4 + data, {"psum": 4 * p + 4, "all_gather": 4 * p}),
        2: (4 * p + 8 * p // 8 + 4 + data, {"psum": 4, "psum_scatter": 4 * p // 8, "all_gather": 4 * p}),
        3: (12 * p // 8 + 4 + data, {"psum": 4, "psum_scatter": 4 * p // 8, "all_gather": 4 * p}),
    }
    results = {}
    for stage, (stored, moved) in want.items():
        specs = zr.STAGE_SPECS_DP if stage == 0 else ref_zero_specs(stage)
        compiled, (params, _, _) = _compiled_stage(specs)
        assert compiled.memory_analysis().argument_size_in_bytes == stored, stage
        got = {d.split(" over ")[0]: b for d, b in work_of(compiled, (ZERO,), (8,), 8).moved}
        assert got == moved, (stage, got)
        results[stage] = {k: np.asarray(v) for k, v in params.items()}
    for stage in (1, 2, 3):
        for k in results[0]:
            np.testing.assert_allclose(results[stage][k], results[0][k], rtol=1e-5, atol=1e-6)


def test_zero_specs_grader_rejects_a_stage_that_keeps_gradients_whole():
    reference = observe(q.zero_specs, ref_zero_specs)
    assert {"program:stage1", "program:stage2", "program:stage3"} <= set(reference)
    assert observations_match(reference, observe(q.zero_specs, _zero_table))
    whole = judge_observations(reference, observe(q.zero_specs, _grads_whole))
    assert not whole.passed, whole.reason(limit=8)


# ---------------------------------------------------------------- 3. accumulate_grads
def ref_accumulate_grads(params, xs, ys):
    used = jax.tree.map(lambda a: jax.reshard(a, P(reduced={ZERO})), params)
    total = None
    for i in range(xs.shape[0]):
        grads = jax.grad(zr.mlp_loss)(used, xs[i], ys[i])
        total = grads if total is None else jax.tree.map(jnp.add, total, grads)
    return jax.tree.map(lambda g: jax.reshard(g, P()) / xs.shape[0], total)


def _acc_shard_map(params, xs, ys):
    """Per device: the parameters cast to varying, m local gradients added, one psum. The right values and one
    reduction, but the grader compares the program's per-device regions with the reference's (none)."""
    mesh = jax.sharding.get_abstract_mesh()

    def local(params, xs, ys):
        mine = jax.tree.map(lambda a: lax.pcast(a, ZERO, to="varying"), params)
        total = jax.grad(zr.mlp_loss)(mine, xs[0], ys[0])
        for i in range(1, xs.shape[0]):
            total = jax.tree.map(jnp.add, total, jax.grad(zr.mlp_loss)(mine, xs[i], ys[i]))
        n = mesh.shape[ZERO] * xs.shape[0]
        return jax.tree.map(lambda g: lax.psum(g, ZERO) / n, total)

    return jax.shard_map(local, in_specs=(P(), P(None, ZERO), P(None, ZERO)), out_specs=P())(params, xs, ys)


def _acc_scan(params, xs, ys):
    """The unreduced gradients added in a `lax.scan`, reduced after it."""
    used = jax.tree.map(lambda a: jax.reshard(a, P(reduced={ZERO})), params)
    first = jax.grad(zr.mlp_loss)(used, xs[0], ys[0])

    def body(total, xy):
        return jax.tree.map(jnp.add, total, jax.grad(zr.mlp_loss)(used, *xy)), None

    total, _ = lax.scan(body, first, (xs[1:], ys[1:]))
    return jax.tree.map(lambda g: jax.reshard(g, P()) / xs.shape[0], total)


ACC_EQUIVALENT = {"lax.scan of unreduced gradients": _acc_scan}


def _acc_sum(params, xs, ys):
    return jax.tree.map(lambda g: g * xs.shape[0], ref_accumulate_grads(params, xs, ys))


def _acc_split(params, xs, ys):
    return jax.tree.map(lambda g: jax.reshard(g, P(ZERO)), ref_accumulate_grads(params, xs, ys))


def _acc_reduce_in_scan(params, xs, ys):
    """One reduction per microbatch, inside a `lax.scan` body: its text shows one all-reduce."""

    def body(total, xy):
        return jax.tree.map(jnp.add, total, jax.grad(zr.mlp_loss)(params, *xy)), None

    zeros = jax.tree.map(jnp.zeros_like, params)
    total, _ = lax.scan(body, zeros, (xs, ys))
    return jax.tree.map(lambda g: g / xs.shape[0], total)


ACC_WRONG = {
    "unanswered": (_not_written, r"`accumulate_grads` is not written yet"),
    "a reduction per microbatch": (
        zr.accumulate_naive,
        r"(?s)right mean gradient, but for m = 4 its compiled program reduces 4\.0 gradients' worth of bytes",
    ),
    "a reduction per microbatch, in a lax.scan": (
        _acc_reduce_in_scan,
        r"(?s)right mean gradient, but its compiled program reduces inside a loop's body.*4\.0 gradients' worth",
    ),
    "the sum for the mean": (_acc_sum, r"(?s)wrong values for m = 4.*That is the sum over the microbatches"),
    "the result left split": (_acc_split, r"(?s)returns `w1` laid out as P\('fsdp_axis', None\) for m = 1"),
    "written per device with shard_map": (
        _acc_shard_map,
        r"(?s)right mean gradient, but it is written per device with `jax.shard_map` \(over 'fsdp_axis'\)",
    ),
}


@pytest.mark.parametrize("answer", [ref_accumulate_grads, *ACC_EQUIVALENT.values()], ids=["reference", *ACC_EQUIVALENT])
def test_accumulate_grads_accepts_equivalent_answers(answer):
    assert_check_passes(q.accumulate_grads.check, answer)


@pytest.mark.parametrize("answer, match", ACC_WRONG.values(), ids=ACC_WRONG.keys())
def test_accumulate_grads_rejects(answer, match):
    assert_check_fails(q.accumulate_grads.check, answer, match=match)


def test_a_reduction_inside_a_scan_is_refused_by_both():
    """The program's text shows the scan's one all-reduce once; the judge counts it as often as the loop
    runs (`Work.sent_bytes`), in the visible check and in the grader alike."""
    assert_check_fails(
        q.accumulate_grads.check, _acc_reduce_in_scan, match=r"reduces inside a loop's body.*4\.0 gradients' worth"
    )
    said = judge_observations(
        observe(q.accumulate_grads, ref_accumulate_grads), observe(q.accumulate_grads, _acc_reduce_in_scan)
    )
    assert not said.passed and "m2: communication: one device receives 2× the reference's bytes" in said.reason()


def test_one_reduction_whatever_m_against_m_reductions():
    """The bytes all-reduced per device, in gradients: m for the naive loop, 1 for the unreduced sum."""
    mesh = zr.zero_mesh()
    counts = {}
    with jax.set_mesh(mesh):
        params = {k: jax.device_put(v, NamedSharding(mesh, P())) for k, v in zr.mlp_params().items()}
        for m in (1, 4, 8):
            xs, ys = (jax.device_put(a, NamedSharding(mesh, P(None, ZERO))) for a in zr.regression_data((m, 16)))
            for name, fn in (("naive", zr.accumulate_naive), ("unreduced", ref_accumulate_grads)):
                compiled = jax.jit(fn).lower(params, xs, ys).compile()
                moved = dict(work_of(compiled, (ZERO,), (8,), 8).moved)[f"psum over '{ZERO}'"]
                counts[name, m] = moved / (4 * 4096)
    assert counts == {("naive", 1): 1, ("naive", 4): 4, ("naive", 8): 8} | {("unreduced", m): 1 for m in (1, 4, 8)}


def test_accumulate_grads_grader_rejects_a_reduction_per_microbatch():
    reference = observe(q.accumulate_grads, ref_accumulate_grads)
    for answer in ACC_EQUIVALENT.values():
        assert observations_match(reference, observe(q.accumulate_grads, answer))
    naive = judge_observations(reference, observe(q.accumulate_grads, zr.accumulate_naive))
    assert not naive.passed and "values differ" not in naive.reason(limit=8), naive.reason(limit=8)


# ---------------------------------------------------------------- the module's contract
def test_every_student_facing_string_is_used_and_hints_are_ladders():
    unused = unused_text(q, NAMED)  # some keys are named in tables (`_WHY`)
    assert not unused, f"TEXT entries nothing uses: {unused}"
    for exercise in (q.mixed_train_step, q.zero_specs, q.accumulate_grads):
        assert len(exercise._hints) == 3, exercise.name


# ---------------------------------------------------------------- one judge (issue 16)
test_the_visible_check_and_the_grader_agree = agreement_test(
    {
        "mixed_train_step": (
            q.mixed_train_step,
            *matrix_rows(ref_mixed_train_step, MIXED_EQUIVALENT, MIXED_WRONG),
        ),
        "zero_specs": (q.zero_specs, *matrix_rows(ref_zero_specs, ZERO_EQUIVALENT, ZERO_WRONG)),
        "accumulate_grads": (q.accumulate_grads, *matrix_rows(ref_accumulate_grads, ACC_EQUIVALENT, ACC_WRONG)),
    }
)
