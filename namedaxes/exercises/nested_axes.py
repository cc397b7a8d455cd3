"""Exercises of notebook 03 (nested axes): checks, hints and observations.

Two named axes share the 8 devices as a 2 x 4 grid: `DATA_SHARDS` (outer,
rows) and `MODEL_REPLICAS` (inner, columns). `grid_sums` and
`device_coordinates` are *per-device* functions, run in the pmap-over-vmap
form `jax.pmap(jax.vmap(fn, axis_name=MODEL_REPLICAS), axis_name=DATA_SHARDS)`
on inputs of shape (rows, columns, ...). `row_normalize(x, mesh)` is a
global function that uses `jax.shard_map` over a 2-D mesh.

Checks go type -> shape/dtype -> value -> structure, and when a value is
wrong they say which reduction (over which axis) it matches instead.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType

from namedaxes import DATA_SHARDS, GRID_AXES, GRID_SHAPE, MODEL_REPLICAS
from namedaxes.checking import (CheckFailed, Exercise, collectives, expect_close, expect_collective,
                                explained, progress_of, same_values)
from namedaxes.grading import Case, programs, rng, spec

__all__ = ["grid_sums", "device_coordinates", "row_normalize", "grid_map", "grid_mesh", "progress"]
progress = progress_of(__name__)   # q.progress(): which exercises of the notebook pass

_AXIS_ENV = [(DATA_SHARDS, GRID_SHAPE[0]), (MODEL_REPLICAS, GRID_SHAPE[1])]
# Primitives that name an axis without moving data between devices.
_NOT_COMMUNICATION = {"pvary", "axis_index"}


# ---------------------------------------------------------------- shared helpers
def grid_map(fn):
    """The pmap-over-vmap form: `fn` runs once per (data shard, model replica) cell of the grid."""
    return jax.pmap(jax.vmap(fn, axis_name=MODEL_REPLICAS), axis_name=DATA_SHARDS)


def grid_mesh(shape=GRID_SHAPE):
    """A (DATA_SHARDS, MODEL_REPLICAS) mesh of `shape` devices, Auto axis types (plain arrays go in)."""
    return jax.make_mesh(tuple(shape), GRID_AXES, axis_types=(AxisType.Auto,) * 2)


def _grid_words(shape) -> str:
    return f"a {shape[0]} x {shape[1]} grid ('{DATA_SHARDS}' x '{MODEL_REPLICAS}')"


def _grid_rules(name: str, where: str, uses_shard_map: bool):
    """This notebook's own translations (nested pmap, shard_map specs); `checking.translate` does the rest."""
    def rule(err: BaseException) -> str | None:
        if not isinstance(err, ValueError):
            return None
        text = str(err)
        first = text.splitlines()[0] if text else type(err).__name__
        if "context mesh" in text:
            return (f"`{name}` failed {where}: \"{first}\". Nested `jax.pmap` does not work on this "
                    f"JAX; use collectives over the names the grid already binds.")
        if uses_shard_map and ("specs" in text or "shard_map" in text):
            return (f"`{name}` failed {where} with JAX's error \"ValueError: {first}\". Split x with "
                    f"`in_specs=P(DATA_SHARDS, MODEL_REPLICAS)`, put the blocks back with the same "
                    f"`out_specs`, and use the `mesh` argument (its axis types are Auto, so a plain "
                    f"array can go in).")
        return None
    return (rule,)


def _run(name: str, call, where: str, *, uses_shard_map: bool = False):
    """Run `call()`; crashes become readable messages (`checking.explained` plus this notebook's rules)."""
    with explained(name, run=f"The check, which runs `{name}` {where},", binds=GRID_AXES,
                   rules=_grid_rules(name, where, uses_shard_map)):
        return call()


def _describe(out) -> str:
    if isinstance(out, (tuple, list)):
        return f"a {type(out).__name__} of length {len(out)}"
    if isinstance(out, jax.Array):
        return f"a single array (all devices together: shape {tuple(out.shape)})"
    return f"a `{type(out).__name__}`"


