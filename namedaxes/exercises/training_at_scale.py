"""Exercises of notebook 10 (`10_training_at_scale`): one transformer on all the axes, and what a layout costs.

The notebook trains `namedaxes.transformer` on a mesh (DATA_PARALLEL, FSDP, MODEL_PARALLEL) of Explicit
axes. Each exercise asks for something the notebook did not show verbatim:

1. `swiglu_block(x, gate, up, down, mesh)`: the notebook's MLP had one matrix before its activation; a
   SwiGLU block (Shazeer, 2020) has two, `silu(x @ gate) * (x @ up)`, then `down`. The answer gathers
   the FSDP shards of its three matrices and keeps the hidden columns split over MODEL_PARALLEL (Megatron),
   so its compiled program performs exactly an all_gather over FSDP and one psum over MODEL_PARALLEL.
2. `step_costs(config, layout, batch)`: the cost model, as formulas: per-device bytes of parameters and
   Adam state, the bytes each kind of collective moves per step, and the matmul FLOPs per device. The
   notebook measured these on the compiled step; the answer predicts them for any size and layout (the
   tests prove the solution's formulas equal the compiled program's figures).
3. `choose_layout(config, batch, budget)`: the layout (data, fsdp, tensor) of 8 devices whose parameters
   and Adam state fit `budget` bytes per device and that moves the fewest bytes per step.
4. `step_time(config, layout, batch, chip)`: a step's time in four terms on any chip; its own module,
   `training_time`, imported at the end of this one (`q.step_time`).

Grading contract (`namedaxes.grading.programs`): exercise 1 exports the answer on three meshes (values,
layouts, and a structure case: the reference's collectives and nothing else, and no larger array on a
device than twice the reference's). Exercises 2 and 3 are formulas, judged by their values: the hidden
test records plain numbers (the five figures on 16 cost cases; the layouts chosen for 8 budget cases, each
with one cheapest layout that fits, so any right answer chooses it) on the cases the grader drew for the
run, and the grader compares them with the solution's figures on the same cases, which it computes itself.

Threat model of the formula exercises: an answer must not be able to call the right formula, so the
kernel package holds none. The visible checks compare with `training_at_scale.json`, the visible cases'
figures (and the usual mistakes' values, for the hints) computed by the solution notebook's answers
(`tools.answer_tables`, checked for drift by `make check-notebooks`). A lookup table of the visible cases
passes the visible check and scores 0. Nor does the package list the hidden cases: this module only
describes how they are drawn (`draw_hidden_cases`, with a cost model passed in); the grader draws them from
the run's secret (`autograder.judge.formulas`), hands them to the kernel (`namedaxes.grading.hidden_cases`),
and computes the solution's observation on them (`observation_on`). A table of right figures, filled once
and circulated, holds no figure of a fresh run's cases; a kernel that swaps the cases scores 0, because the
grader judges on the cases it drew. Outside the grader the visible cases stand in.

Student-facing strings: every message is a template in `TEXT` (whole sentences, named fields), every hint
a full string in its `exercise(...)`.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import re
from collections.abc import Callable
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from namedaxes import FSDP, MODEL_PARALLEL
from namedaxes.checking import exercises_for, expect_array, explained, fail, progress_of, same_values, show_values
from namedaxes.grading import FORMULA_KEY, Case, hidden_cases, programs
from namedaxes.i18n import Messages
from namedaxes.judging import work_of
from namedaxes.meshes import abstract_on as _on
from namedaxes.meshes import describe as _mesh_name
from namedaxes.meshes import with_mesh as _bound
from namedaxes.transformer import BATCH, Config, layout_mesh, shapes

__all__ = [
    "swiglu_block",
    "step_costs",
    "choose_layout",
    "step_time",
    "expected_figures",
    "COST_KEYS",
    "LAYOUTS",
    "TEXT",
    "progress",
]
exercise = exercises_for(__name__)  # this notebook's exercises: exercise(name, check, hints=..., observe=...)
progress = progress_of(__name__)  # q.progress(): which exercises of the notebook pass

COST_KEYS = ("state_bytes", "gather_bytes", "grad_reduce_bytes", "tensor_reduce_bytes", "flops")
LAYOUTS = tuple(s for s in itertools.product((1, 2, 4, 8), repeat=3) if math.prod(s) == 8)  # (data, fsdp, tensor)

# ---------------------------------------------------------------- every student-facing string
TEXT = {
    "in_specs": (
        '`{name}` failed with JAX\'s error "{first}": the specs given to `jax.shard_map` are not the ones '
        "the inputs were placed with. This exercise needs no `jax.shard_map` at all: it is the compiler's half, "
        "written with shardings only (`jax.reshard`, `out_sharding=`) on the `mesh` argument."
    ),
    "explicit": (
        '`{name}` failed with JAX\'s error "{first}". On Explicit axes a matmul whose summed dimension is '
        "split differently on its two sides is refused: gather the weight's FSDP shards first "
        "(`jax.reshard`), and name the layout of a result summed over split columns (`out_sharding=`)."
    ),
    "result_type": "`{name}` should return a `jax.Array`, but it returned a `{type}` {where}.",
    "shape": "`{name}` should return shape {want} {where}, but it returned shape {got}.",
    "values": "`{name}` has the wrong values {where}: expected {want}, got {got}. {hint}",
    "where_mesh": "(mesh {mesh}, {shapes})",
    "layout": "`{name}` returns the right shape {where}, but laid out as {got}; the exercise asks for {want}.",
    "layout_replicated": "P() (replicated: the same whole array on every device)",
    "seen_nothing": "no collective at all",
    "seen_join": ", ",
    # 1. swiglu_block
    "swiglu_gathers_tensor": (
        "`{name}` returns the right values, but its compiled program on {mesh} performs {seen}: something split "
        "over '{tensor}' (the weights' tensor split, or the hidden columns computed with it) is gathered, which "
        "the Megatron split never needs. Keep `gate` and `up` split by columns and `down` by rows over "
        "MODEL_PARALLEL; gather only their FSDP shards."
    ),
    "swiglu_missing": (
        "`{name}` returns the right values, but its compiled program on {mesh} has no {want}: {seen}. {why}"
    ),
    "swiglu_no_gather_why": (
        "The weights are stored split over FSDP: gather those shards before the matmuls, with `jax.reshard` to a "
        "spec that names MODEL_PARALLEL where the weight was stored and no FSDP."
    ),
    "swiglu_no_psum_why": (
        "Each device holds some hidden columns, so its `down` matmul gives a partial sum: one psum over "
        "MODEL_PARALLEL adds them, which the compiler writes when the matmul names its result's layout "
        "(`out_sharding=P(BATCH)`)."
    ),
    "swiglu_other": (
        "`{name}` returns the right values, but its compiled program on {mesh} also performs {seen}. The "
        "exercise allows {allowed} only."
    ),
    "swiglu_shard_map": (
        "`{name}` returns the right values, but it is written per device with `jax.shard_map` (over {axes}). "
        "This exercise is the compiler's half, like the notebook's model: shardings only (`jax.reshard`, "
        "`out_sharding=`), and the compiler writes the collectives."
    ),
    "swiglu_swapped": (
        "That is `silu(x @ up) * (x @ gate)`: the activation belongs to the gate, `silu(x @ gate) * (x @ up)`."
    ),
    "swiglu_no_gate": "That is `silu(x @ up) @ down` without the gate: multiply by `x @ up` element by element.",
    "swiglu_partial": (
        "That is one device's partial sum: only its own hidden columns were multiplied by `down`. Add the "
        "partial sums over MODEL_PARALLEL."
    ),
    "swiglu_generic": "Compare with one device: `(silu(x @ gate) * (x @ up)) @ down` on the whole matrices.",
    # 2. step_costs
    "costs_type": ("`{name}` should return a dict with the keys {keys}, each a number; it returned {got} for {case}."),
    "costs_value": "`{name}` predicts {key} = {got} for {case}, but the cost model gives {want}. {hint}",
    "costs_case": "the config {config}, layout (data, fsdp, tensor) = {layout}, batch {batch}",
    "costs_no_adam": (
        "That is the parameters alone: Adam keeps two moments per parameter, stored like it, so a device "
        "holds three times its parameters' bytes."
    ),
    "costs_whole": (
        "That is the whole model's figure, not one device's: divide each array by the devices its layout "
        "splits it over (the axes of its rule in `RULES`)."
    ),
    "costs_whole_flops": (
        "That is the whole step's FLOPs on one device, not one device's share: each device computes only its "
        "`batch / (data * fsdp)` sequences, and of the matrices split over MODEL_PARALLEL only its "
        "`1 / tensor` part (the FSDP shards are gathered, so FSDP does not divide the FLOPs)."
    ),
    "costs_zero_gather": (
        "0 would mean no FSDP all-gather, but fsdp = {size} here: before its matmuls each device gathers the "
        "FSDP shards of every weight it uses, whole (its own MODEL_PARALLEL part of it)."
    ),
    "costs_zero_grad": (
        "0 would mean no gradient all-reduce, but data * fsdp = {size} here: each device all-reduces the "
        "gradients of every parameter it uses (its own MODEL_PARALLEL part of each) with the other batch shards."
    ),
    "costs_zero_tensor": (
        "0 would mean no all-reduce over MODEL_PARALLEL, but tensor = {size} here: each layer adds the partial "
        "sums of its split matrices, 4 activations of shape `(batch / (data * fsdp), seq, d_model)` per layer "
        "and step."
    ),
    "costs_axis_one": (
        "An axis of size 1 splits nothing and moves nothing: no device sends anything over it, so that "
        "collective's bytes are 0."
    ),
    "costs_tensor_ignored": (
        "Each device gathers (or reduces) only its own MODEL_PARALLEL part of a weight: divide the arrays "
        "split over MODEL_PARALLEL by the tensor size."
    ),
    "costs_global_batch": ("That counts the whole batch: each device works on batch / (data * fsdp) sequences."),
    "costs_generic": "Compare with the notebook's measurement of the same figure for its config and layouts.",
    # 3. choose_layout
    "layout_type": (
        "`{name}` should return a tuple of three ints (data, fsdp, tensor) whose product is 8; it returned "
        "{got} for {case}."
    ),
    "layout_invalid": ("`{name}` chose {got} for {case}, which this model cannot use: {why}"),
    "layout_heads": "the heads ({heads}) do not split evenly over tensor = {tensor}.",
    "layout_batch": "the batch ({batch}) does not split evenly over data * fsdp = {shards}.",
    "layout_width": "d_model ({d}) and the vocabulary ({v}) do not split evenly over fsdp = {fsdp}.",
    "layout_over_budget": (
        "`{name}` chose {got} for {case}: each device then holds {need} bytes of parameters and Adam "
        "state, over the budget of {budget}. Shard the state further (a larger fsdp or tensor size)."
    ),
    "layout_not_cheapest": (
        "`{name}` chose {got} for {case}: it fits, but it moves {moved} bytes per step and device, while "
        "{better} fits too and moves {least}. Add up the three collectives' bytes of each layout that fits."
    ),
    "layout_case": "the config {config}, batch {batch}, budget {budget} bytes",
}
TEXT = Messages(TEXT)  # the table above, each lookup in the kernel's language


_say = TEXT.say  # a template of this module's TEXT, in the kernel's language, filled in


_fmt = functools.partial(show_values, dtype=float, threshold=12)  # an array in a message


def _f32(values) -> np.ndarray:
    return np.asarray(values, np.float32)


def _first_line(err: BaseException) -> str:
    text = str(err)
    return (text.splitlines()[0] if text else type(err).__name__)[:260]


def _rules(name: str):
    def rule(err: BaseException) -> str | None:
        text, first = str(err), _first_line(err)
        if isinstance(err, ValueError) and "does not match the specs of the input" in text:
            return _say("in_specs", name=name, first=first)
        if type(err).__name__ == "ShardingTypeError":
            return _say("explicit", name=name, first=first)
        return None

    return (rule,)


# ---------------------------------------------------------------- 1. swiglu_block
# each case: the layout (data, fsdp, tensor) and the sizes (batch, seq, d_model, hidden)
_SWIGLU_CASES = [((2, 2, 2), (8, 4, 16, 32)), ((1, 2, 4), (4, 3, 8, 16)), ((4, 2, 1), (8, 2, 8, 8))]
_WEIGHT_SPECS = {"gate": P(FSDP, MODEL_PARALLEL), "up": P(FSDP, MODEL_PARALLEL), "down": P(MODEL_PARALLEL, FSDP)}


_MANUAL = re.compile(r"manual_axes\s*=\s*\{([^}]*)\}")  # a shard_map region's axes in the lowered module


def _swiglu_inputs(sizes, seed: int = 0):
    b, t, d, f = sizes
    r = np.random.default_rng(70 + b + d + seed)
    x = _f32(r.normal(size=(b, t, d)))
    gate, up = (_f32(r.normal(size=(d, f)) / np.sqrt(d)) for _ in range(2))
    return x, gate, up, _f32(r.normal(size=(f, d)) / np.sqrt(f))


def _silu(a):
    return a / (1.0 + np.exp(-a))


def _swiglu_np(x, gate, up, down, variant: str = "right", tensor: int = 1) -> np.ndarray:
    x, gate, up, down = (np.asarray(a, np.float64) for a in (x, gate, up, down))
    if variant == "swapped":
        return (_silu(x @ up) * (x @ gate)) @ down
    if variant == "no_gate":
        return _silu(x @ up) @ down
    hidden = _silu(x @ gate) * (x @ up)
    if variant == "partial":
        cols = gate.shape[1] // tensor
        return hidden[..., :cols] @ down[:cols]
    return hidden @ down


def _swiglu_placed(mesh, x, gate, up, down):
    on = lambda spec: NamedSharding(mesh, spec)  # noqa: E731
    weights = [jax.device_put(w, on(_WEIGHT_SPECS[k])) for k, w in zip(("gate", "up", "down"), (gate, up, down))]
    return (jax.device_put(x, on(P(BATCH))), *weights)


def _run(name: str, program: Callable, mesh, *args):
    """`jax.jit(program)` lowered, compiled for `args` and run: (its result, the compiled program, the axes
    its `shard_map` regions are written per device over, read from the lowered module as the grader reads
    them)."""
    with explained(name, rules=_rules(name)), jax.set_mesh(mesh):
        lowered = jax.jit(program).lower(*args)
        compiled = lowered.compile()
        manual = sorted({a for body in _MANUAL.findall(lowered.as_text()) for a in re.findall(r'"([^"]+)"', body)})
        return compiled(*args), compiled, manual


def _moved(compiled, mesh) -> list[str]:
    names = tuple(mesh.axis_names)
    work = work_of(compiled, names, tuple(mesh.shape[a] for a in names), mesh.size)
    return sorted(d for d, _ in work.moved)


def _layout(out) -> tuple:
    entries = list(out.sharding.spec) if hasattr(out.sharding, "spec") else []
    entries = [tuple(e) if isinstance(e, list) else e for e in entries]
    return tuple(entries + [None] * (out.ndim - len(entries)))


def _spec_text(entries: tuple) -> str:
    if all(e is None for e in entries):
        return _say("layout_replicated")
    return "P(" + ", ".join("None" if e is None else repr(e) for e in entries) + ")"


def _expect_swiglu_result(name, out, mesh, x, weights, where) -> None:
    if not isinstance(out, jax.Array):
        fail(_say("result_type", name=name, type=type(out).__name__, where=where))
    expect_array(name, out, dtype=jnp.float32)
    if tuple(out.shape) != x.shape:
        fail(_say("shape", name=name, want=x.shape, got=tuple(out.shape), where=where))
    want = _swiglu_np(x, *weights)
    got = np.asarray(out, np.float64)
    if not same_values(got, want, 1e-4):
        tensor = mesh.shape[MODEL_PARALLEL]
        wrongs = [
            (_swiglu_np(x, *weights, "swapped"), "swiglu_swapped"),
            (_swiglu_np(x, *weights, "no_gate"), "swiglu_no_gate"),
            (_swiglu_np(x, *weights, "partial", tensor), "swiglu_partial"),
        ]
        hint = next((_say(k) for v, k in wrongs if same_values(got, v, 1e-4)), _say("swiglu_generic"))
        fail(_say("values", name=name, where=where, want=_fmt(want.ravel()), got=_fmt(got.ravel()), hint=hint))
    present = [a for a in BATCH if mesh.shape[a] > 1]
    want_layout = ((present[0] if len(present) == 1 else tuple(present)) if present else None, None, None)
    got_layout = tuple(
        None if e is None else (e if isinstance(e, str) else tuple(a for a in e if mesh.shape[a] > 1) or None)
        for e in _layout(out)
    )
    got_layout = tuple(e[0] if isinstance(e, tuple) and len(e) == 1 else e for e in got_layout)
    if got_layout != want_layout:
        fail(_say("layout", name=name, where=where, got=_spec_text(_layout(out)), want=_spec_text(want_layout)))


def _expect_swiglu_collectives(name, compiled, mesh) -> None:
    seen, mesh_name = _moved(compiled, mesh), _mesh_name(mesh)
    listed = _say("seen_join").join(seen) or _say("seen_nothing")
    gathered = [d for d in seen if d.startswith("all_gather") and MODEL_PARALLEL in d]
    if gathered:
        fail(
            _say(
                "swiglu_gathers_tensor",
                name=name,
                mesh=mesh_name,
                seen=_say("seen_join").join(gathered),
                tensor=MODEL_PARALLEL,
            )
        )
    need = {f"all_gather over '{FSDP}'": "swiglu_no_gather_why", f"psum over '{MODEL_PARALLEL}'": "swiglu_no_psum_why"}
    for want, why in need.items():
        if want not in seen:
            fail(_say("swiglu_missing", name=name, mesh=mesh_name, want=want, seen=listed, why=_say(why)))
    others = [d for d in seen if d not in need]
    if others:
        allowed = _say("seen_join").join(need)
        fail(_say("swiglu_other", name=name, mesh=mesh_name, seen=_say("seen_join").join(others), allowed=allowed))


def _check_swiglu_block(fn: Callable) -> None:
    name = "swiglu_block"
    for layout, sizes in _SWIGLU_CASES:
        mesh = layout_mesh(*layout)
        x, *weights = _swiglu_inputs(sizes)
        where = _say("where_mesh", mesh=_mesh_name(mesh), shapes=f"x {x.shape}, gate {weights[0].shape}")
        out, compiled, manual = _run(name, _bound(fn, mesh), mesh, *_swiglu_placed(mesh, x, *weights))
        _expect_swiglu_result(name, out, mesh, x, weights, where)
        if manual:
            fail(_say("swiglu_shard_map", name=name, axes=", ".join(repr(a) for a in manual)))
        if layout == _SWIGLU_CASES[0][0]:
            first = compiled, mesh
    _expect_swiglu_collectives(name, *first)


def _swiglu_abstract(mesh, sizes):
    b, t, d, f = sizes
    return (
        _on(mesh, (b, t, d), P(BATCH)),
        _on(mesh, (d, f), _WEIGHT_SPECS["gate"]),
        _on(mesh, (d, f), _WEIGHT_SPECS["up"]),
        _on(mesh, (f, d), _WEIGHT_SPECS["down"]),
    )


def _observe_swiglu_block(fn: Callable) -> dict:
    """Exported programs of `fn(x, gate, up, down, mesh)` on three layouts of (DATA_PARALLEL, FSDP,
    MODEL_PARALLEL), and a structure case on 2 x 2 x 2: the reference's collectives and nothing else, no
    array on a device more than twice the reference's largest."""
    cases = {}
    for layout, sizes in _SWIGLU_CASES:
        mesh = layout_mesh(*layout)
        key = "x".join(map(str, layout))
        context = functools.partial(jax.set_mesh, mesh)  # a PartitionSpec in the answer names this mesh's axes
        cases[key] = Case(_bound(fn, mesh), *_swiglu_abstract(mesh, sizes), rtol=1e-4, atol=1e-4, context=context)
    layout, sizes = _SWIGLU_CASES[0]
    mesh = layout_mesh(*layout)
    cases["structure"] = Case(
        _bound(fn, mesh),
        *_swiglu_abstract(mesh, sizes),
        context=functools.partial(jax.set_mesh, mesh),
        values=False,
        only_collectives=True,
        work={"largest_bytes": 2.0},
    )
    return programs(cases)


