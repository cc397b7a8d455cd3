"""Every instruction counted as often as it runs (issue 56, `namedaxes.judging.runs`): a loop's condition runs
trips + 1 times, a conditional runs the branch its constant fixes or else one branch (its costliest counted,
never the sum), and a loop XLA cannot count is counted from its control where the program fixes it."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from jax import lax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from namedaxes import judging
from namedaxes.judging import runs

_BLOCK = 4 * 4  # the bytes of the f32[4] every psum below delivers


@pytest.fixture(scope="module")
def mesh():
    return jax.make_mesh((8,), ("d",))


def _text(mesh, body) -> str:
    x = jax.device_put(jnp.arange(32.0).reshape(8, 4), NamedSharding(mesh, P("d")))
    program = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P("d"), out_specs=P("d"), check_vma=False))
    return program.lower(x).compile(dict(judging.COMPILER_OPTIONS)).as_text()


def _psums(mesh, body) -> tuple[int, int]:
    """(runs of the psums over 'd', bytes all collectives deliver to one device) of one call."""
    text = _text(mesh, body)
    sends = runs.collective_sends(text, ("d",), (8,), 8)
    return sends["psum over 'd'"].runs, runs.program_totals(text, 8).sent_bytes


def _psum_in_condition(x):
    """The condition psums the counter on every test (8 i < 32): 4 trips, 5 tests."""
    go = lambda c: lax.psum(c[0], "d") < 32  # noqa: E731
    return lax.while_loop(go, lambda c: (c[0] + 1, c[1] + 1.0), (0, x[0]))[1][None]


def _switch_of_four(x):
    index = jnp.int32(x[0, 0]) % 4
    branches = [lambda v, s=s: lax.psum(v * s, "d") for s in (1.0, 2.0, 3.0, 4.0)]
    return lax.switch(index, branches, x[0])[None]


def _cond_of_two(x):
    return lax.cond(x[0, 0] > 3, lambda v: lax.psum(v, "d"), lambda v: lax.psum(2.0 * v, "d"), x[0])[None]


def _fixed_switch(x):
    """A constant index: only branch 2 runs (no psum there)."""
    branches = [lambda v: lax.psum(v, "d"), lambda v: lax.psum(2 * v, "d"), lambda v: v + 1.0]
    return lax.switch(jnp.int32(2), branches, x[0])[None]


def _quadratic(x):
    """i * i < 40: 7 trips, a condition XLA's loop analysis does not count."""
    body = lambda c: (c[0] + 1, lax.psum(c[1], "d"))  # noqa: E731
    return lax.while_loop(lambda c: c[0] * c[0] < 40, body, (0, x[0]))[1][None]


def _psum_bound(x):
    """The bound is a psum of ones over 'd' (8), traced: the loop runs 8 times."""
    n = lax.psum(jnp.ones((), jnp.int32), "d")
    body = lambda c: (c[0] + 1, lax.psum(c[1], "d"))  # noqa: E731
    return lax.while_loop(lambda c: c[0] < n, body, (0, x[0]))[1][None]


_CASES = {  # (the program, psums one call runs, the bytes they deliver to one device)
    "psum in a while condition: 4 trips, 5 tests": (_psum_in_condition, 5, 5 * 4),  # an s32 each
    "switch of 4 branches, each with a psum: one runs": (_switch_of_four, 1, _BLOCK),
    "cond with a psum in both branches: one runs": (_cond_of_two, 1, _BLOCK),
    "quadratic condition: 7 trips": (_quadratic, 7, 7 * _BLOCK),
    "bound from a traced psum: 8 trips": (_psum_bound, 8 + 1, 8 * _BLOCK + 4),  # and the psum that makes it
}


@pytest.mark.parametrize("case", list(_CASES))
def test_each_collective_counts_as_often_as_it_runs(mesh, case):
    """Before issue 56 the judge read 0, 4, 2, 1024 and 1024 (+1) psums here."""
    body, psums, sent = _CASES[case]
    assert _psums(mesh, body) == (psums, sent)


