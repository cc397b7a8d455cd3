"""The course's HLO readers on programs compiled for real TPU topologies (namedaxes/recorded/, made on the
project's TPU v5e machine by `python -m tools.compile_for_topology`; CI has no TPU, so it reads the recorded
texts). A TPU's program differs from the CPU backend's: asynchronous collective fusions copy one collective
into several computations, ppermutes are `collective-permute-start`/`-done` pairs, gathers run in bfloat16,
XLA combines all-reduces differently, and a loop's text does not say its trip count. The readers must still
count each collective once, over the right mesh axis, with the bytes it delivers, as often as it runs: what
the design of notebook 10's step says it does, and what they read in the same reference program compiled for
the CPU, for every exercise of every notebook (references-<topology>.json against references-cpu.json)."""

from __future__ import annotations

import functools
import json
import shutil

import pytest

from courseinfo.course import notebook_ids
from namedaxes import DATA_PARALLEL, FSDP, MODEL_PARALLEL, STAGES, judging
from namedaxes import pipeline as pp
from namedaxes import transformer as tm
from namedaxes.judging import collective_sends, describe_collective, moved_of
from tools import compile_for_topology as cft

RECORDED = cft.RECORDED
TOPOLOGIES = ("v5e-2x4", "v3-2x2")  # Kaggle's v5e-8 and v3-8: 8 JAX devices each


def _record(label: str) -> dict:
    return json.loads((RECORDED / f"compile-{label}.json").read_text(encoding="utf-8"))


def _programs():
    for label in TOPOLOGIES:
        for program, facts in _record(label)["programs"].items():
            yield pytest.param(label, program, facts, id=f"{label}-{program}")


# Notebook 10's steps whose FSDP gradient sums the v3 compiler runs as all-reduce-scatter fusions: each device gets
# its shard of the sum (a reduce-scatter, what the gradient of a gather is), where v5e and the CPU all-reduce.
SCATTERED = {("v3-2x2", "train_step_1_2_4"), ("v3-2x2", "train_step_1_4_2")}


def _design(mesh: dict, scattered: bool = False) -> set[str]:
    """The kinds of collective notebook 10's step must run on `mesh`, from its design alone (`scattered`: its FSDP
    gradient sums are reduce-scatters, `SCATTERED`)."""
    if STAGES in mesh:  # the pipelined step: activations between stages, gradients over the data and stages
        return {describe_collective(*kind) for kind in (("collective-permute", "", STAGES),)} | {
            describe_collective("all-reduce", "add", axis) for axis in (DATA_PARALLEL, STAGES)
        }
    kinds = set()
    if mesh[FSDP] > 1:  # the stored shards gathered before use, their gradients summed
        kinds |= {describe_collective("all-gather", "", FSDP), describe_collective("all-reduce", "add", FSDP)}
    if scattered:
        kinds.add(describe_collective("reduce-scatter", "add", FSDP))
    if mesh[DATA_PARALLEL] > 1:
        kinds.add(describe_collective("all-reduce", "add", DATA_PARALLEL))
    if mesh[MODEL_PARALLEL] > 1:  # the two Megatron matmuls' sums, and their gradients' (attention, MLP)
        kinds.add(describe_collective("all-reduce", "add", MODEL_PARALLEL))
    return kinds


@pytest.mark.parametrize(("label", "program", "facts"), list(_programs()))
def test_the_readers_find_on_a_tpu_what_the_design_says(label, program, facts):
    read = cft.read_facts(cft.hlo_text(RECORDED, label, program), facts["mesh"])
    assert set(read["collectives"]) == _design(facts["mesh"], (label, program) in SCATTERED)
    config = tm.Config()
    if facts["mesh"].get(FSDP, 1) > 1 and STAGES not in facts["mesh"]:
        # one gather per FSDP-stored matrix used: embed, pos, unembed, and four per layer, whatever the
        # TPU's fusions copied (up to seven lines per gather in its text)
        assert read["collectives"][describe_collective("all-gather", "", FSDP)] == 3 + 4 * config.layers
        assert "bf16" in read["dtypes_moved"]  # a TPU gathers float32 weights in bfloat16: half the bytes
    if STAGES in facts["mesh"]:
        # one ppermute each way (forward activations, backward gradients), each one microbatch's activations
        micro = 16 // facts["mesh"][DATA_PARALLEL] // pp.MICROBATCHES
        one = 4 * micro * config.seq * config.d_model
        assert read["collectives"][describe_collective("collective-permute", "", STAGES)] == 2
        assert read["moved_bytes"][describe_collective("collective-permute", "", STAGES)] == 2 * one


