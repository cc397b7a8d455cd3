"""Compile the course's programs for a TPU topology without its chips, and record what the compiler made.

    python -m tools.compile_for_topology [--topology v5e:2x4 ...] [--out DIR]
    python -m tools.compile_for_topology --attached      # the devices JAX has (a smoke run on 8 CPU devices)
    python -m tools.compile_for_topology --references build/topology-exports --topology v5e:2x4 --topology v3:2x2
    python -m tools.compile_for_topology --resummarize   # read the recorded texts again with today's readers

A deviceless ahead-of-time compile (`jax.experimental.topologies`): the programs are lowered and compiled for
the topology's devices, and nothing executes, so one chip (or none, where libtpu is installed) compiles for
eight. The programs are notebook 10's training step on every layout of the eight devices and its pipelined
step (2 stages x 4 data). For each, the record keeps the optimized per-device HLO text (gzip) and a summary:
the collectives as the course's own reader finds them (`namedaxes.judging.hlo_collectives`), the compiled
FLOPs and memory, and the operations' count. CI has no TPU: the course's tests read these recorded programs
to check that the judges' HLO readers read a TPU's programs as they read the CPU backend's, and notebook 10
shows where the two backends' programs differ.

`--references DIR`: instead, every notebook's reference programs, as tools/export_references.py exported them
for a TPU into DIR, each compiled the way the grader compiles a reference (`namedaxes.judging.compile_exported`,
the judge's one compile: the program's mesh over the topology's devices, fed the reference's input layouts, with
`COMPILER_OPTIONS` where the backend takes them) and read by the course's readers (`reference_facts`); with
`--attached`, the grader's own CPU exports on the 8 CPU devices, as the grader's scorer sets them up. It needs
JAX, NumPy and flatbuffers only (no Optax), and `--jobs N` compiles N programs at a time.

Output: DIR/compile-<topology>.json (the summary with its provenance) and DIR/hlo-<topology>/<program>.hlo.gz;
with `--references`, DIR/references-<topology>.json and DIR/references-hlo-<topology>.json.xz (every text), DIR
being solutions/recorded/ unless `--out` says otherwise: the reference programs show the solutions' methods, so
they live with the solutions, out of the `namedaxes` package a student and a graded kernel can read.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import gzip
import json
import lzma
import re
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from namedaxes import DATA_PARALLEL, FSDP, MODEL_PARALLEL, STAGES
from namedaxes.judging import (
    COMPILER_OPTIONS,
    collective_sends,
    compile_exported,
    describe_collective,
    device_mesh,
    group_axes,
    hlo_collectives,
    largest_array,
    moved_of,
    work_of,
)
from namedaxes.judging.runs import sent_bytes  # the readers of `Work.sent_bytes` and `Work.overlap`
from namedaxes.judging.work import overlap_of

REPO = Path(__file__).resolve().parents[1]
RECORDED = REPO / "namedaxes" / "recorded"  # the course's own programs: the package (and its students) read these
# every exercise's reference programs (HLO texts and the facts read from them) show a solution's method: they live
# where the solutions do, closed to students on the hub (hub/layout.py) and hidden from graded kernels
REFERENCES = REPO / "solutions" / "recorded"
BATCH = 16  # notebook 10's batch


def command(module: str, argv: list[str]) -> str:
    """The command line a record says it was made by, with no path of the machine that made it: a folder in the
    repository relative to it, one outside as its option's name (`--out /tmp/x` is `--out OUT`)."""
    words = []
    for i, word in enumerate(argv):
        flag, path = argv[i - 1] if i else "", Path(word)
        if flag.startswith("--") and path.is_absolute():
            word = str(path.relative_to(REPO)) if path.is_relative_to(REPO) else flag[2:].upper()
        words.append(word)
    return " ".join(["python -m", module, *words])


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
    from namedaxes import transformer as tm

    state = jax.eval_shape(tm.OPTIMIZER.init, {k: jax.ShapeDtypeStruct(v.shape, v.dtype) for k, v in params.items()})

    def placed(path, leaf):
        keys = [getattr(p, "key", None) for p in path]
        name = next((k for k in keys if k in rules), None)
        spec = rules[name] if name is not None and len(leaf.shape) else P()
        return jax.ShapeDtypeStruct(leaf.shape, leaf.dtype, sharding=NamedSharding(mesh, spec))

    return jax.tree_util.tree_map_with_path(placed, state)


