"""Notebook 06 (multi-process, global arrays): every check proven both ways, observe() stable.

For each exercise: the reference answer (the solution notebook's) and equivalent
right answers pass the visible check (which runs them in this process, answering
as process 0 of smaller clusters, and in both workers of the 2 x 4 cluster), and
their observations match the reference's under the autograder's comparison;
plausible wrong answers, among them the hard-coded device counts of issue 11
(`pmean(x) * 8`, `psum(...) / 8`, `psum(...) / jax.local_device_count()`), are
rejected with the message that helps (the regex names what it must say), and
their observations do not match.
"""

import re
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P
from judge_helpers import (
    agreement_test,
    assert_check_fails,
    assert_check_passes,
    derived,
    judge_observations,
    matrix_rows,
    observations_match,
    observe,
)

from namedaxes import DATA_PARALLEL, DEVICES, model, multiprocess
from namedaxes.checking import CheckFailed
from namedaxes.exercises import multi_process as q
from namedaxes.exercises.multi_process import running, step

LEARNING_RATE = model.LEARNING_RATE

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


def _mismatch(reference: dict, student: dict) -> str:
    verdict = judge_observations(reference, student)
    assert not verdict.passed
    return verdict.reason(limit=8)


# ---------------------------------------------------------------- 1. local_rows
def local_rows_ref(global_batch):
    share = jax.tree.leaves(global_batch)[0].shape[0] // jax.process_count()
    start = jax.process_index() * share
    return jax.tree.map(lambda a: a[start : start + share], global_batch)


def local_rows_per_device_count(global_batch):
    """Rows per device times local devices: the same share."""
    rows = jax.tree.leaves(global_batch)[0].shape[0] // jax.device_count() * jax.local_device_count()
    return jax.tree.map(lambda a: a[jax.process_index() * rows : (jax.process_index() + 1) * rows], global_batch)


def local_rows_split(global_batch):
    return jax.tree.map(lambda a: jnp.split(a, jax.process_count())[jax.process_index()], global_batch)


def local_rows_one_per_device(global_batch):  # the formula of section 3, for one row per device
    n, i = jax.local_device_count(), jax.process_index()
    return jax.tree.map(lambda a: a[i * n : (i + 1) * n], global_batch)


def local_rows_two_processes(global_batch):
    share = jax.tree.leaves(global_batch)[0].shape[0] // 2
    return jax.tree.map(lambda a: a[jax.process_index() * share : (jax.process_index() + 1) * share], global_batch)


def local_rows_first_share(global_batch):
    share = jax.tree.leaves(global_batch)[0].shape[0] // jax.process_count()
    return jax.tree.map(lambda a: a[:share], global_batch)


def local_rows_everything(global_batch):
    return global_batch


def local_rows_arrays_only(global_batch):
    share = len(global_batch) // jax.process_count()
    return global_batch[jax.process_index() * share : (jax.process_index() + 1) * share]


def local_rows_one_row(global_batch):
    return jax.tree.map(lambda a: a[jax.process_index()], global_batch)


LOCAL_ROWS_RIGHT = {
    "reference": local_rows_ref,
    "rows per device x local devices": local_rows_per_device_count,
    "jnp.split": local_rows_split,
    "as notebook source": _as_notebook_function(local_rows_ref),
}
LOCAL_ROWS_WRONG = {
    "one row per device (section 3's formula)": (
        local_rows_one_per_device,
        r"(?s)answering as process 2 of 4 .*\(key 'x'\) `local_rows` returned shape \(2, 3\).*"
        r"one row per local device.*16 rows for 4 processes, 4 rows each.*jax\.process_count\(\)",
    ),
    "two processes written by hand": (
        local_rows_two_processes,
        r"answering as process 2 of 4 .*returned shape \(0, 2\).*rows 4 to 5, shape \(2, 2\)"
        r".*no row at all.*With 4 processes, each share has 2 rows",
    ),
    "always the first share": (
        local_rows_first_share,
        r"answering as process 2 of 4.*returned rows 0 to 1, but it owns rows 4 to 5.*process_index",
    ),
    "everything": (local_rows_everything, "answering as process 2 of 4 .*returned all 8 rows"),
    "arrays only": (local_rows_arrays_only, r"dict batch .*`local_rows` slices the dict itself .*keys, not rows"),
    "one row": (local_rows_one_row, "returned a single row"),
    "not written": (not_written, "not written yet"),
}


@pytest.mark.parametrize("fn", LOCAL_ROWS_RIGHT.values(), ids=LOCAL_ROWS_RIGHT.keys())
def test_local_rows_accepts_right_answers(fn):
    assert_check_passes(q.local_rows.check, fn)


