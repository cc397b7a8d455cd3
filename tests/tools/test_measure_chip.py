"""What notebooks 10 and 11 state about a TPU, read from the records made on the project's v5e chip
(tools.measure_chip, tools.compile_anatomy; the measuring needs the chip, the records do not) and the
schedule reader that finds which collectives run beside matmuls (namedaxes.schedule)."""

from __future__ import annotations

from collections import Counter

import numpy as np

from namedaxes import transformer as tm
from namedaxes.schedule import collective_spans
from tools import measure_chip


def _provenance_is_the_chip(record: dict) -> None:
    assert {"jax", "date", "command", "machine"} <= set(record["provenance"])
    assert "v5" in (record["provenance"].get("chip") or record["provenance"]["device_kind"])


def test_the_dispatch_record_grows_with_the_arrays_a_call_takes():
    record = tm.recorded("dispatch-tpu-v5-lite")
    _provenance_is_the_chip(record)
    rows = record["rows"]
    assert [row["arguments"] for row in rows] == list(measure_chip.ARGUMENT_COUNTS)
    back_to_back = [row["pipelined_us"] for row in rows]
    assert back_to_back[-1] > 10 * back_to_back[0]  # 256 arrays against 1
    per_call, per_array = np.polynomial.polynomial.polyfit(measure_chip.ARGUMENT_COUNTS, back_to_back, 1)
    assert 150 < per_call < 300 and 8 < per_array < 12  # notebook 10: about 230 µs + 10 µs per array
    assert all(row["synced_us"] > row["call_us"] for row in rows)  # a call waited for pays the device too


def test_the_step_table_spans_the_sizes_the_issue_asks_for():
    record = tm.recorded("steps-table-tpu-v5-lite")
    _provenance_is_the_chip(record)
    rows = record["rows"]
    assert len(rows) >= 12
    assert {row["config"]["d_model"] for row in rows} >= {32, 2048}
    assert min(row["batch"] for row in rows) == 8 and max(row["batch"] for row in rows) == 4096
    assert all(row["arguments"] == 32 and row["call_us"] > 0 and row["step_us"] > 0 for row in rows)


def test_the_v5e_compile_of_notebook_11s_programs_says_what_the_notebook_says():
    record = tm.recorded("compile-v5e-2x4-anatomy")
    _provenance_is_the_chip(record)
    programs = record["programs"]
    grads = "psum over 'data_parallel_axis'"
    assert programs["train_step_f32_8_1_1"]["moved_bytes"][grads] == 111_236
    assert programs["mixed_step_8_1_1"]["moved_bytes"][grads] == 55_620  # the gradients all-reduced in bf16
    assert "bf16" in programs["mixed_step_8_1_1"]["dtypes_moved"]
    gathers = "all_gather over 'fsdp_axis'"
    assert programs["mixed_step_1_8_1"]["moved_bytes"][gathers] * 2 == 110_592  # half of float32's on the CPU
    assert programs["train_step_f32_1_8_1"]["moved_bytes"][gathers] == 92_160
    for stage in range(4):
        assert f"zero_{stage}_small" in programs and f"zero_{stage}_wide" in programs
    wide = "psum_scatter over 'fsdp_axis'"
    for stage in (1, 2):  # both reduce-scatter, once: XLA for TPU adds stage 2's microbatches before reducing
        assert programs[f"zero_{stage}_wide"]["moved_bytes"][wide] == 1024 * 4096 * 4 * 2 // 8
    assert programs["zero_1_small"]["compiler_peak_bytes"] == programs["zero_2_small"]["compiler_peak_bytes"]
    peaks = [programs[f"zero_{stage}_small"]["compiler_peak_bytes"] for stage in range(4)]
    assert peaks == sorted(peaks, reverse=True)
    kinds = {(kind.split(" over ")[0], dtype) for kind, dtype, _ in programs["zero_3_small"]["each_collective"]}
    assert ("all_gather", "bf16") in kinds  # stage 3 gathers its float32 shards in bf16 for the matmuls
    mixed = programs["mixed_step_8_1_1"]["each_collective"]
    assert sorted((dtype, size) for _, dtype, size in mixed) == [("bf16", 55_616), ("f32", 4)]


def test_each_recorded_collective_adds_up_to_the_readers_totals():
    """`each_collective` (kind, element types, bytes of each collective) of every program of the v5e record says
    what the readers' totals say: as many of each kind, the same bytes per kind, the same element types."""
    for name, facts in tm.recorded("compile-v5e-2x4-anatomy")["programs"].items():
        listed = facts["each_collective"]
        assert dict(Counter(kind for kind, _, _ in listed)) == facts["collectives"], name
        summed = Counter()
        for kind, _, nbytes in listed:
            summed[kind] += nbytes
        assert dict(summed) == facts["moved_bytes"], name
        assert sorted({t for _, types, _ in listed for t in types.split("+")}) == facts["dtypes_moved"], name


def test_the_v5e_compile_reduces_a_naive_accumulation_once():
    """Notebook 11: on the TPU the naive loop, unrolled or scanned, delivers one gradient (16,384 bytes) for
    m = 4 and 8; the CPU delivers m of them."""
    programs = tm.recorded("compile-v5e-2x4-anatomy")["programs"]
    for m in (4, 8):
        for form in ("naive", "scan"):
            assert programs[f"accumulate_{form}_{m}"]["delivered_bytes"] == 16_384


