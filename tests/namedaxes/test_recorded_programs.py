"""The course's HLO readers on programs compiled for real TPU topologies (namedaxes/recorded/, made on the
project's TPU v5e machine by `python -m tools.compile_for_topology`; CI has no TPU, so it reads the recorded
texts). A TPU's program differs from the CPU backend's: asynchronous collective fusions copy one collective
into several computations, ppermutes are `collective-permute-start`/`-done` pairs, gathers run in bfloat16,
and XLA combines all-reduces differently. The readers must still count each collective once, over the
right mesh axis, with the bytes it delivers: what the design of notebook 10's step says it does."""

from __future__ import annotations

import json
import shutil

import pytest

from namedaxes import DATA_PARALLEL, FSDP, MODEL_PARALLEL, STAGES
from namedaxes import pipeline as pp
from namedaxes import transformer as tm
from namedaxes.judging import describe_collective, moved_of
from tools import compile_for_topology as cft

RECORDED = cft.RECORDED
TOPOLOGIES = ("v5e-2x4", "v3-2x2")  # Kaggle's v5e-8 and v3-8: 8 JAX devices each


def _record(label: str) -> dict:
    return json.loads((RECORDED / f"compile-{label}.json").read_text(encoding="utf-8"))


def _programs():
    for label in TOPOLOGIES:
        for program, facts in _record(label)["programs"].items():
            yield pytest.param(label, program, facts, id=f"{label}-{program}")


def _design(mesh: dict) -> set[str]:
    """The kinds of collective notebook 10's step must run on `mesh`, from its design alone."""
    if STAGES in mesh:  # the pipelined step: activations between stages, gradients over the data and stages
        return {describe_collective(*kind) for kind in (("collective-permute", "", STAGES),)} | {
            describe_collective("all-reduce", "add", axis) for axis in (DATA_PARALLEL, STAGES)
        }
    kinds = set()
    if mesh[FSDP] > 1:  # the stored shards gathered before use, their gradients summed
        kinds |= {describe_collective("all-gather", "", FSDP), describe_collective("all-reduce", "add", FSDP)}
    if mesh[DATA_PARALLEL] > 1:
        kinds.add(describe_collective("all-reduce", "add", DATA_PARALLEL))
    if mesh[MODEL_PARALLEL] > 1:  # the two Megatron matmuls' sums, and their gradients' (attention, MLP)
        kinds.add(describe_collective("all-reduce", "add", MODEL_PARALLEL))
    return kinds


@pytest.mark.parametrize(("label", "program", "facts"), list(_programs()))
def test_the_readers_find_on_a_tpu_what_the_design_says(label, program, facts):
    read = cft.read_facts(cft.hlo_text(RECORDED, label, program), facts["mesh"])
    assert set(read["collectives"]) == _design(facts["mesh"])
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