@pytest.mark.parametrize("fn, match", LOCAL_ROWS_WRONG.values(), ids=LOCAL_ROWS_WRONG.keys())
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
    ref = observe(q.local_rows, local_rows_ref)  # traced as process i of clusters of 2x4, 2x2, 4x2, 1x8
    got = derived(ref)
    assert got["process1_of_2x4_batch1"].shape == (8, 3, 2) and got["process0_of_1x8_batch1"].shape == (16, 3, 2)
    assert got["process3_of_4x2_batch2['y']"].shape == (6,) and got["process3_of_4x2_batch2['y']"].dtype == np.int32
    assert got["process1_of_2x2_batch0"].shape == (2,)
    for fn in list(LOCAL_ROWS_RIGHT.values())[1:]:
        assert observations_match(ref, observe(q.local_rows, fn))
    for fn in (local_rows_one_per_device, local_rows_two_processes, local_rows_first_share):
        assert not observations_match(ref, observe(q.local_rows, fn))


# ---------------------------------------------------------------- 2. global_metrics
def _metrics_map(per_device):
    def answer(errors, mesh):
        return jax.shard_map(per_device, mesh=mesh, in_specs=P(DEVICES), out_specs=P())(errors)

    return answer


def _per_process(block, processes=None, local=None):
    process = lax.axis_index(DEVICES) // (local or jax.local_device_count())
    return lax.psum(jax.nn.one_hot(process, processes or jax.process_count()) * jnp.sum(block), DEVICES)


def metrics_ref(errors, mesh):
    def per_device(block):
        total = lax.psum(jnp.sum(block), DEVICES)
        count = lax.psum(block.size, DEVICES)
        process = lax.axis_index(DEVICES) // jax.local_device_count()
        mine = jax.nn.one_hot(process, jax.process_count()) * jnp.sum(block)
        return {"total": total, "mean": total / count, "per_process": lax.psum(mine, DEVICES)}

    return jax.shard_map(per_device, mesh=mesh, in_specs=P(DEVICES), out_specs=P())(errors)


def _pmean_based(block):
    k = lax.psum(1, DEVICES)
    return {
        "total": lax.pmean(jnp.sum(block), DEVICES) * k,
        "mean": lax.pmean(jnp.mean(block), DEVICES),
        "per_process": _per_process(block),
    }


def _mesh_size_based(errors, mesh):
    def per_device(block):
        total = lax.psum(jnp.sum(block), DEVICES)
        return {"total": total, "mean": total / (block.size * mesh.size), "per_process": _per_process(block)}

    return jax.shard_map(per_device, mesh=mesh, in_specs=P(DEVICES), out_specs=P())(errors)


def metrics_reshape_outside(errors, mesh):
    """total and mean per device; per_process from the global array, made whole first (`jax.reshard`)."""
    out = jax.shard_map(
        lambda b: {"total": lax.psum(jnp.sum(b), DEVICES), "mean": lax.pmean(jnp.mean(b), DEVICES)},
        mesh=mesh,
        in_specs=P(DEVICES),
        out_specs=P(),
    )(errors)
    whole = jax.reshard(errors, NamedSharding(mesh, P()))
    return {**out, "per_process": jnp.sum(whole.reshape(jax.process_count(), -1), axis=1)}


def _reshape_split_array(errors, mesh):
    out = metrics_ref(errors, mesh)
    return {**out, "per_process": jnp.sum(errors.reshape(jax.process_count(), -1), axis=1)}


def _with(**changes):
    """The reference per-device function with some outputs replaced (a plausible mistake)."""

    def per_device(block):
        total = lax.psum(jnp.sum(block), DEVICES)
        out = {"total": total, "mean": total / lax.psum(block.size, DEVICES), "per_process": _per_process(block)}
        out.update({key: fn(block) for key, fn in changes.items()})
        return out

    return _metrics_map(per_device)


def _everything_under_jit(errors, mesh):
    whole = jax.reshard(errors, NamedSharding(mesh, P()))
    return {
        "total": jnp.sum(errors),
        "mean": jnp.mean(errors),
        "per_process": jnp.sum(whole.reshape(jax.process_count(), -1), axis=1),
    }


def metrics_pmean_based(errors, mesh):
    return _metrics_map(_pmean_based)(errors, mesh)


def metrics_device_count(errors, mesh):  # right where the mesh spans the cluster, as every mesh here does
    return _with(mean=lambda b: lax.psum(jnp.mean(b), DEVICES) / jax.device_count())(errors, mesh)


