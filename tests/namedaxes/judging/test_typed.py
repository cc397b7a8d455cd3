"""The reductions an exported module's types make (issue 56, `namedaxes.judging.typed`): read before any compiler
runs, so the same on every backend; each as often as it runs (a counted loop's trips, a loop only its data decide
as often as it ran where it was run to count it, else `UNKNOWN_TRIPS` times and said, a conditional's costliest
branch), the figure `Work.reduced_bytes` the grader judges."""

from __future__ import annotations

import dataclasses
import re

import jax
import jax.numpy as jnp
import pytest
from jax import lax
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from namedaxes import judging
from namedaxes.judging import (
    UNREADABLE_REDUCTIONS,
    Work,
    exported_reductions,
    module_text,
    read_reductions,
    runs,
    with_reductions,
)
from namedaxes.judging.loop_counters import counted
from namedaxes.judging.typed import typed_reductions

_ROW = 4 * 4  # the bytes of the f32[1, 4] every psum below reduces (one row a device)


@pytest.fixture(scope="module")
def mesh():
    return jax.make_mesh((8,), ("d",))


def _exported(mesh, body):
    x = jax.ShapeDtypeStruct((8, 4), jnp.float32, sharding=NamedSharding(mesh, P("d")))
    program = jax.shard_map(body, mesh=mesh, in_specs=P("d"), out_specs=P("d"), check_vma=False)
    return jax.export.export(jax.jit(program))(x)


def _read(mesh, body) -> judging.Reductions:
    return exported_reductions(_exported(mesh, body), ("d",), (8,))


def test_a_counted_loop_reduces_as_often_as_it_runs(mesh):
    found = _read(mesh, lambda b: lax.fori_loop(0, 5, lambda i, acc: acc + lax.psum(b, "d"), b))
    assert (found.nbytes, found.in_loop, found.uncounted) == (5 * _ROW, True, 0)


def test_a_loop_only_its_data_stop_is_counted_its_limit_and_said(mesh):
    def body(b):
        return lax.while_loop(lambda c: c[1] < c[0].sum(), lambda c: (lax.psum(c[0], "d"), c[1] + 1.0), (b, 0.0))[0]

    found = _read(mesh, body)
    assert (found.nbytes, found.uncounted) == (runs.UNKNOWN_TRIPS * _ROW, 1)


def test_a_loop_only_its_data_stop_leaves_nothing_unknown_where_it_reduces_nothing(mesh):
    """Its trips do not change the figure: the psum before it counts once, and no loop is said uncounted."""

    def body(b):
        s = lax.psum(b, "d")
        return lax.while_loop(lambda c: c[1] < c[0].sum(), lambda c: (c[0] * 0.5, c[1] + 1.0), (s, 0.0))[0]

    found = _read(mesh, body)
    assert (found.nbytes, found.uncounted, found.measured) == (_ROW, 0, 0)


def _two_loops(b):
    """Two loops only their data stop, a psum in each."""
    step = lambda c: (lax.psum(c[0], "d"), c[1] + 1.0)  # noqa: E731
    first = lax.while_loop(lambda c: c[1] < c[0].sum(), step, (b, 0.0))[0]
    return lax.while_loop(lambda c: c[1] < c[0].max(), step, (first, 0.0))[0]


def test_measured_loops_count_their_runs_and_a_forged_tag_counts_neither(mesh):
    """Read from the counted variant's module with each loop's measured trips (by its tag): 3 and 5 runs. Attack:
    a tag carried by two loops (a module may carry frontend attributes of its own, and a loop the rewrite does
    not reach keeps them) is trusted for neither: both stay uncounted, and the judge refuses the figure."""
    text = module_text(counted(_exported(mesh, _two_loops)).exp)
    found = typed_reductions(text, ("d",), (8,), {0: 3.0, 1: 5.0})
    assert (found.nbytes, found.uncounted, found.measured) == (8 * _ROW, 0, 2)
    forged = text.replace('namedaxes_loop = "1"', 'namedaxes_loop = "0"')
    assert forged != text
    found = typed_reductions(forged, ("d",), (8,), {0: 3.0, 1: 5.0})
    assert (found.nbytes, found.uncounted, found.measured) == (2 * runs.UNKNOWN_TRIPS * _ROW, 2, 0)


def test_a_conditional_counts_its_costliest_branch_never_the_sum(mesh):
    def body(b):
        return lax.cond(b.sum() > 0, lambda v: lax.psum(v, "d"), lambda v: lax.psum(lax.psum(v, "d"), "d"), b)

    assert _read(mesh, body).nbytes == 2 * _ROW


def test_a_contraction_over_a_split_dimension_is_a_reduction_unless_typed_unreduced():
    """On Explicit axes: a sum over the split dimension reduces (its result whole); gradients typed unreduced are
    not reduced until they are resharded whole: two of them added, then resharded, reduce once."""
    mesh = jax.make_mesh((8,), ("d",), axis_types=(AxisType.Explicit,))
    x = jax.ShapeDtypeStruct((8, 4), jnp.float32, sharding=NamedSharding(mesh, P("d")))
    w = jax.ShapeDtypeStruct((4, 4), jnp.float32, sharding=NamedSharding(mesh, P()))

    def whole(x, w):
        return jnp.sum(x, axis=0) @ w

    def grad(x, w):
        return jax.grad(lambda v: jnp.sum(jnp.tanh(x @ v)))(w)

    def twice(x, w):
        return grad(x, w) + grad(2.0 * x, w)

    def once(x, w):
        used = jax.reshard(w, P(reduced={"d"}))
        return jax.reshard(grad(x, used) + grad(2.0 * x, used), P())

    found = {}
    with jax.set_mesh(mesh):
        for f in (whole, twice, once):
            found[f.__name__] = exported_reductions(jax.export.export(jax.jit(f))(x, w), ("d",), (8,)).nbytes
    assert found == {"whole": 4 * 4, "twice": 2 * 4 * 4 * 4, "once": 4 * 4 * 4}, found


def test_a_module_it_cannot_read_reduces_more_than_any_case_allows(mesh, monkeypatch):
    from namedaxes.judging import typed

    def unreadable(*_):
        raise ValueError("module too large to read its reductions")

    monkeypatch.setattr(typed, "exported_reductions", unreadable)
    read = read_reductions(_exported(mesh, lambda b: b), ("d",), (8,))
    assert read is None
    work = with_reductions(Work(0.0, 0, 0), read)
    assert work == dataclasses.replace(Work(0.0, 0, 0), reduced_bytes=UNREADABLE_REDUCTIONS)


@jax.jit
def _reduced(v):
    return lax.psum(v, "d")


def test_a_call_dressed_as_the_rewrites_own_is_read_in_the_program(mesh):
    """Attack: a module whose own call looks like one the counted variant adds only to count a condition's loops
    (`loop_counters.RECOUNT`, a `CONDITION_PREFIX` function) hides nothing: only a variant's module is read so,
    and `counted` makes none of a module that already has such a function."""
    text = module_text(_exported(mesh, lambda b: _reduced(b)))
    assert "call @_reduced(" in text
    forged = text.replace("@_reduced", "@namedaxes_condition_0")
    forged = re.sub(r"(call @namedaxes_condition_0\([^)]*\))", r"\1 {namedaxes_recount}", forged)
    assert "{namedaxes_recount}" in forged
    assert typed_reductions(forged, ("d",), (8,)).nbytes == typed_reductions(text, ("d",), (8,)).nbytes == _ROW
