"""`namedaxes.checking.compiled.compiled_once`: a check run again on an unchanged answer compiles nothing, and
anything a compile depends on (the program, a constant it closes over, its devices, the options) makes a new
one."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from namedaxes.checking import compiled as memo
from namedaxes.judging import COMPILER_OPTIONS


@pytest.fixture(autouse=True)
def _empty_memo():
    memo._COMPILED.clear()
    yield
    memo._COMPILED.clear()


def _lowered(fn, x, device=0):
    return jax.jit(fn).lower(jax.device_put(x, jax.devices()[device]))


def _affine(a):
    return a * 2 + 1


def test_the_same_program_is_compiled_once():
    x = jnp.arange(4.0)
    first = memo.compiled_once(_lowered(_affine, x), COMPILER_OPTIONS)
    again = memo.compiled_once(_lowered(_affine, x), COMPILER_OPTIONS)  # traced and lowered again: the same
    assert again is first and len(memo._COMPILED) == 1
    np.testing.assert_array_equal(again(x), x * 2 + 1)


def _subtracting(table):
    def subtract(a):
        return a - table

    return subtract


def _adding(table):
    """The same function made again (as a notebook cell run again makes it), closing over `table`."""

    def add(a):
        return a + table

    return add


def test_a_changed_constant_program_device_or_option_compiles_again():
    x = jnp.arange(64.0)
    changed = np.arange(64.0)
    changed[0] = 100.0  # the same module, another constant
    more = len(jax.devices()) > 1
    runs = [  # (the function, its constant, the device, the options): each compiled from the same line
        (_adding, np.arange(64.0), 0, COMPILER_OPTIONS),
        (_adding, np.arange(64.0), 0, COMPILER_OPTIONS),  # made again, the same: no compile
        (_adding, changed, 0, COMPILER_OPTIONS),
        (_subtracting, changed, 0, COMPILER_OPTIONS),
        (_adding, changed, 0, {}),
        *([(_adding, changed, 1, COMPILER_OPTIONS)] if more else []),
    ]
    made = [memo.compiled_once(_lowered(make(table), x, device), options) for make, table, device, options in runs]
    assert made[1] is made[0]
    assert len({id(m) for m in made}) == len(made) - 1
    assert float(made[2](x)[0]) == 100.0


def test_the_memo_is_bounded():
    x = jnp.arange(4.0)
    for i in range(memo.COMPILED_MEMO + 3):
        memo.compiled_once(_lowered(lambda a, i=i: a + i, x), COMPILER_OPTIONS)
    assert len(memo._COMPILED) == memo.COMPILED_MEMO