# right answers run in the workers too, so they are module-level functions (the workers import them)
METRICS_RIGHT = {
    "reference": metrics_ref,
    "pmean based": metrics_pmean_based,
    "mesh.size": _mesh_size_based,
    "jax.device_count() (the mesh spans the cluster)": metrics_device_count,
    "per_process outside shard_map, on the whole array": metrics_reshape_outside,
    "as notebook source": _as_notebook_function(metrics_ref),
}


def metrics_whole_by_psum(errors, mesh):
    """Everything on every device through the allowed collective (issue 46): each device places its rows in a
    zero array of the whole shape at its own index, a psum adds them (every device now holds all of errors),
    and every device computes every metric on all of it."""

    def per_device(block):
        k, i = lax.axis_size(DEVICES), lax.axis_index(DEVICES)
        whole = lax.psum(jnp.zeros((k, *block.shape), block.dtype).at[i].set(block), DEVICES)
        shares = whole.reshape(jax.process_count(), -1).sum(axis=1)
        return {"total": jnp.sum(whole), "mean": jnp.mean(whole), "per_process": shares}

    return jax.shard_map(per_device, mesh=mesh, in_specs=P(DEVICES), out_specs=P())(errors)


def _metrics_whole_errors(errors, mesh):
    """Every device takes all of errors (replicated in_specs), computes every metric alone and divides
    the psum of each by the device count: the right values, but no device works on its own rows."""
    errors = jax.reshard(errors, NamedSharding(mesh, P()))
    k = mesh.size

    def per_device(whole):
        shares = whole.reshape(jax.process_count(), -1).sum(axis=1)
        mine = {"total": jnp.sum(whole), "mean": jnp.mean(whole), "per_process": shares}
        return jax.tree.map(lambda v: lax.psum(v, DEVICES) / k, mine)

    return jax.shard_map(per_device, mesh=mesh, in_specs=P(), out_specs=P())(errors)


def _metrics_dead_region(errors, mesh):
    """issue 16: a `shard_map` that takes each device's shard, its result multiplied by zero, beside the
    metrics computed on the global array (`jax.reshard`): the region does no work that counts."""
    region = jax.shard_map(lambda b: lax.psum(jnp.sum(b), DEVICES), mesh=mesh, in_specs=P(DEVICES), out_specs=P())(
        errors
    )
    out = _everything_under_jit(errors, mesh)
    return {**out, "total": out["total"] + 0.0 * region}


