"""Notebook 03 (nested axes): every check proven both ways, and observe() stable under equivalent answers.

For each exercise: RIGHT answers (the reference and other correct formulations) pass the visible check
and observe like the reference; WRONG answers (the plausible mistakes, including the issue's checker
gaps) fail with a specific message and do not observe like the reference.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P
from judge_helpers import (
    agreement_test,
    assert_check_fails,
    assert_check_passes,
    derived,
    judge_observations,
    observations_match,
    observe,
)

from namedaxes import DATA_SHARDS, GRID_AXES, GRID_SHAPE, MODEL_REPLICAS
from namedaxes.exercises import nested_axes as q
from namedaxes.exercises.nested_axes import tp_dp as tp_module

D, M = DATA_SHARDS, MODEL_REPLICAS
SPEC = P(D, M)


def _not_written(*args):
    raise NotImplementedError()


def test_grid_map_is_the_pmap_over_vmap_form():
    x = jnp.arange(8.0).reshape(GRID_SHAPE)
    out = q.grid_map(lambda v: (lax.axis_index(D), lax.axis_index(M)))(x)
    np.testing.assert_array_equal(out[0], [[0] * 4, [1] * 4])
    np.testing.assert_array_equal(out[1], [[0, 1, 2, 3]] * 2)


def test_auto_grid_mesh_takes_plain_arrays_and_uses_the_grid_devices():
    mesh = q.auto_grid_mesh()
    assert mesh.axis_names == GRID_AXES and mesh.devices.shape == GRID_SHAPE
    out = jax.shard_map(lambda b: b + lax.axis_index(M), mesh=mesh, in_specs=SPEC, out_specs=SPEC)(
        jnp.zeros(GRID_SHAPE)
    )
    np.testing.assert_array_equal(out, [[0, 1, 2, 3]] * 2)
    assert q.auto_grid_mesh((2, 2)).devices.shape == (2, 2)


# ---------------------------------------------------------------- grid_sums
# Part 0: devices with the same data shard (a row: psum over MODEL_REPLICAS); part 1: the same model
# shard (a column: psum over DATA_SHARDS); part 2: the devices in neither (the grid minus the row and the
# column, x added back once).
def grid_sums_ref(x):
    row, column = lax.psum(x, M), lax.psum(x, D)
    return row, column, lax.psum(x, (D, M)) - row - column + x


GRID_SUMS_RIGHT = [
    grid_sums_ref,
    lambda x: (  # two nested psums
        lax.psum(x, M),
        lax.psum(x, D),
        lax.psum(lax.psum(x, M), D) - lax.psum(x, M) - lax.psum(x, D) + x,
    ),
    lambda x: (  # the other rows' sums, minus what this column holds there
        lax.psum(x, M),
        lax.psum(x, D),
        lax.psum(lax.psum(x, M), D) - lax.psum(x, M) - (lax.psum(x, D) - x),
    ),
    lambda x: [  # a list, pmean * size, names in the other order
        lax.pmean(x, M) * lax.axis_size(M),
        lax.pmean(x, D) * lax.axis_size(D),
        lax.psum(x, (M, D)) - lax.pmean(x, M) * lax.axis_size(M) - lax.pmean(x, D) * lax.axis_size(D) + x,
    ],
    lambda x: (  # gathered and added up, the grid as a tuple of the names' strings
        lax.all_gather(x, M).sum(axis=0),
        lax.all_gather(x, D).sum(axis=0),
        lax.psum(x, ("data_shards", "model_replicas"))
        - lax.all_gather(x, M).sum(axis=0)
        - lax.all_gather(x, D).sum(axis=0)
        + x,
    ),
]


def _neither(x):
    return lax.psum(x, (D, M)) - lax.psum(x, M) - lax.psum(x, D) + x


def _grid_sums_nested_pmap(x):
    inner = jax.pmap(lambda v: lax.psum(v, "inner"), axis_name="inner")(jnp.stack([x, x]))[0]
    return inner, inner, inner


GRID_SUMS_WRONG = [
    # the axes of the old exercise (part 0 over DATA_SHARDS): the plausible mix-up of "same data shard"
    (
        lambda x: (lax.psum(x, D), lax.psum(x, M), _neither(x)),
        r"`grid_sums\(x\)\[0\]` should be the sum over the devices that hold the same data shard as this one, "
        r"but on a 2 x 4 grid .* its values are the sum over 'data_shards', which combines the devices of this "
        r"device's column.*same model shard and different data shards",
    ),
    (
        lambda x: (lax.psum(x, M), lax.psum(x, M), _neither(x)),
        r"`grid_sums\(x\)\[1\]` should be the sum over the devices that hold the same model shard.*"
        r"its values are the sum over 'model_replicas', which combines the devices of this device's row",
    ),
    (
        lambda x: (lax.psum(x, M), lax.psum(x, D), lax.psum(x, M)),
        r"`grid_sums\(x\)\[2\]` should be the sum over the devices that hold neither the same data shard nor the "
        r"same model shard.*its values are the sum over 'model_replicas'",
    ),
    (  # the cell above with psum: the whole grid
        lambda x: (lax.psum(x, M), lax.psum(x, D), lax.psum(x, (D, M))),
        r"(?s)`grid_sums\(x\)\[2\]` has the wrong values on a 2 x 4 grid.*That is the sum over every device of the "
        r"grid: leave out this device's row and its column.*add it back once",
    ),
    (
        lambda x: (lax.psum(x, M), lax.psum(x, D), lax.psum(x, (D, M)) - lax.psum(x, M) - lax.psum(x, D)),
        r"(?s)`grid_sums\(x\)\[2\]` has the wrong values.*own x was subtracted twice",
    ),
    (
        lambda x: (lax.pmean(x, M), lax.psum(x, D), _neither(x)),
        r"\[0\]` should be the sum over the devices that hold the same data shard.*the mean over 'model_replicas'.*"
        r"A mean divides by the number of devices: this part asks for a sum",
    ),
    (
        lambda x: (lax.psum(x, M), lax.psum(x, D), lax.pmean(x, (D, M))),
        r"\[2\]` should be the sum over the devices that hold neither.*the mean over both axes",
    ),
    (lambda x: (x, x, x), r"`grid_sums\(x\)\[0\]` should be the sum over .* it is x itself: nothing was reduced"),
    (
        lambda x: (lax.psum(x, M), lax.psum(x, D), lax.pmean(x, (D, M)) * 8 - lax.psum(x, M) - lax.psum(x, D) + x),
        r"`grid_sums\(x\)\[2\]` has the wrong values on a 2 x 2 grid.*outside this device's row and its column",
    ),
    (
        lambda x: (lax.psum(x, "data"), lax.psum(x, D), _neither(x)),
        r"unbound axis name: data.*`DATA_SHARDS` \('data_shards'\) and `MODEL_REPLICAS`",
    ),
    (
        lambda x: lax.psum(x, (D, M)),
        r"should return a tuple of 3 arrays \(same data shard, same model shard, neither\).*but it returns a "
        r"single array \(all devices together: shape \(2, 4, 3\)\)",
    ),
    (lambda x: (lax.psum(x, M), lax.psum(x, D)), r"tuple of 3 arrays.*a tuple of length 2"),
    (
        lambda x: (lax.psum(x, M), lax.psum(x, D), _neither(x).sum()),
        r"On each device, `grid_sums\(x\)\[2\]` should have shape \(3,\), but it has shape \(\)",
    ),
    (
        lambda x: (lax.psum(x, M).astype(jnp.float16), lax.psum(x, D), _neither(x)),
        r"`grid_sums\(x\)\[0\]` should have dtype float32, but it has dtype float16",
    ),
    (_grid_sums_nested_pmap, r"failed on a 2 x 4 grid.*context mesh.*Nested `jax.pmap` does not work"),
    (_not_written, r"`grid_sums` is not written yet"),
]


@pytest.mark.parametrize("answer", GRID_SUMS_RIGHT)
def test_grid_sums_accepts_equivalent_answers(answer):
    assert_check_passes(q.grid_sums.check, answer)


@pytest.mark.parametrize("answer, message", GRID_SUMS_WRONG)
def test_grid_sums_rejects_wrong_answers(answer, message):
    assert_check_fails(q.grid_sums.check, answer, match=message)


def test_grid_sums_observe_is_stable_and_discriminating():
    reference = observe(q.grid_sums, grid_sums_ref)
    got = derived(reference)  # the grader runs it on a real 2-D grid of devices: both axes communicate
    assert got["axes"] == sorted([D, M])
    assert {"2x4_3[0]", "2x4_scalar[2]", "4x2_2[1]", "2x2_2x3[1]", "1x4_5[2]"} <= set(got)
    assert got["2x2_2x3[1]"].shape == (2, 2, 2, 3)
    again = observe(q.grid_sums, grid_sums_ref)
    assert observations_match(reference, again)
    for answer in GRID_SUMS_RIGHT[1:]:
        assert observations_match(reference, observe(q.grid_sums, answer))
    for answer, _ in GRID_SUMS_WRONG[:9]:
        assert not observations_match(reference, observe(q.grid_sums, answer))


# ---------------------------------------------------------------- device_numbers
def device_numbers_ref(x):
    return lax.axis_index((D, M)), lax.axis_index((M, D))


def _numbers(row_major, column_major):
    def device_numbers(x):
        i, j = lax.axis_index(D), lax.axis_index(M)
        return row_major(i, j), column_major(i, j)

    return device_numbers


DEVICE_NUMBERS_RIGHT = [
    device_numbers_ref,
    _numbers(lambda i, j: i * lax.axis_size(M) + j, lambda i, j: j * lax.axis_size(D) + i),  # arithmetic
    _numbers(lambda i, j: i * lax.psum(1, M) + j, lambda i, j: j * lax.psum(1, D) + i),  # psum(1) sizes
    lambda x: [
        lax.axis_index((D, M)).astype(jnp.int32),
        lax.axis_index(D) + lax.axis_index(M) * lax.axis_size(D),
    ],  # a list, mixed
]

DEVICE_NUMBERS_WRONG = [
    (
        lambda x: (lax.axis_index((M, D)), lax.axis_index((D, M))),
        r"`device_numbers\(x\)\[0\]` has the wrong values on a 2 x 4 grid.*Part 0 is the row-major number.*"
        r"These are the numbers of the other order: the column-major ones",
    ),
    (  # issue 48: the second part's order the other way (a sentence of its own, named by the judge too)
        lambda x: (lax.axis_index((D, M)), lax.axis_index((D, M))),
        r"`device_numbers\(x\)\[1\]` has the wrong values on a 2 x 4 grid.*the other order: the row-major ones",
    ),
    (
        _numbers(lambda i, j: i * 4 + j, lambda i, j: j * 2 + i),
        r"\[0\]` has the wrong values on a 4 x 2 grid.*right on a 2 x 4 grid only.*ask the named axes",
    ),
    (
        _numbers(lambda i, j: i * lax.axis_size(D) + j, lambda i, j: j * lax.axis_size(D) + i),
        r"\[0\]` has the wrong values on a 2 x 4 grid.*multiply by the length of the wrong axis: in the row-major "
        r"order, a whole row comes before.*as long as 'model_replicas'",
    ),
    (
        _numbers(lambda i, j: i * lax.axis_size(M) + j, lambda i, j: j * lax.axis_size(M) + i),
        r"\[1\]` has the wrong values.*Part 1 is the column-major number.*in the column-major order, a whole "
        r"column.*as long as 'data_shards'",
    ),
    (
        _numbers(lambda i, j: i * lax.axis_size(M) + j, lambda i, j: j * 2 + i),
        r"\[1\]` has the wrong values on a 4 x 2 grid.*right on a 2 x 4 grid only",
    ),
    (
        _numbers(lambda i, j: i, lambda i, j: j * lax.axis_size(D) + i),
        r"\[0\]` has the wrong values.*the position along 'data_shards' only",
    ),
    (  # issue 34: a diagnosis where "Count ... how many devices come before it" was all it said
        _numbers(lambda i, j: i * lax.axis_size(M) + j + 1, lambda i, j: j * lax.axis_size(D) + i + 1),
        r"\[0\]` has the wrong values.*1 too large: devices are numbered from 0, as `lax\.axis_index` counts",
    ),
    (
        lambda x: (lax.axis_index((D, M)), jnp.float32(0.0) + lax.axis_index((M, D))),
        r"`device_numbers\(x\)\[1\]` should have dtype int32, but it has dtype float32",
    ),
    (
        lambda x: (jnp.atleast_1d(lax.axis_index((D, M))), lax.axis_index((M, D))),
        r"On each device, `device_numbers\(x\)\[0\]` should have shape \(\), but it has shape \(1,\)",
    ),
    (
        lambda x: lax.axis_index((D, M)),
        r"should return a tuple of 2 int32 scalars.*a single array \(all devices together: shape \(2, 4\)\)",
    ),
    (lambda x: (lax.axis_index("rows"), lax.axis_index(M)), r"unbound axis name: rows"),
    (_not_written, r"`device_numbers` is not written yet"),
]


@pytest.mark.parametrize("answer", DEVICE_NUMBERS_RIGHT)
def test_device_numbers_accepts_equivalent_answers(answer):
    assert_check_passes(q.device_numbers.check, answer)


@pytest.mark.parametrize("answer, message", DEVICE_NUMBERS_WRONG)
def test_device_numbers_rejects_wrong_answers(answer, message):
    assert_check_fails(q.device_numbers.check, answer, match=message)


def test_device_numbers_observe_is_stable_and_discriminating():
    reference = observe(q.device_numbers, device_numbers_ref)
    got = derived(reference)
    assert got["axes"] == []  # axis_index / axis_size move no data: not communication
    np.testing.assert_array_equal(got["2x4_scalar[0]"], np.arange(8).reshape(2, 4))
    np.testing.assert_array_equal(got["2x4_scalar[1]"], np.arange(8).reshape(4, 2).T)
    np.testing.assert_array_equal(got["4x2_scalar[0]"], np.arange(8).reshape(4, 2))
    np.testing.assert_array_equal(got["2x1_2[1]"], [[0], [1]])
    for answer in DEVICE_NUMBERS_RIGHT[1:]:
        assert observations_match(reference, observe(q.device_numbers, answer))
    for answer, _ in DEVICE_NUMBERS_WRONG[:6]:
        assert not observations_match(reference, observe(q.device_numbers, answer))


def test_device_numbers_accepts_numbers_found_without_axis_index():
    """An unusual but right answer: find this device's row and column among the gathered inputs."""

    def by_gathering(x):
        row = jnp.argmax(lax.all_gather(x, D) == x).astype(jnp.int32)
        column = jnp.argmax(lax.all_gather(x, M) == x).astype(jnp.int32)
        return row * lax.axis_size(M) + column, column * lax.axis_size(D) + row

    assert_check_passes(q.device_numbers.check, by_gathering)


