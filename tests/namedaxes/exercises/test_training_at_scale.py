"""Notebook 10 (`10_training_at_scale`): every check and observation, proven both ways, and the cost model
proven against the compiled training step.

For each exercise: the reference answer (the solution notebook's) and equivalent right answers pass the
visible check and match the reference's observations under the grader's judge; the natural wrong answers
(the tensor split gathered, one device's partial sum, the parameters without Adam's moments, the whole
batch counted on one device, a layout over the budget, ...) are rejected with the message that helps, and
the grader rejects them too.
"""

import importlib
import inspect
import json
import math
import os
import pkgutil
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from exercise_text import NAMED, unused_text
from jax import lax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P
from judge_helpers import (
    agreement_test,
    assert_check_fails,
    assert_check_passes,
    formula_run_of,
    judge_observations,
    judging_formulas_of,
    matrix_rows,
    observations_match,
    observe,
)
from tamper_specs import old_hidden_cost_cases, old_hidden_layouts

from autograder.judge import score
from autograder.judge.compare import normalize
from namedaxes import DATA_PARALLEL, FSDP, MODEL_PARALLEL
from namedaxes import transformer as tm
from namedaxes.exercises import training_at_scale as q
from namedaxes.grading import FORMULA_KEY, HIDDEN_CASES_ENV, OBSERVE_DIR_ENV, record
from namedaxes.judging import work_of
from namedaxes.transformer import BATCH, RULES, Config


def _not_written(*args):
    raise NotImplementedError()


@pytest.fixture(autouse=True, scope="module")
def _a_grading_run():
    """Every observation in this file is made as the grader's kernel makes it: with one run's drawn cases
    handed in (`namedaxes.grading.hidden_cases`), so the matrices and the one-judge test judge the formula
    exercises on cases with one right layout each, as the grader does."""
    before = os.environ.get(HIDDEN_CASES_ENV)
    refs, run = _run(b"the matrices' run".ljust(32, b"."))
    os.environ[HIDDEN_CASES_ENV] = json.dumps(run.cases)
    with judging_formulas_of(refs, run):  # a wrong figure is named as the grader names it in that run
        yield
    if before is None:
        os.environ.pop(HIDDEN_CASES_ENV, None)
    else:
        os.environ[HIDDEN_CASES_ENV] = before


# ---------------------------------------------------------------- 1. swiglu_block
def ref_swiglu_block(x, gate, up, down, mesh):
    gate = jax.reshard(gate, P(None, MODEL_PARALLEL))
    up = jax.reshard(up, P(None, MODEL_PARALLEL))
    down = jax.reshard(down, P(MODEL_PARALLEL, None))
    hidden = jax.nn.silu(x @ gate) * (x @ up)
    return jnp.einsum("btf,fd->btd", hidden, down, out_sharding=P(BATCH))


def _swiglu_shard_map(x, gate, up, down, mesh):
    """The same block per device: the FSDP shards gathered with lax.all_gather, the partial sums psummed (the
    right values, but this exercise asks for the compiler's half, as the grader's global-view reference is)."""

    def local(x, gate, up, down):
        gate, up = (lax.all_gather(w, FSDP, axis=0, tiled=True) for w in (gate, up))
        down = lax.all_gather(down, FSDP, axis=1, tiled=True)
        hidden = jax.nn.silu(x @ gate) * (x @ up)
        return lax.psum(hidden @ down, MODEL_PARALLEL)

    specs = (P(BATCH), P(FSDP, MODEL_PARALLEL), P(FSDP, MODEL_PARALLEL), P(MODEL_PARALLEL, FSDP))
    return jax.shard_map(local, mesh=mesh, in_specs=specs, out_specs=P(BATCH))(x, gate, up, down)


def _swiglu_shard_map_specs_wrong(x, gate, up, down, mesh):
    """shard_map given the gathered layouts as its in_specs, not the ones the inputs were placed with."""

    def local(x, gate, up, down):
        return lax.psum((jax.nn.silu(x @ gate) * (x @ up)) @ down, MODEL_PARALLEL)

    specs = (P(BATCH), P(None, MODEL_PARALLEL), P(None, MODEL_PARALLEL), P(MODEL_PARALLEL, None))
    return jax.shard_map(local, mesh=mesh, in_specs=specs, out_specs=P(BATCH))(x, gate, up, down)


def _swiglu_no_gather(x, gate, up, down, mesh):
    """The weights never gathered: `x` split over FSDP along d_model, the partial sums added over FSDP."""
    x = jax.reshard(x, P(DATA_PARALLEL, None, FSDP))
    g = jnp.einsum("btd,df->btf", x, gate, out_sharding=P(DATA_PARALLEL, None, MODEL_PARALLEL))
    u = jnp.einsum("btd,df->btf", x, up, out_sharding=P(DATA_PARALLEL, None, MODEL_PARALLEL))
    out = jnp.einsum("btf,fd->btd", jax.nn.silu(g) * u, down, out_sharding=P(DATA_PARALLEL, None, FSDP))
    return jax.reshard(out, P(BATCH))