METRICS_WRONG = {
    # issue 16: the grader's judging steps, in the visible check
    "dead shard_map beside a global computation": (
        _metrics_dead_region,
        r"(?s)right values, but the `jax\.shard_map` over 'devices' in it that gives each device its own shard "
        r"\(input 1 split over 'devices' along dimension 0\) does not reach the result",
    ),
    "all of errors on every device (psum of one-hot blocks)": (
        metrics_whole_by_psum,
        r"(?s)right metrics, but one device computes 4\.\d× the reference's FLOPs on 8 devices \(\d+ against 29.*"
        r"at most 2×.*every device holds all of `errors`",
    ),
    "whole errors on every device": (
        _metrics_whole_errors,
        r"(?s)right values, but no `jax\.shard_map` over 'devices' in it gives each "
        r"device only its own shard.*takes input 1 the whole value on every device",
    ),
    # issue 11's checker gaps: hard-coded device counts
    "pmean(x) * 8 for the total": (
        _with(total=lambda b: lax.pmean(jnp.sum(b), DEVICES) * 8),
        r"(?s)mesh of 4 devices in this kernel.*returned total = .*2 times the right value.*written as 8",
    ),
    "psum(...) / 8 for the mean": (
        _with(mean=lambda b: lax.psum(jnp.mean(b), DEVICES) / 8),
        r"(?s)mesh of 4 devices.*returned mean = .*0\.5 times the right value.*written as 8.*lax\.psum\(1, DEVICES\)",
    ),
    "psum / local_device_count() for the mean": (
        _with(mean=lambda b: lax.psum(jnp.mean(b), DEVICES) / jax.local_device_count()),
        r"(?s)mesh of 4 devices.*returned mean = .*divides by `jax\.local_device_count\(\)` \(2, the devices of one "
        r"process\).*every process on the mesh \(4\)",
    ),
    "pmean for psum in the total": (
        _with(total=lambda b: lax.pmean(jnp.sum(b), DEVICES)),
        r"(?s)mesh of 4 devices.*returned total = .*the total divided by the 4 devices: `lax\.pmean` averages",
    ),
    "mean divided by the rows": (
        _with(mean=lambda b: lax.psum(jnp.sum(b), DEVICES) / lax.psum(b.shape[0], DEVICES)),
        r"(?s)returned mean = .*divides the total by the 8 rows, but `errors` of shape \(8, 3\) has 24 entries",
    ),
    "the mean for the total": (  # issue 48: the judge names it as the check does
        _with(total=lambda b: lax.psum(jnp.sum(b), DEVICES) / lax.psum(b.size, DEVICES)),
        r"(?s)returned total = .*That is the mean of all entries; `total` is their sum",
    ),
    "device 0's block for the total": (
        _with(total=lambda b: lax.psum(jnp.where(lax.axis_index(DEVICES) == 0, jnp.sum(b), 0.0), DEVICES)),
        r"(?s)returned total = .*one device's own block only",
    ),
    "mean of the devices' sums": (
        _with(mean=lambda b: lax.pmean(jnp.sum(b), DEVICES)),
        r"(?s)returned mean = .*mean of the devices' sums.*all 24 entries",
    ),
    "two processes written by hand": (
        _with(per_process=lambda b: _per_process(b, processes=2)),
        r"(?s)4 processes x 2 devices.*`per_process` of shape \(4,\), but it has shape \(2,\)"
        r".*`jax\.process_count\(\)` of them \(4 here\)",
    ),
    "per-device sums": (
        _with(
            per_process=lambda b: lax.psum(
                jax.nn.one_hot(lax.axis_index(DEVICES), lax.psum(1, DEVICES)) * jnp.sum(b), DEVICES
            )
        ),
        r"(?s)`per_process` of shape \(2,\), but it has shape \(4,\).*not one per device",
    ),
    "device position for process": (
        _with(
            per_process=lambda b: lax.psum(
                jax.nn.one_hot(lax.axis_index(DEVICES), jax.process_count()) * jnp.sum(b), DEVICES
            )
        ),
        r"(?s)returned per_process = .*Entry i is the sum of the rows that process i owns",
    ),
    "means per process": (  # issue 34: a diagnosis where "Entry i is the sum..." was all it said
        _with(per_process=lambda b: _per_process(b) / lax.psum(b.size, DEVICES) * jax.process_count()),
        r"(?s)returned per_process = .*the means of each process's rows: entry i is their sum",
    ),
    "the total in every entry": (
        _with(per_process=lambda b: jnp.full((jax.process_count(),), lax.psum(jnp.sum(b), DEVICES))),
        r"(?s)returned per_process = .*Every entry is the total of all rows: entry i adds up only the rows",
    ),
    "no collective for the total": (
        _with(total=lambda b: jnp.sum(b)),
        r"(?s)`out_specs=P\(\)` promises.*still differs per device.*lax\.psum",
    ),
    "gathered total returned with P()": (  # issue 34: the same on every device, typed per-device by JAX
        _with(total=lambda b: jnp.sum(lax.all_gather(b, DEVICES))),
        r"(?s)`out_specs=P\(\)` promises.*cannot tell that it is.*such as `lax\.all_gather` \(even though every "
        r"device then holds the same values\).*`lax\.psum`",
    ),
    "misspelled axis": (
        _with(total=lambda b: lax.psum(jnp.sum(b), "device")),
        r"(?s)empty AssertionError.*the axis 'devices'",
    ),
    "no shard_map": (_everything_under_jit, r"(?s)right values, but without `jax\.shard_map`"),
    "reshape of the split array": (
        _reshape_split_array,
        r"(?s)This reshape is not supported.*outside `jax\.shard_map`, JAX refuses",
    ),
    "a tuple": (
        lambda errors, mesh: tuple(metrics_ref(errors, mesh).values()),
        r"\(errors of shape \(8, 3\)\), `global_metrics` should return a dict with keys "
        r"\['total', 'mean', 'per_process'\], but it returned a `tuple`\.",
    ),
    "not written": (not_written, "not written yet"),
}


@pytest.mark.parametrize("fn", METRICS_RIGHT.values(), ids=METRICS_RIGHT.keys())
def test_global_metrics_accepts_right_answers(fn):
    assert_check_passes(q.global_metrics.check, fn)


@pytest.mark.parametrize("fn, match", METRICS_WRONG.values(), ids=METRICS_WRONG.keys())
def test_global_metrics_rejects_wrong_answers(fn, match):
    assert_check_fails(q.global_metrics.check, fn, match=match)


@pytest.fixture(scope="module")
def metrics_reference():
    return observe(q.global_metrics, metrics_ref)