# ---------------------------------------------------------------- row_normalize
def _shard_mapped(block_fn):
    def row_normalize(x, mesh):
        return jax.shard_map(block_fn, mesh=mesh, in_specs=SPEC, out_specs=SPEC)(x)

    return row_normalize


row_normalize_ref = _shard_mapped(lambda b: b / lax.psum(jnp.sum(b, axis=1, keepdims=True), M))


def _row_normalize_placed_and_jitted(x, mesh):
    x = jax.device_put(x, NamedSharding(mesh, SPEC))
    return jax.jit(row_normalize_ref, static_argnums=1)(x, mesh)


def _row_normalize_own_explicit_mesh(x, mesh):
    return row_normalize_ref(x, jax.make_mesh(GRID_SHAPE, GRID_AXES))


def _row_normalize_own_auto_mesh(x, mesh):
    return row_normalize_ref(x, jax.make_mesh(GRID_SHAPE, GRID_AXES, axis_types=(AxisType.Auto,) * 2))


ROW_NORMALIZE_RIGHT = [
    row_normalize_ref,
    _row_normalize_placed_and_jitted,
    _shard_mapped(lambda b: b / lax.psum(jnp.sum(b), M)),  # a block is one row
    _shard_mapped(lambda b: b / (lax.pmean(b.sum(axis=1, keepdims=True), M) * lax.axis_size(M))),
]

