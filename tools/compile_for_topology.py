"""Compile the course's programs for a TPU topology without its chips, and record what the compiler made.

    python -m tools.compile_for_topology [--topology v5e:2x4] [--out DIR]
    python -m tools.compile_for_topology --attached      # the devices JAX has (a smoke run on 8 CPU devices)

A deviceless ahead-of-time compile (`jax.experimental.topologies`): the programs are lowered and compiled for
the topology's devices, and nothing executes, so one chip (or none, where libtpu is installed) compiles for
eight. The programs are notebook 10's training step on every layout of the eight devices and its pipelined
step (2 stages x 4 data). For each, the record keeps the optimized per-device HLO text (gzip) and a summary:
the collectives as the course's own reader finds them (`namedaxes.judging.hlo_collectives`), the compiled
FLOPs and memory, and the operations' count. CI has no TPU: the course's tests read these recorded programs
to check that the judges' HLO readers read a TPU's programs as they read the CPU backend's, and notebook 10
shows where the two backends' programs differ.

Output: DIR/compile-<topology>.json (the summary with its provenance) and DIR/hlo-<topology>/<program>.hlo.gz.
"""

from __future__ import annotations

import argparse
import datetime
import gzip
import json
import re
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from namedaxes import DATA_PARALLEL, FSDP, MODEL_PARALLEL, STAGES
from namedaxes import pipeline as pp
from namedaxes import transformer as tm
from namedaxes.judging import describe_collective, group_axes, hlo_collectives, largest_array, moved_of
from tools.measure_step import entry_ops, layouts

REPO = Path(__file__).resolve().parents[1]
RECORDED = REPO / "namedaxes" / "recorded"
BATCH = 16  # notebook 10's batch


def topology_devices(name: str | None) -> list:
    """The topology's compile-only devices, or (None) the devices JAX has."""
    if name is None:
        return list(jax.devices())
    from jax.experimental import topologies

    return list(topologies.get_topology_desc(name, "tpu").devices)


def explicit_mesh(devices: list, shape: tuple, names: tuple) -> Mesh:
    grid = np.array(devices[: int(np.prod(shape))], dtype=object).reshape(shape)
    return Mesh(grid, names, axis_types=(AxisType.Explicit,) * len(names))


def _abstract(shapes: dict, mesh: Mesh, rules: dict) -> dict:
    return {
        name: jax.ShapeDtypeStruct(tuple(shape), jnp.float32, sharding=NamedSharding(mesh, rules[name]))
        for name, shape in shapes.items()
    }


def _abstract_state(params: dict, mesh: Mesh, rules: dict):
    """Adam's state as abstract values: each moment laid out like its parameter, the count replicated."""
    state = jax.eval_shape(tm.OPTIMIZER.init, {k: jax.ShapeDtypeStruct(v.shape, v.dtype) for k, v in params.items()})

    def placed(path, leaf):
        keys = [getattr(p, "key", None) for p in path]
        name = next((k for k in keys if k in rules), None)
        spec = rules[name] if name is not None and len(leaf.shape) else P()
        return jax.ShapeDtypeStruct(leaf.shape, leaf.dtype, sharding=NamedSharding(mesh, spec))

    return jax.tree_util.tree_map_with_path(placed, state)


def compile_step(mesh: Mesh, rules: dict, step, batch_spec) -> object:
    config = tm.Config()
    params = _abstract(tm.shapes(config), mesh, rules)
    window = jax.ShapeDtypeStruct((BATCH, config.seq + 1), jnp.int32, sharding=NamedSharding(mesh, batch_spec))
    with jax.set_mesh(mesh):
        state = _abstract_state(params, mesh, rules)
        return jax.jit(step).lower(params, state, window).compile()


def programs(devices: list) -> dict:
    """Every program recorded: name -> (compiled, mesh)."""
    out = {}
    for layout in layouts(tm.Config(), BATCH, 8):
        mesh = explicit_mesh(devices, layout, (DATA_PARALLEL, FSDP, MODEL_PARALLEL))
        out["train_step_{}_{}_{}".format(*layout)] = (compile_step(mesh, tm.RULES, tm.train_step, P(tm.BATCH)), mesh)
    mesh = explicit_mesh(devices, (2, 4, 1, 1), (STAGES, DATA_PARALLEL, FSDP, MODEL_PARALLEL))
    out["pipeline_step_2_4_1_1"] = (compile_step(mesh, pp.STAGE_RULES, pp.train_step, P(tm.BATCH)), mesh)
    return out