def test_global_metrics_observe_is_stable(metrics_reference):
    got = derived(metrics_reference)
    assert got["communication"] == [f"psum over '{DEVICES}'"]
    assert got["4x2_rows3_cols0['per_process']"].shape == (4,) and got["2x2_rows2_cols3['per_process']"].shape == (2,)
    for case in ("2x2_rows2_cols3", "2x4_rows1_cols3", "4x2_rows3_cols0"):
        total, mean = got[f"{case}['total']"], got[f"{case}['mean']"]
        np.testing.assert_allclose(got[f"{case}['per_process']"].sum(), total, rtol=1e-5, atol=1e-5)
        assert abs(mean) < abs(total) or total == 0
    for name in ("pmean based", "mesh.size", "as notebook source"):
        assert observations_match(metrics_reference, observe(q.global_metrics, METRICS_RIGHT[name]))


@pytest.mark.parametrize(
    "name",
    [
        "pmean(x) * 8 for the total",
        "psum(...) / 8 for the mean",
        "psum / local_device_count() for the mean",
        "two processes written by hand",
    ],
)
def test_global_metrics_hidden_test_rejects_hard_coded_counts(metrics_reference, name):
    fn, _ = METRICS_WRONG[name]
    why = _mismatch(metrics_reference, observe(q.global_metrics, fn))
    assert "2x2" in why or "4x2" in why, why  # the cases on other cluster sizes catch it


def test_global_metrics_hidden_test_rejects_a_dead_shard_map(metrics_reference):
    why = _mismatch(metrics_reference, observe(q.global_metrics, _metrics_dead_region))
    assert "per-device program over 'devices' that takes each device's shard does not reach the results" in why, why


def test_global_metrics_hidden_test_needs_shard_map(metrics_reference):
    why = _mismatch(metrics_reference, observe(q.global_metrics, _everything_under_jit))
    assert "per device" in why, why


# ---------------------------------------------------------------- 3. masked_step
def _step_map(local_step):
    def answer(params, batch, mesh):
        return jax.shard_map(local_step, mesh=mesh, in_specs=(P(), P(DATA_PARALLEL)), out_specs=P())(params, batch)

    return answer


def _sse(p, b):
    err = model.predict(p, b["x"]) - b["y"]
    return jnp.sum(jnp.where(b["mask"], err**2, 0.0))


def _update(params, grads):
    return jax.tree.map(lambda p, g: p - LEARNING_RATE * g, params, grads)


def masked_step_ref(params, batch, mesh):
    def local_step(params, local_batch):
        own_copy = lax.pcast(params, DATA_PARALLEL, to="varying")

        def masked_sse(p):
            err = model.predict(p, local_batch["x"]) - local_batch["y"]
            return jnp.sum(jnp.where(local_batch["mask"], err**2, 0.0))

        count = lax.psum(jnp.sum(local_batch["mask"]), DATA_PARALLEL)
        grads = jax.tree.map(lambda g: lax.psum(g, DATA_PARALLEL) / count, jax.grad(masked_sse)(own_copy))
        return jax.tree.map(lambda p, g: p - model.LEARNING_RATE * g, params, grads)

    return jax.shard_map(local_step, mesh=mesh, in_specs=(P(), P(DATA_PARALLEL)), out_specs=P())(params, batch)


def _multiplied_mask(params, b):
    own = lax.pcast(params, DATA_PARALLEL, to="varying")
    count = lax.psum(jnp.sum(b["mask"].astype(jnp.float32)), DATA_PARALLEL)
    grads = jax.grad(lambda p: jnp.sum(b["mask"] * (model.predict(p, b["x"]) - b["y"]) ** 2) / count)(own)
    return _update(params, lax.psum(grads, DATA_PARALLEL))


def _auto_summed(params, b):
    """No pcast: the gradient of a replicated parameter comes back already summed over the devices."""
    count = lax.psum(jnp.sum(b["mask"]), DATA_PARALLEL)
    return _update(params, jax.tree.map(lambda g: g / count, jax.grad(_sse)(params, b)))


def _pmean_times_k(params, b):
    own = lax.pcast(params, DATA_PARALLEL, to="varying")
    k = lax.psum(1, DATA_PARALLEL)
    count = lax.psum(jnp.sum(b["mask"]), DATA_PARALLEL)
    return _update(params, jax.tree.map(lambda g: lax.pmean(g, DATA_PARALLEL) * k / count, jax.grad(_sse)(own, b)))


def _local_mean_grads(params, b):
    own = lax.pcast(params, DATA_PARALLEL, to="varying")
    return jax.grad(lambda p: _sse(p, b) / jnp.sum(b["mask"]))(own)


def _local_sum_grads(params, b):
    return jax.grad(_sse)(lax.pcast(params, DATA_PARALLEL, to="varying"), b)