def _expect_grid_array(label: str, value, grid: tuple, per_device: tuple, dtype) -> None:
    """`value` is the stacked output of the grid: shape grid + per_device, dtype `dtype`."""
    if not isinstance(value, jax.Array):
        raise CheckFailed(f"`{label}` should be a `jax.Array`, but it is a `{type(value).__name__}`: "
                          f"{value!r:.80}")
    if tuple(value.shape[:2]) != tuple(grid) or tuple(value.shape[2:]) != tuple(per_device):
        raise CheckFailed(
            f"On each device, `{label}` should have shape {tuple(per_device)}, but it has shape "
            f"{tuple(value.shape[2:])} (all devices together: {tuple(value.shape)}, expected "
            f"{tuple(grid) + tuple(per_device)}).")
    if np.dtype(value.dtype) != np.dtype(dtype):
        raise CheckFailed(f"`{label}` should have dtype {np.dtype(dtype).name}, but it has dtype "
                          f"{np.dtype(value.dtype).name}.")


def _expect_values(label: str, got, want, where: str, hint: str) -> None:
    """Values of `got` equal `want`; the message says where (which grid) they were checked."""
    try:
        expect_close(label, got, want, hint=hint)
    except CheckFailed as err:
        text = str(err).replace(f"`{label}` has the wrong values:", f"`{label}` has the wrong values {where}:", 1)
        raise CheckFailed(text) from None


def _uniform(r, shape) -> jax.Array:
    return jnp.asarray(r.uniform(0.5, 2.0, size=shape), jnp.float32)


_UNIFORM = {"kind": "uniform", "low": 0.5, "high": 2.0}     # the same values, drawn by the grader


# ---------------------------------------------------------------- 1. grid_sums
_SPANS = {
    DATA_SHARDS: "the devices in its column: same model replica, different data shards",
    MODEL_REPLICAS: "the devices in its row: same data shard, different model replicas",
    "both": "all devices of the grid",
}
_GRID_SUMS_PARTS = (
    (f"the sum over '{DATA_SHARDS}'", DATA_SHARDS, (0,)),
    (f"the sum over '{MODEL_REPLICAS}'", MODEL_REPLICAS, (1,)),
    ("the sum over both axes", "both", (0, 1)),
)


