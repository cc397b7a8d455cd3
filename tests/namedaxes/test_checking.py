"""The building blocks of student-facing checks say what is wrong, in order type -> shape -> value."""

import linecache
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from namedaxes import DATA_SHARDS, DEVICES, GRID_AXES, GRID_SHAPE, MODEL_REPLICAS, checking
from namedaxes.checking import (
    TEXT,
    CheckFailed,
    Exercise,
    assert_check_fails,
    assert_check_passes,
    collective_axes,
    collectives,
    expect_array,
    expect_close,
    expect_collective,
    expect_no_collective,
    expect_replicated,
    explained,
    fail,
    not_written_yet,
    progress,
    progress_rows,
    same_values,
    show_error,
    show_values,
    translate,
    unbound_axis_name,
)

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
        expect_collective(
            "f", lambda x: lax.pmax(x, DEVICES), 1.0, axis_name=DEVICES, axis_env=ENV, primitives=["psum"]
        )
    expect_collective("f", lambda x: lax.psum(x, DEVICES), 1.0, axis_name=DEVICES, axis_env=ENV)
    with pytest.raises(CheckFailed, match=r"should not communicate over 'devices'"):
        expect_no_collective("f", lambda x: lax.psum(x, DEVICES), 1.0, axis_name=DEVICES, axis_env=ENV)


def test_show_error_prints_the_real_error(capsys):
    with show_error(NameError, match="unbound axis name"):
        jax.vmap(lambda x: lax.psum(x, "batch"))(jnp.ones(3))
    assert "NameError: Found an unbound axis name: batch" in capsys.readouterr().out


def test_show_error_fails_when_nothing_is_raised():
    with (
        pytest.raises(AssertionError, match="should raise ValueError, but it ran without an error"),
        show_error(ValueError),
    ):
        pass


def test_show_error_fails_on_a_different_message():
    with (
        pytest.raises(AssertionError, match="expected an error matching"),
        show_error(ValueError, match="context mesh"),
    ):
        raise ValueError("something else")


def test_assert_check_fails_and_passes():
    def check(v):
        expect_close("v", v, 1.0)

    assert "wrong values" in assert_check_fails(check, 2.0, match="wrong values")
    with pytest.raises(AssertionError, match="accepted an answer"):
        assert_check_fails(check, 1.0)
    assert_check_passes(check, 1.0)


def test_exercise_check_hint_and_observe(capsys):
    ex = Exercise(
        "twice",
        lambda f: expect_close("twice", f(1.0), 2.0),
        hints=["multiply", "by two"],
        observe=lambda f: {"out": np.asarray(f(3.0))},
        module=__name__,
    )
    ex.check(lambda x: 2 * x)
    with pytest.raises(CheckFailed):
        ex.check(lambda x: x)
    for _ in range(3):
        ex.hint()
    out = capsys.readouterr().out
    assert "✓ `twice` passes the visible checks." in out and "Hint 1/2" in out and out.count("Hint 2/2") == 2
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
    assert not same_values(np.zeros(3), np.zeros((3, 1)))  # broadcastable is not enough
    assert not same_values(np.zeros(2), np.zeros(3))  # and a mismatch does not raise
    assert not same_values(1.0, 1.0 + 5e-5)  # default tol 1e-5 ...
    assert same_values(1.0, 1.0 + 5e-5, 1e-4)  # ... or the one passed
    assert same_values([jnp.float32(1.0), 2], [1.0, 2.0], dtype=float)
    assert isinstance(same_values(1.0, 1.0), bool)


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


def test_exercise_check_explains_a_skipped_device_setup(monkeypatch):
    ex = Exercise("twice", lambda f: None, module=__name__)
    monkeypatch.setattr(jax, "device_count", lambda: 1)
    with pytest.raises(CheckFailed, match=r"need 8 devices, but JAX has 1\. Run the set-up cell"):
        ex.check(lambda x: 2 * x)


# ---------------------------------------------------------------- feedback, not crashes
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _cell(source: str, number: int = 1) -> dict:
    """Run `source` as IPython runs a notebook cell (a cell file name, its lines in linecache): its names."""
    filename = f"<ipython-input-{number}-0123abcd>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"jnp": jnp, "lax": lax, "DEVICES": DEVICES}
    exec(compile(source, filename, "exec"), namespace)
    return namespace