ROW_NORMALIZE_WRONG = [
    (
        _shard_mapped(lambda b: b / lax.psum(b, D)),
        r"wrong values.*divides by the sum over 'data_shards' \(down each column",
    ),
    (
        _shard_mapped(lambda b: b / jnp.sum(b, axis=1, keepdims=True)),
        r"wrong values.*each device's own part of the row: those partial sums still have to be added up across "
        r"'model_replicas'",
    ),
    (_shard_mapped(lambda b: b / lax.psum(b, M)), r"sums over 'model_replicas' element by element"),
    (_shard_mapped(lambda b: b / lax.psum(jnp.sum(b), (D, M))), r"divides by the sum over both axes"),
    # the checker gaps: a psum over the wrong axis, and pmean for psum (each once per axis)
    (
        _shard_mapped(lambda b: b / lax.psum(jnp.sum(b, axis=1, keepdims=True), D)),
        r"wrong values on a 2 x 4 grid.*adds up the partial row sums over 'data_shards': the devices of a "
        r"column, which hold other rows of x.*combine over that axis",
    ),
    (
        _shard_mapped(lambda b: b / lax.pmean(jnp.sum(b, axis=1, keepdims=True), M)),
        r"averages the partial row sums with `lax.pmean` over 'model_replicas': that is the row's sum divided by "
        r"the 4 devices of a row, so every entry comes out 4 times too large",
    ),
    (
        _shard_mapped(lambda b: b / lax.pmean(jnp.sum(b, axis=1, keepdims=True), D)),
        r"averages the partial row sums over 'data_shards' \(the devices of a column, which hold other rows of x\), "
        r"and a mean, not a sum",
    ),
    (
        _shard_mapped(lambda b: b / lax.pmean(jnp.sum(b, axis=1, keepdims=True), (D, M))),
        r"averages the partial row sums over both axes",
    ),
    (
        lambda x, mesh: x / x.sum(axis=1, keepdims=True),
        r"should add up partial row sums across 'model_replicas'.*performs no collective at all",
    ),
    (
        _row_normalize_own_explicit_mesh,
        r"failed on a 2 x 4 grid.*does not match the specs of the input.*use the `mesh` argument",
    ),
    (_row_normalize_own_auto_mesh, r"failed on a 2 x 2 grid.*use the `mesh` argument"),
    (
        lambda x, mesh: jax.shard_map(
            lambda b: b / lax.psum(jnp.sum(b, axis=1, keepdims=True), M), mesh=mesh, in_specs=SPEC, out_specs=P(D)
        )(x),
        r"`row_normalize` failed on a 2 x 4 grid.*ValueError: shard_map",
    ),
    (
        _shard_mapped(lambda b: (b / lax.psum(jnp.sum(b, axis=1, keepdims=True), M)).astype(jnp.float16)),
        r"should have dtype float32, but it has dtype float16",
    ),
    (
        lambda x, mesh: row_normalize_ref(x, mesh)[:, :4],
        r"should return an array of shape \(2, 12\), but it returns shape \(2, 4\)",
    ),
    (_not_written, r"`row_normalize` is not written yet"),
]


