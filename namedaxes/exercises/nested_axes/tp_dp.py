"""Exercise 4, `tp_dp_step`: one step of data and tensor parallelism on the 2-D grid."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from namedaxes import DATA_SHARDS, MODEL_REPLICAS
from namedaxes.checking import (
    examined,
    expect_work_within,
    fail,
    fail_values,
    mistake_sentence,
    same_values,
)
from namedaxes.grading import Case, programs, spec
from namedaxes.judging import exported_work
from namedaxes.model import LEARNING_RATE

from .running import (
    EXAMPLES,
    FEATURES,
    auto_grid_mesh,
    exercise,
    expect_global_array,
    expect_grid_program,
    explained_run,
    grid_words,
    run_answer,
    seen_descriptions,
)
from .text import say

# tp_dp_step's work case: a wide w and few examples, so that all of w is the largest array a device could hold
# (a device of the 2 x 4 grid holds 1/4 of w, 64 entries, and a 2 x 64 block of x). The grader
# (`Case(work=...)`) and the visible check judge the largest array one device materializes, read from the
# compiled per-device program, at most `_TP_LARGEST_FACTOR` times the reference's (`_TP_REFERENCE_LARGEST`
# bytes, measured from the solution notebook's program; a test keeps it true). Gathering all of w: 2x.
_TP_WORK_FEATURES, _TP_WORK_EXAMPLES, _TP_WORK_GRID = 256, 4, (2, 4)
_TP_LARGEST_FACTOR = 1.5
_TP_REFERENCE_LARGEST = 512


# ---------------------------------------------------------------- 4. tp_dp_step
def tp_dp_step_np(w, batch, learning_rate: float = LEARNING_RATE) -> np.ndarray:
    """The step every `tp_dp_step` must match, in float64 NumPy on one device: one SGD step of the mean
    squared error of the linear model `x @ w` on the whole batch (gradient in closed form)."""
    x, y, w = (np.asarray(a, np.float64) for a in (batch["x"], batch["y"], w))
    return w - learning_rate * 2.0 * x.T @ (x @ w - y) / x.shape[0]


_TP_MESHES = ((2, 4), (4, 2))  # the visible checks; the hidden test adds 2 x 2


def _tp_inputs(grid, seed: int):
    r = np.random.RandomState(30 + seed)
    w = r.normal(size=FEATURES)
    x = r.normal(size=(EXAMPLES, FEATURES))
    y = x @ np.linspace(1.0, -1.0, FEATURES) + 0.1 * r.normal(size=EXAMPLES)
    f32 = lambda a: jnp.asarray(a, jnp.float32)  # noqa: E731
    return f32(w), {"x": f32(x), "y": f32(y)}


def _tp_partial_products_step(w, x, y, grid) -> np.ndarray:
    """What device (i, j) computes when it predicts with its own partial product only, averaged over i."""
    n_rows, n_cols = grid
    ex, ft = x.shape[0] // n_rows, len(w) // n_cols
    new = w.copy()
    for j in range(n_cols):
        cols = slice(j * ft, (j + 1) * ft)
        grads = []
        for i in range(n_rows):
            xb, yb = x[i * ex : (i + 1) * ex, cols], y[i * ex : (i + 1) * ex]
            grads.append(2.0 * xb.T @ (xb @ w[cols] - yb) / ex)
        new[cols] = w[cols] - LEARNING_RATE * np.mean(grads, axis=0)
    return new


def tp_mistakes(w, batch, grid) -> list[tuple]:
    """The usual mistakes' new w on `w` and `batch` (on a `grid` of data shards x model shards): w unchanged,
    a step up the gradient, the data shards' gradients added (the step `n_rows` times too large), the
    prediction counted once per model shard (`n_cols` times), the data shards averaged twice, the partial
    products averaged, each device predicting with its own partial product, the gradients averaged over the
    model axis too, the first data shard's examples only (the check's diagnoses, and the grader's). The data
    shards' sum divided by 2, a number written by hand (right on 2 x 4, twice the step on 4 x 2, where the
    prediction counted once per model shard gives the same values), is no known mistake of the values: the
    check says it is right on another mesh."""
    x, y, old = (np.asarray(a, np.float64) for a in (batch["x"], batch["y"], w))
    n_rows, n_cols = grid
    ref_step = tp_dp_step_np(old, {"x": x, "y": y}) - old
    rows = x.shape[0] // n_rows
    mixed = np.tile(ref_step.reshape(n_cols, -1).mean(axis=0), n_cols)
    averaged = old - LEARNING_RATE * 2.0 * x.T @ (x @ old / n_cols - y) / x.shape[0]
    return [
        (old, "tp_unchanged", {}),
        (old - ref_step, "tp_sign", {}),
        (old + n_rows / 2 * ref_step, None, {}),  # the data shards' sum divided by 2, written by hand (`tp_right_on`)
        (old + n_rows * ref_step, "tp_data_sum", {"k": n_rows}),
        (old + n_cols * ref_step, "tp_model_sum", {"k": n_cols}),
        (old + ref_step / n_rows, "tp_data_small", {"k": n_rows}),
        (averaged, "tp_predictions_averaged", {}),
        (_tp_partial_products_step(old, x, y, grid), "tp_partial_products", {}),
        (old + mixed, "tp_mixed_shards", {}),
        (tp_dp_step_np(old, {"x": x[:rows], "y": y[:rows]}), "tp_local_examples", {}),
    ]


def _tp_diagnosis(got, w, batch, grid, passed_on) -> str:
    if passed_on is not None:
        return say("tp_right_on", good=grid_words(passed_on))
    return mistake_sentence(say, got, tp_mistakes(w, batch, grid), 1e-4, otherwise=say("tp_generic"))


def _check_tp_dp_step(fn) -> None:
    name = "tp_dp_step"
    label = f"{name}(w, batch, mesh)"
    facts, passed_on = None, None
    for seed, grid in enumerate(_TP_MESHES):
        mesh = auto_grid_mesh(grid)
        w, batch = _tp_inputs(grid, seed)
        where = say("on_mesh_step", grid=grid_words(grid), features=FEATURES, examples=EXAMPLES)
        out = run_answer(
            name,
            lambda: jax.jit(lambda w_, b_: fn(w_, b_, mesh))(w, batch),  # noqa: B023 - run in this iteration
            where,
            fix="fix_tp_dp_step",
            mesh_shape=grid,
        )
        expect_global_array(label, out, (FEATURES,), where, say("tp_shape_hint"))
        got = np.asarray(out, np.float64)
        want = tp_dp_step_np(w, batch)
        if not same_values(got, want, 1e-5):
            fail_values(
                say,
                "tp_update",
                want,
                got,
                one_line=True,
                name=name,
                where=where,
                hint=_tp_diagnosis(got, w, batch, grid, passed_on),
            )
        passed_on = passed_on or grid
        if facts is None:  # the grader's steps, on the first mesh's inputs (see row_normalize)
            with explained_run(name, where, "fix_tp_dp_step", grid):
                facts = examined(lambda w_, x_, y_: fn(w_, {"x": x_, "y": y_}, mesh), w, batch["x"], batch["y"])  # noqa: B023 - run in this iteration
    over_model = [d for d in facts.present if d.endswith(f" over '{MODEL_REPLICAS}'")]
    if f"psum over '{MODEL_REPLICAS}'" not in over_model:
        fail(
            say(
                "tp_gathers" if over_model else "tp_needs_psum_model",
                name=name,
                seen=seen_descriptions(over_model),
                m=MODEL_REPLICAS,
            )
        )
    over_data = [d for d in facts.present if d.endswith(f" over '{DATA_SHARDS}'")]
    if f"psum over '{DATA_SHARDS}'" not in over_data:
        fail(say("tp_needs_data", name=name, seen=seen_descriptions(over_data), d=DATA_SHARDS))
    specs = (((MODEL_REPLICAS,),), ((DATA_SHARDS,), (MODEL_REPLICAS,)), ((DATA_SHARDS,),))
    over, outs = (MODEL_REPLICAS, DATA_SHARDS), (((MODEL_REPLICAS,),),)
    expect_grid_program(name, facts, over, specs, outs, say("tp_layout_hint"), "psum")
    _expect_tp_work(name, fn)


def _tp_work_args():
    return (
        jax.ShapeDtypeStruct((_TP_WORK_FEATURES,), jnp.float32),
        jax.ShapeDtypeStruct((_TP_WORK_EXAMPLES, _TP_WORK_FEATURES), jnp.float32),
        jax.ShapeDtypeStruct((_TP_WORK_EXAMPLES,), jnp.float32),
    )


def _expect_tp_work(name: str, fn) -> None:
    """No device holds all of w: the largest array one device of the work case materializes (read from the
    compiled per-device program, as the grader reads it) is at most `_TP_LARGEST_FACTOR` times the
    reference's."""
    mesh = auto_grid_mesh(_TP_WORK_GRID)
    where = say("on_mesh_step", grid=grid_words(_TP_WORK_GRID), features=_TP_WORK_FEATURES, examples=_TP_WORK_EXAMPLES)
    with explained_run(name, where, "fix_tp_dp_step", _TP_WORK_GRID):
        program = jax.jit(lambda w_, x_, y_: fn(w_, {"x": x_, "y": y_}, mesh))
        work = exported_work(jax.export.export(program)(*_tp_work_args()))
    expect_work_within(
        work,
        "largest_bytes",
        _TP_REFERENCE_LARGEST,
        _TP_LARGEST_FACTOR,
        say,
        "tp_holds_w",
        name=name,
        features=_TP_WORK_FEATURES,
        examples=_TP_WORK_EXAMPLES,
    )