def _divided(divide):
    """psum of each device's summed gradients, divided by `divide(local_batch)` (a plausible count)."""

    def local_step(params, b):
        return _update(
            params, jax.tree.map(lambda g: lax.psum(g, DATA_PARALLEL) / divide(b), _local_sum_grads(params, b))
        )

    return _step_map(local_step)


def _no_mask(params, b):  # notebook 05's step: every row counts
    own = lax.pcast(params, DATA_PARALLEL, to="varying")
    return _update(params, lax.pmean(jax.grad(model.loss)(own, b), DATA_PARALLEL))


def _step_under_jit(params, batch, mesh):
    def loss(p):
        return jnp.sum(jnp.where(batch["mask"], (model.predict(p, batch["x"]) - batch["y"]) ** 2, 0.0)) / jnp.sum(
            batch["mask"]
        )

    return _update(params, jax.grad(loss)(params))


def _sign(params, b):
    count = lax.psum(jnp.sum(b["mask"]), DATA_PARALLEL)
    grads = jax.tree.map(lambda g: lax.psum(g, DATA_PARALLEL) / count, _local_sum_grads(params, b))
    return jax.tree.map(lambda p, g: p + LEARNING_RATE * g, params, grads)


def step_multiplied_mask(params, batch, mesh):
    return _step_map(_multiplied_mask)(params, batch, mesh)


def step_auto_summed(params, batch, mesh):
    return _step_map(_auto_summed)(params, batch, mesh)


def step_pmean_times_k(params, batch, mesh):
    return _step_map(_pmean_times_k)(params, batch, mesh)


STEP_RIGHT = {
    "reference": masked_step_ref,
    "mask multiplied, loss divided": step_multiplied_mask,
    "no pcast, JAX sums the gradient": step_auto_summed,
    "pmean times k": step_pmean_times_k,
    "as notebook source": _as_notebook_function(masked_step_ref),
}


def _whole_batch_by_psum(params, local_batch):
    """Everything on every device through the allowed collective (issue 46): each device places its rows in a
    zero array of the whole batch's shape at its own index, a psum adds them (every device now holds the whole
    batch), and every device computes the whole batch's masked step."""
    k, i = lax.axis_size(DATA_PARALLEL), lax.axis_index(DATA_PARALLEL)

    def everyone(a):
        return lax.psum(jnp.zeros((k, *a.shape), a.dtype).at[i].set(a), DATA_PARALLEL).reshape(-1)

    whole = jax.tree.map(everyone, local_batch)
    return _update(params, jax.grad(lambda p: _sse(p, whole) / jnp.sum(whole["mask"]))(params))


def step_whole_batch(params, batch, mesh):
    return jax.shard_map(_whole_batch_by_psum, mesh=mesh, in_specs=(P(), P(DATA_PARALLEL)), out_specs=P())(
        params, batch
    )