swiglu_block = exercise(
    "swiglu_block",
    _check_swiglu_block,
    hints=[
        "Section 2's MLP had `up` and `down`; a SwiGLU block has one more matrix before `down`. Which "
        "dimension of `gate` may stay split over MODEL_PARALLEL so that `silu(x @ gate) * (x @ up)` needs "
        "no communication?",
        "Gather only the FSDP shards: `jax.reshard` each weight to a spec that names MODEL_PARALLEL where it "
        "was stored and no FSDP (columns for `gate` and `up`, rows for `down`). Then `x @ gate` and `x @ up` "
        "are split by columns, as section 2's `GATHERED` rules split `up`.",
        "The `down` matmul sums over the split columns, and on Explicit axes JAX asks you to name its result's "
        "layout (`out_sharding=` of `jnp.einsum` or `jnp.matmul`): the layout the exercise wants makes the "
        "compiler add the partial sums with one psum over MODEL_PARALLEL.",
    ],
    observe=_observe_swiglu_block,
)


# ---------------------------------------------------------------- 2. step_costs
_COST_CASES = [  # what the visible check compares, on the notebook's model
    (Config(), (2, 2, 2), 16),
    (Config(), (8, 1, 1), 16),
    (Config(), (1, 2, 4), 16),
    (Config(d_model=64, heads=8, layers=3, seq=16), (4, 2, 1), 32),
]