def _swiglu_sigmoid(x, gate, up, down, mesh):
    """silu written out, the matmuls as einsums, `down` gathered last."""
    g = jnp.einsum("btd,df->btf", x, jax.reshard(gate, P(None, MODEL_PARALLEL)))
    u = jnp.einsum("btd,df->btf", x, jax.reshard(up, P(None, MODEL_PARALLEL)))
    hidden = g * jax.nn.sigmoid(g) * u
    return jnp.einsum("btf,fd->btd", hidden, jax.reshard(down, P(MODEL_PARALLEL, None)), out_sharding=P(BATCH))


def _swiglu_hidden_named(x, gate, up, down, mesh):
    """The hidden layout named too, and the weights gathered in one reshard."""
    gate, up, down = jax.reshard((gate, up, down), (P(None, MODEL_PARALLEL),) * 2 + (P(MODEL_PARALLEL, None),))
    hidden_layout = P(BATCH, None, MODEL_PARALLEL)
    g = jnp.einsum("btd,df->btf", x, gate, out_sharding=hidden_layout)
    u = jnp.einsum("btd,df->btf", x, up, out_sharding=hidden_layout)
    return jnp.einsum("btf,fd->btd", jax.nn.silu(g) * u, down, out_sharding=P(BATCH))


def _swiglu_stored_shards(x, gate, up, down, mesh):
    """The weights used as stored: on Explicit axes the compiler gathers their FSDP shards itself."""
    return jnp.einsum("btf,fd->btd", jax.nn.silu(x @ gate) * (x @ up), down, out_sharding=P(BATCH))


SWIGLU_EQUIVALENT = {
    "silu written out": _swiglu_sigmoid,
    "the hidden layout named": _swiglu_hidden_named,
    "the weights used as stored": _swiglu_stored_shards,
}


@pytest.mark.parametrize(
    "answer", [ref_swiglu_block, *SWIGLU_EQUIVALENT.values()], ids=["reference", *SWIGLU_EQUIVALENT.keys()]
)
def test_swiglu_block_accepts_equivalent_answers(answer):
    assert_check_passes(q.swiglu_block.check, answer)


def test_swiglu_block_observations_of_equivalent_answers_match():
    reference = observe(q.swiglu_block, ref_swiglu_block)
    assert {"program:2x2x2", "program:1x2x4", "program:4x2x1", "program:structure"} <= set(reference)
    for answer in SWIGLU_EQUIVALENT.values():
        assert observations_match(reference, observe(q.swiglu_block, answer))


def _everything_gathered(x, gate, up, down, mesh):
    """Every weight gathered whole (its tensor split too): each device computes every hidden column."""
    gate, up, down = (jax.reshard(w, P()) for w in (gate, up, down))
    return (jax.nn.silu(x @ gate) * (x @ up)) @ down


def _swapped(x, gate, up, down, mesh):
    return ref_swiglu_block(x, up, gate, down, mesh)


def _no_gate(x, gate, up, down, mesh):
    up = jax.reshard(up, P(None, MODEL_PARALLEL))
    down = jax.reshard(down, P(MODEL_PARALLEL, None))
    return jnp.einsum("btf,fd->btd", jax.nn.silu(x @ up), down, out_sharding=P(BATCH))


def _partial_sum(x, gate, up, down, mesh):
    """One device's partial sum returned as the result: the psum over MODEL_PARALLEL forgotten."""

    def local(x, gate, up, down):
        gate, up = (lax.all_gather(w, FSDP, axis=0, tiled=True) for w in (gate, up))
        down = lax.all_gather(down, FSDP, axis=1, tiled=True)
        return (jax.nn.silu(x @ gate) * (x @ up)) @ down

    specs = (P(BATCH), P(FSDP, MODEL_PARALLEL), P(FSDP, MODEL_PARALLEL), P(MODEL_PARALLEL, FSDP))
    return jax.shard_map(local, mesh=mesh, in_specs=specs, out_specs=P(BATCH), check_vma=False)(x, gate, up, down)


def _sum_layout_unnamed(x, gate, up, down, mesh):
    """The `down` matmul without `out_sharding=`: on Explicit axes JAX refuses to guess the summed result's
    layout."""
    gate = jax.reshard(gate, P(None, MODEL_PARALLEL))
    up = jax.reshard(up, P(None, MODEL_PARALLEL))
    down = jax.reshard(down, P(MODEL_PARALLEL, None))
    return jnp.einsum("btf,fd->btd", jax.nn.silu(x @ gate) * (x @ up), down)


def _replicated(x, gate, up, down, mesh):
    return jax.reshard(ref_swiglu_block(x, gate, up, down, mesh), P())