@pytest.mark.parametrize("label", TOPOLOGIES)
def test_the_recorded_facts_are_what_the_readers_read_today(tmp_path, label):
    """The reader facts in compile-*.json follow the readers (`--resummarize` rewrites them)."""
    shutil.copy(RECORDED / f"compile-{label}.json", tmp_path)
    shutil.copytree(RECORDED / f"hlo-{label}", tmp_path / f"hlo-{label}")
    assert cft.resummarize(tmp_path) == 0


def test_an_asynchronous_ppermute_counts_its_result_once():
    line = (
        "  %collective-permute-start = (f32[1,32,32]{1,2,0:T(8,128)S(1)}, f32[1,32,32]{1,2,0:T(8,128)S(1)}, "
        "u32[]{:S(2)}, u32[]{:S(2)}) collective-permute-start(%x), channel_id=1, source_target_pairs={{0,1},{1,0}}"
    )
    done = "  %collective-permute-done = f32[1,32,32]{1,2,0} collective-permute-done(%collective-permute-start)"
    assert moved_of(line + "\n" + done, ("d",), (2,), 2) == (("ppermute over 'd'", 4 * 32 * 32),)


def test_copies_of_one_collective_inside_fusions_count_once():
    """A TPU's asynchronous collective fusions: one all-gather copied into three fusion bodies is one."""
    body = (
        "%fused.{i} (p: f32[64,16]) -> bf16[1,64,32] {{\n  %p = f32[64,16]{{1,0}} parameter(0)\n"
        "  ROOT %all-gather.{i} = bf16[1,64,32]{{1,2,0:T(8,128)(2,1)}} all-gather(%p), channel_id=40, "
        "replica_groups={{{{0,1}}}}, dimensions={{2}}\n}}\n"
    )
    entry = "ENTRY %main (a: f32[64,16]) -> bf16[1,64,32] {\n" + "".join(
        f"  %f.{i} = bf16[1,64,32]{{1,2,0}} fusion(%a), kind=kCustom, calls=%fused.{i}\n" for i in range(3)
    )
    text = "".join(body.format(i=i) for i in range(3)) + entry + "}\n"
    assert moved_of(text, ("d",), (2,), 2) == (("all_gather over 'd'", 2 * 64 * 32),)


def test_collectives_outside_fusions_count_line_by_line_whatever_their_channel():
    """The CPU backend gives distinct collectives one channel (jax 0.12 prints a mesh's groups with spaces):
    two psums over two axes, and two over the same axis (a loop over layers), are four collectives."""
    line = "  %ar.{i} = f32[4]{{0}} all-reduce(%p), channel_id=1, replica_groups={groups}, to_apply=%add"
    mesh = "mesh['a'=2,'b'=4] {{'{axis}'}}"
    text = "\n".join(
        [
            "%add (x: f32[], y: f32[]) -> f32[] {",
            "  ROOT %s = f32[] add(%x, %y)",
            "}",
            "ENTRY %main (p: f32[4]) -> f32[4] {",
            line.format(i=0, groups="{{0,4},{1,5},{2,6},{3,7}}"),
            line.format(i=1, groups="{{0,1,2,3},{4,5,6,7}}"),
            line.format(i=2, groups="{{0,1,2,3},{4,5,6,7}}"),
            line.format(i=3, groups=mesh.format(axis="a")),
            "}",
        ]
    )
    assert dict(moved_of(text, ("a", "b"), (2, 4), 8)) == {"psum over 'a'": 2 * 16, "psum over 'b'": 2 * 16}


# ---------------------------------------------------------------- every notebook's reference programs
# tools/export_references.py recorded each exercise's reference programs as the grader compiles them for its
# 8 CPU devices (solutions/recorded/: references-cpu.json and the texts in references-hlo-cpu.json.xz);
# `compile_for_topology --references` compiled the same programs, exported for a TPU, for a topology's chips
# (references-<topology>).
CPU = "cpu"


def _reference_labels() -> list[str]:
    """Every topology the reference programs are recorded for (references-<label>.json), the CPU's aside."""
    labels = (p.stem.removeprefix("references-") for p in cft.REFERENCES.glob("references-*.json"))
    return sorted(label for label in labels if label != CPU)