STEP_WRONG = {
    "the whole batch on every device (psum of one-hot blocks)": (
        step_whole_batch,
        r"(?s)right step with a psum over DATA_PARALLEL, but one device computes 9\.\d× the reference's FLOPs "
        r"on 8 devices \(\d+ against 59.*at most 1\.5×.*every device holds all of the batch",
    ),
    # issue 11's checker gaps: hard-coded device counts, the process's device count
    "psum(...) / 8": (
        _step_map(
            lambda p, b: _update(p, jax.tree.map(lambda g: lax.psum(g, DATA_PARALLEL) / 8, _local_mean_grads(p, b)))
        ),
        r"(?s)mesh of 4 devices in this kernel.*returned new w = .*divides by 8.*this mesh has 4 devices",
    ),
    "psum / local_device_count()": (
        _step_map(
            lambda p, b: _update(
                p,
                jax.tree.map(lambda g: lax.psum(g, DATA_PARALLEL) / jax.local_device_count(), _local_mean_grads(p, b)),
            )
        ),
        r"(?s)mesh of 4 devices.*divides by `jax\.local_device_count\(\)` \(2, the devices of one process\)",
    ),
    "pmean of each device's mean": (
        _step_map(lambda p, b: _update(p, lax.pmean(_local_mean_grads(p, b), DATA_PARALLEL))),
        r"(?s)3, 1, 2, 3 real rows per device.*averages each device's own mean gradient with equal weight"
        r".*different numbers of real rows\.",
    ),
    "padding counted (notebook 05's step)": (_step_map(_no_mask), r"(?s)counts the padding rows too"),
    "padding counted, the mask read": (  # issue 48: every input in its program, so the judge runs it
        _step_map(lambda p, b: _no_mask(p, {"x": b["x"], "y": b["y"] + 0.0 * b["mask"]})),
        r"(?s)counts the padding rows too",
    ),
    "divided by all rows": (
        _divided(lambda b: lax.psum(b["mask"].size, DATA_PARALLEL)),
        r"(?s)divides by all 12 rows of the batch, padding included",
    ),
    "summed sums, psum / 8": (_divided(lambda b: 8), r"(?s)divides by 8, written by hand.*this mesh has 4 devices"),
    "not divided": (_divided(lambda b: 1), r"(?s)9 real.*much too large.*number of real rows of the whole batch\."),
    "psum of an already summed gradient": (
        _step_map(
            lambda p, b: _update(
                p,
                jax.tree.map(
                    lambda g: lax.psum(g, DATA_PARALLEL) / lax.psum(jnp.sum(b["mask"]), DATA_PARALLEL),
                    jax.grad(_sse)(p, b),
                ),
            )
        ),
        r"(?s)4 times too large.*already added up over the devices by JAX.*lax\.pcast",
    ),
    "wrong sign": (_step_map(_sign), "moved the wrong way"),
    "unchanged": (
        _step_map(lambda p, b: jax.tree.map(lambda v: v + 0 * lax.psum(jnp.sum(b["mask"]), DATA_PARALLEL), p)),
        "did not change",
    ),
    "unchanged, every input read": (
        _step_map(
            lambda p, b: jax.tree.map(lambda v, g: v + 0.0 * lax.psum(g, DATA_PARALLEL), p, _local_sum_grads(p, b))
        ),
        "did not change",
    ),
    "no shard_map": (_step_under_jit, r"(?s)right values, but without `jax\.shard_map`"),
    "wrong axis": (
        _step_map(lambda p, b: _update(p, jax.tree.map(lambda g: lax.psum(g, DEVICES), _local_sum_grads(p, b)))),
        r"(?s)`masked_step` calls a collective over 'devices'.*here 'data_parallel_axis'|empty AssertionError",
    ),
    "a tuple": (
        lambda params, batch, mesh: tuple(masked_step_ref(params, batch, mesh).values()),
        r"dict with keys \['w', 'b'\], but it returned a `tuple`",
    ),
    "not written": (not_written, "not written yet"),
}


@pytest.mark.parametrize("fn", STEP_RIGHT.values(), ids=STEP_RIGHT.keys())
def test_masked_step_accepts_right_answers(fn):
    assert_check_passes(q.masked_step.check, fn)


@pytest.mark.parametrize("fn, match", STEP_WRONG.values(), ids=STEP_WRONG.keys())
def test_masked_step_rejects_wrong_answers(fn, match):
    assert_check_fails(q.masked_step.check, fn, match=match)


@pytest.fixture(scope="module")
def step_reference():
    return observe(q.masked_step, masked_step_ref)


def test_masked_step_observe_is_stable(step_reference):
    got = derived(step_reference)
    assert got["communication"] == [f"psum over '{DATA_PARALLEL}'"]
    assert {"2x2_rows3['w']", "2x4_rows3['b']", "2x4_rows5['w']"} <= set(got)
    for name in ("mask multiplied, loss divided", "no pcast, JAX sums the gradient", "as notebook source"):
        assert observations_match(step_reference, observe(q.masked_step, STEP_RIGHT[name]))


@pytest.mark.parametrize(
    "name",
    [
        "psum(...) / 8",
        "psum / local_device_count()",
        "pmean of each device's mean",
        "padding counted (notebook 05's step)",
        "no shard_map",
    ],
)
def test_masked_step_hidden_test_rejects(step_reference, name):
    fn, _ = STEP_WRONG[name]
    assert not observations_match(step_reference, observe(q.masked_step, fn))


def test_masked_step_on_two_processes_equals_numpy_and_one_process():
    _, (_, _, args8, _) = step._step_cases()
    (_, params8), (_, batch8) = args8
    (two,), (also_two,) = running.cluster().run(running.global_job, masked_step_ref, [(DATA_PARALLEL, args8)])
    mask = batch8["mask"]
    want = model.sgd_step_np(params8, {"x": batch8["x"][mask], "y": batch8["y"][mask]})
    one, _, _ = running.kernel_run(masked_step_ref, 8, DATA_PARALLEL, args8, 1)
    for key in ("w", "b"):
        assert two[key] == also_two[key]
        np.testing.assert_allclose(two[key], want[key], rtol=1e-5)
        np.testing.assert_allclose(one[key], two[key], rtol=1e-6, atol=1e-7)


