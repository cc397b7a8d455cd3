"""tools.measure_step: which layouts a model can run on, and how a compiled program's launches are counted
(the measuring itself needs an accelerator: its record is namedaxes/recorded/steps-*.json)."""

from __future__ import annotations

import json

from namedaxes import transformer as tm
from tools import measure_step


def test_every_layout_the_sizes_divide_and_no_other():
    config = tm.Config()  # heads 4, d_model 32, vocab 32
    found = measure_step.layouts(config, 16, 8)
    assert (8, 1, 1) in found and (1, 8, 1) in found and (2, 2, 2) in found
    assert (1, 1, 8) not in found  # 4 heads cannot be split 8 ways
    assert all(d * f * t == 8 for d, f, t in found)
    assert measure_step.layouts(config, 2, 8) == [(1, 2, 4), (2, 1, 4)]  # a batch of 2 splits 2 ways at most
    assert measure_step.layouts(config, 16, 1) == [(1, 1, 1)]


def test_the_launches_are_the_entry_computations_operations():
    text = """HloModule m
%fused (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  ROOT %n = f32[4]{0} negate(%p)
}
ENTRY %main (a: f32[4]) -> (f32[4], f32[4]) {
  %a = f32[4]{0} parameter(0)
  %c = f32[] constant(1)
  %f = f32[4]{0} fusion(%a), kind=kLoop, calls=%fused
  %d = f32[4]{0} dot(%f, %f)
  ROOT %t = (f32[4]{0}, f32[4]{0}) tuple(%f, %d)
}
"""
    assert measure_step.entry_ops(text) == 2  # the fusion and the dot; not the parameter, constant or tuple


def test_the_recorded_tpu_table_says_where_and_how_it_was_measured():
    record = json.loads((measure_step.RECORDED / "steps-tpu-v5-lite.json").read_text(encoding="utf-8"))
    assert {"chip", "platform", "jax", "date", "command"} <= set(record["provenance"])
    assert record["provenance"]["platform"] == "tpu"
    sizes = {row["size"] for row in record["rows"]}
    assert sizes == set(measure_step.SIZES)
    assert max(row["params"] for row in record["rows"]) >= 50_000_000  # the "up to >= 50 M parameters"
    for row in record["rows"]:
        assert row["step_us"] > 0 and row["flops"] > 0