@functools.cache
def _figures() -> dict:
    """The visible cases' expected figures (`training_at_scale.json`, written by `tools.answer_tables` from the
    solution notebook's own answers and checked for drift by `make check-notebooks`): the kernel holds no
    cost model, so no answer can call one."""
    return json.loads((Path(__file__).with_suffix(".json")).read_text(encoding="utf-8"))


def _layout_key(layout: tuple) -> str:
    return ",".join(map(str, layout))


def expected_figures(step_costs: Callable, choose_layout: Callable) -> dict:
    """What the visible checks compare with, computed by a reference's `step_costs` and `choose_layout`
    (`tools.answer_tables` passes the solution notebook's): for each visible cost case, the five figures and
    the values of the usual mistakes, each with the message key that explains it; for each visible layout
    case, the state and moved bytes of every usable layout and the reference's choice."""
    costs = []
    for config, layout, batch in _COST_CASES:
        right = step_costs(config, layout, batch)
        whole = step_costs(config, (1, 1, 1), batch)
        no_tensor = step_costs(config, (layout[0], layout[1], 1), batch)
        wide = step_costs(config, layout, batch * layout[0] * layout[1])
        every_parameter = 4 * sum(math.prod(s) for s in shapes(config).values())
        mistakes = {key: [] for key in COST_KEYS}  # a 0 of a collective is the zero rule's (`_ZERO`), not these
        mistakes["state_bytes"] += [[right["state_bytes"] / 3, "costs_no_adam"], [whole["state_bytes"], "costs_whole"]]
        mistakes["flops"].append([whole["flops"], "costs_whole_flops"])
        for key in ("gather_bytes", "grad_reduce_bytes"):
            mistakes[key].append([no_tensor[key] or every_parameter, "costs_tensor_ignored"])
        for key in ("tensor_reduce_bytes", "flops"):
            mistakes[key].append([wide[key], "costs_global_batch"])
        costs.append({"want": {k: right[k] for k in COST_KEYS}, "mistakes": mistakes})
    layouts = []
    for config, batch, budget in _LAYOUT_CASES:
        fitting = {}
        for layout in LAYOUTS:
            if not _usable(config, layout, batch):
                figures = step_costs(config, layout, batch)
                fitting[_layout_key(layout)] = [figures["state_bytes"], _moved_bytes(figures)]
        layouts.append({"usable": fitting, "best": list(choose_layout(config, batch, budget))})
    return {"step_costs": costs, "choose_layout": layouts}