def test_the_schedule_reader_finds_what_hides_and_what_cannot():
    """Data parallelism's one all-reduce of every gradient runs alone; four of FSDP's eleven gathers run
    beside matmuls (notebook 10's overlap section)."""
    data = collective_spans(tm.recorded_hlo("v5e-2x4", "train_step_8_1_1"))
    assert [(s.kind, s.nbytes, s.matmuls) for s in data] == [("all-reduce", 111_236, 0)]
    fsdp = collective_spans(tm.recorded_hlo("v5e-2x4", "train_step_1_8_1"))
    gathers = [s for s in fsdp if s.kind == "all-gather"]
    assert len(gathers) == 11 and sum(s.nbytes for s in gathers) == 92_160
    assert sum(s.hidden for s in gathers) == 4 and all(s.last > s.first for s in gathers if s.hidden)
    assert not [s for s in fsdp if s.kind == "all-reduce"][0].hidden


def test_the_schedule_reader_on_a_hand_written_program():
    text = """HloModule m, is_scheduled=true
%fused_dot (p: f32[4,4]) -> f32[4,4] {
  %p = f32[4,4]{1,0} parameter(0)
  ROOT %d = f32[4,4]{1,0} dot(%p, %p), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %z = f32[] add(%x, %y)
}
ENTRY %main (a: f32[4,4]) -> f32[4,4] {
  %a = f32[4,4]{1,0} parameter(0)
  %s = (f32[4,4]{1,0}, f32[4,4]{1,0}) collective-permute-start(%a), channel_id=7, source_target_pairs={{0,1},{1,0}}
  %f = f32[4,4]{1,0} fusion(%a), kind=kOutput, calls=%fused_dot
  %d = f32[4,4]{1,0} collective-permute-done(%s)
  %r = f32[4,4]{1,0} all-reduce(%f), channel_id=8, replica_groups={{0,1}}, to_apply=%sum
  ROOT %t = f32[4,4]{1,0} add(%d, %r)
}
"""
    spans = collective_spans(text)
    assert [(s.kind, s.first, s.last, s.matmuls) for s in spans] == [
        ("collective-permute", 1, 3, 1),  # the permute's start and done hold the matmul's fusion between them
        ("all-reduce", 4, 4, 0),  # one instruction: nothing runs beside it
    ]


def test_the_held_out_steps_are_sizes_the_table_never_recorded():
    """Notebook 10 checks its time model on 13 steps besides the table's 17: other sizes and batches."""
    held = tm.recorded("steps-heldout-tpu-v5-lite")
    _provenance_is_the_chip(held)
    table = tm.recorded("steps-table-tpu-v5-lite")["rows"]
    seen = {(tuple(sorted(row["config"].items())), row["batch"]) for row in table}
    rows = held["rows"]
    assert len(rows) == 13 and not seen & {(tuple(sorted(row["config"].items())), row["batch"]) for row in rows}
    assert all(row["arguments"] == 32 and row["step_us"] > 0 for row in rows)


def test_every_recorded_step_has_its_compiled_operations():
    """Each step's program as the chip compiled it, read by namedaxes.traffic: [FLOPs, FLOPs as the matrix unit
    runs them, tiled bytes in HBM, tiled bytes on chip] per operation; the padding only adds."""
    record = tm.recorded("passes-tpu-v5-lite")
    _provenance_is_the_chip(record)
    programs = record["programs"]
    for name in ("steps-table-tpu-v5-lite", "steps-heldout-tpu-v5-lite"):
        for row in tm.recorded(name)["rows"]:
            operations = programs[f"{row['size']}-b{row['batch']}"]
            assert operations and all(len(op) == 4 and op[1] >= op[0] >= 0 and min(op[2:]) >= 0 for op in operations)
            assert 0.8 < sum(op[0] for op in operations) / row["flops"] <= 1.0  # the matmuls: most of cost_analysis'
    narrow = programs["d32-b4096"]
    assert sum(op[1] for op in narrow) > 5 * sum(op[0] for op in narrow)  # heads of width 8, d_model 32


def test_the_on_chip_memory_is_measured_on_chip():
    """The on-chip pass rate notebook 10 uses: the compiled loop keeps its array in memory space 1 (VMEM)."""
    record = tm.recorded("onchip-tpu-v5-lite")
    _provenance_is_the_chip(record)
    rows = record["rows"]
    assert all(any("S(1)" in layout for layout in row["layouts"]) for row in rows)
    assert 4_000 < max(row["gbytes_per_s_rw"] for row in rows) < 8_000  # about 9 times HBM's 649 GB/s


def test_the_profile_shows_where_the_missed_steps_spent_their_time():
    """Notebook 10's gathers and scatters by index: a profile of six steps on the chip, the three the time model
    missed by 1.65-2.10x among them; per token they take about 20 ns, and the device's time is the step's."""
    record = tm.recorded("profile-tpu-v5-lite")
    _provenance_is_the_chip(record)
    rows = record["rows"]
    by_index = tuple(measure_chip.BY_INDEX)  # what `measure_chip --profile` records
    assert set(rows) == {f"{name}-b{batch}" for name, _, batches in measure_chip.PROFILED for batch in batches}
    for row in rows.values():
        assert 0.9 * row["device_us"] < row["operations_us"] <= 1.01 * row["device_us"]  # the ops fill the module
        assert 15 < sum(row[key] for key in by_index) * 1e3 / row["tokens"] < 22  # ns a token
    steps = {
        f"{row['size']}-b{row['batch']}": row
        for name in ("steps-table-tpu-v5-lite", "steps-heldout-tpu-v5-lite")
        for row in tm.recorded(name)["rows"]
    }
    for name in ("d32-b512", "d32s128-b256", "d64s128-b256"):  # bound by the device, not by dispatch
        assert rows[name]["device_us"] > 0.85 * steps[name]["step_us"] > 0.85 * 540
