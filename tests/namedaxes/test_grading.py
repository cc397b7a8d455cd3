"""grading.record writes observations only under the autograder; rng is deterministic."""

import json

import jax.numpy as jnp
import numpy as np

from namedaxes import grading


def test_record_is_a_no_op_outside_autograding(tmp_path, monkeypatch):
    monkeypatch.delenv(grading.OBSERVE_DIR_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    grading.record("anything", {"out": jnp.ones(3)})
    assert list(tmp_path.iterdir()) == []


def test_record_writes_arrays_and_values(tmp_path, monkeypatch):
    monkeypatch.setenv(grading.OBSERVE_DIR_ENV, str(tmp_path))
    grading.record("scaled_sum_total", {"out_8": jnp.arange(8.0), "axes": ["devices"], "n": 8})
    arrays = np.load(tmp_path / "scaled_sum_total.npz")
    assert arrays["out_8"].dtype == np.float32 and arrays["out_8"].tolist() == list(range(8))
    assert json.loads((tmp_path / "scaled_sum_total.json").read_text()) == {"axes": ["devices"], "n": 8}


def test_rng_is_deterministic_per_grade_id():
    a = grading.rng("scaled_sum_total").normal(size=4)
    assert np.array_equal(a, grading.rng("scaled_sum_total").normal(size=4))
    assert not np.array_equal(a, grading.rng("other_test").normal(size=4))
    assert not np.array_equal(a, grading.rng("scaled_sum_total", salt=1).normal(size=4))


def test_record_is_not_fooled_by_rebinding_numpy(tmp_path, monkeypatch):
    monkeypatch.setenv(grading.OBSERVE_DIR_ENV, str(tmp_path))
    monkeypatch.setattr(np, "savez", lambda *a, **k: None)  # what a student's answer cell could do
    grading.record("t", {"out": jnp.ones(2)})
    assert np.load(tmp_path / "t.npz")["out"].tolist() == [1.0, 1.0]


def test_a_tool_can_export_each_case_for_a_tpu_as_well_and_the_graders_export_stays():
    """`export_also_for` (tools/export_references.py): each case is exported a second time, for the platforms
    and at the matmul precision given, beside the grader's own export, which it leaves as it is."""
    import jax

    case = {"k": grading.Case(lambda a, b: a @ b, *(grading.spec((4, 4), jnp.float32),) * 2)}
    plain = grading.programs(case)
    try:
        grading.export_also_for(("tpu",), "highest")
        both = grading.programs(case)
    finally:
        grading.export_also_for(None)
    assert sorted(k for k in both if k.startswith(("program:", "platforms:"))) == ["platforms:k", "program:k"]
    assert both["program:k"].tobytes() == plain["program:k"].tobytes()
    tpu = jax.export.deserialize(bytearray(both["platforms:k"].tobytes()))
    assert tpu.platforms == ("tpu",) and "precision = [HIGHEST, HIGHEST]" in tpu.mlir_module()
    assert "platforms:k" not in grading.programs(case)  # `None` stopped it
