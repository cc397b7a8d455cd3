"""The building blocks of student-facing checks say what is wrong, in order type -> shape -> value."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from jax.sharding import NamedSharding, PartitionSpec as P

from namedaxes import DATA_SHARDS, DEVICES, GRID_AXES, GRID_SHAPE, MODEL_REPLICAS
from namedaxes.checking import (CheckFailed, Exercise, assert_check_fails, assert_check_passes, collective_axes,
                                collectives, expect_array, expect_close, expect_collective,
                                expect_no_collective, expect_replicated, show_error)

ENV = [(DEVICES, 8)]


def test_expect_array_checks_type_first():
    with pytest.raises(CheckFailed, match=r"`out` should be a `jax.Array`, but it is a `list`"):
        expect_array("out", [1.0], shape=(1,))
    with pytest.raises(CheckFailed, match=r"`out` is a NumPy array"):
        expect_array("out", np.zeros(3))


def test_expect_array_then_shape_then_dtype():
    with pytest.raises(CheckFailed, match=r"shape \(8,\), but it has shape \(4,\)"):
        expect_array("out", jnp.zeros(4, jnp.int32), shape=(8,), dtype=jnp.float32)
    with pytest.raises(CheckFailed, match=r"dtype float32, but it has dtype int32"):
        expect_array("out", jnp.zeros(8, jnp.int32), shape=(8,), dtype=jnp.float32)
    expect_array("out", jnp.zeros(8), shape=(8,), dtype=jnp.float32)


def test_expect_close_names_expected_seen_and_where():
    with pytest.raises(CheckFailed) as err:
        expect_close("total", jnp.array([1.0, 2.0]), np.array([1.0, 3.0]))
    msg = str(err.value)
    assert "`total` has the wrong values" in msg and "[1. 3.]" in msg and "[1. 2.]" in msg and "(1,)" in msg
    expect_close("total", jnp.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-7]))


def test_expect_replicated_explains_the_missing_collective():
    per_device = jax.pmap(lambda x: x * 2.0, axis_name=DEVICES)(jnp.arange(8.0))
    with pytest.raises(CheckFailed, match=r"different values on different devices.*lax.psum.*'devices'"):
        expect_replicated("scaled_sum", per_device, axis_name=DEVICES)
    total = jax.pmap(lambda x: lax.psum(x, DEVICES), axis_name=DEVICES)(jnp.arange(8.0))
    expect_replicated("scaled_sum", total, axis_name=DEVICES)


def test_collectives_found_by_primitive_and_axis():
    found = collectives(lambda x: lax.psum(x * 2.0, DEVICES), 1.0, axis_env=ENV)
    assert found == {("psum", (DEVICES,))}
    assert collective_axes(lambda x: lax.pmax(x, DEVICES) + lax.axis_index(DEVICES), 1.0, axis_env=ENV) == [DEVICES]
    assert collectives(lambda x: jnp.sum(x * 2.0), 1.0, axis_env=ENV) == set()


def test_collectives_look_inside_shard_map_bodies():
    mesh = jax.make_mesh(GRID_SHAPE, GRID_AXES)
    spec = P(DATA_SHARDS, MODEL_REPLICAS)
    f = jax.shard_map(lambda x: lax.psum(x, MODEL_REPLICAS), mesh=mesh, in_specs=spec, out_specs=spec)
    x = jax.device_put(jnp.arange(8.0).reshape(GRID_SHAPE), NamedSharding(mesh, spec))
    assert collective_axes(f, x) == [MODEL_REPLICAS]


def test_expect_collective_messages():
    with pytest.raises(CheckFailed, match=r"should communicate over 'devices'.*no collective at all"):
        expect_collective("f", lambda x: x * 2.0, 1.0, axis_name=DEVICES, axis_env=ENV)
    with pytest.raises(CheckFailed, match=r"with `psum`.*pmax over \('devices',\)"):
        expect_collective("f", lambda x: lax.pmax(x, DEVICES), 1.0, axis_name=DEVICES, axis_env=ENV,
                          primitives=["psum"])
    expect_collective("f", lambda x: lax.psum(x, DEVICES), 1.0, axis_name=DEVICES, axis_env=ENV)
    with pytest.raises(CheckFailed, match=r"should not communicate over 'devices'"):
        expect_no_collective("f", lambda x: lax.psum(x, DEVICES), 1.0, axis_name=DEVICES, axis_env=ENV)


def test_show_error_prints_the_real_error(capsys):
    with show_error(NameError, match="unbound axis name"):
        jax.vmap(lambda x: lax.psum(x, "batch"))(jnp.ones(3))
    assert "NameError: Found an unbound axis name: batch" in capsys.readouterr().out


def test_show_error_fails_when_nothing_is_raised():
    with pytest.raises(AssertionError, match="should raise ValueError, but it ran without an error"):
        with show_error(ValueError):
            pass


def test_show_error_fails_on_a_different_message():
    with pytest.raises(AssertionError, match="expected an error matching"):
        with show_error(ValueError, match="context mesh"):
            raise ValueError("something else")


def test_assert_check_fails_and_passes():
    def check(v):
        expect_close("v", v, 1.0)
    assert "wrong values" in assert_check_fails(check, 2.0, match="wrong values")
    with pytest.raises(AssertionError, match="accepted an answer"):
        assert_check_fails(check, 1.0)
    assert_check_passes(check, 1.0)


def test_exercise_check_hint_and_observe(capsys):
    ex = Exercise("twice", lambda f: expect_close("twice", f(1.0), 2.0), hints=["multiply", "by two"],
                  observe=lambda f: {"out": np.asarray(f(3.0))})
    ex.check(lambda x: 2 * x)
    with pytest.raises(CheckFailed):
        ex.check(lambda x: x)
    ex.hint(); ex.hint(); ex.hint()
    out = capsys.readouterr().out
    assert "Correct: `twice`" in out and "Hint 1/2" in out and out.count("Hint 2/2") == 2
    assert float(ex.observe(lambda x: 2 * x)["out"]) == 6.0


def test_shard_map_psum_counts_as_psum_and_type_casts_do_not_count():
    from jax.sharding import AxisType
    mesh = jax.make_mesh((8,), (DEVICES,), axis_types=(AxisType.Auto,))
    # a replicated (P()) input is axis-invariant: its psum is traced as psum_invariant, after a pvary/pcast
    f = jax.shard_map(lambda x: lax.psum(x, DEVICES), mesh=mesh, in_specs=P(), out_specs=P())
    found = collectives(f, jnp.ones(3))
    assert ("psum", (DEVICES,)) in found
    assert not any(p in ("pvary", "pcast") for p, _ in found)