def tp_case_grid(case: str) -> tuple | None:
    """The grid of a graded case of `_observe_tp_dp_step` ("2x4", "work"), None for one that judges no values."""
    if case == "work":
        return _TP_WORK_GRID
    rows, _, cols = case.partition("x")
    return (int(rows), int(cols)) if rows.isdigit() and cols.isdigit() else None


def _observe_tp_dp_step(fn) -> dict:
    """Programs of `fn(w, batch, mesh)` on 2 x 4, 4 x 2 and 2 x 2 meshes (plain inputs, drawn by the grader),
    plus the 2 x 4 one again as a structure case: the reference's psums over both axes are required."""
    cases = {}
    for grid in ((2, 4), (4, 2), (2, 2)):
        mesh = auto_grid_mesh(grid)
        program = lambda w, x, y, mesh=mesh: fn(w, {"x": x, "y": y}, mesh)  # noqa: E731
        args = (spec((FEATURES,), jnp.float32), spec((EXAMPLES, FEATURES), jnp.float32), spec((EXAMPLES,), jnp.float32))
        cases[f"{grid[0]}x{grid[1]}"] = Case(program, *args)
        if grid == (2, 4):
            cases["collectives"] = Case(program, *args, values=False)
            cases["work"] = Case(program, *_tp_work_args(), work={"largest_bytes": _TP_LARGEST_FACTOR})
    return programs(cases)


tp_dp_step = exercise("tp_dp_step", _check_tp_dp_step, observe=_observe_tp_dp_step)