def _row_normalize_whole_rows(x, mesh):
    """Right values, but every device is handed whole rows: no device holds only its block (issue 16)."""
    varying = lambda v: lax.pcast(v, M, to="varying")  # noqa: E731 - each device's copy of the row sum
    return jax.shard_map(
        lambda b: b / lax.pmean(varying(jnp.sum(b, axis=1, keepdims=True)), M),
        mesh=mesh,
        in_specs=P(D, None),
        out_specs=P(D, None),
    )(x)


def _row_normalize_dead_psum(x, mesh):
    """Whole rows per device, and a psum over MODEL_REPLICAS multiplied by zero."""
    dead = lambda b: 0.0 * lax.psum(lax.pcast(jnp.sum(b), M, to="varying"), M)  # noqa: E731
    return jax.shard_map(
        lambda b: b / jnp.sum(b, axis=1, keepdims=True) + dead(b), mesh=mesh, in_specs=P(D, None), out_specs=P(D, None)
    )(x)


# Issue 56: right values, but each row's blocks gathered over MODEL_REPLICAS and the whole row summed on every
# device ("No device ever holds a whole row"): 4x the reference's largest array on the 2 x 4 work case.
_row_normalize_gathers_row = _shard_mapped(
    lambda b: b / lax.all_gather(b, M, axis=1, tiled=True).sum(axis=1, keepdims=True)
)
ROW_NORMALIZE_WHOLE_ROW = (
    r"`row_normalize` returns the right values with the right collectives, but one device materializes an array "
    r"of 256 bytes, 4\.0× its own block of x \(64 bytes: one row of 16 float32 numbers.*No device ever holds a "
    r"whole row"
)

