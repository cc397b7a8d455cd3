"""The CPU backend's program of notebook 10's step against the same step compiled for a TPU v5e 2x4
(recorded: namedaxes/recorded/, `python -m tools.compile_for_topology`): the collectives a student reads on
the simulated devices are the ones the chips run. Of the `exercises` kind: it compiles the step (conftest.py)."""

from __future__ import annotations

import json

import jax

from namedaxes import DATA_PARALLEL, FSDP, MODEL_PARALLEL
from namedaxes import transformer as tm
from namedaxes.judging import describe_collective
from tools import compile_for_topology as cft


def test_a_tpu_and_the_cpu_run_the_same_collectives_in_the_2x2x2_step():
    """The CPU backend's program of the same step (compiled here) has the collectives the TPU's has, kind
    by kind and count by count: what a student reads on the simulated devices holds on the chips."""
    mesh = cft.explicit_mesh(jax.devices(), (2, 2, 2), (DATA_PARALLEL, FSDP, MODEL_PARALLEL))
    compiled = cft.compile_step(mesh, tm.RULES, tm.train_step, jax.sharding.PartitionSpec(tm.BATCH))
    cpu = cft.read_facts(compiled.as_text(), dict(zip(mesh.axis_names, (2, 2, 2))))
    record = json.loads((cft.RECORDED / "compile-v5e-2x4.json").read_text(encoding="utf-8"))
    mesh_shape = record["programs"]["train_step_2_2_2"]["mesh"]
    tpu = cft.read_facts(cft.hlo_text(cft.RECORDED, "v5e-2x4", "train_step_2_2_2"), mesh_shape)
    assert cpu["collectives"] == tpu["collectives"]
    gather = describe_collective("all-gather", "", FSDP)
    assert tpu["moved_bytes"][gather] < 0.6 * cpu["moved_bytes"][gather]  # bfloat16 on the TPU