@functools.cache
def _references(label: str) -> tuple[dict, dict[str, str]]:
    """(record, texts) of references-<label>: read once per test process."""
    record = json.loads((cft.REFERENCES / f"references-{label}.json").read_text(encoding="utf-8"))
    return record, cft.reference_texts(cft.REFERENCES, label)


@functools.cache
def _read(label: str, pid: str) -> dict:
    """What today's readers find in the recorded text of program `pid` compiled for `label`: read once per test
    process (the CPU's is compared with every topology's)."""
    record, texts = _references(label)
    return cft.reference_facts(texts[pid], record["programs"][pid]["mesh"])


def _reference_programs():
    programs = sorted(_references(CPU)[0]["programs"])
    for label in _reference_labels():
        for pid in programs:
            yield pytest.param(label, pid, id=f"{label}-{pid}")


# Where a topology's program legitimately differs from the CPU's in a way the general rules below do not cover,
# program by program: (topology label, program id) -> {fact: why}; a fact is one `_differences` names. An entry
# must still differ: one that no longer does fails, so the table says only what is true.
TPU_DIFFERENCES: dict[tuple[str, str], dict[str, str]] = {}
V5E, V3, BOTH = ("v5e-2x4",), ("v3-2x2",), ("v5e-2x4", "v3-2x2")


def _differ(labels: tuple, programs: list[str], why: dict[str, str]) -> None:
    TPU_DIFFERENCES.update({(label, pid): why for label in labels for pid in programs})


_SCATTER = "the TPU runs this small reduce-scatter as an all-reduce of the whole array (its ring-sum emitter) and a "
_differ(
    BOTH,
    [f"07_collectives/sum_scatter_columns_values/{c}" for c in ("collectives", "k2", "k4", "k8")],
    dict.fromkeys(("kinds", "sent_bytes"), _SCATTER + "dynamic-slice of the device's column: a psum of all 8 columns"),
)
_differ(
    BOTH,
    [f"07_collectives/fsdp_step_update/{c}" for c in ("collectives", "k2_n10", "k4_n12", "k8_n16")],
    dict.fromkeys(
        ("kinds", "sent_bytes"),
        "the TPU runs the 8-element all-gather as a dynamic-update-slice into zeros and an all-reduce, and the "
        "reduce-scatter as an all-reduce and a dynamic-slice: two psums of the whole vector",
    ),
)
_F16 = "the TPU all-reduces float16 values packed two to a 32-bit word"
_differ(
    V5E,
    ["02_scaled_sum/scaled_sum_total/k4_shape3_float16"],
    dict.fromkeys(("bytes", "sent_bytes"), _F16 + ", the whole (1,128) tile: u32[1,128], 512 bytes for 3 float16s"),
)
_differ(
    V3,
    ["02_scaled_sum/scaled_sum_total/k4_shape3_float16"],
    dict.fromkeys(("bytes", "sent_bytes"), _F16 + ", the whole (2,128) tile: u32[2,128], 1024 bytes for 3 float16s"),
)
_differ(
    BOTH,
    ["02_scaled_sum/scaled_mean_value/k4_slots3_float16"],
    dict.fromkeys(("bytes", "sent_bytes"), _F16 + ": the float16 sum as a u32, 4 bytes where the CPU sends 2"),
)
_NORMS = "the TPU runs the small all-gather of the column norms as a dynamic-update-slice into zeros and a psum"
_differ(
    V5E,
    ["08_compiler_sharding/feature_correlation_explicit/mesh2x2"],
    {
        "kinds": "the v5e compiler runs the all-gather before the matmul as a windowed einsum (a loop of "
        "collective-permutes, multiplying while blocks travel); " + _NORMS
    },
)
_differ(
    V5E,
    [f"08_compiler_sharding/feature_correlation_explicit/mesh{m}" for m in ("2x4", "4x2")],
    dict.fromkeys(("kinds", "runs", "bytes"), _NORMS + " over the model axis: one all_gather where the CPU has two"),
)
_differ(
    V3,
    [f"08_compiler_sharding/feature_correlation_explicit/mesh{m}" for m in ("2x2", "2x4", "4x2")],
    dict.fromkeys(("kinds", "runs", "bytes"), _NORMS + " over the model axis: one all_gather where the CPU has two"),
)
_differ(
    BOTH,
    [f"11_step_anatomy/mixed_train_step_bf16/{m}" for m in ("1x2x4", "2x4x1")],
    {
        "runs": "the TPU all-reduces the bfloat16 gradients and the float32 loss apart (two psums over fsdp_axis); "
        "the CPU promotes bfloat16 all-reduces to float32 and combines them with the loss into one"
    },
)
_differ(
    V5E,
    [f"11_step_anatomy/zero_specs_stages/stage{n}" for n in (1, 2, 3)],
    dict.fromkeys(
        ("kinds", "runs", "bytes", "sent_bytes"),
        "the v5e compiler runs one gradient's reduce-scatter as a whole all-reduce combined with the loss's psum, "
        "the other as an all-reduce-scatter fusion over 128 tile-padded rows (16-row shards) that collective-"
        "permutes then realign to the 12-row shards",
    ),
)
_differ(
    V3,
    [f"11_step_anatomy/zero_specs_stages/stage{n}" for n in (1, 2, 3)],
    dict.fromkeys(
        ("kinds", "bytes", "sent_bytes"),
        "the v3 compiler runs both gradients' reduce-scatters as whole all-reduces, combined with the loss's psum "
        "into one, and slices each device's shard",
    ),
)
_V3_STAGE3 = ("v3-2x2", "11_step_anatomy/zero_specs_stages/stage3")
TPU_DIFFERENCES[_V3_STAGE3] = TPU_DIFFERENCES[_V3_STAGE3] | {
    "runs": "the v3 compiler gathers each layer's weights again in the backward pass, as stage 3's remat policy "
    "asks (4 all-gathers); jax 0.10.2's CPU compile keeps the forward pass's gathered weights (2)"
}
_differ(
    V3,
    ["08_compiler_sharding/collective_matmul_rows_ring/k2"],
    {
        "overlap": "the v3 compiler schedules the local block's matmul before the one ppermute, the CPU after it "
        "(the case asks at least half the reference's overlap, 0, which either schedule meets)"
    },
)


