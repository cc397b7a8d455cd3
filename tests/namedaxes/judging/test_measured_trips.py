"""Loops whose trip count only their data decide, counted by running them on the inputs (issue 56:
`loop_counters.counted`, `measured_trips`, `work.recounted`): the three forms the issue lists counted exactly,
per device, nested loops multiplied (one in another's condition too, and one in a per-device region nested in
another), and a loop the program fixes keeping its static count."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from namedaxes.judging import compiled_run, module_text
from namedaxes.judging.counted_run import counted_work
from namedaxes.judging.loop_counters import MAX_TRIPS, counted
from namedaxes.judging.measured_trips import measured_trips, tag_trips
from namedaxes.judging.typed import typed_reductions
from namedaxes.judging.work import recounted, work_of


def _quadratic(x):
    """i * i < n, n a value of the data (40,000 on these inputs): 200 trips, a psum in each."""
    n = jnp.int32(x[0, 0])
    body = lambda c: (c[0] + 1, c[1] + lax.psum(c[1], "d") / 8)  # noqa: E731
    return lax.while_loop(lambda c: c[0] * c[0] < n, body, (0, x[0]))[1][None]


def _psum_bound(x):
    """The bound is a psum over 'd' of a test of the data (8 on these inputs): 8 trips, a psum in each."""
    n = lax.psum(jnp.int32(x[0, 0] > 0), "d")
    body = lambda c: (c[0] + 1, c[1] + lax.psum(c[1], "d") / 8)  # noqa: E731
    return lax.while_loop(lambda c: c[0] < n, body, (0, x[0]))[1][None]


def _until_converged(x):
    """Halve the distance to the psum of the data until it is under 1/16: 5 trips from a distance of 1."""
    target = lax.psum(x[0], "d") / 8
    step = lambda c: (c[0] + 1, c[1] + 0.5 * (target - c[1]))  # noqa: E731
    return lax.while_loop(lambda c: jnp.max(jnp.abs(target - c[1])) >= 1 / 16, step, (0, target - 1.0))[1][None]


def _nested(x):
    """An outer loop of 3 data-decided trips, each entering an inner loop of 4 + the device's index trips."""
    n, m = jnp.int32(x[0, 1]), jnp.int32(x[0, 2]) + lax.axis_index("d")
    inner = lambda v: lax.while_loop(lambda c: c[0] < m, lambda c: (c[0] + 1, c[1] * 1.5), (0, v))[1]  # noqa: E731
    return lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, inner(c[1])), (0, x[0]))[1][None]


def _fixed_and_free(x):
    """A fori_loop of 6 (the program fixes it) and a loop of 8 whose bound is a psum of the data."""
    a = lax.fori_loop(0, 6, lambda i, v: v * 1.5, x[0])
    n = lax.psum(jnp.int32(x[0, 0] > 0), "d")
    return lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] + a), (0, x[0]))[1][None]


@jax.jit
def _doubled_until(v, n):
    """A function of its own (the module calls it): doubles v n times, n a value of the data."""
    return lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 2.0), (0, v))[1]


def _one_function_called_twice(x):
    """Its loop runs 3 times at one call and 4 at the other: 7 runs in 2 entries."""
    return (_doubled_until(x[0], jnp.int32(x[0, 1])) + _doubled_until(x[0], jnp.int32(x[0, 2])))[None]


_INPUTS = np.tile(np.float32([40000.0, 3.0, 4.0, 1.0]), (8, 1))


def _exported(body):
    mesh = jax.make_mesh((8,), ("d",))
    spec = jax.ShapeDtypeStruct((8, 4), jnp.float32, sharding=NamedSharding(mesh, P("d")))
    return jax.export.export(jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P("d"), out_specs=P("d"))))(spec)


def _judged(body):
    """(the program's work as read, as counted by running its counted variant on `_INPUTS`, its trips)."""
    exp = _exported(body)
    compiled, _, mesh = compiled_run.compile_exported(exp)
    names, sizes = tuple(mesh.axis_names), tuple(mesh.devices.shape)
    found = counted(exp)
    out, variant = compiled_run.run_exported(found.exp, [_INPUTS], mesh)
    counts = [out[f"[{i}]"] for i in range(found.first, found.first + 2 * found.loops)]
    trips = measured_trips(compiled.as_text(), variant.as_text(), counts)
    work = work_of(compiled, names, sizes, 8)
    return work, recounted(work, compiled.as_text(), 8, trips), trips


_BLOCK = 4 * 4  # the bytes of the f32[4] each psum delivers


@pytest.mark.parametrize(
    ("body", "trips", "sent"),
    [
        (_quadratic, 200, 200 * _BLOCK),
        (_psum_bound, 8, 8 * _BLOCK + 4),  # and the s32 psum that makes the bound
        (_until_converged, 5, _BLOCK),  # the psum before the loop
    ],
    ids=["quadratic condition: 200", "bound from a traced psum: 8", "until converged: 5"],
)
def test_a_loop_only_its_data_decide_is_counted_as_often_as_it_ran(body, trips, sent):
    """Before: each counted `UNKNOWN_TRIPS` (1,024) times; now as often as it ran, and said so."""
    read, work, _ = _judged(body)
    assert (read.uncounted, work.uncounted, work.measured) == (1, 0, (trips,))
    assert work.sent_bytes == sent
    assert read.flops > work.flops


