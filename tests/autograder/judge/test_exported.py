"""Reading an exported program (`autograder.judge.exported`): what its fingerprint covers and which custom
calls it makes, in memory, on programs exported here (issue 34's latent grader bugs)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import export, lax

from autograder.judge import compiling, exported

F32 = jax.ShapeDtypeStruct((4,), jnp.float32)


def _export(fn, *args, targets=()):
    checks = [export.DisabledSafetyCheck.custom_call(t) for t in targets]
    return exported.load_program(export.export(jax.jit(fn), disabled_checks=checks)(*args).serialize())


def _host(name):
    return lambda x: jax.ffi.ffi_call(name, jax.ShapeDtypeStruct(x.shape, x.dtype))(x)


def test_programs_that_keep_different_inputs_have_different_fingerprints():
    """`2 * x` and `2 * y` of (x, y): one module (each keeps one input), different outputs."""
    first, second = _export(lambda x, y: 2 * x, F32, F32), _export(lambda x, y: 2 * y, F32, F32)
    assert (first.module_kept_var_idx, second.module_kept_var_idx) == ((0,), (1,))
    same_text = exported._LOC_RE.sub("", exported.module_text(first)).replace("jit__lambda", "")
    assert same_text == exported._LOC_RE.sub("", exported.module_text(second)).replace("jit__lambda", "")
    assert exported.fingerprint(first) != exported.fingerprint(second)


def test_the_compile_cache_never_runs_one_program_for_another():
    x, y = np.ones(4, np.float32), np.full(4, 5.0, np.float32)
    outputs = []
    for fn in (lambda x, y: 2 * x, lambda x, y: 2 * y):
        prog = compiling.compiled_for(exported.Program.of(_export(fn, F32, F32)), ("devices",), (1,))
        outputs.append(np.asarray(prog.compiled(*[jax.device_put(v, s) for v, s in zip((x, y), prog.in_shardings)])))
    np.testing.assert_array_equal(outputs[0], 2 * x)
    np.testing.assert_array_equal(outputs[1], 2 * y)


def test_the_same_program_exported_twice_has_one_fingerprint():
    def step(x, y):
        return jnp.sin(x) * y

    assert exported.fingerprint(_export(step, F32, F32)) == exported.fingerprint(_export(step, F32, F32))


@pytest.mark.parametrize("target", ["a.b-c", "xla_ffi_python_cpu_callback", "odd name"])
def test_custom_call_targets_are_read_from_the_parsed_module(target):
    """A target MLIR prints quoted (`@"a.b-c"`) is read like a plain one, so the allow-list sees it."""
    calls = exported.custom_calls(_export(_host(target), F32, targets=[target]))
    assert calls == {target} and not calls <= exported.ALLOWED_CUSTOM_CALLS


def test_custom_calls_inside_branches_and_loops_are_read():
    target = "a.b-c"

    def hidden(x):
        inner = lax.cond(x[0] > 0, _host(target), lambda v: v, x)
        return lax.while_loop(lambda c: c[0] < 3.0, lambda c: _host(target)(c) + 1.0, inner)

    assert exported.custom_calls(_export(hidden, F32, targets=[target])) == {target}


def test_a_plain_program_calls_nothing_outside_the_allow_list():
    assert exported.custom_calls(_export(lambda x: jnp.cumsum(x) * 2.0, F32)) <= exported.ALLOWED_CUSTOM_CALLS
