"""Notebook 03 (nested axes): every check proven both ways, and observe() stable under equivalent answers."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from autograder.compare import derived, observations_match
from namedaxes import DATA_SHARDS, GRID_AXES, GRID_SHAPE, MODEL_REPLICAS
from namedaxes.checking import assert_check_fails, assert_check_passes
from namedaxes.exercises import nested_axes as q

D, M = DATA_SHARDS, MODEL_REPLICAS
SPEC = P(D, M)


def _not_written(*args):
    raise NotImplementedError()


def test_grid_map_is_the_pmap_over_vmap_form():
    x = jnp.arange(8.0).reshape(GRID_SHAPE)
    out = q.grid_map(lambda v: (lax.axis_index(D), lax.axis_index(M)))(x)
    np.testing.assert_array_equal(out[0], [[0] * 4, [1] * 4])
    np.testing.assert_array_equal(out[1], [[0, 1, 2, 3]] * 2)


def test_grid_mesh_takes_plain_arrays_and_uses_the_grid_devices():
    mesh = q.grid_mesh()
    assert mesh.axis_names == GRID_AXES and mesh.devices.shape == GRID_SHAPE
    out = jax.shard_map(lambda b: b + lax.axis_index(M), mesh=mesh, in_specs=SPEC, out_specs=SPEC)(
        jnp.zeros(GRID_SHAPE))
    np.testing.assert_array_equal(out, [[0, 1, 2, 3]] * 2)
    assert q.grid_mesh((2, 2)).devices.shape == (2, 2)


# ---------------------------------------------------------------- grid_sums
def grid_sums_ref(x):
    return lax.psum(x, D), lax.psum(x, M), lax.psum(x, (D, M))


GRID_SUMS_RIGHT = [
    grid_sums_ref,
    lambda x: (lax.psum(x, D), lax.psum(x, M), lax.psum(lax.psum(x, M), D)),      # two nested psums
    lambda x: (lax.psum(x, D), lax.psum(x, M), lax.psum(x, (M, D))),              # names in the other order
    lambda x: [lax.pmean(x, D) * lax.axis_size(D), lax.pmean(x, M) * lax.axis_size(M),
               lax.psum(lax.psum(x, D), M)],                                       # a list, pmean * size
    lambda x: (lax.all_gather(x, D).sum(axis=0), lax.all_gather(x, M).sum(axis=0),
               lax.psum(x, ("data_shards", "model_replicas"))),
]

def _grid_sums_nested_pmap(x):
    inner = jax.pmap(lambda v: lax.psum(v, "inner"), axis_name="inner")(jnp.stack([x, x]))[0]
    return inner, inner, inner


GRID_SUMS_WRONG = [
    (lambda x: (lax.psum(x, M), lax.psum(x, D), lax.psum(x, (D, M))),
     r"`grid_sums\(x\)\[0\]` should be the sum over 'data_shards' \(the devices in its column.*"
     r"its values are the sum over 'model_replicas'"),
    (lambda x: (lax.psum(x, D), lax.psum(x, D), lax.psum(x, (D, M))),
     r"`grid_sums\(x\)\[1\]` should be the sum over 'model_replicas' \(the devices in its row.*"
     r"its values are the sum over 'data_shards'"),
    (lambda x: (lax.psum(x, D), lax.psum(x, M), lax.psum(x, M)),
     r"`grid_sums\(x\)\[2\]` should be the sum over both axes.*its values are the sum over 'model_replicas'"),
    (lambda x: (lax.pmean(x, D), lax.psum(x, M), lax.psum(x, (D, M))),
     r"`grid_sums\(x\)\[0\]` should be the sum over 'data_shards'.*its values are the mean over 'data_shards'"),
    (lambda x: (lax.psum(x, D), lax.psum(x, M), lax.pmean(x, (D, M))),
     r"\[2\]` should be the sum over both axes.*its values are the mean over both axes"),
    (lambda x: (x, x, x), r"\[0\]` should be the sum over 'data_shards'.*x itself \(nothing was reduced\)"),
    (lambda x: (lax.psum(x, D), lax.psum(x, M), lax.pmean(x, (D, M)) * 8),       # hard-coded 8 devices
     r"`grid_sums\(x\)\[2\]` has the wrong values on a 2 x 2 grid.*all devices of the grid"),
    (lambda x: (lax.psum(x, "data"), lax.psum(x, M), lax.psum(x, (D, M))),
     r"unbound axis name: data.*`DATA_SHARDS` \('data_shards'\) and `MODEL_REPLICAS`"),
    (lambda x: lax.psum(x, (D, M)),
     r"should return a tuple of three arrays.*but it returns a single array "
     r"\(all devices together: shape \(2, 4, 3\)\)"),
    (lambda x: (lax.psum(x, D), lax.psum(x, M)), r"tuple of three arrays.*a tuple of length 2"),
    (lambda x: (lax.psum(x, D), lax.psum(x, M), lax.psum(x, (D, M)).sum()),
     r"On each device, `grid_sums\(x\)\[2\]` should have shape \(3,\), but it has shape \(\)"),
    (lambda x: (lax.psum(x, D).astype(jnp.float16), lax.psum(x, M), lax.psum(x, (D, M))),
     r"`grid_sums\(x\)\[0\]` should have dtype float32, but it has dtype float16"),
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
    reference = q.grid_sums.observe(grid_sums_ref)
    got = derived(reference)      # the grader runs it on a real 2-D grid of devices: both axes communicate
    assert got["axes"] == sorted([D, M])
    assert {"2x4_3[0]", "2x4_scalar[2]", "2x2_2x3[1]", "1x4_5[2]"} <= set(got)
    assert got["2x2_2x3[1]"].shape == (2, 2, 2, 3)
    again = q.grid_sums.observe(grid_sums_ref)
    assert observations_match(reference, again)
    for answer in GRID_SUMS_RIGHT[1:]:
        assert observations_match(reference, q.grid_sums.observe(answer))
    for answer, _ in GRID_SUMS_WRONG[:7]:
        assert not observations_match(reference, q.grid_sums.observe(answer))


# ---------------------------------------------------------------- device_coordinates
def device_coordinates_ref(x):
    row, column = lax.axis_index(D), lax.axis_index(M)
    return row, column, row * lax.axis_size(M) + column


def _coordinates(flat):
    return lambda x: (lax.axis_index(D), lax.axis_index(M), flat(lax.axis_index(D), lax.axis_index(M)))


DEVICE_COORDINATES_RIGHT = [
    device_coordinates_ref,
    _coordinates(lambda i, j: i * lax.psum(1, M) + j),
    lambda x: [lax.axis_index(D).astype(jnp.int32), lax.axis_index(M),
               lax.axis_index((D, M))],                                     # axis_index over both names
]

DEVICE_COORDINATES_WRONG = [
    (lambda x: (lax.axis_index(M), lax.axis_index(D), lax.axis_index(M) + lax.axis_index(D) * lax.axis_size(M)),
     r"`device_coordinates\(x\)\[0\]` has the wrong values.*Part 0 is the row.*position along "
     r"'model_replicas' \(the column\) instead"),
    (lambda x: (lax.axis_index(D), lax.axis_index(D), lax.axis_index(D) * lax.axis_size(M) + lax.axis_index(M)),
     r"\[1\]` has the wrong values.*Part 1 is the column.*position along 'data_shards' \(the row\) instead"),
    (_coordinates(lambda i, j: j * lax.axis_size(D) + i),
     r"\[2\]` has the wrong values.*Part 2 is the flat index.*counts column by column"),
    (_coordinates(lambda i, j: i * 4 + j),
     r"\[2\]` has the wrong values on a 2 x 2 grid.*`lax.axis_size\(MODEL_REPLICAS\)` instead of a "
     r"hard-coded 4"),
    (_coordinates(lambda i, j: i * lax.axis_size(D) + j), r"multiplies the row by the size of DATA_SHARDS"),
    (lambda x: (lax.axis_index(D), lax.axis_index(M), jnp.float32(0.0) + lax.axis_index(D) * 4),
     r"`device_coordinates\(x\)\[2\]` should have dtype int32, but it has dtype float32"),
    (lambda x: (jnp.atleast_1d(lax.axis_index(D)), lax.axis_index(M), lax.axis_index(M)),
     r"On each device, `device_coordinates\(x\)\[0\]` should have shape \(\), but it has shape \(1,\)"),
    (lambda x: lax.axis_index(D),
     r"should return a tuple of three int32 scalars.*a single array \(all devices together: shape \(2, 4\)\)"),
    (lambda x: (lax.axis_index("rows"), lax.axis_index(M), 0), r"unbound axis name: rows"),
    (_not_written, r"`device_coordinates` is not written yet"),
]


@pytest.mark.parametrize("answer", DEVICE_COORDINATES_RIGHT)
def test_device_coordinates_accepts_equivalent_answers(answer):
    assert_check_passes(q.device_coordinates.check, answer)


@pytest.mark.parametrize("answer, message", DEVICE_COORDINATES_WRONG)
def test_device_coordinates_rejects_wrong_answers(answer, message):
    assert_check_fails(q.device_coordinates.check, answer, match=message)


def test_device_coordinates_observe_is_stable_and_discriminating():
    reference = q.device_coordinates.observe(device_coordinates_ref)
    got = derived(reference)
    assert got["axes"] == []      # axis_index / axis_size move no data: not communication
    np.testing.assert_array_equal(got["2x4_scalar[2]"], np.arange(8).reshape(2, 4))
    np.testing.assert_array_equal(got["2x2_3[2]"], np.arange(4).reshape(2, 2))
    np.testing.assert_array_equal(got["2x1_2[2]"], [[0], [1]])
    for answer in DEVICE_COORDINATES_RIGHT[1:]:
        assert observations_match(reference, q.device_coordinates.observe(answer))
    for answer, _ in DEVICE_COORDINATES_WRONG[:5]:
        assert not observations_match(reference, q.device_coordinates.observe(answer))


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
    _shard_mapped(lambda b: b / lax.psum(jnp.sum(b), M)),                         # a block is one row
    _shard_mapped(lambda b: b / (lax.pmean(b.sum(axis=1, keepdims=True), M) * lax.axis_size(M))),
    _shard_mapped(lambda b: b / lax.all_gather(b, M, axis=1, tiled=True).sum(axis=1, keepdims=True)),
]

ROW_NORMALIZE_WRONG = [
    (_shard_mapped(lambda b: b / lax.psum(b, D)),
     r"wrong values.*divides by the sum over 'data_shards' \(down each column"),
    (_shard_mapped(lambda b: b / jnp.sum(b, axis=1, keepdims=True)),
     r"wrong values.*each device's own part of the row.*across 'model_replicas' with `lax.psum`"),
    (_shard_mapped(lambda b: b / lax.psum(b, M)), r"sums over 'model_replicas' element by element"),
    (_shard_mapped(lambda b: b / lax.psum(jnp.sum(b), (D, M))), r"divides by the sum over both axes"),
    (lambda x, mesh: x / x.sum(axis=1, keepdims=True),
     r"should add up partial row sums across 'model_replicas'.*performs no collective at all"),
    (_row_normalize_own_explicit_mesh,
     r"failed on a mesh.*does not match the specs of the input.*use the `mesh` argument"),
    (_row_normalize_own_auto_mesh, r"failed on a mesh of a 2 x 2 grid.*use the `mesh` argument"),
    (lambda x, mesh: jax.shard_map(lambda b: b / lax.psum(jnp.sum(b, axis=1, keepdims=True), M), mesh=mesh,
                                   in_specs=SPEC, out_specs=P(D))(x),
     r"`row_normalize` failed on a mesh.*ValueError: shard_map"),
    (_shard_mapped(lambda b: (b / lax.psum(jnp.sum(b, axis=1, keepdims=True), M)).astype(jnp.float16)),
     r"should have dtype float32, but it has dtype float16"),
    (lambda x, mesh: row_normalize_ref(x, mesh)[:, :4], r"should return an array of x's shape \(2, 12\)"),
    (_not_written, r"`row_normalize` is not written yet"),
]


@pytest.mark.parametrize("answer", ROW_NORMALIZE_RIGHT)
def test_row_normalize_accepts_equivalent_answers(answer):
    assert_check_passes(q.row_normalize.check, answer)


@pytest.mark.parametrize("answer, message", ROW_NORMALIZE_WRONG)
def test_row_normalize_rejects_wrong_answers(answer, message):
    assert_check_fails(q.row_normalize.check, answer, match=message)


def test_row_normalize_observe_is_stable_and_discriminating():
    reference = q.row_normalize.observe(row_normalize_ref)
    got = derived(reference)
    assert got["axes"] == [M] and got["communication"] == [f"psum over '{M}'"]
    assert {"2x4_k3", "2x2_k2", "1x4_k1"} <= set(got)
    np.testing.assert_allclose(np.asarray(got["1x4_k1"]).sum(axis=1), [1.0], rtol=1e-5)
    for answer in ROW_NORMALIZE_RIGHT[1:]:
        assert observations_match(reference, q.row_normalize.observe(answer))
    wrong_axis, no_collective = ROW_NORMALIZE_WRONG[0][0], ROW_NORMALIZE_WRONG[4][0]
    assert not observations_match(reference, q.row_normalize.observe(wrong_axis))
    # Right values without shard_map: a one-device, global-view program, with no psum.
    assert not observations_match(reference, q.row_normalize.observe(no_collective))


def test_device_coordinates_accepts_coordinates_found_without_axis_index():
    """An unusual but right answer: find this device's row and column among the gathered inputs."""
    def by_gathering(x):
        row = jnp.argmax(lax.all_gather(x, D) == x).astype(jnp.int32)
        column = jnp.argmax(lax.all_gather(x, M) == x).astype(jnp.int32)
        return row, column, row * lax.axis_size(M) + column
    assert_check_passes(q.device_coordinates.check, by_gathering)