def _grid_reductions(x: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """Every reduction a per-device answer might plausibly have computed, by name."""
    x = np.asarray(x, dtype=np.float64)
    full = lambda a: np.broadcast_to(a, x.shape)  # noqa: E731
    found = []
    for what, axes in ((f"'{DATA_SHARDS}'", (0,)), (f"'{MODEL_REPLICAS}'", (1,)), ("both axes", (0, 1))):
        found.append((f"the sum over {what}", full(x.sum(axis=axes, keepdims=True))))
        found.append((f"the mean over {what}", full(x.mean(axis=axes, keepdims=True))))
    found.append(("x itself (nothing was reduced)", x))
    return found


def _check_grid_sums(fn) -> None:
    name = "grid_sums"
    r = rng("grid_sums_check")
    for grid, per_device in ((GRID_SHAPE, (3,)), ((2, 2), ())):
        x = _uniform(r, (*grid, *per_device))
        where = f"on {_grid_words(grid)}"
        out = _run(name, lambda: grid_map(fn)(x), where)
        if not isinstance(out, (tuple, list)) or len(out) != 3:
            raise CheckFailed(
                f"`{name}(x)` should return a tuple of three arrays (sum over DATA_SHARDS, sum over "
                f"MODEL_REPLICAS, sum over both), but it returns {_describe(out)}.")
        options = _grid_reductions(x)
        for k, ((want_words, span, axes), got) in enumerate(zip(_GRID_SUMS_PARTS, out)):
            label = f"{name}(x)[{k}]"
            _expect_grid_array(label, got, grid, per_device, jnp.float32)
            want = np.broadcast_to(np.asarray(x).sum(axis=axes, keepdims=True), x.shape)
            if same_values(got, want):
                continue
            seen = next((words for words, value in options if same_values(got, value)), None)
            if seen is not None:
                raise CheckFailed(
                    f"`{label}` should be {want_words} ({_SPANS[span]}), but {where} its values are "
                    f"{seen}. Reduce over {'both axes' if span == 'both' else repr(span)} in this part "
                    f"of the answer.")
            _expect_values(label, got, want, where,
                           hint=f"Expected {want_words}: each device adds up x over {_SPANS[span]}.")
    # Structure (a guard: under pmap-over-vmap the values above cannot be right without both axes).
    for axis, constant in zip(GRID_AXES, ("DATA_SHARDS", "MODEL_REPLICAS")):
        expect_collective(name, fn, jnp.float32(1.0), axis_name=axis, axis_env=_AXIS_ENV,
                          hint=f"Use `lax.psum` over `{constant}`.")


def _on_devices(fn, grid):
    """The per-device `fn` on a real grid of devices: `shard_map` over `grid_mesh(grid)`, one cell per device.

    What the grader runs (the visible checks use `grid_map`): here both axes are devices, so the
    communication over each of them is visible in the compiled program.
    """
    from jax.sharding import PartitionSpec as P
    spec = P(DATA_SHARDS, MODEL_REPLICAS)

    def per_block(block):
        return jax.tree.map(lambda part: jnp.asarray(part)[None, None], fn(block[0, 0]))

    return jax.shard_map(per_block, mesh=grid_mesh(grid), in_specs=spec, out_specs=spec, check_vma=False)


def _observe_on_grids(fn, grade_id: str, cases, draw) -> dict:
    """Exported programs: `fn` once per device of each grid, x of shape (*grid, *per_device) drawn by the grader."""
    del grade_id
    out = {}
    for grid, per_device in cases:
        tag = f"{grid[0]}x{grid[1]}_{'x'.join(map(str, per_device)) or 'scalar'}"
        out[tag] = Case(_on_devices(fn, grid), spec((*grid, *per_device), jnp.float32), draw=draw)
    return programs(out)


def _observe_grid_sums(fn) -> dict:
    return _observe_on_grids(fn, "grid_sums_each_axis",
                             ((GRID_SHAPE, (3,)), (GRID_SHAPE, ()), ((2, 2), (2, 3)), ((1, 4), (5,))),
                             _UNIFORM)


grid_sums = Exercise(
    "grid_sums", _check_grid_sums,
    hints=[
        "Three collectives, one per part: over DATA_SHARDS (down a column), over MODEL_REPLICAS "
        "(along a row), and over both axes (the whole grid).",
        "All three are `lax.psum` of `x`; only the `axis_name` changes. For the whole grid, `axis_name` "
        "is a tuple of both names.",
        "Return the three sums as a tuple, in the order asked: on the 2 × 4 grid, a column (2 devices), "
        "a row (4 devices), the whole grid (8 devices). Compare with the three panels of the picture.",
    ],
    observe=_observe_grid_sums)


# ---------------------------------------------------------------- 2. device_coordinates
def _check_device_coordinates(fn) -> None:
    name = "device_coordinates"
    r = rng("device_coordinates_check")
    for grid in (GRID_SHAPE, (2, 2)):
        x = jnp.asarray(r.normal(size=grid), jnp.float32)
        where = f"on {_grid_words(grid)}"
        out = _run(name, lambda: grid_map(fn)(x), where)
        if not isinstance(out, (tuple, list)) or len(out) != 3:
            raise CheckFailed(
                f"`{name}(x)` should return a tuple of three int32 scalars (row, column, flat index), but "
                f"it returns {_describe(out)}.")
        rows, cols = np.indices(grid)
        n_rows, n_cols = grid
        parts = (("row", rows, f"the position along '{DATA_SHARDS}' (`lax.axis_index(DATA_SHARDS)`)"),
                 ("column", cols, f"the position along '{MODEL_REPLICAS}' (`lax.axis_index(MODEL_REPLICAS)`)"),
                 ("flat index", rows * n_cols + cols,
                  "row * (size of MODEL_REPLICAS) + column, counting the grid row by row"))
        for k, ((what, want, how), got) in enumerate(zip(parts, out)):
            label = f"{name}(x)[{k}]"
            _expect_grid_array(label, got, grid, (), jnp.int32)
            if same_values(got, want):
                continue
            diagnosis = ""
            if what == "row" and same_values(got, cols):
                diagnosis = f"It is the position along '{MODEL_REPLICAS}' (the column) instead."
            elif what == "column" and same_values(got, rows):
                diagnosis = f"It is the position along '{DATA_SHARDS}' (the row) instead."
            elif what == "flat index":
                if same_values(got, cols * n_rows + rows):
                    diagnosis = ("It counts column by column (column * rows + row); count row by row: "
                                 "row * (size of MODEL_REPLICAS) + column.")
                elif n_cols != 4 and same_values(got, rows * 4 + cols):
                    diagnosis = ("It multiplies the row by 4, but this grid's rows have "
                                 f"{n_cols} devices: use `lax.axis_size(MODEL_REPLICAS)` instead of a "
                                 "hard-coded 4.")
                elif same_values(got, rows * n_rows + cols):
                    diagnosis = ("It multiplies the row by the size of DATA_SHARDS; a row has "
                                 "`lax.axis_size(MODEL_REPLICAS)` devices.")
            _expect_values(label, got, want, where, hint=f"Part {k} is the {what}: {how}. {diagnosis}")
    # Structure (a guard, as in grid_sums): both named axes are asked.
    for axis in GRID_AXES:
        expect_collective(name, fn, jnp.float32(1.0), axis_name=axis, axis_env=_AXIS_ENV,
                          hint="Each device learns its coordinates from the named axes with `lax.axis_index`.")


def _observe_device_coordinates(fn) -> dict:
    return _observe_on_grids(fn, "device_coordinates_grid",
                             ((GRID_SHAPE, ()), ((2, 2), (3,)), ((1, 4), ()), ((2, 1), (2,))),
                             {"kind": "normal"})


device_coordinates = Exercise(
    "device_coordinates", _check_device_coordinates,
    hints=[
        "x does not say where a device sits; the named axes do. Ask each axis for this device's position.",
        "`lax.axis_index(name)` is this device's position along one axis: ask DATA_SHARDS for the row "
        "and MODEL_REPLICAS for the column.",
        "Counting row by row, every full row before yours adds one row length: flat = row * (length of "
        "a row) + column. Take the length of a row from `lax.axis_size`, not a fixed 4: the checks also "
        "use a 2 × 2 grid.",
    ],
    observe=_observe_device_coordinates)


# ---------------------------------------------------------------- 3. row_normalize
def _communication(fn, *args) -> set[tuple[str, tuple[str, ...]]]:
    return {(p, axes) for p, axes in collectives(fn, *args) if p not in _NOT_COMMUNICATION}


def _check_row_normalize(fn) -> None:
    name = "row_normalize"
    r = rng("row_normalize_check")
    for grid, k in ((GRID_SHAPE, 3), ((2, 2), 1)):
        mesh = grid_mesh(grid)
        n_rows, n_cols = grid
        x = _uniform(r, (n_rows, n_cols * k))
        where = f"on a mesh of {_grid_words(grid)}, x of shape {tuple(x.shape)}"
        out = _run(name, lambda: fn(x, mesh), where, uses_shard_map=True)
        if not isinstance(out, jax.Array):
            raise CheckFailed(f"`{name}(x, mesh)` should return a `jax.Array`, but it returns a "
                              f"`{type(out).__name__}`: {out!r:.80}")
        if tuple(out.shape) != tuple(x.shape):
            raise CheckFailed(
                f"`{name}(x, mesh)` should return an array of x's shape {tuple(x.shape)}, but it returns "
                f"shape {tuple(out.shape)} ({where}). Use `out_specs=P(DATA_SHARDS, MODEL_REPLICAS)` so "
                f"the blocks are put back where they came from.")
        if np.dtype(out.dtype) != np.float32:
            raise CheckFailed(f"`{name}(x, mesh)` should have dtype float32, but it has dtype "
                              f"{np.dtype(out.dtype).name}.")
        xs = np.asarray(x, dtype=np.float64)
        blocks = xs.reshape(n_rows, n_cols, k)
        want = xs / xs.sum(axis=1, keepdims=True)
        if same_values(out, want):
            continue
        wrong = (
            (xs / xs.sum(axis=0, keepdims=True),
             f"It divides by the sum over '{DATA_SHARDS}' (down each column, across data shards); "
             f"a row lives on one data shard, spread over '{MODEL_REPLICAS}'."),
            ((blocks / blocks.sum(axis=2, keepdims=True)).reshape(xs.shape),
             f"It divides by each device's own part of the row: add those partial sums across "
             f"'{MODEL_REPLICAS}' with `lax.psum`."),
            ((blocks / blocks.sum(axis=1, keepdims=True)).reshape(xs.shape),
             f"It sums over '{MODEL_REPLICAS}' element by element, but a row also has several entries "
             f"on each device: first add up the block's own row (`jnp.sum(b, axis=1, keepdims=True)`), "
             f"then `lax.psum` over MODEL_REPLICAS."),
            (xs / xs.sum(), "It divides by the sum over both axes (the whole array), not by each row's sum."),
        )
        diagnosis = next((words for value, words in wrong if same_values(out, value)), "")
        _expect_values(f"{name}(x, mesh)", out, want, where,
                       hint=f"Expected each row of x divided by that row's sum. {diagnosis}")
    found = _communication(lambda a: fn(a, mesh), x)
    if not any(MODEL_REPLICAS in axes for _, axes in found):
        seen = ", ".join(f"{p} over {axes}" for p, axes in sorted(found)) or "no collective at all"
        raise CheckFailed(
            f"`{name}` should add up partial row sums across '{MODEL_REPLICAS}' with a collective inside "
            f"`jax.shard_map`, but it performs {seen}. The values are right, but the point is that each "
            f"device only holds its own block: use `jax.shard_map` and `lax.psum(..., MODEL_REPLICAS)`.")


def _observe_row_normalize(fn) -> dict:
    """Exported programs of `fn(x, mesh)` for three meshes (the grader draws x, reads the psum's axes)."""
    cases = {}
    for grid, k in ((GRID_SHAPE, 3), ((2, 2), 2), ((1, 4), 1)):
        mesh = grid_mesh(grid)
        cases[f"{grid[0]}x{grid[1]}_k{k}"] = Case(lambda x, mesh=mesh: fn(x, mesh),
                                                  spec((grid[0], grid[1] * k), jnp.float32), draw=_UNIFORM)
    return programs(cases)


row_normalize = Exercise(
    "row_normalize", _check_row_normalize,
    hints=[
        "Inside `jax.shard_map(..., in_specs=P(DATA_SHARDS, MODEL_REPLICAS))` each device sees a block of "
        "one row: its own columns of that row. The row's sum is spread over the row's devices.",
        "The devices of one row differ only in their column, so the partial sums combine with a `psum` "
        "over MODEL_REPLICAS, not DATA_SHARDS (section \"Which devices does a collective combine?\").",
        "Write a per-block function (local sum, `psum`, divide), wrap it with `jax.shard_map` over the "
        "`mesh` argument with the same spec for input and output, and call the result on `x`: section "
        "\"Form (b)\" shows the pattern.",
    ],
    observe=_observe_row_normalize)
