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
                                expect_no_collective, expect_replicated, fail, not_written_yet, same_values,
                                show_error, show_values, unbound_axis_name)

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


# ---------------------------------------------------------------- small helpers of the exercise modules
def test_fail_raises_check_failed_with_the_message_verbatim():
    with pytest.raises(CheckFailed) as err:
        fail("line one\n  line two ")
    assert str(err.value) == "line one\n  line two "


def test_show_values_uses_four_decimals_commas_and_summarises_long_arrays():
    assert show_values([1.0, 2.5]) == "[1. , 2.5]"
    assert show_values(np.array([1 / 3])) == "[0.3333]"
    assert show_values(jnp.arange(3)) == "[0, 1, 2]"
    assert show_values(jnp.arange(3), dtype=float) == "[0., 1., 2.]"
    assert show_values(np.arange(20)) == "[ 0,  1,  2, ..., 17, 18, 19]"
    assert show_values(2.0) == "2."


def test_same_values_needs_equal_shapes_and_values_within_tol():
    assert same_values(jnp.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-6]))
    assert not same_values(jnp.array([1.0, 2.0]), np.array([1.0, 2.001]))
    assert not same_values(np.zeros(3), np.zeros((3, 1)))       # broadcastable is not enough
    assert not same_values(np.zeros(2), np.zeros(3))              # and a mismatch does not raise
    assert not same_values(1.0, 1.0 + 5e-5)                       # default tol 1e-5 ...
    assert same_values(1.0, 1.0 + 5e-5, 1e-4)                     # ... or the one passed
    assert same_values([jnp.float32(1.0), 2], [1.0, 2.0], dtype=float)
    assert isinstance(same_values(1.0, 1.0), bool)


def test_not_written_yet_fills_the_shared_sentence():
    assert not_written_yet("total") == (
        "`total` is not written yet: replace `raise NotImplementedError()` with your code.")
    assert not_written_yet("step", calls=" (or a function it calls)", where=" in its cell",
                           then=", then run that cell again") == (
        "`step` (or a function it calls) is not written yet: replace `raise NotImplementedError()` "
        "in its cell with your code, then run that cell again.")


def test_unbound_axis_name_reads_the_axis_from_jax_error():
    with pytest.raises(NameError) as err:
        jax.vmap(lambda x: lax.psum(x, "batch"), axis_name=DEVICES)(jnp.arange(2.0))
    assert unbound_axis_name(err.value) == "batch"
    assert unbound_axis_name(NameError("name 'lax' is not defined")) is None
    assert unbound_axis_name(ValueError("Found an unbound axis name: batch.")) is None


def test_exercise_check_explains_a_skipped_device_setup(monkeypatch):
    ex = Exercise("twice", lambda f: None)
    monkeypatch.setattr(jax, "device_count", lambda: 1)
    with pytest.raises(CheckFailed, match=r"need 8 devices, but JAX has 1\. Run the set-up cell"):
        ex.check(lambda x: 2 * x)