SWIGLU_WRONG = {
    "unanswered": (_not_written, r"`swiglu_block` is not written yet"),
    "every weight gathered whole": (
        _everything_gathered,
        rf"(?s)right values, but its compiled program on 2 {DATA_PARALLEL} x 2 {FSDP} x 2 {MODEL_PARALLEL} "
        rf"performs all_gather over '{MODEL_PARALLEL}'.*the Megatron split never needs",
    ),
    "written per device with shard_map": (
        _swiglu_shard_map,
        rf"(?s)right values, but it is written per device with `jax.shard_map` \(over '{DATA_PARALLEL}', "
        rf"'{FSDP}', '{MODEL_PARALLEL}'\).*shardings only",
    ),
    "shard_map's in_specs not the placed ones": (
        _swiglu_shard_map_specs_wrong,
        r"(?s)failed with JAX's error.*not the ones the inputs were placed with\. This exercise needs no "
        r"`jax\.shard_map` at all.*`jax\.reshard`, `out_sharding=`\) on the `mesh` argument",
    ),
    "the weights never gathered": (
        _swiglu_no_gather,
        rf"(?s)right values, but its compiled program on .* has no all_gather over '{FSDP}': .*psum over "
        rf"'{FSDP}'.*gather those shards before the matmuls, with `jax\.reshard` to a spec that names "
        r"MODEL_PARALLEL where the weight was stored and no FSDP\.$",
    ),
    "gate and up swapped": (_swapped, r"(?s)wrong values.*the activation belongs to the gate"),
    "no gate": (_no_gate, r"(?s)wrong values.*without the gate"),
    "one device's partial sum": (_partial_sum, r"(?s)wrong values.*one device's partial sum"),
    "the summed result's layout not named": (
        _sum_layout_unnamed,
        r"(?s)failed with JAX's error.*name the layout of a result summed over split columns",
    ),
    "result replicated": (_replicated, r"(?s)laid out as P\(\) \(replicated.*the exercise asks for P\("),
}


@pytest.mark.parametrize("answer, match", SWIGLU_WRONG.values(), ids=SWIGLU_WRONG.keys())
def test_swiglu_block_rejects(answer, match):
    assert_check_fails(q.swiglu_block.check, answer, match=match)


def test_swiglu_block_observations_reject_wrong_answers():
    reference = observe(q.swiglu_block, ref_swiglu_block)
    swapped = judge_observations(reference, observe(q.swiglu_block, _swapped))
    assert not swapped.passed and "values differ" in swapped.reason(limit=8)
    gathered = judge_observations(reference, observe(q.swiglu_block, _everything_gathered))
    assert not gathered.passed and "values differ" not in gathered.reason(limit=8), gathered.reason(limit=8)