def test_a_failed_check_renders_as_its_message_only_in_red_with_the_hint_line(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    twice = Exercise("twice", lambda f: expect_close("twice", f(1.0), 2.0), hints=["multiply"], module=__name__)
    globals()["q_twice"] = twice  # the name the hint line uses: this module's attribute
    try:
        with pytest.raises(CheckFailed) as err:
            twice.check(lambda x: x)
    finally:
        del globals()["q_twice"]
    lines = err.value._render_traceback_()
    assert lines[0].startswith("\x1b[") and " ".join(ANSI.sub("", ln).strip() for ln in lines[:-1]) == "✗ " + str(
        err.value
    )
    assert lines[-1] == "Stuck? Run `q.q_twice.hint()` for a hint."
    assert not any("Traceback" in ln or "namedaxes/checking" in ln for ln in lines)
    assert err.value.__cause__ is None and err.value.__suppress_context__  # no chained checker frames
    monkeypatch.setenv("NO_COLOR", "1")
    plain = err.value._render_traceback_()
    assert not any("\x1b" in ln for ln in plain) and " ".join(ln.strip() for ln in plain[:-1]) == "✗ " + str(err.value)


def test_a_long_message_is_wrapped_so_nbgraders_command_line_does_not_cut_it(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    message = (
        "`scaled_sum` returned different values on different devices. Every device should hold the "
        "same result: a collective such as `lax.psum` over 'devices' is missing.\nOn device 3: expected 56."
    )
    lines = CheckFailed(message)._render_traceback_()
    assert all(len(ln) <= 80 for ln in lines) and len(lines) == 4
    assert lines[0].startswith("✗ `scaled_sum` returned") and all(ln.startswith("  ") for ln in lines[1:])
    assert lines[-1] == "  On device 3: expected 56."  # the message's own line break is kept


def test_a_passed_check_prints_one_green_line(capsys, monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    Exercise("twice", lambda f: None, module=__name__).check(lambda x: 2 * x)
    out = capsys.readouterr().out
    assert out == "\x1b[32m✓ `twice` passes the visible checks.\x1b[0m\n"


def test_not_written_yet_names_the_unwritten_function_the_answer_calls():
    ns = _cell("def loss_fn(p):\n    raise NotImplementedError()\n\ndef grads(p):\n    return 2 * loss_fn(p)\n")
    with pytest.raises(CheckFailed) as err, explained("grads"):
        ns["grads"](1.0)
    assert str(err.value) == not_written_yet("grads", callee="loss_fn")
    with pytest.raises(CheckFailed) as err, explained("loss_fn"):
        ns["loss_fn"](1.0)
    assert str(err.value) == not_written_yet("loss_fn")


def test_an_error_in_the_students_code_is_quoted_with_its_cell_line():
    ns = _cell("def total(x):\n    y = x * 2\n    return y + 'a'\n")
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
    msg = translate(raised.value, "total", run="`jax.pmap(total, axis_name=DEVICES)`", binds=(DEVICES,))
    assert msg.startswith("`total` failed with JAX's error \"NameError: Found an unbound axis name: device.")
    assert "`total` calls a collective over 'device', and no enclosing pmap/vmap/shard_map binds that name" in msg
    assert msg.endswith(
        "`jax.pmap(total, axis_name=DEVICES)` binds only 'devices'. Write the axis name as the "
        "constant `DEVICES`: `axis_name=DEVICES`."
    )
    grid = translate(raised.value, "grid", binds=(DATA_SHARDS, MODEL_REPLICAS))
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


# ---------------------------------------------------------------- progress
def _fresh_module(name: str, monkeypatch) -> dict:
    monkeypatch.setitem(checking.verdicts._REGISTRY, name, {})
    return {
        "a": Exercise("a", lambda f: expect_close("a", f(1.0), 2.0), module=name),
        "a_structure": Exercise("a", lambda f: None, module=name),
        "b": Exercise("b", lambda f: expect_close("b", f(1.0), 3.0), module=name),
        "c": Exercise("c", lambda f: None, module=name),
    }


def test_progress_lists_passed_failed_and_unchecked_exercises_in_order(monkeypatch, capsys):
    module = "tests.fake_exercises_progress"
    ex = _fresh_module(module, monkeypatch)
    assert progress_rows(module) == [("a", "unchecked", ""), ("b", "unchecked", ""), ("c", "unchecked", "")]
    ex["a"].check(lambda x: 2 * x)
    assert progress_rows(module)[0] == ("a", "unchecked", "")  # its second check has not run
    ex["a_structure"].check(lambda x: 2 * x)
    with pytest.raises(CheckFailed):
        ex["b"].check(lambda x: x)
    rows = progress_rows(module)
    assert (
        rows[0] == ("a", "passed", "") and rows[1][:2] == ("b", "failed") and "`b` has the wrong values" in rows[1][2]
    )
    capsys.readouterr()
    monkeypatch.setenv("NO_COLOR", "1")
    progress(module)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "1 of 3 exercises pass"
    assert (
        out[1] == "  ✓ a"
        and out[2].startswith("  ✗ b: `b` has the wrong values")
        and out[3] == "  • c: not checked yet; run its test cell"
    )
    ex["b"].check(lambda x: 3 * x)
    ex["c"].check(lambda x: x)
    capsys.readouterr()
    progress(module)
    out = capsys.readouterr().out
    assert out.startswith("3 of 3 exercises pass") and TEXT["progress_done"] in out


def test_progress_notices_an_answer_redefined_since_its_check(monkeypatch):
    module = "tests.fake_exercises_changed"
    ex = _fresh_module(module, monkeypatch)

    def a(x):
        return 2 * x

    namespace = {"a": a}
    monkeypatch.setattr(checking.notebook, "user_namespace", lambda: namespace)
    ex["a"].check(a)
    ex["a_structure"].check(a)
    assert progress_rows(module)[0] == ("a", "passed", "")
    namespace["a"] = lambda x: 2 * x  # the student edited and re-ran the answer cell, not the test cell
    assert progress_rows(module)[0] == ("a", "changed", "")


def test_reimporting_a_module_replaces_its_exercises(monkeypatch):
    module = "tests.fake_exercises_reimport"
    _fresh_module(module, monkeypatch)
    registry = checking.verdicts._REGISTRY[module]
    before = list(registry)
    for old in list(registry.values()):  # the same exercises defined again (same name, same check)
        Exercise(old.name, old._check, module=module)
    assert list(checking.verdicts._REGISTRY[module]) == before


def test_every_exercise_module_has_progress():
    import importlib
    import pkgutil

    import namedaxes.exercises as pkg

    for info in pkgutil.iter_modules(pkg.__path__):
        module = importlib.import_module(f"namedaxes.exercises.{info.name}")
        assert callable(module.progress), module.__name__
        assert {name for name, _, _ in progress_rows(module.__name__)} == {
            ex.name for ex in vars(module).values() if isinstance(ex, Exercise)
        }


# ---------------------------------------------------------------- unwritten stubs in plain cells
def test_a_stub_stops_a_plain_cell_with_one_line():
    ns = _cell("def train(p):\n    raise NotImplementedError()\n", number=7)
    with pytest.raises(NotImplementedError) as err:
        ns["train"](1.0)
    assert checking.stubs._stub_message(err.value) == TEXT["uses_unwritten"].format(name="train")
    with pytest.raises(NotImplementedError) as err:
        _cell("raise NotImplementedError()\n", number=8)
    assert checking.stubs._stub_message(err.value) == TEXT["cell_not_written_yet"]
    with pytest.raises(NotImplementedError) as err:
        raise NotImplementedError("a library feature")  # a real NotImplementedError keeps its traceback
    assert checking.stubs._stub_message(err.value) is None


def test_a_stub_that_raised_in_a_worker_process_gets_the_same_line():
    class WorkerError(RuntimeError):  # the shape of multiprocess.WorkerError: text + remote_type
        remote_type = "NotImplementedError"

    text = (
        "process 0 of 2 raised NotImplementedError (so did process 1)\n(while running `run_on_devices`)\n\n"
        '  Traceback (most recent call last):\n    File "<shipped run_on_devices>", line 7, in run_on_devices\n'
        "      return jax.pmap(fn, axis_name=axis_name)(local_x)\n"
        '    File "<shipped global_sum>", line 3, in global_sum\n      raise NotImplementedError()\n'
        "  NotImplementedError"
    )
    assert checking.stubs._stub_message(WorkerError(text)) == TEXT["uses_unwritten"].format(name="global_sum")
    WorkerError.remote_type = "ValueError"
    assert checking.stubs._stub_message(WorkerError(text)) is None