def compile_step(mesh: Mesh, rules: dict, step, batch_spec) -> object:
    from namedaxes import transformer as tm

    config = tm.Config()
    params = _abstract(tm.shapes(config), mesh, rules)
    window = jax.ShapeDtypeStruct((BATCH, config.seq + 1), jnp.int32, sharding=NamedSharding(mesh, batch_spec))
    with jax.set_mesh(mesh):
        state = _abstract_state(params, mesh, rules)
        return jax.jit(step).lower(params, state, window).compile()


def _recorded_programs(devices: list) -> dict:
    """Every program recorded: name -> (compiled, mesh)."""
    from namedaxes import pipeline as pp
    from namedaxes import transformer as tm
    from tools.measure_step import layouts

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


# ---------------------------------------------------------------- every notebook's reference programs
REFERENCE_FACTS = ("collectives", "moved_bytes", "largest_bytes", "dtypes_moved", "sends", "sent_bytes", "overlap")


def reference_facts(text: str, mesh_shape: dict) -> dict:
    """What the course's readers find in the optimized HLO of a reference program (`read_facts`), and what the
    judges read of its schedule: each kind of collective's runs and largest instance (`collective_sends`), the
    bytes all its collectives deliver in one call, loops counted as often as they run (`Work.sent_bytes`), and the
    matmuls scheduled before the last collective-permute (`Work.overlap`, the collective matmul's judge)."""
    names, sizes = tuple(mesh_shape), tuple(mesh_shape.values())
    n_devices = int(np.prod(sizes))
    sends = collective_sends(text, names, sizes, n_devices)
    return read_facts(text, mesh_shape) | {
        "sends": {kind: [s.runs, s.largest] for kind, s in sends.items()},
        "sent_bytes": sent_bytes(text, n_devices),
        "overlap": overlap_of(text),
    }


def reading_mesh(program) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """The mesh the grader reads a reference program's collectives on (`autograder.judge.programs.Judge`):
    `namedaxes.judging.mesh_of`, its shardings' mesh, else its module's, else one axis over its devices."""
    names, sizes, _ = program.run_mesh
    return tuple(names), tuple(int(n) for n in sizes)


def program_record(program, compiled, text: str, seconds: float) -> dict:
    """One compiled reference program's record: its reading mesh, what the readers find in its text
    (`reference_facts`), the compiler's FLOPs and peak bytes (`work_of`) and the compile's seconds."""
    names, sizes = reading_mesh(program)
    work = work_of(compiled, names, sizes, program.nr_devices, text=text)
    mesh = dict(zip(names, sizes))
    return {"mesh": mesh, **reference_facts(text, mesh), "flops": work.flops, "peak_bytes": work.peak_bytes} | {
        "compile_s": round(seconds, 3)
    }


def write_references(folder: Path, label: str, record: dict, texts: dict[str, str]) -> None:
    """folder/references-<label>.json (the record) and folder/references-hlo-<label>.json.xz (the texts)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"references-{label}.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    body = json.dumps(dict(sorted(texts.items())), indent=0).encode()
    (folder / f"references-hlo-{label}.json.xz").write_bytes(lzma.compress(body, preset=9 | lzma.PRESET_EXTREME))


def reference_texts(folder: Path, label: str) -> dict[str, str]:
    """The optimized HLO texts of references-<label>.json's programs (program id -> text)."""
    return json.loads(lzma.decompress((folder / f"references-hlo-{label}.json.xz").read_bytes()))