ROW_NORMALIZE_WRONG += [
    (_row_normalize_gathers_row, ROW_NORMALIZE_WHOLE_ROW),
    (
        _row_normalize_whole_rows,
        r"`row_normalize` gives the right results here, but its per-device program over 'data_shards' and "
        r"'model_replicas' takes its input 1 split along dimension 0 over 'data_shards', where the exercise's takes "
        r"it split along dimension 0 over 'data_shards', along dimension 1 over 'model_replicas'",
    ),
    (
        _row_normalize_dead_psum,
        r"performs psum over 'model_replicas', but nothing it carries between devices reaches what "
        r"`row_normalize` returns",
    ),
    (
        lambda x, mesh: jax.lax.with_sharding_constraint(row_normalize_ref(x, mesh), NamedSharding(mesh, P())),
        r"its result 1 is whole on every device \(replicated\) once compiled, where the exercise's is split",
    ),
]


@pytest.mark.parametrize("answer", ROW_NORMALIZE_RIGHT)
def test_row_normalize_accepts_equivalent_answers(answer):
    assert_check_passes(q.row_normalize.check, answer)


@pytest.mark.parametrize("answer, message", ROW_NORMALIZE_WRONG)
def test_row_normalize_rejects_wrong_answers(answer, message):
    assert_check_fails(q.row_normalize.check, answer, match=message)


def test_row_normalize_observe_is_stable_and_discriminating():
    reference = observe(q.row_normalize, row_normalize_ref)
    got = derived(reference)
    assert got["axes"] == [M] and got["communication"] == [f"psum over '{M}'"]
    assert {"2x4_k3", "4x2_k2", "2x2_k2", "1x4_k1"} <= set(got)
    np.testing.assert_allclose(np.asarray(got["1x4_k1"]).sum(axis=1), [1.0], rtol=1e-5)
    for answer in ROW_NORMALIZE_RIGHT[1:]:
        assert observations_match(reference, observe(q.row_normalize, answer))
    wrong_axis, no_collective = ROW_NORMALIZE_WRONG[0][0], ROW_NORMALIZE_WRONG[8][0]
    assert not observations_match(reference, observe(q.row_normalize, wrong_axis))
    for answer, _ in ROW_NORMALIZE_WRONG[4:8]:  # the checker-gap answers score 0 as well
        assert not observations_match(reference, observe(q.row_normalize, answer))
    # Right values without shard_map: a one-device, global-view program, with no psum.
    assert not observations_match(reference, observe(q.row_normalize, no_collective))


def test_row_normalize_work_is_judged_against_its_own_block():
    """Issue 56: the visible check's reference size is the reference program's, measured as the grader measures
    it; the grader refuses the answer that gathers each row's blocks, with its figure."""
    from namedaxes import judging
    from namedaxes.exercises.nested_axes import normalize

    mesh = q.auto_grid_mesh(GRID_SHAPE)
    x = jax.ShapeDtypeStruct((GRID_SHAPE[0], GRID_SHAPE[1] * normalize._RN_WORK_K), jnp.float32)
    work = judging.exported_work(jax.export.export(jax.jit(lambda a: row_normalize_ref(a, mesh)))(x))
    assert work.largest_bytes == normalize._RN_REFERENCE_LARGEST
    reference = observe(q.row_normalize, row_normalize_ref)
    verdict = judge_observations(reference, observe(q.row_normalize, _row_normalize_gathers_row))
    reason = verdict.reason(limit=8)
    assert not verdict.passed and "2x4_k16: memory: one device materializes an array of 4× the size" in reason, reason
    assert "(256 against 64 bytes" in reason and "this exercise allows 1.5×" in reason, reason


# ---------------------------------------------------------------- tp_dp_step
LR = q.LEARNING_RATE


def _tp(body, w_spec=P(M), check_vma=True):
    def tp_dp_step(w, batch, mesh):
        return jax.shard_map(body, mesh=mesh, in_specs=(w_spec, P(D, M), P(D)), out_specs=P(M), check_vma=check_vma)(
            w, batch["x"], batch["y"]
        )

    return tp_dp_step


