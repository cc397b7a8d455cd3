"""Unit tests of namedaxes/checking/explaining.py.

Crashes in a student's code become feedback: not written yet, an unbound axis name, the student's line quoted,
a module's own rules first.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from checking_helpers import run_cell
from jax import lax

from namedaxes import DATA_SHARDS, DEVICES, MODEL_REPLICAS
from namedaxes.checking import (
    CheckFailed,
    explain_error,
    explained,
    not_written_yet,
    unbound_axis_name,
)


def test_not_written_yet_is_one_sentence_for_every_notebook():
    assert not_written_yet("total") == (
        "`total` is not written yet: replace `raise NotImplementedError()` in its cell with your code, "
        "then run that cell again."
    )
    assert not_written_yet("step", callee="loss_fn") == (
        "`step` (or a function it calls, such as `loss_fn`) is not written yet: replace "
        "`raise NotImplementedError()` in its cell with your code, then run that cell again."
    )
    assert not_written_yet("step", callee="step") == not_written_yet("step")


def test_unbound_axis_name_reads_the_axis_from_jax_error():
    with pytest.raises(NameError) as err:
        jax.vmap(lambda x: lax.psum(x, "batch"), axis_name=DEVICES)(jnp.arange(2.0))
    assert unbound_axis_name(err.value) == "batch"
    assert unbound_axis_name(NameError("name 'lax' is not defined")) is None
    assert unbound_axis_name(ValueError("Found an unbound axis name: batch.")) is None


def test_not_written_yet_names_the_unwritten_function_the_answer_calls():
    ns = run_cell("def loss_fn(p):\n    raise NotImplementedError()\n\ndef grads(p):\n    return 2 * loss_fn(p)\n")
    with pytest.raises(CheckFailed) as err, explained("grads"):
        ns["grads"](1.0)
    assert str(err.value) == not_written_yet("grads", callee="loss_fn")
    with pytest.raises(CheckFailed) as err, explained("loss_fn"):
        ns["loss_fn"](1.0)
    assert str(err.value) == not_written_yet("loss_fn")


def test_an_error_in_the_students_code_is_quoted_with_its_cell_line():
    ns = run_cell("def total(x):\n    y = x * 2\n    return y + 'a'\n")
    with (
        pytest.raises(
            CheckFailed,
            match=r"^`total` raised `TypeError: unsupported operand.*` at line 3 of its "
            r"cell: `return y \+ 'a'`\.$",
        ),
        explained("total"),
    ):
        ns["total"](1.0)


def test_an_error_outside_the_students_code_is_not_disguised():
    def checker_bug():
        raise KeyError("a bug in the checker")

    with pytest.raises(KeyError, match="a bug in the checker"), explained("total"):
        checker_bug()


def test_unbound_axis_name_message_says_what_binds_and_which_constant_to_write():
    with pytest.raises(NameError) as raised:
        jax.pmap(lambda x: lax.psum(x, "device"), axis_name=DEVICES)(jnp.arange(2.0))
    msg = explain_error(raised.value, "total", run="`jax.pmap(total, axis_name=DEVICES)`", binds=(DEVICES,))
    assert msg.startswith("`total` failed with JAX's error \"NameError: Found an unbound axis name: device.")
    assert "`total` calls a collective over 'device', and no enclosing pmap/vmap/shard_map binds that name" in msg
    assert msg.endswith(
        "`jax.pmap(total, axis_name=DEVICES)` binds only 'devices'. Write the axis name as the "
        "constant `DEVICES`: `axis_name=DEVICES`."
    )
    grid = explain_error(raised.value, "grid", binds=(DATA_SHARDS, MODEL_REPLICAS))
    assert grid.endswith(
        "The check binds only 'data_shards' and 'model_replicas'. Use the constants "
        "`DATA_SHARDS` ('data_shards') and `MODEL_REPLICAS` ('model_replicas') for the names."
    )


def test_a_modules_own_rules_come_first():
    def rule(err):
        return "our own words" if isinstance(err, ValueError) else None

    with pytest.raises(CheckFailed, match="^our own words$"), explained("f", rules=(rule,)):
        raise ValueError("jax internals")


def test_traced_values_turned_into_numpy_get_one_message():
    with pytest.raises(CheckFailed, match=r"`f` turns a traced value into a NumPy array"), explained("f"):
        jax.jit(lambda x: float(x))(1.0)


def test_an_operation_on_an_unreduced_array_names_the_exercise_and_the_reduction_first():
    """Issue 56: JAX's `NotImplementedError` for a division of partial sums (`g / m` before the reshard) names
    the answer and says to reduce first, without JAX's request to file an issue; in notebook code too, where
    the student's line would otherwise be quoted with JAX's raw words."""
    err = NotImplementedError(
        "unreduced rule for div is not implemented. Please file an issue at https://github.com/jax-ml/jax/issues"
    )
    said = explain_error(err, "accumulate_grads")
    assert said.startswith('`accumulate_grads` failed with JAX\'s error "unreduced rule for div is not implemented"')
    assert "`div` was applied to an `unreduced` array" in said and "jax.reshard(total, P())" in said
    assert "Please file" not in said
    newest = ValueError(
        "Denominator should be reduced along the same axes numerator is unreduced on. Got "
        "x=ShapedArray(float32[32,64]{U:fsdp_axis}), y=ShapedArray(float32[])"
    )  # the newest JAX line's words for the same division
    said = explain_error(newest, "accumulate_grads")
    assert said.startswith("`accumulate_grads` failed with JAX's error \"Denominator should be reduced along the same")
    assert "`div` was applied to an `unreduced` array" in said and "ShapedArray" not in said
    assert explain_error(NotImplementedError("something else"), "f") is None  # a library's own, outside the cell