# ---------------------------------------------------------------- the machinery
def test_as_process_answers_for_another_process_and_restores():
    before = (jax.process_index(), jax.process_count(), jax.local_device_count())
    everything = jax.devices()
    with running.AsProcess(1, 2, 2):
        assert (jax.process_index(), jax.process_count(), jax.local_device_count(), jax.device_count()) == (1, 2, 2, 4)
        assert jax.local_devices() == everything[2:4] and jax.devices() == everything[:4]
    assert (jax.process_index(), jax.process_count(), jax.local_device_count()) == before
    assert jax.devices() == everything


def test_to_global_and_read_back_in_the_workers():
    def job():
        import jax
        import numpy as np

        from namedaxes import DEVICES
        from namedaxes.exercises import multi_process as m

        mesh = m.line_mesh(jax.device_count(), DEVICES)
        mine = np.arange(4.0, dtype=np.float32) + 4 * jax.process_index()
        x = m.to_global(mine, mesh, DEVICES)
        return x.shape, x.is_fully_addressable, m.read_back({"x": 2 * x, "other": "kept"})

    for shape, addressable, back in running.cluster().run(job):
        assert shape == (8,) and not addressable
        np.testing.assert_array_equal(back["x"], 2 * np.arange(8.0))
        assert back["other"] == "kept"


def test_answers_checked_in_the_kernel_before_any_worker_runs(monkeypatch):
    def no_cluster(*args, **kwargs):
        raise AssertionError("the cluster was used")

    monkeypatch.setattr(running.multiprocess, "get_cluster", no_cluster)  # every way the checks reach it
    for exercise in (q.global_metrics, q.local_rows, q.masked_step):
        with pytest.raises(CheckFailed, match="not written yet"):
            exercise.check(not_written)


# ---------------------------------------------------------------- one judge (issue 16)
test_the_visible_check_and_the_grader_agree = agreement_test(
    {
        "local_rows": (q.local_rows, *matrix_rows(local_rows_ref, LOCAL_ROWS_RIGHT, LOCAL_ROWS_WRONG)),
        "global_metrics": (q.global_metrics, *matrix_rows(metrics_ref, METRICS_RIGHT, METRICS_WRONG)),
        "masked_step": (q.masked_step, *matrix_rows(masked_step_ref, STEP_RIGHT, STEP_WRONG)),
    }
)


def test_masked_step_work_is_judged_against_the_references_flops(step_reference):
    """The visible check's reference FLOPs are the reference program's, measured as the grader measures them;
    the grader refuses the whole batch on every device for its FLOPs on every case."""
    from namedaxes import judging

    case = step._step_case(masked_step_ref, *step._STEP_CASES[1])
    with case.context():
        measured = judging.exported_work(jax.export.export(jax.jit(case.fn))(*case.args)).flops
    assert step._STEP_REFERENCE_FLOPS * 0.9 <= measured <= step._STEP_REFERENCE_FLOPS * 1.1, measured
    cheat = STEP_WRONG["the whole batch on every device (psum of one-hot blocks)"][0]
    reason = judge_observations(step_reference, observe(q.masked_step, cheat)).reason(limit=8)
    for name in ("2x2_rows3", "2x4_rows3", "2x4_rows5"):  # 4.9x, 9.4x, 7.3x on jax 0.10.2
        assert re.search(rf"{name}: work: one device computes \d(\.\d)?× the reference's FLOPs", reason), reason


def test_global_metrics_work_is_judged_against_the_references_flops(metrics_reference):
    """The visible check's reference FLOPs are the reference program's, measured as the grader measures them;
    the grader refuses all of errors on every device for its FLOPs on every case."""
    from namedaxes import judging
    from namedaxes.exercises.multi_process import metrics

    case = metrics._metrics_case(metrics_ref, *metrics._METRICS_GRADED[-1])
    with case.context():
        measured = judging.exported_work(jax.export.export(jax.jit(case.fn))(*case.args)).flops
    assert metrics._METRICS_REFERENCE_FLOPS * 0.9 <= measured <= metrics._METRICS_REFERENCE_FLOPS * 1.1, measured
    cheat = METRICS_WRONG["all of errors on every device (psum of one-hot blocks)"][0]
    reason = judge_observations(metrics_reference, observe(q.global_metrics, cheat)).reason(limit=8)
    for name in ("2x2_rows2_cols3", "2x4_rows1_cols3", "4x2_rows3_cols0", "2x4_rows5_cols0"):  # 3.1x to 4.7x
        assert re.search(rf"{name}: work: one device computes \d(\.\d)?× the reference's FLOPs", reason), reason