def test_each_run_of_the_body_and_one_more_test_are_counted():
    """The FLOPs a loop adds are its body's per run and its condition's once more: 200 against 8 runs differ by
    192 runs of each (the same f32[4] body in both, the quadratic condition two FLOPs more)."""
    _, quad, _ = _judged(_quadratic)
    _, bound, _ = _judged(_psum_bound)
    assert quad.sent_bytes - bound.sent_bytes == 192 * _BLOCK - 4


def test_nested_loops_multiply_and_each_device_counts_its_own():
    """The inner loop runs 4 + i times per entry on device i: 11 on the busiest; the outer 3 times."""
    _, work, trips = _judged(_nested)
    assert sorted(trips.values()) == [3.0, 11.0]
    assert sorted(work.measured) == [3.0, 11.0]


def test_a_loop_the_program_fixes_keeps_its_static_count():
    """Only the loop of 8 is measured; the fori_loop of 6 keeps the count its program states."""
    read, work, _ = _judged(_fixed_and_free)
    assert (read.uncounted, work.uncounted, work.measured) == (1, 0, (8,))
    assert read.bounded == work.bounded == 0


_LOOPS = """HloModule m
FileNames
1 "answer.py"
FunctionNames
1 "f"
FileLocations
1 {{file_name_id=1 function_name_id=1 line=3 end_line=3 column=4 end_column=9}}
2 {{file_name_id=1 function_name_id=1 line=7 end_line=7 column=4 end_column=9}}
StackFrames
1 {{file_location_id=1 parent_frame_id=1}}
2 {{file_location_id=2 parent_frame_id=1}}

%c (p: (s32[])) -> pred[] {{
  %p = (s32[]) parameter(0)
  ROOT %t = pred[] constant(true)
}}
%b (p: (s32[])) -> (s32[]) {{
  ROOT %p = (s32[]) parameter(0)
}}
ENTRY %main (a: (s32[])) -> (s32[]) {{
  %a = (s32[]) parameter(0)
  %w1 = (s32[]) while(%a), condition=%c, body=%b,{first} metadata={{op_name="jit(g)/call_exported/w" stack_frame_id=1}}
  ROOT %w2 = (s32[]) while(%w1), condition=%c, body=%b,{second} metadata={{{meta}}}
}}
"""


def _loops(first: str = "", second: str = "", frame: int = 2) -> str:
    tag = ' frontend_attributes={{namedaxes_loop="{}"}},'
    return _LOOPS.format(
        first=tag.format(first) if first else "",
        second=tag.format(second) if second else "",
        meta=f'op_name="call_exported/w" stack_frame_id={frame}',
    )


_COUNTS = [np.array([40, 8]), np.array([2, 2]), np.array([3, 5]), np.array([1, 1])]  # per device: 20 and 4, 3 and 5


@pytest.mark.parametrize(
    ("counted_text", "want"),
    [
        (_loops("0", "1"), {"w1": 20.0, "w2": 5.0}),  # each its own origin: the busiest device's runs per entry
        (_loops("0", "1", frame=1), {"w1": 20.0, "w2": 20.0}),  # one origin: each counted as the busiest of both
        (_loops("0", "", frame=1), {}),  # a loop of that origin the variant does not count: none measured
        (_loops("0", ""), {"w1": 20.0}),  # an uncounted loop of another origin leaves this one measured
    ],
    ids=["apart", "one origin", "attack: an uncounted loop given a counted one's origin", "uncounted elsewhere"],
)
def test_loops_are_matched_by_origin_and_never_counted_low(counted_text, want):
    judged = _loops(frame=1) if counted_text in (_loops("0", "1", frame=1), _loops("0", "", frame=1)) else _loops()
    got = measured_trips(judged, counted_text, _COUNTS)
    assert {name: trips for (_, name), trips in got.items()} == want


def test_a_loop_in_a_function_called_twice_counts_both_calls():
    """The function's loop carries its counters out through the function's results at each call: 7 runs in 2
    entries, 3.5 per entry for each of the two loops the compiled program inlines, 7 in all."""
    read, work, _ = _judged(_one_function_called_twice)
    assert (read.uncounted, work.uncounted, work.measured) == (2, 0, (3.5, 3.5))