def test_a_fixed_branch_counts_alone(mesh):
    text = _text(mesh, _fixed_switch)
    assert "psum over 'd'" not in {d for d, s in runs.collective_sends(text, ("d",), (8,), 8).items() if s.runs}
    assert runs.program_totals(text, 8).sent_bytes == 0


def _until_converged(x):
    """Newton's square root of the psum of x, until two steps agree: only its data decide how often it runs."""
    total = lax.psum(x[0], "d") + 1.0

    def step(c):
        return c[1], 0.5 * (c[1] + total / c[1])

    return lax.while_loop(lambda c: jnp.abs(c[0] - c[1]).max() > 1e-3, step, (x[0], total))[1][None]


def _until_converged_within(x):
    """The same with a limit of its own: at most 30 runs, whatever its data."""
    total = lax.psum(x[0], "d") + 1.0

    def step(c):
        return c[0] + 1, c[2], 0.5 * (c[2] + lax.psum(total / c[2], "d") / 8)

    go = lambda c: jnp.logical_and(c[0] < 30, jnp.abs(c[1] - c[2]).max() > 1e-3)  # noqa: E731
    return lax.while_loop(go, step, (0, x[0], total))[2][None]


def test_a_loop_only_its_data_stop_is_uncounted_and_one_with_a_limit_counts_its_limit(mesh):
    """A loop whose count only its data decide is never guessed low: counted `UNKNOWN_TRIPS` times and said
    (`Totals.uncounted`); one whose own limit stops it is counted at that limit (`Totals.bounded`)."""
    free = runs.program_totals(_text(mesh, _until_converged), 8)
    assert (free.uncounted, free.bounded) == (1, 0)
    limited = runs.program_totals(_text(mesh, _until_converged_within), 8)
    assert (limited.uncounted, limited.bounded) == (0, 1)
    assert limited.sent_bytes == 4 * 4 + 30 * 4 * 4  # the total's psum, then one psum per run, 30 at most


def test_running_a_loops_control_is_bounded_work():
    """Attack: a loop whose control takes 44,722 runs to finish costs the judge a bounded number of steps
    (`loop_trips._MAX_STEPS` for the whole program): past it the count is unknown, never guessed low."""
    go = lambda c: c[0] * c[0] < 2_000_000_000  # noqa: E731
    long = lambda x: lax.while_loop(go, lambda c: (c[0] + 1, c[1] * 1.0001), (0, x))[1]  # noqa: E731
    text = jax.jit(long).lower(jnp.ones(4)).compile(dict(judging.COMPILER_OPTIONS)).as_text()
    totals = runs.program_totals(text, 1)
    assert (totals.uncounted, totals.bounded) == (1, 0)
    assert totals.flops >= runs.UNKNOWN_TRIPS * 4


_SWITCH = """%sum (x: f32[], y: f32[]) -> f32[] {{
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}}
%b0 (p: f32[4]) -> f32[4] {{
  %p = f32[4] parameter(0)
  ROOT %r = f32[4] all-reduce(%p), channel_id=1, replica_groups={{{{0,1}}}}, to_apply=%sum
}}
%b1 (p: f32[4]) -> f32[4] {{
  %p = f32[4] parameter(0)
  ROOT %r = f32[4] multiply(%p, %p)
}}
ENTRY %main (a: f32[4]) -> f32[4] {{
  %a = f32[4] parameter(0)
  %i = s32[] constant({index})
  %j = s32[] copy(%i)
  ROOT %c = f32[4] conditional(%j, %a, %a), branch_computations={{%b0, %b1}}
}}
"""


@pytest.mark.parametrize(("index", "sent", "flops"), [(0, 16, 4), (1, 0, 4), (7, 0, 4), (-1, 0, 4)])
def test_a_constant_index_runs_its_branch_and_one_out_of_range_the_last(index, sent, flops):
    """XLA runs the last branch for an index out of range; the all-reduce's 4 FLOPs (XLA counts one per
    element) and the multiply's 4 are alike, so only the bytes tell the branches apart."""
    totals = runs.program_totals(_SWITCH.format(index=index), 2)
    assert (totals.sent_bytes, totals.flops) == (sent, flops)