def _case_text(config: Config, layout: tuple, batch: int) -> str:
    return _say("costs_case", config=repr(config), layout=layout, batch=batch)


def _number(value) -> float | None:
    try:
        return float(value) if not isinstance(value, bool) else None
    except (TypeError, ValueError):
        return None


def _numbers(got) -> dict:
    """The answer's five figures as floats (a key missing or not a number: None)."""
    return {k: _number(got.get(k)) for k in COST_KEYS} if isinstance(got, dict) else dict.fromkeys(COST_KEYS)


_ZERO = {  # a collective's figure: the message for a 0 where it moves bytes, and the size that makes it move
    "gather_bytes": ("costs_zero_gather", lambda data, fsdp, tensor: fsdp),
    "grad_reduce_bytes": ("costs_zero_grad", lambda data, fsdp, tensor: data * fsdp),
    "tensor_reduce_bytes": ("costs_zero_tensor", lambda data, fsdp, tensor: tensor),
}


def _figure_hint(key: str, got: float, want, layout: tuple, table: dict) -> str:
    """Why `got` is not `want`, said only where the cause is known: an axis of size 1, a 0 where the axis
    moves bytes, or one of the usual mistakes' values; otherwise the generic advice."""
    if want == 0:
        return _say("costs_axis_one")
    if got == 0 and key in _ZERO:
        text_key, size = _ZERO[key]
        return _say(text_key, size=size(*layout))
    wrong = [k for v, k in table["mistakes"][key] if v and math.isclose(got, v)]
    return _say(wrong[0]) if wrong else _say("costs_generic")