def compile_references(
    exports: Path, devices: list, options: dict | None, jobs: int = 1
) -> tuple[dict, dict[str, str]]:
    """Every exported reference program of `exports` (tools/export_references.py) compiled as the grader compiles
    it, for `devices` (nothing runs), `jobs` at a time (threads: XLA compiles without the GIL):
    (program id -> its record or {"error": ...}, program id -> HLO text)."""
    manifest = json.loads((exports / "manifest.json").read_text(encoding="utf-8"))
    platform = devices[0].platform  # each program's export for it: the TPU's, or the grader's own (--attached)
    with np.load(exports / "exports.npz", allow_pickle=False) as blobs:
        exported = {pid: blobs[f"{platform}/{pid}"].tobytes() for pid in manifest["programs"]}
    with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as pool:
        done = dict(zip(exported, pool.map(lambda blob: _compile_one(blob, devices, options), exported.values())))
    programs = {pid: record for pid, (record, _) in done.items()}
    texts = {pid: text for pid, (_, text) in done.items() if text is not None}
    return programs, texts


def _compile_one(blob: bytes, devices: list, options: dict | None) -> tuple[dict, str | None]:
    """One exported reference program compiled for `devices`: (its record, its HLO text), or ({"error"}, None)."""
    from autograder.judge import read_program

    t0 = time.monotonic()
    try:
        program = read_program(blob)
        mesh = device_mesh(program.exp, devices)
        compiled, _, _ = compile_exported(program.exp, program.entry_layouts, mesh, options)
        text = compiled.as_text()
    except Exception as err:  # noqa: BLE001 - recorded: the test says which program did not compile
        return {"error": f"{type(err).__name__}: {str(err)[:400]}"}, None
    return program_record(program, compiled, text, time.monotonic() - t0), text


def _compiler_options(devices: list) -> tuple[dict | None, str]:
    """`COMPILER_OPTIONS` (None) if this backend's compiler takes them, else none ({}); and which were used.
    Asked of a one-device program compiled (never run) with them and, if that fails, without them."""
    # one device as a one-device mesh: SingleDeviceSharding is deprecated in jax 0.12.1, NamedSharding is on every line
    one_device = NamedSharding(Mesh(np.array(devices[:1]), ("one",)), P())
    probe = jax.jit(lambda x: x + 1).lower(jax.ShapeDtypeStruct((8,), jnp.float32, sharding=one_device))
    try:
        probe.compile(dict(COMPILER_OPTIONS))
        return None, "namedaxes.judging.COMPILER_OPTIONS"
    except Exception as refused:  # noqa: BLE001 - a backend that refuses them compiles with its defaults
        why = f"{type(refused).__name__}: {str(refused)[:200]}"
    try:
        probe.compile()
    except Exception:  # noqa: BLE001 - the probe fails either way: the options are not the reason
        return None, f"namedaxes.judging.COMPILER_OPTIONS (a probe compile failed with and without them: {why})"
    return {}, f"the backend's defaults (it refused COMPILER_OPTIONS: {why})"


def references_main(exports: Path, topologies: list, out: Path, argv: list[str], jobs: int = 1) -> int:
    """`--references`: compile the exported reference programs for each topology; write its record and texts."""
    exported = json.loads((exports / "manifest.json").read_text(encoding="utf-8"))["provenance"]
    if None in topologies:
        from namedaxes.devices import setup_devices

        # --attached: the grader's own 8 CPU devices, as its scorer sets them up (the grader's XLA flags set
        # only its threads, not what it compiles: left out, so this needs nothing the TPU's run does not)
        setup_devices(quiet=True)
    for name in topologies:
        devices = topology_devices(name)
        label = (name or f"attached-{devices[0].platform}").replace(":", "-")
        options, used = _compiler_options(devices)
        t0 = time.monotonic()
        programs, texts = compile_references(exports, devices, options, jobs)
        for pid, facts in programs.items():
            print(pid, facts.get("error") or f"{facts['compile_s']:.2f} s {json.dumps(facts['collectives'])}")
        provenance = {
            "topology": name or "attached",
            "platform": devices[0].platform,
            "device_kind": devices[0].device_kind,
            "devices": len(devices),
            "jax": jax.__version__,
            "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d"),
            "command": command("tools.compile_for_topology", argv),
            "compiler_options": used,
            "compile_s": round(time.monotonic() - t0, 1),
            "jobs": jobs,
            "exported": {k: exported[k] for k in ("jax", "date", "export_platforms", "export_precision")},
        }
        write_references(out, label, {"provenance": provenance, "programs": programs}, texts)
        failed = sum("error" in p for p in programs.values())
        print(f"{label}: {len(programs)} programs, {failed} not compiled, {provenance['compile_s']} s", flush=True)
    return 0