def _grad(xb, pred, yb):
    return 2.0 * xb.T @ (pred - yb) / xb.shape[0]


def _tp_ref_body(wb, xb, yb):
    prediction = lax.psum(xb @ wb, M)
    return wb - LR * lax.pmean(_grad(xb, prediction, yb), D)


tp_dp_step_ref = _tp(_tp_ref_body)


def _tp_grad_of_mean_loss(wb, xb, yb):
    """jax.grad of the loss averaged over the data shards (notebook 05's shard_map recipe)."""
    loss = lambda v: lax.pmean(jnp.mean((lax.psum(xb @ v, M) - yb) ** 2), D)  # noqa: E731
    return wb - LR * jax.grad(loss)(wb)


def _tp_grad_then_pmean(wb, xb, yb):
    """Notebook 04's order (local gradients, then pmean) under check_vma: jax.grad already summed them."""
    loss = lambda v: jnp.mean((lax.psum(xb @ v, M) - yb) ** 2)  # noqa: E731
    return wb - LR * lax.pmean(jax.grad(loss)(wb), D)


def _tp_placed_and_jitted(w, batch, mesh):
    from jax.sharding import NamedSharding

    w = jax.device_put(w, NamedSharding(mesh, P(M)))
    batch = {
        "x": jax.device_put(batch["x"], NamedSharding(mesh, P(D, M))),
        "y": jax.device_put(batch["y"], NamedSharding(mesh, P(D))),
    }
    return jax.jit(tp_dp_step_ref, static_argnums=2)(w, batch, mesh)


def _tp_one_device(w, batch, mesh):
    loss = lambda v: jnp.mean((batch["x"] @ v - batch["y"]) ** 2)  # noqa: E731
    return w - LR * jax.grad(loss)(w)


def _tp_gather_everything(w, batch, mesh):
    """Right values, no tensor parallelism: every device gathers all of w and its examples' features."""

    def body(wb, xb, yb):
        w_all, x_all = lax.all_gather(wb, M, tiled=True), lax.all_gather(xb, M, axis=1, tiled=True)
        g = lax.pmean(_grad(x_all, x_all @ w_all, yb), D)
        k = wb.shape[0]
        return wb - LR * lax.dynamic_slice_in_dim(g, lax.axis_index(M) * k, k)

    return _tp(body)(w, batch, mesh)


def _tp_whole_w(w, batch, mesh):
    """Right values, but every device is handed all of w and slices its shard itself (issue 16)."""

    def body(w_all, xb, yb):
        k = xb.shape[1]
        return _tp_ref_body(lax.dynamic_slice_in_dim(w_all, lax.axis_index(M) * k, k), xb, yb)

    return jax.shard_map(body, mesh=mesh, in_specs=(P(), P(D, M), P(D)), out_specs=P(M))(w, batch["x"], batch["y"])


def _tp_gather_everything_dead_psum(w, batch, mesh):
    """The gathering answer with a psum over MODEL_REPLICAS multiplied by zero: present, reaching nothing."""

    def body(wb, xb, yb):
        w_all, x_all = lax.all_gather(wb, M, tiled=True), lax.all_gather(xb, M, axis=1, tiled=True)
        g = lax.pmean(_grad(x_all, x_all @ w_all, yb), D)
        k = wb.shape[0]
        return wb - LR * lax.dynamic_slice_in_dim(g, lax.axis_index(M) * k, k) + 0.0 * lax.psum(jnp.sum(wb), M)

    return _tp(body)(w, batch, mesh)


def _tp_gathers_w_keeps_psum(w, batch, mesh):
    """Issue 34: right values, a psum over MODEL_REPLICAS for the predictions, but every device gathers all of
    w and slices its shard from it (the statement says no device may)."""

    def body(wb, xb, yb):
        w_all = lax.all_gather(wb, M, tiled=True)
        k, i = xb.shape[1], lax.axis_index(M)
        prediction = lax.psum(xb @ lax.dynamic_slice_in_dim(w_all, i * k, k), M)
        return lax.dynamic_slice_in_dim(w_all, i * k, k) - LR * lax.pmean(_grad(xb, prediction, yb), D)

    return _tp(body)(w, batch, mesh)


TP_DP_STEP_RIGHT = [
    tp_dp_step_ref,
    _tp(_tp_grad_of_mean_loss),
    _tp(lambda wb, xb, yb: wb - LR * lax.psum(_grad(xb, lax.psum(xb @ wb, M), yb), D) / lax.axis_size(D)),
    _tp(lambda wb, xb, yb: wb - lax.pmean(LR * _grad(xb, lax.psum(xb @ wb, M), yb), D)),
    _tp_placed_and_jitted,
]