def _differences(cpu: dict, tpu: dict, judged: dict) -> dict[str, str]:
    """fact -> how the readers' reading of a TPU's program differs from their reading of the CPU's, beyond what a
    TPU's program differs in by design:

    - `kinds`: the collectives, by kind and mesh axis (what the grader judges a program's communication by);
    - `runs`: how often one call runs each kind (`collective_sends`). Fewer on the TPU where XLA combined
      several collectives of a kind into one (it moves the same bytes);
    - `bytes`: the bytes each kind delivers to a device (`moved_of`), its largest instance where it runs as
      often, and the bytes all collectives deliver in one call, loops counted as often as they run
      (`Work.sent_bytes`, a judged fact). Where the TPU moves bfloat16 and the CPU only float32 (a TPU gathers
      float32 weights in bfloat16 for a matmul at the default precision), between half and all of the CPU's.
      Tile padding is in the layouts, never in the readers' bytes: only the compiler's peak memory pays it,
      which is not compared (`peak_bytes`, `flops` and `largest_bytes` follow the compiler's own choices:
      recorded, not compared);
    - `overlap`: where the case judges the schedule (`Case(work={"overlap": ...})`), whether matmuls run while
      blocks travel (`Work.overlap` > 0)."""
    found = {}
    kinds = set(cpu["collectives"])
    if set(tpu["collectives"]) != kinds:
        found["kinds"] = f"{sorted(tpu['collectives'])} on the TPU, {sorted(kinds)} on the CPU"
    bf16 = "bf16" in tpu["dtypes_moved"] and "bf16" not in cpu["dtypes_moved"]

    def same(tpu_bytes: int, cpu_bytes: int) -> bool:
        return tpu_bytes == cpu_bytes or (bf16 and cpu_bytes / 2 <= tpu_bytes < cpu_bytes)

    for kind in sorted(kinds & set(tpu["collectives"])):
        (runs, largest), (tpu_runs, tpu_largest) = cpu["sends"][kind], tpu["sends"][kind]
        moved, tpu_moved = cpu["moved_bytes"][kind], tpu["moved_bytes"][kind]
        if tpu_runs != runs and not (tpu_runs < runs and same(tpu_moved, moved)):
            found["runs"] = f"{kind}: runs {tpu_runs} times on the TPU, {runs} on the CPU"
        if not same(tpu_moved, moved) or (tpu_runs == runs and not same(tpu_largest, largest)):
            found["bytes"] = f"{kind}: {tpu_moved} bytes (largest {tpu_largest}) on the TPU, {moved} ({largest})"
    if not same(tpu["sent_bytes"], cpu["sent_bytes"]):
        found["sent_bytes"] = f"{tpu['sent_bytes']} bytes sent per call on the TPU, {cpu['sent_bytes']} on the CPU"
    if "overlap" in judged.get("work", {}) and (tpu["overlap"] > 0) != (cpu["overlap"] > 0):
        found["overlap"] = f"{tpu['overlap']} matmuls before the last send on the TPU, {cpu['overlap']} on the CPU"
    return found