def _expect_figures(name: str, got, case: str, table: dict, layout: tuple) -> None:
    numbers = _numbers(got)
    if any(v is None for v in numbers.values()):
        fail(_say("costs_type", name=name, keys=", ".join(COST_KEYS), got=repr(got)[:120], case=case))
    for key in COST_KEYS:
        want = table["want"][key]
        if not math.isclose(numbers[key], want, rel_tol=1e-6, abs_tol=0.5):
            hint = _figure_hint(key, numbers[key], want, layout, table)
            got_text, want_text = f"{numbers[key]:,.0f}", f"{want:,}"
            fail(_say("costs_value", name=name, key=key, got=got_text, want=want_text, case=case, hint=hint))


def _check_step_costs(fn: Callable) -> None:
    name = "step_costs"
    for (config, layout, batch), table in zip(_COST_CASES, _figures()["step_costs"]):
        with explained(name):
            got = fn(config, layout, batch)
        _expect_figures(name, got, _case_text(config, layout, batch), table, layout)


def _cost_observation(fn: Callable, cases) -> dict:
    """`fn`'s five figures on `cases`, one array per figure (NaN where it gave no number)."""
    figures = [_numbers(fn(config, layout, batch)) for config, layout, batch in cases]
    return {key: np.array([np.nan if f[key] is None else f[key] for f in figures], np.float64) for key in COST_KEYS}