def compiler_facts(compiled) -> dict:
    """What the compiler says of the program: FLOPs, argument and temporary bytes, operations."""
    from tools.measure_step import entry_ops

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
    readers (the compiler's facts stay as recorded). The count of programs read differently."""
    stale = 0
    for path in sorted(folder.glob("compile-*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        # notebook 11's record (tools/compile_anatomy.py) keeps its texts beside the steps' of its topology
        label = path.stem.removeprefix("compile-").removesuffix("-anatomy")
        for program, facts in record["programs"].items():
            fresh = facts | read_facts(hlo_text(folder, label, program), facts["mesh"])
            stale += fresh != facts
            record["programs"][program] = fresh
        path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    for path in sorted(folder.glob("references-*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        texts = reference_texts(folder, path.stem.removeprefix("references-"))
        for pid, facts in record["programs"].items():
            if "error" in facts:
                continue
            fresh = facts | reference_facts(texts[pid], facts["mesh"])
            stale += fresh != facts
            record["programs"][pid] = fresh
        path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return stale


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--topology", action="append", help="a TPU topology name (jax.experimental.topologies); repeat for more"
    )
    parser.add_argument("--attached", action="store_true", help="compile for the devices JAX has instead")
    parser.add_argument(
        "--out", type=Path, help="the folder the record goes to (default: namedaxes/recorded, solutions/recorded)"
    )
    parser.add_argument("--resummarize", action="store_true", help="only read the recorded programs again (no compile)")
    parser.add_argument(
        "--references", type=Path, help="compile the reference programs exported here (tools/export_references.py)"
    )
    parser.add_argument("--jobs", type=int, default=1, help="--references: programs compiled at a time (threads)")
    args = parser.parse_args(argv)
    if args.resummarize:
        stale = sum(resummarize(folder) for folder in ([args.out] if args.out else [RECORDED, REFERENCES]))
        print(f"{stale} program(s) read differently now")
        return 0
    names = [None] if args.attached else args.topology or ["v5e:2x4"]
    if args.references is not None:
        return references_main(args.references, names, args.out or REFERENCES, argv, args.jobs)
    for name in names:
        record_steps(name, args.out or RECORDED, argv)
    return 0


def record_steps(name: str | None, out: Path, argv: list[str]) -> None:
    """Notebook 10's steps compiled for the topology `name` (None: the devices JAX has), recorded in `out`."""
    devices = topology_devices(name)
    label = (name or f"attached-{devices[0].platform}").replace(":", "-")
    record = {
        "provenance": {
            "topology": name or "attached",
            "device_kind": devices[0].device_kind,
            "devices": len(devices),
            "jax": jax.__version__,
            "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d"),
            "command": command("tools.compile_for_topology", argv),
        },
        "programs": {},
    }
    hlo_dir = out / f"hlo-{label}"
    hlo_dir.mkdir(parents=True, exist_ok=True)
    for program, (compiled, mesh) in _recorded_programs(devices).items():
        shape = dict(zip(mesh.axis_names, (int(n) for n in mesh.devices.shape)))
        text = compiled.as_text()
        record["programs"][program] = {"mesh": shape} | read_facts(text, shape) | compiler_facts(compiled)
        with gzip.open(hlo_dir / f"{program}.hlo.gz", "wt", encoding="utf-8", compresslevel=9) as fh:
            fh.write(text)
        print(program, json.dumps(record["programs"][program])[:300], flush=True)
    (out / f"compile-{label}.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