def _moved_dtypes(text: str) -> list[str]:
    """The element types the collectives' results hold (a TPU gathers float32 weights in bfloat16)."""
    found = []
    for line in text.splitlines():
        m = re.search(
            r"=\s*\(?([a-z]+\d*)\[.*?\s(all-gather|all-reduce|reduce-scatter|collective-permute|all-to-all)", line
        )
        if m:
            found.append(m.group(1))
    return found


def read_facts(text: str, mesh_shape: dict) -> dict:
    """What the course's HLO readers find in a program's text: its collectives (how many, over which axis),
    the bytes each kind delivers to a device, the largest array, the element types the collectives move."""
    names, sizes = tuple(mesh_shape), tuple(mesh_shape.values())
    n_devices = int(np.prod(sizes))
    counts: dict[str, int] = {}
    for op, reducer, groups in hlo_collectives(text, n_devices):
        for axis in group_axes(groups, names, sizes):
            kind = describe_collective(op, reducer, axis)
            counts[kind] = counts.get(kind, 0) + 1
    return {
        "collectives": dict(sorted(counts.items())),
        "moved_bytes": dict(moved_of(text, names, sizes, n_devices)),
        "largest_bytes": largest_array(text),
        "dtypes_moved": sorted(set(_moved_dtypes(text))),
    }


def compiler_facts(compiled) -> dict:
    """What the compiler says of the program: FLOPs, argument and temporary bytes, operations."""
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, (list, tuple)) else cost
    memory = compiled.memory_analysis()
    return {
        "flops": float(cost.get("flops", 0.0)),
        "argument_bytes": int(memory.argument_size_in_bytes),
        "temp_bytes": int(memory.temp_size_in_bytes),
        "entry_ops": entry_ops(compiled.as_text()),
    }


def hlo_text(folder: Path, label: str, program: str) -> str:
    with gzip.open(folder / f"hlo-{label}" / f"{program}.hlo.gz", "rt", encoding="utf-8") as fh:
        return fh.read()


def resummarize(folder: Path) -> int:
    """Read every recorded program's text again with today's readers: the record's reader facts follow the
    readers (the compiler's facts stay as recorded). `--check`: fail instead when they differ."""
    stale = 0
    for path in sorted(folder.glob("compile-*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        label = path.stem.removeprefix("compile-")
        for program, facts in record["programs"].items():
            fresh = facts | read_facts(hlo_text(folder, label, program), facts["mesh"])
            stale += fresh != facts
            record["programs"][program] = fresh
        path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return stale


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--topology", default="v5e:2x4", help="a TPU topology name (jax.experimental.topologies)")
    parser.add_argument("--attached", action="store_true", help="compile for the devices JAX has instead")
    parser.add_argument("--out", type=Path, default=RECORDED, help="the folder the record goes to")
    parser.add_argument("--resummarize", action="store_true", help="only read the recorded programs again (no compile)")
    args = parser.parse_args(argv)
    if args.resummarize:
        print(f"{resummarize(args.out)} program(s) read differently now")
        return 0
    name = None if args.attached else args.topology
    devices = topology_devices(name)
    label = (name or f"attached-{devices[0].platform}").replace(":", "-")
    record = {
        "provenance": {
            "topology": name or "attached",
            "device_kind": devices[0].device_kind,
            "devices": len(devices),
            "jax": jax.__version__,
            "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d"),
            "command": "python -m tools.compile_for_topology " + " ".join(argv),
        },
        "programs": {},
    }
    hlo_dir = args.out / f"hlo-{label}"
    hlo_dir.mkdir(parents=True, exist_ok=True)
    for program, (compiled, mesh) in programs(devices).items():
        shape = dict(zip(mesh.axis_names, (int(n) for n in mesh.devices.shape)))
        text = compiled.as_text()
        record["programs"][program] = {"mesh": shape} | read_facts(text, shape) | compiler_facts(compiled)
        with gzip.open(hlo_dir / f"{program}.hlo.gz", "wt", encoding="utf-8", compresslevel=9) as fh:
            fh.write(text)
        print(program, json.dumps(record["programs"][program])[:300], flush=True)
    (args.out / f"compile-{label}.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