def _observe_step_costs(fn: Callable) -> dict:
    """The answer's five figures on the hidden cases the grader drew for this run (`draw_hidden_cases`), one
    array per figure, compared with the solution's figures on the same cases, which the grader computes: a
    formula is judged by its values, and nothing in the kernel knows the right ones. Outside the grader
    (no drawn cases) the visible cases stand in."""
    cases = _hidden_cases("step_costs", _cost_case) or _COST_CASES
    return {**_cost_observation(fn, cases), FORMULA_KEY: _formula("step_costs", ("step_costs",))}


step_costs = exercise(
    "step_costs",
    _check_step_costs,
    hints=[
        "Section 3 read five figures from the compiled step. For each, which arrays does it count, and by which "
        "axes of the layout is each of them divided on one device?",
        "An array's bytes on one device: 4 × its size / the sizes of the axes named in its rule (`RULES`). "
        "The state is the parameters and Adam's two moments. An FSDP gather brings a device its MODEL_PARALLEL "
        "part of each weight split over FSDP, whole; the gradient all-reduce moves that part of every parameter.",
        "Over MODEL_PARALLEL each layer all-reduces 4 activations of (batch / (data · fsdp), seq, d_model): two "
        "forward (attention's out, the MLP's down), two backward (their inputs' gradients). FLOPs: 3 × (2 × "
        "tokens × the matmul weights one device uses + attention's 4 × layers × tokens × seq × d_model / tensor). "
        "An axis of size 1 moves nothing.",
    ],
    observe=_observe_step_costs,
)


# ---------------------------------------------------------------- 3. choose_layout
def _usable(config: Config, layout: tuple, batch: int) -> str | None:
    """Why this model cannot use `layout` (the message), or None."""
    data, fsdp, tensor = layout
    if config.heads % tensor:
        return _say("layout_heads", heads=config.heads, tensor=tensor)
    if batch % (data * fsdp):
        return _say("layout_batch", batch=batch, shards=data * fsdp)
    if config.d_model % fsdp or config.vocab % fsdp:
        return _say("layout_width", d=config.d_model, v=config.vocab, fsdp=fsdp)
    return None