@pytest.mark.parametrize(("label", "pid"), list(_reference_programs()))
def test_the_readers_read_a_reference_program_on_a_tpu_as_on_the_cpu(label, pid):
    """Every reference program of every notebook, compiled for the topology: the readers find what they find in
    it compiled for the CPU (today's readers, on both recorded texts), up to `_differences`' general rules and
    the program's own entries in `TPU_DIFFERENCES`."""
    cpu_record, record = _references(CPU)[0], _references(label)[0]
    recorded = record["programs"].get(pid)
    assert recorded is not None and "error" not in recorded, recorded  # compiled for the topology
    assert recorded["mesh"] == cpu_record["programs"][pid]["mesh"]
    found = _differences(_read(CPU, pid), _read(label, pid), cpu_record["programs"][pid]["judged"])
    known = TPU_DIFFERENCES.get((label, pid), {})
    assert {fact: why for fact, why in found.items() if fact not in known} == {}
    assert sorted(set(known) - set(found)) == []  # each documented difference still holds


def test_the_reference_programs_are_recorded_for_the_cpu():
    """The CPU's record holds every notebook's programs, each read from its text (the recorded facts are today's
    readers' reading: `--resummarize`)."""
    record, texts = _references(CPU)
    assert sorted({pid.split("/")[0] for pid in record["programs"]}) == notebook_ids()
    assert set(texts) == set(record["programs"])
    assert record["provenance"]["platform"] == CPU


@pytest.mark.parametrize("label", [CPU, *_reference_labels()])
def test_a_reference_record_names_no_path_of_the_machine_that_made_it(label):
    words = _references(label)[0]["provenance"]["command"].split()
    assert words[:2] == ["python", "-m"] and not [w for w in words if w.startswith("/")]
    assert cft.command("m", ["--out", "/tmp/x", "--references", str(cft.REPO / "build" / "e")]) == (
        "python -m m --out OUT --references build/e"
    )


@pytest.mark.parametrize("label", [CPU, *_reference_labels()])
def test_the_recorded_reference_facts_are_what_the_readers_read_today(label):
    """The reader facts in references-*.json follow the readers (`--resummarize` rewrites them)."""
    record = _references(label)[0]
    for pid, facts in record["programs"].items():
        if "error" not in facts:
            assert {k: facts[k] for k in cft.REFERENCE_FACTS} == _read(label, pid), pid


def test_resummarize_reads_the_reference_programs_again(tmp_path):
    """`--resummarize` rewrites a reference record's reader facts from its texts, and counts what it changed."""
    record, texts = _references(CPU)
    few = sorted(record["programs"])[:2]
    stale = {pid: record["programs"][pid] | {"overlap": -1} for pid in few}
    cft.write_references(tmp_path, "x", {"provenance": {}, "programs": stale}, {pid: texts[pid] for pid in few})
    assert cft.resummarize(tmp_path) == 2
    assert cft.resummarize(tmp_path) == 0
    assert json.loads((tmp_path / "references-x.json").read_text())["programs"] == {
        p: record["programs"][p] for p in few
    }


def test_a_tpu_loop_without_a_printed_trip_count_counts_its_trips():
    """A TPU's text prints its own backend config on a `while`, not XLA's `known_trip_count`: the readers read
    the count from the loop itself (a counter from a constant, stepped by a constant, compared less-than with a
    constant). The recorded v5e pipelined step sends one microbatch each way per step of its two scans (m + k - 1
    steps), as the same step compiled for the CPU does."""
    text = cft.hlo_text(RECORDED, "v5e-2x4", "pipeline_step_2_4_1_1")
    assert '"known_trip_count"' not in text
    names, sizes = (STAGES, DATA_PARALLEL, FSDP, MODEL_PARALLEL), (2, 4, 1, 1)
    sends = collective_sends(text, names, sizes, 8)[describe_collective("collective-permute", "", STAGES)]
    config, micro = tm.Config(), 16 // 4 // pp.MICROBATCHES
    assert (sends.runs, sends.largest) == (2 * (pp.MICROBATCHES + 2 - 1), 4 * micro * config.seq * config.d_model)