TP_DP_STEP_WRONG = [
    (
        _tp(_tp_grad_then_pmean),
        r"on a 2 x 4 grid.*Your step is 2 times too large, 2 being the number of data shards: the "
        r"gradients of the data shards were added, not averaged.*`jax.grad`",
    ),
    (
        _tp(lambda wb, xb, yb: wb - LR * lax.psum(_grad(xb, lax.psum(xb @ wb, M), yb), D)),
        r"Your step is 2 times too large, 2 being the number of data shards",
    ),
    (
        _tp(_tp_grad_then_pmean, check_vma=False),
        r"Your step is 4 times too large, 4 being the number of model shards.*check_vma=False",
    ),
    (
        _tp(lambda wb, xb, yb: wb - LR * _grad(xb, lax.psum(xb @ wb, M), yb)),
        r"the new w you return still differs from one data shard to the next.*combine the data shards' gradients",
    ),
    (
        _tp(lambda wb, xb, yb: wb - LR * _grad(xb, lax.psum(xb @ wb, M), yb), check_vma=False),
        r"a step on the first data shard's examples only",
    ),
    (
        _tp(lambda wb, xb, yb: wb - LR * lax.pmean(_grad(xb, xb @ wb, yb), D)),
        r"Each device predicted with its own partial product only",
    ),
    (
        _tp(lambda wb, xb, yb: wb - LR * lax.pmean(_grad(xb, lax.psum(xb @ wb, M), yb), (D, M))),
        r"averaged over the model axis as well: that mixes the gradients of different model shards",
    ),
    (
        _tp(lambda wb, xb, yb: wb - LR * lax.psum(_grad(xb, lax.psum(xb @ wb, M), yb), D) / 2),  # hard-coded 2
        r"on a 4 x 2 grid.*It is right on a 2 x 4 grid .* but not on this mesh",
    ),
    (
        _tp(lambda wb, xb, yb: wb + LR * lax.pmean(_grad(xb, lax.psum(xb @ wb, M), yb), D)),
        r"The step goes the wrong way",
    ),
    (_tp(lambda wb, xb, yb: wb + 0.0 * lax.pmean(_grad(xb, lax.psum(xb @ wb, M), yb), D)), r"w did not change"),
    (
        _tp(_tp_ref_body, w_spec=P()),
        r"dot_general requires contracting dimensions.*its part of w of shape \(2,\). Multiply those two blocks",
    ),
    (
        _tp_one_device,
        r"returns the right values, but over 'model_replicas' it performs no collective at all.*no device ever "
        r"holds all of w",
    ),
    (_tp_gather_everything, r"over 'model_replicas' it performs all_gather over 'model_replicas'"),
    (
        lambda w, batch, mesh: tp_dp_step_ref(w, batch, mesh).reshape(2, 4),
        r"should return an array of shape \(8,\), but it returns shape \(2, 4\)",
    ),
    (
        lambda w, batch, mesh: tp_dp_step_ref(w, batch, mesh).astype(jnp.float16),
        r"should have dtype float32, but it has dtype float16",
    ),
    (_not_written, r"`tp_dp_step` is not written yet"),
    (
        _tp(lambda wb, xb, yb: wb - LR * lax.pmean(_grad(xb, lax.all_gather(xb @ wb, M).sum(0), yb), D)),
        r"over 'model_replicas' it performs all_gather over 'model_replicas' and no `lax\.psum`\. Gathering "
        r"blocks \(of w, of x or of the partial products\)",
    ),
]


# Issue 16: the grader imposes the exercise's layout and counts only communication that reaches the result;
# the visible check reads them the same way (namedaxes.judging), so these fail both.
TP_DP_STEP_WRONG += [
    (
        _tp_whole_w,
        r"`tp_dp_step` gives the right results here, but its per-device program over 'data_shards' and "
        r"'model_replicas' takes its input 1 whole on every device \(replicated\), where the exercise's takes it "
        r"split along dimension 0 over 'model_replicas'",
    ),
    (
        _tp_gathers_w_keeps_psum,
        r"`tp_dp_step` returns the right values with the right collectives, but one device materializes an "
        r"array of 1024 bytes, 2\.0× the largest of the reference's \(512 bytes; .*w of 256 entries and 4 "
        r"examples on a 2 x 4 grid, where at most 1\.5× is allowed\): a device gathers all of w",
    ),
    (
        _tp_gather_everything_dead_psum,
        r"performs psum over 'model_replicas', but nothing it carries between devices reaches what "
        r"`tp_dp_step` returns",
    ),
    (
        _tp(
            lambda wb, xb, yb: wb - LR * jnp.mean(lax.all_gather(_grad(xb, lax.psum(xb @ wb, M), yb), D), axis=0),
            check_vma=False,
        ),
        r"over 'data_shards' it performs all_gather over 'data_shards'\. The copies of a model shard must average "
        r"their data shards' gradients with `lax\.pmean`",
    ),
    (
        lambda w, batch, mesh: jax.lax.with_sharding_constraint(
            tp_dp_step_ref(w, batch, mesh), NamedSharding(mesh, P())
        ),
        r"its result 1 is whole on every device \(replicated\) once compiled, where the exercise's is split along "
        r"dimension 0 over 'model_replicas'",
    ),
]