def _moved_bytes(costs: dict) -> int:
    return costs["gather_bytes"] + costs["grad_reduce_bytes"] + costs["tensor_reduce_bytes"]


_LAYOUT_CASES = [  # (config, batch, budget): the visible check's (some have ties: any of them passes)
    (Config(), 16, 10**6),
    (Config(), 16, 60_000),
    (Config(d_model=64, heads=8, layers=4), 64, 700_000),
    (Config(d_model=64, heads=8, layers=4), 8, 700_000),
]


def _as_layout(got) -> tuple | None:
    try:
        layout = tuple(int(v) for v in got)
    except (TypeError, ValueError):
        return None
    if len(layout) != 3 or math.prod(layout) != 8 or any(v < 1 for v in layout):
        return None
    return layout


def _expect_layout(name: str, got, case: str, config: Config, batch: int, budget: int, table: dict) -> None:
    layout = _as_layout(got)
    if layout is None:
        fail(_say("layout_type", name=name, got=repr(got)[:80], case=case))
    why = _usable(config, layout, batch)
    if why:
        fail(_say("layout_invalid", name=name, got=layout, case=case, why=why))
    need, moved = table["usable"][_layout_key(layout)]
    if need > budget:
        fail(_say("layout_over_budget", name=name, got=layout, case=case, need=f"{need:,}", budget=f"{budget:,}"))
    best = tuple(table["best"])
    least = table["usable"][_layout_key(best)][1]
    if moved > least:
        fail(
            _say(
                "layout_not_cheapest",
                name=name,
                got=layout,
                case=case,
                moved=f"{moved:,}",
                better=best,
                least=f"{least:,}",
            )
        )


def _check_choose_layout(fn: Callable) -> None:
    name = "choose_layout"
    for (config, batch, budget), table in zip(_LAYOUT_CASES, _figures()["choose_layout"]):
        case = _say("layout_case", config=repr(config), batch=batch, budget=f"{budget:,}")
        with explained(name):
            got = fn(config, batch, budget)
        _expect_layout(name, got, case, config, batch, budget, table)


def _layout_observation(fn: Callable, cases) -> dict:
    """The layout `fn` chose for each (config, batch, budget) of `cases` (0, 0, 0 where it is not one)."""
    return {"layouts": np.array([_as_layout(fn(*case)) or (0, 0, 0) for case in cases], np.int64).reshape(-1, 3)}


def _observe_choose_layout(fn: Callable) -> dict:
    """The layout chosen for each hidden (config, batch, budget) the grader drew for this run, compared with
    the solution's choice, which the grader computes: each drawn case has one cheapest layout that fits, so a
    right answer chooses it. Outside the grader the visible cases stand in."""
    cases = _hidden_cases("choose_layout", _layout_case) or _LAYOUT_CASES
    return {**_layout_observation(fn, cases), FORMULA_KEY: _formula("choose_layout", ("step_costs", "choose_layout"))}


choose_layout = exercise(
    "choose_layout",
    _check_choose_layout,
    hints=[
        "Sections 3 and 4 compared the layouts' communication and memory. What must a layout satisfy "
        "before its communication matters, and what do you compare among those that do?",
        "Loop over `LAYOUTS` (every (data, fsdp, tensor) of 8 devices). Skip those the model cannot use (heads, "
        "batch, d_model and vocabulary must divide) and those whose state_bytes exceed the budget.",
        "Among the rest, keep the layout whose gather, gradient and tensor bytes add up to the least; "
        "your `step_costs` gives them.",
    ],
    observe=_observe_choose_layout,
)


# ---------------------------------------------------------------- the hidden cases, drawn by the grader
# The kernel package lists no hidden case: the grader draws them for each run from its secret
# (`autograder.judge.formulas`, with this distribution and the solution notebook's own answers), hands them
# to the kernel (`namedaxes.grading.hidden_cases`) and computes the solution's observation on them itself.
HIDDEN_COST_CASES = 16
HIDDEN_LAYOUT_CASES = 8
_LAYOUT_WANTS = ((True, True), (True, True), (True, False)) + ((False, False),) * 5  # (budget binds, fsdp > 1)
_MAX_DRAWS = 2000


def _formula(exercise: str, answers: tuple) -> dict:
    """What the grader reads from the reference's observation: where the cases and the answers come from."""
    return {"module": __name__, "exercise": exercise, "answers": list(answers)}


def _config_of(fields) -> Config:
    names = ("vocab", "d_model", "heads", "layers", "seq", "mlp")
    if not isinstance(fields, dict) or set(fields) != set(names) or not all(type(fields[n]) is int for n in names):
        raise ValueError("not a config")
    return Config(**{n: fields[n] for n in names})


def _cost_case(case: dict) -> tuple:
    layout = tuple(int(v) for v in case["layout"])
    return _config_of(case["config"]), layout, int(case["batch"])


def _layout_case(case: dict) -> tuple:
    return _config_of(case["config"]), int(case["batch"]), int(case["budget"])