_LOOP = """%add (x: s32[], y: s32[]) -> s32[] {{
  ROOT %s = s32[] add(%x, %y)
}}
%cond (p: (s32[], f32[4])) -> pred[] {{
  %p = (s32[], f32[4]) parameter(0)
  %c = s32[] get-tuple-element(%p), index=0
  %n = s32[] constant({limit})
  ROOT %lt = pred[] compare({compared}), direction={direction}
}}
%body (q: (s32[], f32[4])) -> (s32[], f32[4]) {{
  %q = (s32[], f32[4]) parameter(0)
  %i = s32[] get-tuple-element(%q), index=0
  %j = s32[] copy(%i)
  %x = f32[4] get-tuple-element(%q), index=1
  %cp = f32[4] collective-permute(%x), channel_id=1, source_target_pairs={{{{0,1}},{{1,0}}}}
  %one = s32[] constant({step})
  %next = s32[] add(%j, %one)
  ROOT %t = (s32[], f32[4]) tuple(%next, %cp)
}}
ENTRY %main (a: f32[4]) -> (s32[], f32[4]) {{
  %a = f32[4] parameter(0)
  %zero = s32[] constant({start})
  %z = s32[] copy(%zero)
  %init = (s32[], f32[4]) tuple(%z, %a)
  ROOT %w = (s32[], f32[4]) while(%init), condition=%cond, body=%body
}}
"""


@pytest.mark.parametrize(
    ("start", "limit", "step", "compared", "direction", "runs"),
    [
        (0, 5, 1, "%c, %n", "LT", 5),
        (2, 9, 3, "%c, %n", "LT", 3),  # 2, 5, 8
        (0, 5, 1, "%n, %c", "GT", 5),
        (7, 5, 1, "%c, %n", "LT", 0),
        (0, 5, 1, "%c, %n", "NE", 5),  # not of the form read: its control run on its constants (simulated_trips)
    ],
)
def test_a_loops_trip_count_is_read_from_its_counter(start, limit, step, compared, direction, runs):
    text = _LOOP.format(start=start, limit=limit, step=step, compared=compared, direction=direction)
    assert collective_sends(text, ("d",), (2,), 2) == {"ppermute over 'd'": judging.Sends(runs, 16)}


def test_an_asynchronous_all_gather_counts_its_result_once():
    """`all-gather-start`'s type is (its operand, its result): the result is what it delivers."""
    line = (
        "  %ags = (f32[4,8]{1,0}, f32[8,8]{1,0}) all-gather-start(%p), channel_id=3, replica_groups={{0,1}}, "
        "dimensions={0}, use_global_device_ids=true"
    )
    done = "  %agd = f32[8,8]{1,0} all-gather-done(%ags)"
    assert moved_of(line + "\n" + done, ("d",), (2,), 2) == (("all_gather over 'd'", 4 * 64),)


def test_no_reference_program_is_in_what_students_and_graded_kernels_read():
    """The reference programs (their texts and the facts read from them) show each solution's method: they are
    recorded in solutions/recorded/, and nothing in the packages a student's server and a graded kernel read
    (`namedaxes`, `courseinfo`) holds one, compressed or not (issue 58: they were in namedaxes/recorded/)."""
    import subprocess
    import sys

    from reference_programs import SEARCH, marks

    assert cft.REFERENCES.parts[-2:] == ("solutions", "recorded")
    roots = [str(cft.REPO / name) for name in ("namedaxes", "courseinfo")]
    proc = subprocess.run(
        [sys.executable, "-c", SEARCH, json.dumps(marks()), *roots], capture_output=True, text=True, check=True
    )
    seen = json.loads(proc.stdout)
    assert seen["files"] > 50 and seen["refused"] == []
    assert seen["found"] == []
    control = json.loads(
        subprocess.run(
            [sys.executable, "-c", SEARCH, json.dumps(marks()), str(cft.REFERENCES)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    assert {m for _, m in control["found"]} == set(marks())  # the search finds them where they are
