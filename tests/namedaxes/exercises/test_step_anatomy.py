"""Notebook 11 (`11_step_anatomy`): every check and observation, proven both ways, and the ZeRO steps and
the accumulation's reduction count proven against their compiled programs.

For each exercise: the reference answer (the solution notebook's) and equivalent right answers pass the
visible check and match the reference's observations under the grader's judge; the natural wrong answers
(a float32 step, bf16 master weights, float16 matmuls; a stage's array kept whole or split one stage too
early; a reduction per microbatch, the sum for the mean) are rejected with the message that helps, and the
grader rejects them too, a reduction inside a `lax.scan` body among them: the judge counts a loop's body as
often as it runs.
"""

import functools
import re

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
from spoken import failure_in, says

from autograder.publish import words
from namedaxes import transformer as tm
from namedaxes import zero as zr
from namedaxes.exercises import step_anatomy as q
from namedaxes.exercises.step_anatomy.zero_state import PEAK_FACTOR
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


@pytest.mark.parametrize(
    "wrong, key", [("the float32 step", "mixed_fp32_dots"), ("float16 matmuls", "mixed_other_dtype")]
)
def test_the_grader_says_what_the_programs_matmuls_multiply_in_both_languages(wrong, key):
    """Issue 56: where the visible check names the matmuls' types ("21 of its 21 matmuls multiply float32
    arrays"), the grader's finding is that sentence, read from the exported program, once for all the case's
    leaves, not "values differ" on each of them; in both languages."""
    from autograder.publish.words import say

    verdict = judge_observations(
        observe(q.mixed_train_step, ref_mixed_train_step), observe(q.mixed_train_step, MIXED_WRONG[wrong][0])
    )
    [found] = verdict.verdict.differences
    assert found.kind.value == "known_mistake" and found.get("mistake") == key, verdict.differences
    assert found.get("key") == "2x4x1, 1x2x4" or found.get("key") == "1x2x4, 2x4x1", found
    english, chinese = say(found, "en"), say(found, "zh")
    assert says(english, q.TEXT, key, "en") and says(chinese, q.TEXT, key, "zh"), (english, chinese)
    if key == "mixed_fp32_dots":
        assert re.search(r"but (\d+) of its \1 matmuls multiply float32 arrays", english), english
        assert "values differ" not in english.split(": values differ.")[1], english


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
    updated parameters equal plain data parallelism's. The MLP: 4,096 parameters, 8 devices, batch 64 in
    `zr.MICROBATCHES` = 2 microbatches: stage 1 reduce-scatters the added-up gradient once, stages 2 and 3 each
    microbatch's; stage 3 gathers each weight once for both microbatches' forward passes, and `w2` again in each
    backward pass (jax 0.12's CPU) or not (jax 0.10.2's keeps the forward pass's)."""
    p, data, m = 4096, 2 * 8 * 32 * 4, zr.MICROBATCHES
    rs, w2 = 4 * p // 8, 4 * 64 * 32
    want = {
        0: (12 * p + 4 + data, {"psum": 4 * p + 4}),
        1: (4 * p + 8 * p // 8 + 4 + data, {"psum": 4, "psum_scatter": rs, "all_gather": 4 * p}),
        2: (4 * p + 8 * p // 8 + 4 + data, {"psum": 4, "psum_scatter": m * rs, "all_gather": 4 * p}),
        3: (12 * p // 8 + 4 + data, {"psum": 4, "psum_scatter": m * rs, "all_gather": 4 * p}),
    }
    regathered = 4 * p + m * w2  # stage 3 with `w2` gathered again in each backward pass
    results = {}
    for stage, (stored, moved) in want.items():
        specs = zr.STAGE_SPECS_DP if stage == 0 else ref_zero_specs(stage)
        compiled, (params, _, _) = _compiled_stage(specs)
        assert compiled.memory_analysis().argument_size_in_bytes == stored, stage
        got = {d.split(" over ")[0]: b for d, b in work_of(compiled, (ZERO,), (8,), 8).moved}
        if stage == 3 and got.get("all_gather") == regathered:
            moved = {**moved, "all_gather": regathered}
        assert got == moved, (stage, got)
        results[stage] = {k: np.asarray(v) for k, v in params.items()}
    for stage in (1, 2, 3):
        for k in results[0]:
            np.testing.assert_allclose(results[stage][k], results[0][k], rtol=1e-5, atol=1e-6)


def test_zero_stage_3_gathers_each_layer_in_both_passes():
    """The lowered stage 3 (what JAX asks the compiler for): per microbatch, `w1` and `w2` gathered for the forward
    pass and `w2` again for the backward pass (`w1`'s gradient needs only the inputs), never a weight kept."""
    specs = ref_zero_specs(3)
    mesh = zr.zero_mesh()
    with jax.set_mesh(mesh):
        params, state = zr.place(zr.mlp_params(), mesh, specs)
        data = [jax.device_put(a, NamedSharding(mesh, P(ZERO))) for a in zr.regression_data((64,))]
        text = jax.jit(zr.zero_step(specs, mesh)).lower(params, state, *data).as_text()
    gathered = re.findall(r"stablehlo\.all_gather.*?-> tensor<(\d+x\d+)xf32>", text)
    assert gathered == ["32x64", "64x32", "64x32"] * zr.MICROBATCHES


def test_zero_stage_1_peaks_above_stage_2_by_more_than_the_grader_allows():
    """Stage 1 adds up whole gradients, stage 2 rows: what keeps the two apart for the grader (`PEAK_FACTOR`)."""
    peaks = {}
    for stage in (1, 2):
        compiled, _ = _compiled_stage(ref_zero_specs(stage), 48, 96, 32)  # the graded size
        peaks[stage] = work_of(compiled, (ZERO,), (8,), 8).peak_bytes
    assert peaks[1] > PEAK_FACTOR * peaks[2], peaks


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


def _traced_count(params, xs):
    """m, from a traced value (m plus 1 where a parameter is NaN, never on these inputs): a `lax.while_loop` bound
    no compiler can read, so only running the program counts its loop (issue 56)."""
    return xs.shape[0] + jnp.int32(jnp.isnan(params["w1"][0, 0]))


def _acc_while(params, xs, ys):
    """The unreduced gradients added in a `lax.while_loop` whose bound is a traced value, reduced after it: one
    gradient reduced, and the loss's scalar (4 bytes) of each of the m - 1 microbatches the loop runs."""
    used = jax.tree.map(lambda a: jax.reshard(a, P(reduced={ZERO})), params)
    n = _traced_count(params, xs)

    def body(c):
        return c[0] + 1, jax.tree.map(jnp.add, c[1], jax.grad(zr.mlp_loss)(used, xs[c[0]], ys[c[0]]))

    _, total = lax.while_loop(lambda c: c[0] < n, body, (1, jax.grad(zr.mlp_loss)(used, xs[0], ys[0])))
    return jax.tree.map(lambda g: jax.reshard(g, P()) / xs.shape[0], total)


def _acc_reduce_in_while(params, xs, ys):
    """Attack (issue 56): a reduction per microbatch hidden in a `lax.while_loop` whose bound is a traced value:
    read as `UNKNOWN_TRIPS` (1,024) runs, it was refused with a figure that was not the program's."""
    n = _traced_count(params, xs)

    def body(c):
        return c[0] + 1, jax.tree.map(jnp.add, c[1], jax.grad(zr.mlp_loss)(params, xs[c[0]], ys[c[0]]))

    _, total = lax.while_loop(lambda c: c[0] < n, body, (0, jax.tree.map(jnp.zeros_like, params)))
    return jax.tree.map(lambda g: g / xs.shape[0], total)


ACC_EQUIVALENT = {
    "lax.scan of unreduced gradients": _acc_scan,
    "lax.while_loop to a traced bound, unreduced gradients": _acc_while,
}


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


def _acc_divided_unreduced(divide):
    """The mean taken before the reduction: the unreduced total divided by m (`/` or `jnp.divide`), then
    resharded. JAX has no rule for dividing partial sums (issue 56)."""

    def answer(params, xs, ys):
        used = jax.tree.map(lambda a: jax.reshard(a, P(reduced={ZERO})), params)
        total = jax.grad(zr.mlp_loss)(used, xs[0], ys[0])
        for i in range(1, xs.shape[0]):
            total = jax.tree.map(jnp.add, total, jax.grad(zr.mlp_loss)(used, xs[i], ys[i]))
        return jax.tree.map(lambda g: jax.reshard(divide(g, xs.shape[0]), P()), total)

    return answer


_UNREDUCED_DIV = (
    r"(?s)`accumulate_grads` failed with JAX's error \"[^\"]*unreduced[^\"]*\": `div` was applied to an "
    r"`unreduced` array.*`jax\.reshard\(total, P\(\)\)` adds the partial sums up.*comes after it"
)


def _acc_one_batch(params, xs, ys, typed: bool = False):
    """Issue 56: all microbatches concatenated into one batch (each device's own examples, no communication) and
    one gradient taken: the right mean and one reduction, but no microbatch is accumulated. `typed`: the
    parameters marked reduced, so that even the types show one unreduced gradient reduced once."""
    m, batch, d = xs.shape
    flat = lambda a: lax.reshape(a.transpose(1, 0, 2), (m * batch, d), out_sharding=P(ZERO))  # noqa: E731
    if not typed:
        return jax.grad(zr.mlp_loss)(params, flat(xs), flat(ys))
    used = jax.tree.map(lambda a: jax.reshard(a, P(reduced={ZERO})), params)
    return jax.tree.map(lambda g: jax.reshard(g, P()), jax.grad(zr.mlp_loss)(used, flat(xs), flat(ys)))


ACC_ONE_BATCH = (
    r"(?s)right mean gradient with one reduction, but one device materializes an array of 524288 bytes, 8\.0× the "
    r"reference's largest \(65536 bytes: one microbatch's hidden activations.*the microbatches are run as one batch"
)

ACC_WRONG = {
    "the unreduced total divided before the reshard": (_acc_divided_unreduced(lambda g, m: g / m), _UNREDUCED_DIV),
    "jnp.divide before the reshard": (_acc_divided_unreduced(jnp.divide), _UNREDUCED_DIV),
    "unanswered": (_not_written, r"`accumulate_grads` is not written yet"),
    "a reduction per microbatch": (
        zr.accumulate_naive,
        r"(?s)right mean gradient, but for m = 4 its program reduces 4 gradients' worth over ZERO.*read from the "
        r"types of its values",
    ),
    "a reduction per microbatch, in a lax.scan": (
        _acc_reduce_in_scan,
        r"(?s)right mean gradient, but its program reduces inside a loop's body.*4 gradients' worth",
    ),
    # issue 56: its true count, 4 gradients' worth for m = 4 (and 4 bytes of the loss per microbatch), counted by
    # running the loop on the check's inputs; before: "1024.2 gradients' worth" for m = 1 (UNKNOWN_TRIPS runs)
    "a reduction per microbatch, in a lax.while_loop to a traced bound": (
        _acc_reduce_in_while,
        r"(?s)right mean gradient, but its program reduces inside a loop's body: once per microbatch, 4 "
        r"gradients' worth for m = 4, read from the types of its values, the loop counted by running it on this "
        r"check's inputs",
    ),
    "the sum for the mean": (_acc_sum, r"(?s)wrong values for m = 4.*That is the sum over the microbatches"),
    "the result left split": (_acc_split, r"(?s)returns `w1` laid out as P\('fsdp_axis', None\) for m = 1"),
    "written per device with shard_map": (
        _acc_shard_map,
        r"(?s)right mean gradient, but it is written per device with `jax.shard_map` \(over 'fsdp_axis'\)",
    ),
    "one batch, one gradient": (_acc_one_batch, ACC_ONE_BATCH),
    "one batch, one unreduced gradient": (functools.partial(_acc_one_batch, typed=True), ACC_ONE_BATCH),
}


def test_dividing_before_the_reshard_is_said_in_both_languages():
    """Issue 56: JAX's `NotImplementedError` for an unreduced division names the exercise and the fix, in the
    kernel's language."""
    from namedaxes.checking import TEXT

    answer = ACC_WRONG["jnp.divide before the reshard"][0]
    for lang in ("en", "zh"):
        said = failure_in(lang, q.accumulate_grads.check, answer)
        assert says(said, TEXT, "unreduced_op", lang) and "Please file" not in said, said


@pytest.mark.parametrize("answer", [ref_accumulate_grads, *ACC_EQUIVALENT.values()], ids=["reference", *ACC_EQUIVALENT])
def test_accumulate_grads_accepts_equivalent_answers(answer):
    assert_check_passes(q.accumulate_grads.check, answer)


@pytest.mark.parametrize("answer, match", ACC_WRONG.values(), ids=ACC_WRONG.keys())
def test_accumulate_grads_rejects(answer, match):
    assert_check_fails(q.accumulate_grads.check, answer, match=match)


# What the grader says of a reduction per microbatch, by JAX line. jax 0.12.1 lowers arithmetic on reduced and
# unreduced arrays through manual computations of its own, which an exported module shows as per-device regions
# like a shard_map's: the reference's program then has regions over ZERO and the global-view answer none, and the
# judge refuses it for that before it counts bytes (issue 59: one verdict, but not yet the message that helps; a
# rule that told JAX's regions from the author's by their shape alone also read a student's purely local pmap as
# global view, on every line, and was withdrawn).
def jax_line_key() -> str:
    """ "0.10" or "0.12": the JAX line these tests run on."""
    return ".".join(jax.__version__.split(".")[:2])


SCAN_GRADED = {
    "0.10": "m2: communication: its types reduce 2× the reference's bytes over the mesh (32,768 against 16,384 bytes",
    "0.12": "m2: the program is written per device over no axis (a global-view program), expected 'fsdp_axis'",
}


def test_a_reduction_inside_a_scan_is_refused_by_both():
    """The program's text shows the scan's one reduction once; the judge counts it as often as the loop runs,
    from the exported program's types (`Work.reduced_bytes`), in the visible check and in the grader alike."""
    assert_check_fails(
        q.accumulate_grads.check, _acc_reduce_in_scan, match=r"reduces inside a loop's body.*4 gradients' worth"
    )
    said = judge_observations(
        observe(q.accumulate_grads, ref_accumulate_grads), observe(q.accumulate_grads, _acc_reduce_in_scan)
    )
    assert not said.passed and SCAN_GRADED[".".join(jax.__version__.split(".")[:2])] in said.reason()


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


def test_the_reductions_are_counted_from_the_types():
    """Issue 56: the visible check and the grader count the reductions the exported program's types make
    (`judging.exported_reductions`, `Work.reduced_bytes`), not the all-reduces one backend's compiler keeps (XLA on
    a TPU v5e merges the naive loop's m all-reduces into one): m gradients' worth for the naive loop, in a scan or
    not, one for the unreduced sum, in a scan or not, and one for one batch."""
    from namedaxes.exercises.step_anatomy import accumulation as acc
    from namedaxes.judging import exported_reductions

    mesh = zr.zero_mesh()
    grad = 4 * 2 * 32 * 64
    got = {}
    with jax.set_mesh(mesh):
        for m in (1, 4):
            args = acc._acc_inputs(mesh, m)
            for name, fn in (
                ("naive", zr.accumulate_naive),
                ("naive scan", _acc_reduce_in_scan),
                ("unreduced", ref_accumulate_grads),
                ("unreduced scan", _acc_scan),
                ("one batch", _acc_one_batch),
            ):
                found = exported_reductions(jax.export.export(jax.jit(fn))(*args), (ZERO,), (8,))
                got[name, m] = (round(found.nbytes / grad, 1), found.in_loop, found.uncounted)
    assert got == {  # one count on both JAX lines (0.12 lowers unreduced arithmetic through regions of its own)
        **{("naive", m): (m, False, 0) for m in (1, 4)},
        **{("naive scan", m): (m, True, 0) for m in (1, 4)},
        **{("unreduced", m): (1, False, 0) for m in (1, 4)},
        **{("unreduced scan", m): (1, False, 0) for m in (1, 4)},  # the body adds unreduced gradients: no reduction
        **{("one batch", m): (1, False, 0) for m in (1, 4)},
    }, got


def test_one_batch_is_refused_by_both_for_its_largest_array():
    """Issue 56: the work case's reference figure is the reference program's, measured as the grader measures it;
    the grader refuses one batch and one gradient (8x the reference's largest array)."""
    from namedaxes.exercises.step_anatomy import accumulation as acc
    from namedaxes.judging import exported_work

    mesh = zr.zero_mesh()
    with jax.set_mesh(mesh):
        for fn in (ref_accumulate_grads, _acc_scan, zr.accumulate_naive):
            work = exported_work(jax.export.export(jax.jit(fn))(*acc._acc_work_args(mesh)))
            assert work.largest_bytes == acc._ACC_REFERENCE_LARGEST, fn
    reference = observe(q.accumulate_grads, ref_accumulate_grads)
    said = judge_observations(reference, observe(q.accumulate_grads, _acc_one_batch))
    reason = said.reason(limit=8)
    assert not said.passed, reason
    for fragment in ONE_BATCH_GRADED[".".join(jax.__version__.split(".")[:2])]:
        assert fragment in reason, reason


# One verdict on both lines; on 0.12 the global-view answer is refused for its missing per-device regions first
# (SCAN_GRADED says why), before its largest array is weighed.
ONE_BATCH_GRADED = {
    "0.10": ("m8_work: memory: one device materializes an array of 8× the size", "(524,288 against 65,536 bytes"),
    "0.12": ("m8_work: the program is written per device over no axis (a global-view program), expected 'fsdp_axis'",),
}


def test_the_sum_for_the_mean_is_named_by_both_in_both_languages():
    """Issue 61: summing the microbatches' gradients without dividing by m is a known mistake: the visible check
    and the grader's judge both name it (`accumulation.accumulate_mistakes`), in English and in Chinese, where
    the grader said only "values differ" on every case."""
    from autograder.publish import words

    for lang in ("en", "zh"):
        said = failure_in(lang, q.accumulate_grads.check, _acc_sum)
        assert says(said, q.TEXT, "acc_sum_hint", lang), said
    verdict = judge_observations(
        observe(q.accumulate_grads, ref_accumulate_grads), observe(q.accumulate_grads, _acc_sum)
    )
    reason = verdict.reason(limit=8)
    assert not verdict.passed, reason
    assert "m8_work['w2']: values differ. That is the sum over the microbatches: divide by m" in reason, reason
    assert "这是微批次上的和：请除以 m" in words.say(verdict.verdict, "zh", shown=8)


def test_accumulate_grads_grader_rejects_a_reduction_per_microbatch():
    reference = observe(q.accumulate_grads, ref_accumulate_grads)
    for answer in ACC_EQUIVALENT.values():
        assert observations_match(reference, observe(q.accumulate_grads, answer))
    naive = judge_observations(reference, observe(q.accumulate_grads, zr.accumulate_naive))
    reason = naive.reason(limit=8)
    assert not naive.passed and "values differ" not in reason, reason
    # issue 56: counted from the exported program's types, whatever a backend's compiler merges (a TPU's: one)
    assert NAIVE_GRADED[".".join(jax.__version__.split(".")[:2])] in reason, reason


NAIVE_GRADED = {  # SCAN_GRADED says why 0.12 refuses the global-view answer first
    "0.10": "m2: communication: its types reduce 2× the reference's bytes over the mesh (32,768 against 16,384 bytes",
    "0.12": "m2: the program is written per device over no axis (a global-view program), expected 'fsdp_axis'",
}


# A loop whose trip count only its data decide, holding reductions (issue 56), by JAX line: (answer, the bytes its
# types reduce for m = 4 as read before and as counted by running it (each with the loops that hold a reduction:
# uncounted, measured), what the grader says of m2, None: it passes). Before, such a loop counted `UNKNOWN_TRIPS`
# (1,024) times. On jax 0.10.2 a `while_loop`'s body keeps the loss's unused scalar, reduced (4 bytes a microbatch);
# jax 0.12.1 drops it, and its grader refuses a global-view answer before it counts bytes (`SCAN_GRADED`).
_GRAD = 4 * (32 * 64 + 64 * 32)  # one gradient of the check's MLP: 16,384 bytes
_RAN_REDUCED = "m2: communication: its types reduce more than 1.5× the reference's bytes over the mesh"
ACC_DATA_LOOPS = {
    "0.10": {
        "honest: unreduced gradients in a lax.while_loop": (
            _acc_while,
            (_GRAD + 1024 * 4, 1, 0),
            (_GRAD + 3 * 4, 0, 1),
            None,
        ),
        "attack: a reduction per microbatch in a lax.while_loop": (
            _acc_reduce_in_while,
            (1024 * (_GRAD + 4), 1, 0),
            (4 * (_GRAD + 4), 0, 1),
            _RAN_REDUCED,
        ),
    },
    "0.12": {
        "honest: unreduced gradients in a lax.while_loop": (_acc_while, (_GRAD, 0, 0), (_GRAD, 0, 0), None),
        "attack: a reduction per microbatch in a lax.while_loop": (
            _acc_reduce_in_while,
            (1024 * _GRAD, 1, 0),
            (4 * _GRAD, 0, 1),
            SCAN_GRADED["0.12"],
        ),
    },
}[jax_line_key()]


@pytest.mark.parametrize(("answer", "read", "ran", "refused"), ACC_DATA_LOOPS.values(), ids=ACC_DATA_LOOPS)
def test_a_data_decided_loop_is_judged_on_the_reductions_it_runs(answer, read, ran, refused):
    """The figure is the loop's real count on the check's inputs (visible check) and on the hidden inputs (the
    grader, whose figures are then not said), never `UNKNOWN_TRIPS` taken as a fact."""
    from namedaxes.judging import exported_reductions, reductions_on

    mesh = zr.zero_mesh()
    args, _ = q.accumulation._acc_expected(4)
    with jax.set_mesh(mesh):
        exp = jax.export.export(jax.jit(answer))(*args)
        before = exported_reductions(exp, (ZERO,), (8,))
        after = reductions_on(exp, jax.tree_util.tree_leaves(args))
    assert ((before.nbytes, before.uncounted, before.measured), (after.nbytes, after.uncounted, after.measured)) == (
        read,
        ran,
    )
    said = judge_observations(observe(q.accumulate_grads, ref_accumulate_grads), observe(q.accumulate_grads, answer))
    if refused is None:
        assert said.passed, said.reason()
        return
    reason = said.reason(limit=8)
    assert not said.passed and refused in reason, reason
    if refused == _RAN_REDUCED:
        assert "by running the program on the hidden inputs" in reason, reason
        assert "32,7" not in reason and "bytes (" not in reason, reason  # the hidden inputs' figures unsaid
        assert "m2：通信：它的类型在网格上归约的字节超过参考答案的 1.5×" in words.say(said.verdict, "zh", shown=8)


# Whether the grader reads an answer's reductions at all: on jax 0.12 it refuses the attack as a global-view
# program before (issue 59's caveat; the verdict `ACC_DATA_LOOPS` asserts), so it reads none of it.
_READS_REDUCTIONS = {"0.10": {"honest": True, "attack": True}, "0.12": {"honest": True, "attack": False}}[
    jax_line_key()
]


@pytest.mark.parametrize("answer", [_acc_while, _acc_reduce_in_while], ids=["honest", "attack"])
def test_the_grader_reads_a_programs_reductions_once(answer, monkeypatch, request):
    """The grader reads the reductions a program's types make once (`typed.read_reductions`, kept as
    `Compiled.reductions`) and counts a data-decided loop that holds one from that reading
    (`counted_run.counted_reductions`): it read the same module again before running the counted variant.
    The verdict is the one `test_a_data_decided_loop_is_judged_on_the_reductions_it_runs` asserts."""
    from namedaxes.judging import typed

    reference, observed = observe(q.accumulate_grads, ref_accumulate_grads), observe(q.accumulate_grads, answer)
    read, texts = typed.typed_reductions, []

    def reading(text, *args):
        texts.append(text)
        return read(text, *args)

    monkeypatch.setattr(typed, "typed_reductions", reading)
    judge_observations(reference, observed, grade_id="reductions_read_once")
    assert bool(texts) == _READS_REDUCTIONS[request.node.callspec.id], texts
    assert sorted(texts.count(t) for t in set(texts)) == [1] * len(set(texts))


def test_a_loop_counted_by_running_it_is_said_in_both_languages():
    """The visible check says how it counted the loop (issue 56: "say which in the finding")."""
    for lang in ("en", "zh"):
        said = failure_in(lang, q.accumulate_grads.check, _acc_reduce_in_while)
        assert says(said, q.TEXT, "acc_in_loop_run", lang), said


def test_a_loop_that_cannot_be_run_to_count_it_is_refused_and_said(monkeypatch):
    """Where the counted variant cannot be made (here: forced to fail), a loop that holds reductions has no
    figure: both judges refuse it and say why, with no count (`UNKNOWN_TRIPS` is not a fact about the program)."""
    from namedaxes.judging import counted_run

    def fails(exp):
        raise RuntimeError("no variant")

    monkeypatch.setattr(counted_run, "counted", fails)
    for lang in ("en", "zh"):
        said = failure_in(lang, q.accumulate_grads.check, _acc_reduce_in_while)
        assert says(said, q.TEXT, "acc_loop_unknown", lang), said
    reference = observe(q.accumulate_grads, ref_accumulate_grads)
    said = judge_observations(reference, observe(q.accumulate_grads, _acc_reduce_in_while), grade_id="no_variant")
    honest = judge_observations(reference, observe(q.accumulate_grads, _acc_while), grade_id="no_variant")
    reason = said.reason(limit=8)
    if jax_line_key() == "0.12":  # its grader refuses a global-view answer first; the honest loop reduces nothing
        assert not said.passed and SCAN_GRADED["0.12"] in reason and honest.passed, reason
        return
    assert not said.passed and "m2: communication: 1 of its loops reduce over the mesh" in reason, reason
    assert "running the program to count them failed" in reason and "1024" not in reason, reason
    assert "m2：通信：它有 1 个循环在网格上归约" in words.say(said.verdict, "zh", shown=8)
    assert honest.passed is False  # on 0.10.2 its loop reduces the loss's scalar: unknown too, and said so
    assert "1 of its loops reduce over the mesh" in honest.reason(limit=8)


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
