"""Notebook 11's programs compiled for a TPU v5e 2 x 4 slice without its chips, and what the compiler made.

    python -m tools.compile_anatomy [--out DIR]     (tools.measure_chip --compile calls it on the chip's machine)

The programs: notebook 10's step in float32 (`tm.train_step`) and in mixed precision (the solution of
notebook 11's exercise 1) on three layouts of the eight devices, and the ZeRO stages 0 to 3 of
`namedaxes.zero` for the notebook's MLP (32 x 64) and for a wider one (1024 x 4096), and notebook 11's naive
gradient accumulation (`zr.accumulate_naive`, unrolled, and the same loop as a `lax.scan`) for m = 4 and 8.
For each, the record keeps the optimized per-device HLO text (gzip, `hlo-v5e-2x4/`) and what the course's
readers find in it (`tools.compile_for_topology.read_facts`: collectives, bytes delivered per kind, element
types moved; `namedaxes.judging.hlo.each_collective`: each collective's kind, element types and bytes) with the
compiler's memory (arguments, temporaries; `memory_facts`: the judge's peak, their sum with the results, and the
compiler's own peak, which a deviceless TPU compile reports where its temporaries read 0). Nothing executes.
"""

from __future__ import annotations

import datetime
import gzip
import json
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import optax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from namedaxes import DATA_PARALLEL, FSDP, MODEL_PARALLEL
from namedaxes import transformer as tm
from namedaxes import zero as zr
from namedaxes.judging.hlo import each_collective
from namedaxes.judging.runs import sent_bytes
from tools.compile_for_topology import (
    RECORDED,
    command,
    compile_step,
    compiler_facts,
    explicit_mesh,
    read_facts,
    topology_devices,
)

TOPOLOGY = "v5e:2x4"
STEP_LAYOUTS = ((8, 1, 1), (1, 8, 1), (2, 4, 1))
ZERO_SIZES = {"small": (32, 64, 64), "wide": (1024, 4096, 64)}  # d, hidden, batch
ZERO_STAGES = {
    0: zr.STAGE_SPECS_DP,
    1: {"params": P(), "grads": P(), "opt_state": P(zr.ZERO)},
    2: {"params": P(), "grads": P(zr.ZERO), "opt_state": P(zr.ZERO)},
    3: {"params": P(zr.ZERO), "grads": P(zr.ZERO), "opt_state": P(zr.ZERO)},
}


def mixed_step(params, state, window):
    """Notebook 11's exercise 1, as its solution writes it: bf16 matmuls, float32 parameters, state and loss."""

    def loss_of(p):
        logits = tm.forward(jax.tree.map(lambda a: a.astype(jnp.bfloat16), p), window[:, :-1])
        return tm.cross_entropy(logits.astype(jnp.float32), window[:, 1:])

    loss, grads = jax.value_and_grad(loss_of)(params)
    updates, state = tm.OPTIMIZER.update(grads, state, params)
    return optax.apply_updates(params, updates), state, loss


def _zero_program(devices, stage: int, d: int, hidden: int, batch: int):
    mesh = explicit_mesh(devices, (8,), (zr.ZERO,))
    specs = ZERO_STAGES[stage]
    shapes = {"w1": (d, hidden), "w2": (hidden, d)}
    params = {
        k: jax.ShapeDtypeStruct(s, jnp.float32, sharding=NamedSharding(mesh, specs["params"]))
        for k, s in shapes.items()
    }
    state = jax.eval_shape(zr.OPTIMIZER.init, {k: jax.ShapeDtypeStruct(s, jnp.float32) for k, s in shapes.items()})
    state = jax.tree.map(
        lambda a, s: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=NamedSharding(mesh, s)),
        state,
        zr.state_specs(state, specs["opt_state"]),
    )
    data = jax.ShapeDtypeStruct((batch, d), jnp.float32, sharding=NamedSharding(mesh, P(zr.ZERO)))
    with jax.set_mesh(mesh):
        return jax.jit(zr.zero_step(specs, mesh)).lower(params, state, data, data).compile(), mesh