def _hidden_cases(exercise: str, parse: Callable) -> list | None:
    """This run's hidden cases of `exercise`, parsed; None outside the grader (or if they were tampered with:
    the grader judges on the cases it drew, so other cases score nothing)."""
    raw = hidden_cases(f"{__name__}:{exercise}")
    try:
        return [parse(case) for case in raw] if raw else None
    except (KeyError, TypeError, ValueError):
        return None


def _config_fields(config: Config) -> dict:
    return {n: getattr(config, n) for n in ("vocab", "d_model", "heads", "layers", "seq", "mlp")}


def _draw_config(r: np.random.Generator) -> Config:
    heads = int(r.choice([2, 4, 6, 8, 12, 16]))
    return Config(
        vocab=8 * int(r.integers(2, 13)),
        d_model=heads * int(r.choice([4, 6, 8, 16])),
        heads=heads,
        layers=int(r.integers(1, 7)),
        seq=int(r.choice([8, 12, 16, 20, 24, 32])),
        mlp=int(r.integers(2, 5)),
    )


def _draw_cost_cases(r: np.random.Generator) -> list[dict]:
    """Models of random sizes, each with a layout it can use and a batch that splits over it."""
    cases = []
    while len(cases) < HIDDEN_COST_CASES:
        config = _draw_config(r)
        layout = LAYOUTS[int(r.integers(len(LAYOUTS)))]
        batch = layout[0] * layout[1] * int(r.integers(1, 7))
        if not _usable(config, layout, batch):
            cases.append({"config": _config_fields(config), "layout": list(layout), "batch": batch})
    return cases


def _round_budget(low: int, high: int) -> int:
    """A round budget in [low, high): `low` rounded up to 3 significant figures where that stays below `high`."""
    step = 10 ** max(0, len(str(int(low))) - 3)
    budget = -(-int(low) // step) * step
    return budget if budget < high else int(low)


def _draw_layout_case(r: np.random.Generator, step_costs: Callable):
    """A model, a batch and a budget whose cheapest fitting layout is unique: (the case, that layout, whether
    the budget binds), or None."""
    config, batch = _draw_config(r), int(r.choice([4, 8, 12, 16, 24, 32, 48, 64]))
    figures = []
    for layout in LAYOUTS:
        if not _usable(config, layout, batch):
            costs = step_costs(config, layout, batch)
            figures.append((int(costs["state_bytes"]), int(_moved_bytes(costs)), layout))
    states = sorted({state for state, _, _ in figures})
    i = int(r.integers(len(states)))
    budget = _round_budget(states[i], states[i + 1] if i + 1 < len(states) else 2 * states[i])
    fitting = sorted((moved, layout) for state, moved, layout in figures if state <= budget)
    if len(fitting) > 1 and fitting[0][0] == fitting[1][0]:
        return None
    case = {"config": _config_fields(config), "batch": batch, "budget": budget}
    return case, fitting[0][1], fitting[0][0] > min(moved for _, moved, _ in figures)


def _draw_layout_cases(r: np.random.Generator, step_costs: Callable) -> list[dict]:
    """Eight budget cases, each with one cheapest layout that fits (so any right answer chooses it): in at
    least three the budget rules out the cheapest layout of all, at least two are won with fsdp > 1, and the
    first four are won by four different layouts."""
    cases, winners = [], set()
    for i, (binds, sharded) in enumerate(_LAYOUT_WANTS):
        for _ in range(_MAX_DRAWS):
            drawn = _draw_layout_case(r, step_costs)
            if drawn is None:
                continue
            case, winner, bound = drawn
            if (binds and not bound) or (sharded and winner[1] == 1) or (i < 4 and winner in winners):
                continue
            cases.append(case)
            winners.add(winner)
            break
        else:
            raise RuntimeError("no hidden layout case could be drawn")
    return cases


def draw_hidden_cases(exercise: str, r: np.random.Generator, answers: dict) -> list[dict]:
    """The grader's draw of a run's hidden cases of `exercise` (JSON), from `r` (seeded by the run's secret);
    `answers` are the solution notebook's functions (the layout cases need its cost model)."""
    if exercise == "step_costs":
        return _draw_cost_cases(r)
    if exercise == "choose_layout":
        return _draw_layout_cases(r, answers["step_costs"])
    raise KeyError(exercise)


def observation_on(exercise: str, cases: list[dict], answers: dict) -> dict:
    """What a right answer records on `cases` (the grader passes the solution notebook's `answers`)."""
    if exercise == "step_costs":
        return _cost_observation(answers["step_costs"], [_cost_case(c) for c in cases])
    if exercise == "choose_layout":
        return _layout_observation(answers["choose_layout"], [_layout_case(c) for c in cases])
    raise KeyError(exercise)


# ---------------------------------------------------------------- 4. step_time: its own module, on this face (`q.`)
from namedaxes.exercises.training_time import step_time  # noqa: E402 - after this module's own exercises
