"""Notebook 06 (multi-process): every check proven both ways on the 2-process cluster, observe() stable."""
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from autograder.compare import derived, observations_match
from namedaxes import DATA_PARALLEL, DEVICES, multiprocess
from namedaxes.checking import CheckFailed, assert_check_fails, assert_check_passes
from namedaxes.exercises import multi_process as q

LR = 0.01

# The answers below are module-level functions: the workers import them from this module.
# `_as_notebook_function` makes copies that travel as source text, as a notebook's functions do.


def _as_notebook_function(fn, **notebook_globals):
    namespace = {**fn.__globals__, **notebook_globals}
    copy = types.FunctionType(fn.__code__, namespace, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__module__ = "__main__"
    return copy


def not_written(*args):
    raise NotImplementedError()


@pytest.fixture(scope="module", autouse=True)
def cluster():
    yield multiprocess.get_cluster(q.NUM_PROCESSES, q.LOCAL_DEVICES)


# ---------------------------------------------------------------- global_sum
def global_sum_ref(x):
    return lax.psum(x, axis_name=DEVICES)


def global_sum_pmean_times_n(x):
    return lax.pmean(x, DEVICES) * lax.psum(1, DEVICES)


def global_sum_all_gather(x):
    return jnp.sum(lax.all_gather(x, DEVICES), axis=0)


def global_sum_no_collective(x):
    return jnp.sum(x)


def global_sum_pmean(x):
    return lax.pmean(x, axis_name=DEVICES)


def global_sum_twice(x):
    return 2 * lax.psum(x, DEVICES)


def global_sum_wrong_axis(x):
    return lax.psum(x, axis_name="device")


def global_sum_constant(x):
    return jnp.full_like(x, 36.0)


def global_sum_lambda_like(x):          # replaced by a lambda in the test
    return x


@pytest.mark.parametrize("fn", [global_sum_ref, global_sum_pmean_times_n, global_sum_all_gather,
                                _as_notebook_function(global_sum_ref)])
def test_global_sum_accepts_right_answers(fn):
    assert_check_passes(q.global_sum.check, fn)


@pytest.mark.parametrize("fn, match", [
    (global_sum_no_collective, "still holds its own value.*lax.psum"),
    (global_sum_pmean, "mean of all devices: use `lax.psum`, not `lax.pmean`"),
    (global_sum_twice, "sum of all 8 values, 36"),
    (global_sum_wrong_axis, "collective over 'device'.*binds only 'devices'"),
    (global_sum_constant, "should communicate over 'devices'"),
    (not_written, "not written yet"),
    (lambda x: lax.psum(x, DEVICES), "lambda: define it with `def`"),
])
def test_global_sum_rejects_wrong_answers(fn, match):
    assert_check_fails(q.global_sum.check, fn, match=match)


def test_global_sum_observe_is_stable_and_discriminating():
    ref = q.global_sum.observe(global_sum_ref)
    got = derived(ref)
    assert got["axes"] == [DEVICES]
    assert got["devices_0"].shape == (8,) and got["devices_1"].shape == (8, 3)
    np.testing.assert_allclose(got["devices_0"], np.full(8, got["devices_0"][0]), rtol=1e-6)
    assert observations_match(ref, q.global_sum.observe(global_sum_pmean_times_n))
    assert observations_match(ref, q.global_sum.observe(_as_notebook_function(global_sum_all_gather)))
    assert not observations_match(ref, q.global_sum.observe(global_sum_pmean))
    assert not observations_match(ref, q.global_sum.observe(global_sum_no_collective))


def test_global_sum_matches_one_process_with_8_devices():
    r = np.random.RandomState(0)
    x = r.normal(size=(8, 2)).astype(np.float32)
    (two_processes,) = q._run_global_sum(global_sum_ref, [x])
    one_process = jax.pmap(global_sum_ref, axis_name=DEVICES)(x)
    np.testing.assert_allclose(two_processes, np.asarray(one_process), rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------------- local_rows
def local_rows_ref(global_batch):
    n, i = jax.local_device_count(), jax.process_index()
    return jax.tree.map(lambda a: a[i * n:(i + 1) * n], global_batch)


def local_rows_by_hand(global_batch):
    start = jax.process_index() * jax.local_device_count()
    stop = start + jax.local_device_count()
    if isinstance(global_batch, dict):
        return {k: jnp.asarray(v)[start:stop] for k, v in global_batch.items()}
    return jnp.asarray(global_batch)[start:stop]


def local_rows_first_block(global_batch):
    return jax.tree.map(lambda a: a[:jax.local_device_count()], global_batch)


def local_rows_hard_coded_4(global_batch):
    i = jax.process_index()
    return jax.tree.map(lambda a: a[4 * i:4 * i + 4], global_batch)


def local_rows_everything(global_batch):
    return global_batch


def local_rows_arrays_only(global_batch):
    n, i = jax.local_device_count(), jax.process_index()
    return global_batch[i * n:(i + 1) * n]


def local_rows_one_row(global_batch):
    return jax.tree.map(lambda a: a[jax.process_index()], global_batch)


def local_rows_global_count(global_batch):
    n, i = jax.device_count(), jax.process_index()
    return jax.tree.map(lambda a: a[i * n:(i + 1) * n], global_batch)


@pytest.mark.parametrize("fn", [local_rows_ref, local_rows_by_hand, _as_notebook_function(local_rows_by_hand)])
def test_local_rows_accepts_right_answers(fn):
    assert_check_passes(q.local_rows.check, fn)


@pytest.mark.parametrize("fn, match", [
    (local_rows_first_block, r"worker process 1 .*returned rows 0 to 3, but it owns rows 4 to 7.*process_index"),
    (local_rows_hard_coded_4, r"In this kernel .*returned shape \(4, 2\) \(rows 0 to 3\); it should return rows 0 to 7"),
    (local_rows_everything, "returned all 8 rows"),
    (local_rows_arrays_only, r"dict batch .*`local_rows` slices the dict itself .*keys, not rows.*jax.tree.map"),
    (local_rows_one_row, "returned a single row"),
    (local_rows_global_count, r"worker process 0 .*returned all 8 rows.*local_device_count"),
    (not_written, "not written yet"),
])
def test_local_rows_rejects_wrong_answers(fn, match):
    assert_check_fails(q.local_rows.check, fn, match=match)


def local_rows_slice_error_py311(global_batch):
    if not isinstance(global_batch, dict):
        return local_rows_ref(global_batch)
    raise TypeError("unhashable type: 'slice'")  # what `a_dict[0:8]` raises up to Python 3.11


def local_rows_slice_error_py312(global_batch):
    if not isinstance(global_batch, dict):
        return local_rows_ref(global_batch)
    raise KeyError(slice(0, 8, None))  # what `a_dict[0:8]` raises from Python 3.12 on


def local_rows_wrong_key(global_batch):
    if not isinstance(global_batch, dict):
        return local_rows_ref(global_batch)
    return {"x": global_batch["inputs"][:8], "y": global_batch["y"][:8]}


@pytest.mark.parametrize("fn", [local_rows_arrays_only, local_rows_slice_error_py311, local_rows_slice_error_py312])
def test_slicing_a_dict_batch_gets_the_same_plain_message_on_every_python(fn):
    msg = assert_check_fails(q.local_rows.check, fn, match=r"slices the dict itself .*a dict has keys, not rows")
    assert "KeyError" not in msg and "TypeError" not in msg and "slice(0" not in msg, msg


def test_other_errors_on_a_dict_batch_are_named():
    assert_check_fails(q.local_rows.check, local_rows_wrong_key, match=r"`local_rows` fails with KeyError: 'inputs'")


def test_local_rows_observe_is_stable_and_discriminating():
    ref = q.local_rows.observe(local_rows_ref)      # traced as process i of clusters of 8 devices
    got = derived(ref)
    assert got["process1_of_2_batch1"].shape == (4, 3, 2) and got["process0_of_1_batch1"].shape == (8, 3, 2)
    assert got["process3_of_4_batch2['y']"].shape == (2, 5) and got["process3_of_4_batch2['y']"].dtype == np.int32
    assert observations_match(ref, q.local_rows.observe(local_rows_by_hand))
    assert not observations_match(ref, q.local_rows.observe(local_rows_first_block))
    assert not observations_match(ref, q.local_rows.observe(local_rows_hard_coded_4))


# ---------------------------------------------------------------- parallel_update_step
def loss_fn(params, local_batch):
    return jnp.mean((params["w"] * local_batch["x"] + params["b"] - local_batch["y"]) ** 2)


def compute_gradients(params, local_batch):
    return jax.grad(loss_fn)(params, local_batch)


def step_ref(params, sharded_batch):
    grads = lax.pmean(compute_gradients(params, sharded_batch), axis_name=DATA_PARALLEL)
    return jax.tree.map(lambda p, g: p - LR * g, params, grads)


def step_psum_over_n(params, sharded_batch):
    grads = compute_gradients(params, sharded_batch)
    n = lax.psum(1, DATA_PARALLEL)
    return {k: params[k] - LR * lax.psum(grads[k], DATA_PARALLEL) / n for k in ("w", "b")}


def step_no_average(params, sharded_batch):
    grads = compute_gradients(params, sharded_batch)
    return jax.tree.map(lambda p, g: p - LR * g, params, grads)


def step_psum(params, sharded_batch):
    grads = lax.psum(compute_gradients(params, sharded_batch), DATA_PARALLEL)
    return jax.tree.map(lambda p, g: p - LR * g, params, grads)


def step_unchanged(params, sharded_batch):
    lax.pmean(compute_gradients(params, sharded_batch), DATA_PARALLEL)
    return params


def step_wrong_sign(params, sharded_batch):
    grads = lax.pmean(compute_gradients(params, sharded_batch), DATA_PARALLEL)
    return jax.tree.map(lambda p, g: p + LR * g, params, grads)


def step_wrong_axis(params, sharded_batch):
    grads = lax.pmean(compute_gradients(params, sharded_batch), DEVICES)
    return jax.tree.map(lambda p, g: p - LR * g, params, grads)


def step_returns_tuple(params, sharded_batch):
    new = step_ref(params, sharded_batch)
    return new["w"], new["b"]


def step_learning_rate_0_1(params, sharded_batch):
    grads = lax.pmean(compute_gradients(params, sharded_batch), DATA_PARALLEL)
    return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)


def step_per_example_params(params, sharded_batch):
    grads = lax.pmean(compute_gradients(params, sharded_batch), DATA_PARALLEL)
    return jax.tree.map(lambda p, g: (p - LR * g) * jnp.ones(sharded_batch["x"].shape), params, grads)


def _notebook_step():
    """step_ref as a notebook would ship it: its helpers travel as source too."""
    nb_loss = _as_notebook_function(loss_fn)
    nb_grads = _as_notebook_function(compute_gradients, loss_fn=nb_loss)
    return _as_notebook_function(step_ref, compute_gradients=nb_grads)


def test_notebook_step_ships_its_helpers_as_source():
    source = multiprocess.ship(_notebook_step()).source
    for line in ("def loss_fn(params, local_batch):", "def compute_gradients(params, local_batch):",
                 "def step_ref(params, sharded_batch):", "LR = 0.01", "DATA_PARALLEL = 'data_parallel_axis'"):
        assert line in source


@pytest.mark.parametrize("fn", [step_ref, step_psum_over_n, _notebook_step()])
def test_parallel_update_step_accepts_right_answers(fn):
    assert_check_passes(q.parallel_update_step.check, fn)


@pytest.mark.parametrize("fn, match", [
    (step_no_average, "devices of the two processes disagree.*lax.pmean"),
    (step_psum, "8 times too large.*summed"),
    (step_unchanged, "did not change"),
    (step_wrong_sign, "wrong way"),
    (step_wrong_axis, "collective over 'devices'.*binds only 'data_parallel_axis'"),
    (step_returns_tuple, "dict with keys 'w' and 'b'.*returned a `tuple`"),
    (step_learning_rate_0_1, "same step on one process with 8 devices gives"),
    (step_per_example_params, r"scalar parameters.*shape \(4,\)"),
    (not_written, "not written yet"),
])
def test_parallel_update_step_rejects_wrong_answers(fn, match):
    assert_check_fails(q.parallel_update_step.check, fn, match=match)


def test_parallel_update_step_observe_is_stable_and_discriminating():
    ref = q.parallel_update_step.observe(step_ref)
    got = derived(ref)
    assert got["axes"] == [DATA_PARALLEL] and got["step_0['w']"].shape == (8,)
    assert observations_match(ref, q.parallel_update_step.observe(_notebook_step()))
    assert observations_match(ref, q.parallel_update_step.observe(step_psum_over_n))
    assert not observations_match(ref, q.parallel_update_step.observe(step_psum))


def test_parallel_update_step_on_two_processes_equals_one_process():
    params, sharded = q._visible_case()
    (two,) = q._run_update_step(step_ref, [(params, sharded)])
    one = jax.pmap(step_ref, axis_name=DATA_PARALLEL, in_axes=(None, 0))(params, sharded)
    for k in ("w", "b"):
        np.testing.assert_allclose(two[k], np.asarray(one[k]), rtol=1e-6, atol=1e-6)
    assert float(two["w"][0]) > 1.0 and float(two["b"][0]) > 0.0     # a step towards w = 2, b = 0.5


def test_answers_checked_in_the_kernel_before_any_worker_runs(monkeypatch):
    def no_cluster(*args, **kwargs):
        raise AssertionError("the cluster was used")

    monkeypatch.setattr(q, "_cluster", no_cluster)
    for exercise in (q.global_sum, q.local_rows, q.parallel_update_step):
        with pytest.raises(CheckFailed, match="not written yet"):
            exercise.check(not_written)