def test_tp_dp_step_work_is_judged_against_the_references_largest_array():
    """The visible check's reference size is the reference program's, measured as the grader measures it; the
    grader refuses a step that gathers all of w for the size of its largest array."""
    from namedaxes import judging

    mesh = q.auto_grid_mesh(tp_module._TP_WORK_GRID)
    program = jax.jit(lambda w, x, y: tp_dp_step_ref(w, {"x": x, "y": y}, mesh))
    work = judging.exported_work(jax.export.export(program)(*tp_module._tp_work_args()))
    assert work.largest_bytes == tp_module._TP_REFERENCE_LARGEST
    reference = observe(q.tp_dp_step, tp_dp_step_ref)
    verdict = judge_observations(reference, observe(q.tp_dp_step, _tp_gathers_w_keeps_psum))
    reason = verdict.reason(limit=8)
    assert not verdict.passed and "work: memory: one device materializes an array of 2× the size" in reason, reason
    assert "(1,024 against 512 bytes" in reason and "this exercise allows 1.5×" in reason, reason


def test_tp_dp_step_that_gathers_predictions_is_not_told_it_holds_all_of_w():
    """Issue 16: gathering the partial products is no device holding all of w."""
    msg = assert_check_fails(q.tp_dp_step.check, TP_DP_STEP_WRONG[16][0])
    assert "holds all of w" not in msg


@pytest.mark.parametrize("answer", TP_DP_STEP_RIGHT)
def test_tp_dp_step_accepts_equivalent_answers(answer):
    assert_check_passes(q.tp_dp_step.check, answer)


TP_DP_STEP_WRONG += [  # issue 34: specific messages where the step is recognisable
    (  # pmean where psum belongs: the partial predictions averaged
        _tp(lambda wb, xb, yb: wb - LR * lax.pmean(_grad(xb, lax.pmean(xb @ wb, M), yb), D)),
        r"(?s)on a 2 x 4 grid.*predicts with the \*mean\* of a row's partial products \(`lax\.pmean` over "
        r"MODEL_REPLICAS\).*added with `lax\.psum`",
    ),
    (  # averaged twice over the data shards
        _tp(lambda wb, xb, yb: wb - LR * lax.pmean(_grad(xb, lax.psum(xb @ wb, M), yb), D) / lax.psum(1, D)),
        r"(?s)Your step is 2 times too small, 2 being the number of data shards.*averaged twice",
    ),
]


@pytest.mark.parametrize("answer, message", TP_DP_STEP_WRONG)
def test_tp_dp_step_rejects_wrong_answers(answer, message):
    assert_check_fails(q.tp_dp_step.check, answer, match=message)


def test_tp_dp_step_reference_is_the_one_device_step():
    w = jnp.linspace(-1.0, 1.0, q.FEATURES)
    x = jax.random.normal(jax.random.key(3), (q.EXAMPLES, q.FEATURES))
    batch = {"x": x, "y": x @ jnp.arange(q.FEATURES, dtype=jnp.float32)}
    for shape in ((2, 4), (4, 2), (2, 2), (1, 8), (8, 1)):
        np.testing.assert_allclose(
            tp_dp_step_ref(w, batch, q.auto_grid_mesh(shape)), q.tp_dp_step_np(w, batch), rtol=1e-5, atol=1e-6
        )


def test_tp_dp_step_observe_is_stable_and_discriminating():
    reference = observe(q.tp_dp_step, tp_dp_step_ref)
    got = derived(reference)
    assert got["axes"] == sorted([D, M])
    assert {"2x4", "4x2", "2x2"} <= set(got)
    np.testing.assert_allclose(got["4x2"].shape, (q.FEATURES,))
    assert observations_match(reference, observe(q.tp_dp_step, tp_dp_step_ref))
    for answer in TP_DP_STEP_RIGHT[1:]:
        assert observations_match(reference, observe(q.tp_dp_step, answer))
    for answer, _ in TP_DP_STEP_WRONG[:10]:
        if answer is TP_DP_STEP_WRONG[3][0]:  # unaveraged under check_vma: fails to trace, records nothing
            with pytest.raises(ValueError, match="out_specs"):
                observe(q.tp_dp_step, answer)
            continue
        assert not observations_match(reference, observe(q.tp_dp_step, answer))
    # right values without tensor parallelism: the structure case wants the reference's psums
    assert not observations_match(reference, observe(q.tp_dp_step, _tp_gather_everything))
    assert not observations_match(reference, observe(q.tp_dp_step, _tp_one_device))


# ---------------------------------------------------------------- one judge (issue 16)
test_the_visible_check_and_the_grader_agree = agreement_test(
    {
        "grid_sums": (q.grid_sums, grid_sums_ref, GRID_SUMS_RIGHT, GRID_SUMS_WRONG),
        "device_numbers": (q.device_numbers, device_numbers_ref, DEVICE_NUMBERS_RIGHT, DEVICE_NUMBERS_WRONG),
        "row_normalize": (q.row_normalize, row_normalize_ref, ROW_NORMALIZE_RIGHT, ROW_NORMALIZE_WRONG),
        "tp_dp_step": (q.tp_dp_step, tp_dp_step_ref, TP_DP_STEP_RIGHT, TP_DP_STEP_WRONG),
    }
)