def test_a_pmap_program_counts_each_device():
    """pmap's per-device function is a function of the module: device i runs its loop 3 + i times."""
    per_device = lambda v: lax.while_loop(  # noqa: E731
        lambda c: c[0] < jnp.int32(v[1]) + lax.axis_index("i"), lambda c: (c[0] + 1, c[1] * 1.5), (0, v)
    )[1]
    exp = jax.export.export(jax.jit(jax.pmap(per_device, axis_name="i")))(jax.ShapeDtypeStruct((8, 4), jnp.float32))
    compiled, _, mesh = compiled_run.compile_exported(exp)
    names, sizes = tuple(mesh.axis_names), tuple(mesh.devices.shape)
    text = compiled.as_text()
    work = work_of(compiled, names, sizes, 8, text=text)

    def run(variant):
        out, ran = compiled_run.run_exported(variant, [_INPUTS], mesh)
        return out, ran.as_text()

    assert counted_work(work, text, 8, exp, run).measured == (10,)


def test_a_loop_that_never_stops_is_counted_at_the_judges_own_limit():
    """Attack: a loop whose data never stop it would hold the judge forever: the counted variant stops each loop
    after `MAX_TRIPS` runs of its body per entry, and the loop counts that many (at most what it runs, and far
    beyond any reference's work)."""

    def forever(x):
        go = lambda c: jnp.all(jnp.isfinite(c[1]))  # noqa: E731
        return lax.while_loop(go, lambda c: (c[0] + 1, c[1] * 1.0 + 0.0 * c[0]), (0, x[0]))[1][None]

    _, work, _ = _judged(forever)
    assert work.measured == (MAX_TRIPS,)


def _loop_in_condition(x):
    """The outer loop's test runs a loop of its own: i + n trips (n = 3, a value of the data), a psum of 4 bytes in
    each, and goes on while those are under 6: the outer loop runs 3 times, its test 4 (3 + 4 + 5 + 6 = 18 runs
    of the inner loop's body, 4.5 per entry)."""
    n = jnp.int32(x[0, 1])

    def test(c):
        step = lambda d: (d[0] + 1, d[1] + lax.psum(c[1][0] + d[1], "d"))  # noqa: E731
        k, total = lax.while_loop(lambda d: d[0] < c[0] + n, step, (0, 0.0))
        return (k < 6) & (total > -1e30)

    return lax.while_loop(test, lambda c: (c[0] + 1, c[1] * 1.5), (0, x[0]))[1][None]


def test_a_loop_in_a_loops_condition_counts_every_test():
    """Before: the rewrite never entered a condition, so the inner loop stayed `UNKNOWN_TRIPS` (1,024 runs per
    entry, 4,096 in all). Now the condition is a function of its own, called again where the body starts and once
    after the loop: 18 runs of the inner body, 72 bytes sent, the same 72 bytes reduced by the types."""
    read, work, trips = _judged(_loop_in_condition)
    assert (read.uncounted, work.uncounted, sorted(work.measured)) == (2, 0, [3.0, 4.5])
    assert work.sent_bytes == 18 * 4
    exp = _exported(_loop_in_condition)
    found = counted(exp)
    out, _ = compiled_run.run_exported(found.exp, [_INPUTS], compiled_run.device_mesh(exp))
    counts = [out[f"[{i}]"] for i in range(found.first, found.first + 2 * found.loops)]
    reductions = typed_reductions(module_text(found.exp), ("d",), (8,), tag_trips(counts))
    assert (reductions.nbytes, reductions.uncounted, reductions.measured) == (18 * 4, 0, 2)


def _nested_regions():
    """A shard_map over 'y' inside one over 'x' (mesh 2 x 4), its loop running 3 + the device's 'y' index times."""
    mesh = jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto, AxisType.Auto))

    def inner(v):
        m = jnp.int32(v[0, 1]) + lax.axis_index("y")
        return lax.while_loop(lambda c: c[0] < m, lambda c: (c[0] + 1, c[1] * 1.5), (0, v))[1]

    def outer(b):
        return jax.shard_map(inner, in_specs=P(None, "y"), out_specs=P(None, "y"), axis_names={"y"})(b)

    program = jax.shard_map(outer, mesh=mesh, in_specs=P("x"), out_specs=P("x"), axis_names={"x"})
    spec = jax.ShapeDtypeStruct((8, 8), jnp.float32, sharding=NamedSharding(mesh, P("x")))
    return jax.export.export(jax.jit(program))(spec)


def test_a_loop_in_a_per_device_region_nested_in_another_is_counted_per_device():
    """Before: the outer region let only scalars out, so no loop of the program was measured. Now the inner
    region's one count per 'y' device leaves the outer one as its elements on each 'x' device: 3, 4, 5, 6 runs."""
    exp = _nested_regions()
    found = counted(exp)
    assert found is not None and found.loops == 1
    compiled, _, mesh = compiled_run.compile_exported(exp)
    out, variant = compiled_run.run_exported(found.exp, [np.full((8, 8), 3.0, np.float32)], mesh)
    runs, entered = out[f"[{found.first}]"], out[f"[{found.first + 1}]"]
    assert sorted(runs.tolist()) == [3, 3, 4, 4, 5, 5, 6, 6] and entered.tolist() == [1] * 8
    trips = measured_trips(compiled.as_text(), variant.as_text(), [runs, entered])
    assert list(trips.values()) == [6.0]