def _accumulate_scanned(w: dict, xs, ys):
    """`zr.accumulate_naive` as a `lax.scan`: each microbatch's gradient reduced as it is made."""

    def body(total, xy):
        return jax.tree.map(jnp.add, total, jax.grad(zr.mlp_loss)(w, *xy)), None

    total, _ = jax.lax.scan(body, jax.tree.map(jnp.zeros_like, w), (xs, ys))
    return jax.tree.map(lambda g: g / xs.shape[0], total)


def _accumulate_program(devices, accumulate, m: int):
    mesh = explicit_mesh(devices, (8,), (zr.ZERO,))
    shapes = {"w1": (32, 64), "w2": (64, 32)}
    w = {k: jax.ShapeDtypeStruct(s, jnp.float32, sharding=NamedSharding(mesh, P())) for k, s in shapes.items()}
    data = jax.ShapeDtypeStruct((m, 16, 32), jnp.float32, sharding=NamedSharding(mesh, P(None, zr.ZERO)))
    with jax.set_mesh(mesh):
        return jax.jit(accumulate).lower(w, data, data).compile(), mesh


def memory_facts(compiled) -> dict:
    """One device's memory as the compiler plans it: the judge's peak (arguments, results and temporaries, less
    what results alias: `namedaxes.judging.work`), and the compiler's own peak where it reports one."""
    memory = compiled.memory_analysis()
    peak = memory.argument_size_in_bytes + memory.output_size_in_bytes + memory.temp_size_in_bytes
    facts = {"output_bytes": int(memory.output_size_in_bytes), "peak_bytes": int(peak - memory.alias_size_in_bytes)}
    compiler_peak = getattr(memory, "peak_memory_in_bytes", None)
    if compiler_peak is not None:
        facts["compiler_peak_bytes"] = int(compiler_peak)
    return facts


def _recorded_programs(devices: list) -> dict:
    """Every program recorded: name -> (compiled, mesh)."""
    out = {}
    for m in (4, 8):
        out[f"accumulate_naive_{m}"] = _accumulate_program(devices, zr.accumulate_naive, m)
        out[f"accumulate_scan_{m}"] = _accumulate_program(devices, _accumulate_scanned, m)
    for layout in STEP_LAYOUTS:
        mesh = explicit_mesh(devices, layout, (DATA_PARALLEL, FSDP, MODEL_PARALLEL))
        suffix = "_".join(map(str, layout))
        out[f"train_step_f32_{suffix}"] = (compile_step(mesh, tm.RULES, tm.train_step, P(tm.BATCH)), mesh)
        out[f"mixed_step_{suffix}"] = (compile_step(mesh, tm.RULES, mixed_step, P(tm.BATCH)), mesh)
    for size, (d, hidden, batch) in ZERO_SIZES.items():
        for stage in ZERO_STAGES:
            out[f"zero_{stage}_{size}"] = _zero_program(devices, stage, d, hidden, batch)
    return out


def record_anatomy(out: Path = RECORDED, argv: list[str] | None = None) -> dict:
    devices = topology_devices(TOPOLOGY)
    label = TOPOLOGY.replace(":", "-")
    record = {
        "provenance": {
            "topology": TOPOLOGY,
            "device_kind": devices[0].device_kind,
            "devices": len(devices),
            "jax": jax.__version__,
            "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d"),
            "command": command("tools.compile_anatomy", argv or []),
        },
        "programs": {},
    }
    hlo_dir = out / f"hlo-{label}"
    hlo_dir.mkdir(parents=True, exist_ok=True)
    for program, (compiled, mesh) in _recorded_programs(devices).items():
        shape = dict(zip(mesh.axis_names, (int(n) for n in mesh.devices.shape)))
        text = compiled.as_text()
        facts = {"mesh": shape} | read_facts(text, shape) | compiler_facts(compiled) | memory_facts(compiled)
        facts["each_collective"] = each_collective(text, tuple(shape), tuple(shape.values()))
        facts["delivered_bytes"] = sent_bytes(text, len(devices))  # loops counted as they run
        record["programs"][program] = facts
        with gzip.open(hlo_dir / f"{program}.hlo.gz", "wt", encoding="utf-8", compresslevel=9) as fh:
            fh.write(text)
        print(program, json.dumps(facts)[:400], flush=True)
    (out / f"compile-{label}-anatomy.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return record


if __name__ == "__main__":
    args = sys.argv[1:]
    record_anatomy(Path(args[args.index("--out") + 1]) if "--out" in args else RECORDED, args)