# ---------------------------------------------------------------- 2. step_costs
def ref_step_costs(config, layout, batch):
    """The solution notebook's cost model."""
    data, fsdp, tensor = layout
    sizes = dict(zip((DATA_PARALLEL, FSDP, MODEL_PARALLEL), layout))

    def split(name, axes):
        named = [a for e in RULES[name] if e is not None for a in ((e,) if isinstance(e, str) else e)]
        return int(np.prod([sizes[a] for a in named if a in axes]))

    counts = {name: int(np.prod(shape)) for name, shape in tm.shapes(config).items()}
    stored = sum(n // split(name, (FSDP, MODEL_PARALLEL)) for name, n in counts.items())
    used = {name: n // split(name, (MODEL_PARALLEL,)) for name, n in counts.items()}
    tokens = batch // (data * fsdp) * config.seq
    matmuls = 2 * tokens * sum(used[name] for name in ("qkv", "out", "up", "down", "unembed"))
    attention = 4 * config.layers * tokens * config.seq * config.d_model // tensor
    return {
        "state_bytes": 3 * 4 * stored,
        "gather_bytes": 4 * sum(n for name, n in used.items() if FSDP in str(RULES[name])) if fsdp > 1 else 0,
        "grad_reduce_bytes": 4 * sum(used.values()) if data * fsdp > 1 else 0,
        "tensor_reduce_bytes": 4 * 4 * config.layers * tokens * config.d_model if tensor > 1 else 0,
        "flops": 3 * (matmuls + attention),
    }


def _costs_by_parameter(config, layout, batch):
    """The same figures counted parameter by parameter, as NumPy numbers, in floats."""
    data, fsdp, tensor = layout
    per_layer = {
        "qkv": 3 * config.d_model * config.d_model / tensor,
        "out": config.d_model * config.d_model / tensor,
        "up": config.d_model * config.mlp * config.d_model / tensor,
        "down": config.mlp * config.d_model * config.d_model / tensor,
    }
    matrices = config.layers * sum(per_layer.values())
    tables = 2 * config.vocab * config.d_model + config.seq * config.d_model
    norms = (2 * config.layers + 1) * config.d_model
    tokens = np.float64(batch / (data * fsdp) * config.seq)
    flops = 3 * (2 * tokens * (matrices + config.d_model * config.vocab))
    flops += 3 * 4 * config.layers * tokens * config.seq * config.d_model / tensor
    return {
        "state_bytes": np.float32(12 * ((matrices + tables) / fsdp + norms)),
        "gather_bytes": np.int64(4 * (matrices + tables)) * (fsdp > 1),
        "grad_reduce_bytes": 4.0 * (matrices + tables + norms) * (data * fsdp > 1),
        "tensor_reduce_bytes": 16.0 * config.layers * tokens * config.d_model * (tensor > 1),
        "flops": flops,
    }


COSTS_EQUIVALENT = {"counted parameter by parameter": _costs_by_parameter}


@pytest.mark.parametrize(
    "answer", [ref_step_costs, *COSTS_EQUIVALENT.values()], ids=["reference", *COSTS_EQUIVALENT.keys()]
)
def test_step_costs_accepts_equivalent_answers(answer):
    assert_check_passes(q.step_costs.check, answer)


def test_step_costs_observations_of_equivalent_answers_match():
    reference = observe(q.step_costs, ref_step_costs)
    assert set(reference) == {*q.COST_KEYS, FORMULA_KEY}
    figures = [reference[k] for k in q.COST_KEYS]
    assert all(v.shape == (q.HIDDEN_COST_CASES,) and np.isfinite(v).all() for v in figures)
    for answer in COSTS_EQUIVALENT.values():
        assert observations_match(reference, observe(q.step_costs, answer))


def _changed(**changes):
    def answer(config, layout, batch):
        costs = ref_step_costs(config, layout, batch)
        for key, change in changes.items():
            costs[key] = change(costs, config, layout, batch)
        return costs

    return answer


def _layout_ignored(config, layout, batch):
    return ref_step_costs(config, (1, 1, 1), batch)


def _gathered_anyway(config, layout, batch):
    costs = ref_step_costs(config, layout, batch)
    costs["gather_bytes"] = ref_step_costs(config, (layout[0], 2, layout[2]), batch)["gather_bytes"]
    return costs


def _global_batch(config, layout, batch):
    costs = ref_step_costs(config, layout, batch * layout[0] * layout[1])
    return {**ref_step_costs(config, layout, batch), "tensor_reduce_bytes": costs["tensor_reduce_bytes"]}


COSTS_WRONG = {
    "unanswered": (_not_written, r"`step_costs` is not written yet"),
    "a list, not a dict": (lambda *a: list(ref_step_costs(*a).values()), r"(?s)should return a dict with the keys"),
    "parameters without Adam's moments": (
        _changed(state_bytes=lambda c, *a: c["state_bytes"] // 3),
        r"(?s)predicts state_bytes = 31,360 .* gives 94,080\. That is the parameters alone",
    ),
    "the layout ignored": (_layout_ignored, r"(?s)predicts state_bytes .*not one device's"),
    "a gather over an axis of size 1": (_gathered_anyway, r"(?s)predicts gather_bytes .*An axis of size 1"),
    "the whole batch on every device": (_global_batch, r"(?s)predicts tensor_reduce_bytes .*counts the whole batch"),
    "the FSDP gathers forgotten": (
        _changed(gather_bytes=lambda *a: 0),
        r"(?s)predicts gather_bytes = 0 .*gives 61,440\. 0 would mean no FSDP all-gather, but fsdp = 2 here",
    ),
    "the gradient all-reduce forgotten": (
        _changed(grad_reduce_bytes=lambda *a: 0),
        r"(?s)predicts grad_reduce_bytes = 0 .*0 would mean no gradient all-reduce, but data \* fsdp = 4 here",
    ),
    "the tensor all-reduces forgotten": (
        _changed(tensor_reduce_bytes=lambda *a: 0),
        r"(?s)predicts tensor_reduce_bytes = 0 .*0 would mean no all-reduce over MODEL_PARALLEL, but tensor = 2",
    ),
    "the whole step's FLOPs on one device": (
        _changed(flops=lambda c, config, layout, batch: ref_step_costs(config, (1, 1, 1), batch)["flops"]),
        r"(?s)predicts flops .*whole step's FLOPs on one device.*FSDP does not divide the FLOPs",
    ),
    "the FLOPs of the forward pass only": (
        _changed(flops=lambda c, *a: c["flops"] / 3),
        r"(?s)predicts flops .*Compare with the notebook's measurement",
    ),
}


@pytest.mark.parametrize("answer, match", COSTS_WRONG.values(), ids=COSTS_WRONG.keys())
def test_step_costs_rejects(answer, match):
    assert_check_fails(q.step_costs.check, answer, match=match)


def _failure(check, answer) -> str:
    with pytest.raises(AssertionError) as err:
        check(answer)
    return str(err.value)


@pytest.mark.parametrize("forgotten", ["gather_bytes", "grad_reduce_bytes", "tensor_reduce_bytes"])
def test_a_collective_counted_as_zero_is_never_called_the_whole_models_figure(forgotten):
    """A 0 where a collective moves bytes equals the one-device figure (one device sends nothing), but that
    is not why it is wrong: the message names the axis that moves the bytes, never the whole model."""
    said = _failure(q.step_costs.check, _changed(**{forgotten: lambda *a: 0}))
    assert f"predicts {forgotten} = 0" in said and "0 would mean no" in said
    assert "whole model" not in said and "An axis of size 1" not in said


@pytest.mark.parametrize(
    "answer, chinese",
    [
        (_changed(gather_bytes=lambda *a: 0), "fsdp = 2"),
        (_changed(tensor_reduce_bytes=lambda *a: 0), "tensor = 2"),
        (_changed(flops=lambda c, config, layout, batch: ref_step_costs(config, (1, 1, 1), batch)["flops"]), "FLOPs"),
    ],
)
def test_the_new_messages_speak_chinese(answer, chinese):
    from namedaxes import i18n

    try:
        i18n.set_language("zh")
        said = _failure(q.step_costs.check, answer)
    finally:
        i18n.set_language(None)
    assert chinese in said and re.search(r"[\u4e00-\u9fff]{6}", said), said
    assert "0 would mean" not in said and "whole step" not in said and "整个模型的数字" not in said


@pytest.mark.parametrize("layout", [(1, 1, 1), (2, 2, 2), (8, 1, 1), (1, 8, 1), (2, 1, 4), (4, 1, 2)])
def test_the_cost_model_is_the_compiled_step(layout):
    """The reference cost model equals the compiled training step's figures: state bytes (its arguments
    less the batch and the step count) and each collective's bytes exactly (the gradients' all-reduce
    carries the loss's 4 bytes too), the FLOPs within the element-wise work the model leaves out."""
    config, batch = Config(), 16
    mesh = tm.layout_mesh(*layout)
    params = tm.place(tm.init_params(config), mesh)
    with jax.set_mesh(mesh):
        state = jax.jit(tm.OPTIMIZER.init)(params)
        window = jax.ShapeDtypeStruct((batch, config.seq + 1), jnp.int32, sharding=NamedSharding(mesh, P(BATCH)))
        compiled = jax.jit(tm.train_step).lower(params, state, window).compile()
    want = ref_step_costs(config, layout, batch)
    shards = layout[0] * layout[1]
    args = compiled.memory_analysis().argument_size_in_bytes
    assert args == want["state_bytes"] + 4 * batch * (config.seq + 1) // shards + 4
    moved = dict(work_of(compiled, mesh.axis_names, tuple(mesh.shape.values()), mesh.size).moved)
    assert moved.get(f"all_gather over '{FSDP}'", 0) == want["gather_bytes"]
    grads = max([moved.get(f"psum over '{a}'", 0) for a in (DATA_PARALLEL, FSDP)])
    assert grads == (want["grad_reduce_bytes"] + 4 if shards > 1 else 0)
    assert moved.get(f"psum over '{MODEL_PARALLEL}'", 0) == want["tensor_reduce_bytes"]
    assert set(moved) <= {f"all_gather over '{FSDP}'", f"psum over '{MODEL_PARALLEL}'"} | {
        f"psum over '{a}'" for a in (DATA_PARALLEL, FSDP)
    }
    cost = compiled.cost_analysis()
    flops = (cost[0] if isinstance(cost, list | tuple) else cost)["flops"]
    assert 0.7 * flops <= want["flops"] <= flops, (want["flops"], flops)


# ---------------------------------------------------------------- 3. choose_layout
def ref_choose_layout(config, batch, budget):
    best, least = None, None
    for data, fsdp, tensor in q.LAYOUTS:
        if config.heads % tensor or batch % (data * fsdp) or config.d_model % fsdp or config.vocab % fsdp:
            continue
        costs = ref_step_costs(config, (data, fsdp, tensor), batch)
        moved = costs["gather_bytes"] + costs["grad_reduce_bytes"] + costs["tensor_reduce_bytes"]
        if costs["state_bytes"] <= budget and (least is None or moved < least):
            best, least = (data, fsdp, tensor), moved
    return best


def _last_of_ties(config, batch, budget):
    """The cheapest fitting layout, the last of several that tie, as a list."""
    fitting = []
    for layout in q.LAYOUTS:
        if q.cases.usable(config, layout, batch):
            continue
        costs = ref_step_costs(config, layout, batch)
        if costs["state_bytes"] <= budget:
            moved = costs["gather_bytes"] + costs["grad_reduce_bytes"] + costs["tensor_reduce_bytes"]
            fitting.append((moved, [-v for v in layout]))
    return [-v for v in min(fitting)[1]]


LAYOUT_EQUIVALENT = {"the last of the ties, as a list": _last_of_ties}


def test_the_visible_layout_cases_have_ties_and_budgets_that_bind():
    """Some visible case has two cheapest layouts (so the equivalent answer differs from the reference and
    passes), and in some the budget rules out the cheapest layout of all."""
    cases = q.cases.LAYOUT_CASES
    assert any(tuple(_last_of_ties(*c)) != ref_choose_layout(*c) for c in cases)
    assert any(ref_choose_layout(*c) != ref_choose_layout(c[0], c[1], 10**12) for c in cases)
    assert all(ref_choose_layout(*c) is not None for c in cases)


def _fitting(config, batch, budget) -> list[tuple[int, tuple]]:
    """(bytes moved, layout) of every usable layout that fits, cheapest first."""
    fitting = []
    for layout in q.LAYOUTS:
        costs = ref_step_costs(config, layout, batch)
        if not q.cases.usable(config, layout, batch) and costs["state_bytes"] <= budget:
            fitting.append((q.cases.moved_bytes(costs), layout))
    return sorted(fitting)


# ---------------------------------------------------------------- the hidden cases: drawn by the grader per run
SECRETS = [bytes([i]) * 32 for i in range(1, 13)]
GRADE_IDS = {"step_costs": "step_costs_formulas", "choose_layout": "choose_layout_budget"}
REFERENCES = {"step_costs": ref_step_costs, "choose_layout": ref_choose_layout}


def _run(secret: bytes):
    """One grading run's formula cases and reference observations, as the grader draws them (the cached
    reference observations are the reference run's: the visible cases, and the exercise they name)."""
    loaded = {gid: normalize(getattr(q, ex).observe(REFERENCES[ex])) for ex, gid in GRADE_IDS.items()}
    return formula_run_of("10_training_at_scale", loaded, secret)


def _drawn(secret: bytes, exercise: str) -> list:
    """The parsed hidden cases of `exercise` in the run of `secret`."""
    parse = q.cases.cost_case if exercise == "step_costs" else q.cases.layout_case
    return [parse(case) for case in _run(secret)[1].cases[f"{q.__name__}:{exercise}"]]


def _graded(secret: bytes, exercise: str, answer, monkeypatch, tmp_path):
    """The grader's verdict on `answer`'s hidden test in the run of `secret`: the kernel is handed the cases
    by the grader's prelude, records with `record`, and the judge compares with its own reference figures."""
    refs, run = _run(secret)
    exec(run.prelude(), {})  # the trusted prelude, as the kernel runs it (monkeypatch restores the variable)
    monkeypatch.setenv(OBSERVE_DIR_ENV, str(tmp_path))
    gid = GRADE_IDS[exercise]
    record(gid, getattr(q, exercise).observe(answer))
    got = tuple((tmp_path / (gid + suffix)).read_bytes() for suffix in (".npz", ".json"))
    return score._verdict(gid, refs, got, run)


@pytest.fixture
def kernel_env(monkeypatch):
    monkeypatch.setenv(HIDDEN_CASES_ENV, "")  # restored after the test: the prelude sets it in this process
    return monkeypatch


def test_each_drawn_layout_case_has_one_cheapest_layout_that_fits():
    """The grader compares the layout chosen with the solution's, so no hidden case may have a tie; and the
    cases are not all won by pure data parallelism: some budgets bind, and some are won with fsdp > 1. Every
    draw, whatever the secret."""
    for secret in SECRETS:
        cases = _drawn(secret, "choose_layout")
        assert len(cases) == q.HIDDEN_LAYOUT_CASES
        for case in cases:
            fitting = _fitting(*case)
            assert fitting and (len(fitting) == 1 or fitting[0][0] < fitting[1][0]), (case, fitting[:2])
            assert case[0].d_model % case[0].heads == 0 and case[0].vocab % 8 == 0
        assert sum(ref_choose_layout(*c) != ref_choose_layout(c[0], c[1], 10**12) for c in cases) >= 3
        assert sum(ref_choose_layout(*c)[1] > 1 for c in cases) >= 2
        assert len({ref_choose_layout(*c) for c in cases}) >= 4


def test_the_drawn_cost_cases_are_usable_varied_and_fresh_every_run():
    runs = [_drawn(secret, "step_costs") for secret in SECRETS[:4]]
    assert runs[0] == _drawn(SECRETS[0], "step_costs")  # one run: the same cases for every student
    for cases in runs:
        assert len(cases) == q.HIDDEN_COST_CASES and all(q.cases.usable(*case) is None for case in cases)
        assert len({layout for _, layout, _ in cases}) >= 6 and len({c for c, _, _ in cases}) == len(cases)
    assert not set(map(repr, runs[0])) & set(map(repr, runs[1]))  # another run: other cases
    assert _drawn(SECRETS[0], "choose_layout") != _drawn(SECRETS[1], "choose_layout")


def test_the_kernel_holds_figures_of_the_visible_cases_only():
    """The exercise module ships the visible cases' figures as data, computed by the solution notebook's
    answers (tools.answer_tables; `make check-notebooks` fails on drift): no function of the kernel package
    computes a cost, so no answer can call one, and it lists no hidden case."""
    from tools.answer_tables import TABLES, render

    (table,) = [t for t in TABLES if t.module == q.cases.__name__]
    assert table.path.read_text(encoding="utf-8") == render(table)
    figures = q.cases.visible_figures()
    assert len(figures["step_costs"]) == len(q.cases.COST_CASES) and len(figures["choose_layout"]) == len(
        q.cases.LAYOUT_CASES
    )
    drawn = _drawn(SECRETS[0], "step_costs")
    assert not {ref_step_costs(*case)["flops"] for case in drawn} & {f["want"]["flops"] for f in figures["step_costs"]}
    config, layout, batch = drawn[0]
    want = ref_step_costs(config, layout, batch)
    modules = [importlib.import_module(f"{q.__name__}.{m.name}") for m in pkgutil.iter_modules(q.__path__)]
    functions = [
        (n, o) for m in modules for n, o in vars(m).items() if inspect.isfunction(o) and o.__module__ == m.__name__
    ]
    assert len(functions) > 20  # the package's own functions, every module of it
    for name, obj in functions:  # an answer that calls any function of the package gets no figure
        try:
            got = obj(config, layout, batch)
        except Exception:  # noqa: BLE001 - most of them take other arguments: that is the point
            continue
        assert not (isinstance(got, dict) and want["flops"] in got.values()), name
    for name, value in [(n, v) for m in modules for n, v in vars(m).items()]:  # no list of cases: a few are visible
        if (
            isinstance(value, list | tuple)
            and value
            and isinstance(value[0], tuple)
            and isinstance(value[0][0], Config)
        ):
            assert name in ("COST_CASES", "LAYOUT_CASES", "_TIME_CASES"), name


@pytest.mark.parametrize(
    "answer", [ref_choose_layout, *LAYOUT_EQUIVALENT.values()], ids=["reference", *LAYOUT_EQUIVALENT.keys()]
)
def test_choose_layout_accepts_equivalent_answers(answer):
    assert_check_passes(q.choose_layout.check, answer)


def test_choose_layout_observations_of_equivalent_answers_match():
    reference = observe(q.choose_layout, ref_choose_layout)
    for answer in LAYOUT_EQUIVALENT.values():
        assert observations_match(reference, observe(q.choose_layout, answer))


def _least_memory(config, batch, budget):
    """The layout with the least state, whatever it moves."""
    usable = [layout for layout in q.LAYOUTS if not q.cases.usable(config, layout, batch)]
    return min(usable, key=lambda layout: ref_step_costs(config, layout, batch)["state_bytes"])


def _budget_ignored(config, batch, budget):
    return ref_choose_layout(config, batch, math.inf)


def _heads_ignored(config, batch, budget):
    """Every layout considered, the heads' split not checked: tensor = 8 over 4 heads."""
    return (1, 1, 8) if config.heads == 4 else ref_choose_layout(config, batch, budget)


LAYOUT_WRONG = {
    "unanswered": (_not_written, r"`choose_layout` is not written yet"),
    "the least memory": (_least_memory, r"(?s)chose \(1, 8, 1\) .*it fits, but it moves 221,824 bytes"),
    "the budget ignored": (_budget_ignored, r"(?s)chose \(8, 1, 1\) .*over the budget of 60,000"),
    "four heads over eight devices": (_heads_ignored, r"(?s)chose \(1, 1, 8\) .*the heads \(4\) do not split"),
    "a name, not a tuple": (lambda *a: "2x2x2", r"(?s)should return a tuple of three ints"),
}


@pytest.mark.parametrize("answer, match", LAYOUT_WRONG.values(), ids=LAYOUT_WRONG.keys())
def test_choose_layout_rejects(answer, match):
    assert_check_fails(q.choose_layout.check, answer, match=match)


def _circulated(exercise: str, cases: list):
    """An attack: a table of right figures, filled once from a right answer on `cases` and then circulated
    (the answer is a lookup; a case it does not hold gets the one-device figures, or pure data parallelism)."""
    right = REFERENCES[exercise]
    table = {repr(case): right(*case) for case in cases}
    if exercise == "step_costs":
        return lambda config, layout, batch: table.get(repr((config, layout, batch)), right(config, (1, 1, 1), batch))
    return lambda config, batch, budget: table.get(repr((config, batch, budget)), (8, 1, 1))


def test_a_circulated_table_of_right_figures_scores_nothing(kernel_env, tmp_path):
    """A table of right figures made from a right answer on the visible cases and on the old fixed hidden
    cases passes the visible check (it holds those very figures) and scores 0 on the cases the grader draws;
    so does a table of a past run's drawn cases in a fresh run. An honest right answer scores full marks."""
    for exercise, old in (("step_costs", old_hidden_cost_cases()), ("choose_layout", old_hidden_layouts())):
        visible = q.cases.COST_CASES if exercise == "step_costs" else q.cases.LAYOUT_CASES
        table = _circulated(exercise, [*visible, *old])
        assert_check_passes(getattr(q, exercise).check, table)
        assert not _graded(SECRETS[0], exercise, table, kernel_env, tmp_path).passed, exercise
        last_run = _circulated(exercise, _drawn(SECRETS[0], exercise))
        assert _graded(SECRETS[0], exercise, last_run, kernel_env, tmp_path).passed
        assert not _graded(SECRETS[1], exercise, last_run, kernel_env, tmp_path).passed, exercise
        for answer in (
            REFERENCES[exercise],
            *(COSTS_EQUIVALENT if exercise == "step_costs" else LAYOUT_EQUIVALENT).values(),
        ):
            assert _graded(SECRETS[1], exercise, answer, kernel_env, tmp_path).passed, (exercise, answer)


def test_the_grader_names_a_wrong_figure_by_the_usual_mistake_it_is(kernel_env, tmp_path):
    """Issue 48, for a formula: the grader's solution answers compute the usual mistakes' figures on the cases
    it drew (`mistakes_on`), and a figure that is one of them on every case where it is wrong is named as the
    visible check names it, with that sentence in both languages; the other wrong figure just differs."""
    from autograder.publish.words import say

    answer = COSTS_WRONG["parameters without Adam's moments"][0]
    verdict = _graded(SECRETS[3], "step_costs", answer, kernel_env, tmp_path)
    named = [d for d in verdict.differences if d.kind.value == "known_mistake"]
    assert [(d.get("key"), d.get("module"), d.get("mistake")) for d in named] == [
        ("state_bytes", "training_at_scale", "costs_no_adam")
    ]
    assert q.TEXT.english("costs_no_adam") in say(named[0], "en")
    assert say(named[0], "zh") != say(named[0], "en")
    plain = _graded(SECRETS[3], "step_costs", lambda *a: dict.fromkeys(q.COST_KEYS, 1), kernel_env, tmp_path)
    assert not plain.passed and all(d.kind.value == "values_differ" for d in plain.differences)


def test_cases_a_kernel_swaps_in_score_nothing(kernel_env, tmp_path):
    """The judge computes the reference's figures on the cases it drew, never on the ones a kernel echoes: a
    kernel that replaces the prelude's cases with the visible ones (whose figures it has) scores 0."""
    refs, run = _run(SECRETS[2])
    exec(run.prelude(), {})
    swapped = {key: [] for key in run.cases}  # the kernel's observe then falls back to the visible cases
    kernel_env.setenv(HIDDEN_CASES_ENV, json.dumps(swapped))
    kernel_env.setenv(OBSERVE_DIR_ENV, str(tmp_path))
    record("step_costs_formulas", q.step_costs.observe(ref_step_costs))
    got = tuple((tmp_path / f"step_costs_formulas{suffix}").read_bytes() for suffix in (".npz", ".json"))
    assert not score._verdict("step_costs_formulas", refs, got, run).passed


def test_the_prelude_hands_the_kernel_the_drawn_cases_and_no_figure(kernel_env):
    refs, run = _run(SECRETS[3])
    exec(run.prelude(), {})
    handed = json.loads(os.environ[HIDDEN_CASES_ENV])
    assert handed == run.cases and set(handed) == {f"{q.__name__}:{ex}" for ex in GRADE_IDS}
    assert not set(handed[f"{q.__name__}:step_costs"][0]) - {"config", "layout", "batch"}
    assert not set(handed[f"{q.__name__}:choose_layout"][0]) - {"config", "batch", "budget"}
    assert q.cases.hidden_cases_of("step_costs", q.cases.cost_case) == _drawn(SECRETS[3], "step_costs")


# ---------------------------------------------------------------- the model and the module's contract
def test_the_sharded_step_equals_the_one_device_step():
    """Three steps on 1 device and on 2 x 2 x 2: the same losses and the same parameters."""
    config, windows = Config(), tm.batches(Config(), 8, 3, seed=3)
    results = []
    for layout in [(1, 1, 1), (2, 2, 2)]:
        mesh = tm.layout_mesh(*layout)
        params = tm.place(tm.init_params(config), mesh)
        with jax.set_mesh(mesh):
            state = jax.jit(tm.OPTIMIZER.init)(params)
            step, losses = jax.jit(tm.train_step), []
            for w in windows:
                params, state, loss = step(params, state, jax.device_put(w, NamedSharding(mesh, P(BATCH))))
                losses.append(float(loss))
        results.append((losses, params))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-5)
    for name in RULES:
        np.testing.assert_allclose(results[0][1][name], results[1][1][name], rtol=1e-4, atol=1e-5)
    assert results[1][1]["qkv"].sharding.spec == RULES["qkv"]


def test_every_student_facing_string_is_used_and_hints_are_ladders():
    unused = unused_text(q, NAMED)  # some keys are named in tables of rules
    assert not unused, f"TEXT entries nothing uses: {unused}"
    for exercise in (q.swiglu_block, q.step_costs, q.choose_layout):
        assert len(exercise._hints) == 3, exercise.name


# ---------------------------------------------------------------- one judge (issue 16)
test_the_visible_check_and_the_grader_agree = agreement_test(
    {
        "swiglu_block": (q.swiglu_block, *matrix_rows(ref_swiglu_block, SWIGLU_EQUIVALENT, SWIGLU_WRONG)),
        "step_costs": (q.step_costs, *matrix_rows(ref_step_costs, COSTS_EQUIVALENT, COSTS_WRONG)),
        "choose_layout": (q.choose_layout, *matrix_rows(ref_choose_layout, LAYOUT_EQUIVALENT, LAYOUT_WRONG)),
    }
)
