"""What notebooks 10 and 11 state about a TPU, measured on one chip and compiled for a slice, with provenance.

    python -m tools.measure_chip [--out DIR] [--repeats N] [--skip-table] [--skip-compile]

Three records, each one JSON file with a `provenance` block (chip, JAX version, date, command):

- `dispatch-<chip>.json`: the host's cost of one call of a jitted program, as a function of how many arrays
  it takes and returns. A program that adds 1 to each of k small arrays (the device's work is a few
  microseconds) is called three ways: each call waited for (`synced_us`: dispatch, device and the round
  trip), the call's return alone with nothing queued (`call_us`: the host's dispatch), and calls back to
  back, each fed the last one's outputs, only the last waited for (`pipelined_us`: the steady state of a
  training loop, where the host dispatches step t + 1 while the device runs step t).
- `steps-table-<chip>.json` (with `--table`): notebook 10's step for model sizes from d_model 32 to 2048 and batches
  from 8 to 4096 on one chip (`tools.measure_step.measure_step`, each row with the host's dispatch of
  that step, `call_us`).
- with `--compile`, `tools.compile_anatomy`'s record: notebook 11's programs compiled for a TPU v5e 2 x 4 slice
  without its chips (`jax.experimental.topologies`).
- with `--onchip`, `onchip-<chip>.json`: the on-chip memory's (VMEM's) pass rate, an element-wise pass over an array
  that a compiled `fori_loop` keeps on chip (its layout says `S(1)`), bytes read plus written per second.
- with `--passes`, `passes-<chip>.json`: each row of `steps-table-<chip>.json` and `steps-heldout-<chip>.json`
  compiled again, its operations read by `namedaxes.traffic.passes` ([FLOPs, FLOPs as the matrix unit runs them,
  tiled bytes in HBM, tiled bytes on chip] each): the terms of notebook 10's time model.
- with `--profile`, `profile-<chip>.json`: `PROFILED`'s steps under `jax.profiler`, each operation's time on the
  device read from the trace (`jax.profiler.ProfileData`): the device's time per step, and the gathers and scatters
  by token index (the loss's label gather, the embedding's gather and its gradient's scatter-add), which notebook
  10's time model prices per token.

The records of 2026-12-06 for `--onchip`, `--passes`, `--profile` and the held-out rows (`HELD_OUT`, timed by
`tools.measure_step.measure_step`) were made by the same calls run inline on the chip, before these options existed.

Run it where only one program holds the chip.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp

from namedaxes import transformer as tm
from namedaxes.traffic import passes
from tools.measure_step import RECORDED, compiled_step, measure_step, provenance

ARGUMENT_COUNTS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
TABLE = [  # (name, config, batches): d_model 32 to 2048, batches 8 to 4096, sizes the notebook states
    ("d32", tm.Config(), (8, 16, 512, 4096)),
    ("d64", tm.Config(d_model=64, heads=4, layers=2, seq=64), (64, 1024)),
    ("d128", tm.Config(d_model=128, heads=4, layers=4, seq=128), (8, 256)),
    ("d256", tm.Config(d_model=256, heads=4, layers=4, seq=128), (8, 32, 128)),
    ("d512", tm.Config(d_model=512, heads=8, layers=4, seq=256), (16, 64)),
    ("d1024", tm.Config(d_model=1024, heads=8, layers=4, seq=512), (8, 32)),
    ("d2048", tm.Config(d_model=2048, heads=16, layers=4, seq=512), (8, 16)),
]

HELD_OUT = [  # sizes and batches the table does not have, to check notebook 10's time model on
    ("d32s64", tm.Config(d_model=32, heads=4, layers=2, seq=64), (1024,)),
    ("d32s128", tm.Config(d_model=32, heads=2, layers=2, seq=128), (256,)),
    ("d64s32", tm.Config(d_model=64, heads=4, layers=2, seq=32), (2048,)),
    ("d64s128", tm.Config(d_model=64, heads=2, layers=3, seq=128), (256,)),
    ("d96s64", tm.Config(d_model=96, heads=4, layers=2, seq=64), (512,)),
    ("d128s64", tm.Config(d_model=128, heads=8, layers=2, seq=64), (1024,)),
    ("d128s256", tm.Config(d_model=128, heads=4, layers=2, seq=256), (64,)),
    ("d192s128", tm.Config(d_model=192, heads=4, layers=3, seq=128), (128,)),
    ("d256s64", tm.Config(d_model=256, heads=8, layers=2, seq=64), (512,)),
    ("d48s48", tm.Config(d_model=48, heads=4, layers=2, seq=48), (2048,)),
    ("d384s192", tm.Config(d_model=384, heads=6, layers=3, seq=192), (64,)),
    ("d32s32", tm.Config(), (128, 2048)),
]
ONCHIP_MIB = (0.004, 1, 4, 16, 64)
PROFILED = [  # the three steps the time model missed before it priced indexing, and three it did not
    ("d32", tm.Config(), (512, 16)),
    ("d32s32", tm.Config(), (2048,)),  # the held-out name of the same model
    ("d32s128", tm.Config(d_model=32, heads=2, layers=2, seq=128), (256,)),
    ("d64s128", tm.Config(d_model=64, heads=2, layers=3, seq=128), (256,)),
    ("d256", tm.Config(d_model=256, heads=4, layers=4, seq=128), (32,)),
]
# the operations that gather and scatter by token index, as XLA for TPU names them in the step's entry computation
BY_INDEX = {
    "label_gather_us": "gather_fusion.1",
    "embedding_scatter_us": "scatter_custom_fusion",
    "embedding_gather_us": "gather_fusion",
}


def _median_us(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e6)
    return statistics.median(times)


def call_figures(compiled, args: tuple, repeats: int) -> dict:
    """A compiled program's call three ways (the module's docstring): synced, the call alone, pipelined.
    `compiled(*args)` must return outputs that can be its next arguments (same structure)."""
    jax.block_until_ready(compiled(*args))

    def synced():
        jax.block_until_ready(compiled(*args))

    def call_alone():  # the time the call takes to return, nothing else queued
        return compiled(*args)

    calls = []
    for _ in range(repeats):
        start = time.perf_counter()
        out = call_alone()
        calls.append((time.perf_counter() - start) * 1e6)
        jax.block_until_ready(out)
    rounds = []
    for _ in range(3):
        current = args
        start = time.perf_counter()
        for _ in range(repeats):
            current = compiled(*current)
        jax.block_until_ready(current)
        rounds.append((time.perf_counter() - start) * 1e6 / repeats)
    return {
        "synced_us": _median_us(synced, repeats),
        "call_us": statistics.median(calls),
        "pipelined_us": statistics.median(rounds),
    }


def dispatch_rows(repeats: int) -> list[dict]:
    """The host's cost of one call against the number of arrays it takes (and returns)."""
    rows = []
    for k in ARGUMENT_COUNTS:
        args = tuple(jnp.full((8, 128), float(i), jnp.float32) for i in range(k))
        compiled = jax.jit(lambda *xs: tuple(x + 1 for x in xs)).lower(*args).compile()
        rows.append({"arguments": k, **call_figures(compiled, args, repeats)})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def step_rows(repeats: int, out: Path, prov: dict) -> list[dict]:
    """Notebook 10's step on one chip for `TABLE`'s sizes (each row with its dispatch, `call_us`), the record
    written again after each row."""
    rows = []
    for name, config, batches in TABLE:
        for batch in batches:
            rows.append(measure_step(name, config, batch, (1, 1, 1), repeats))
            print(json.dumps(rows[-1]), flush=True)
            out.write_text(json.dumps({"provenance": prov, "rows": rows}, indent=1) + "\n", encoding="utf-8")
    return rows


def _best_us(compiled, x, calls: int = 5) -> float:
    """The best wall time of `calls` calls of `compiled(x)`, each waited for."""
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        jax.block_until_ready(compiled(x))
        times.append((time.perf_counter() - start) * 1e6)
    return min(times)


def onchip_rows(iterations: int = 2000) -> list[dict]:
    """The on-chip memory's pass rate: `x * 1.0001 + 1e-7` over x of `mib` MiB in a compiled `fori_loop` of
    `iterations` steps, the best of 5 calls; the layouts the loop gives x (`S(1)`: on chip)."""
    rows = []
    for mib in ONCHIP_MIB:
        n = int(mib * (1 << 20) / 4) // 1024 * 1024 or 1024
        x = jnp.ones((n // 128, 128), jnp.float32)
        step = jax.jit(lambda y: jax.lax.fori_loop(0, iterations, lambda i, z: z * 1.0001 + 1e-7, y))
        compiled = step.lower(x).compile()
        layouts = sorted(set(re.findall(rf"f32\[{n // 128},128\]\{{[^}}]*\}}", compiled.as_text())))
        jax.block_until_ready(compiled(x))
        per = _best_us(compiled, x) / iterations
        rows.append({"mib": mib, "bytes": 4 * n, "iter_us": per, "gbytes_per_s_rw": 8 * n / per / 1e3})
        rows[-1]["layouts"] = layouts[:4]
    return rows


def passes_of(sizes: list) -> dict:
    """Each (name, config, batches) step compiled on this chip, its operations read by `namedaxes.traffic`."""
    found = {}
    for name, config, batches in sizes:
        for batch in batches:
            compiled, _, _ = compiled_step(config, batch, (1, 1, 1))
            ops = passes(compiled.as_text())
            found[f"{name}-b{batch}"] = [[round(p.flops), round(p.mxu_flops), p.tiled, p.on_chip] for p in ops]
    return found


def _profiled_ops(compiled, args, steps: int, trace_dir: str) -> tuple[list[float], dict]:
    """`steps` steps of `compiled` back to back under `jax.profiler.trace`: each step's time on the device (its
    module's span) and each operation's median time (µs), read from the trace's TPU plane."""
    params, state, window = args
    with jax.profiler.trace(trace_dir):
        for _ in range(steps):
            params, state, loss = compiled(params, state, window)
        jax.block_until_ready(loss)
    trace = jax.profiler.ProfileData.from_file(str(next(Path(trace_dir).rglob("*.xplane.pb"))))
    lines = {ln.name: ln for plane in trace.planes if "TPU:0" in plane.name for ln in plane.lines}
    ops: dict[str, list[float]] = {}
    for event in lines["XLA Ops"].events:  # an event's name is its HLO line: "%name = type op(...)"
        ops.setdefault(event.name.split(" = ")[0].lstrip("%"), []).append(event.duration_ns / 1e3)
    return [e.duration_ns / 1e3 for e in lines["XLA Modules"].events], {k: statistics.median(v) for k, v in ops.items()}


def profile_rows(trace_root: str, steps: int = 5) -> dict:
    """`PROFILED`'s steps on this chip: the device's time per step, its operations' and those by index."""
    rows = {}
    for name, config, batches in PROFILED:
        for batch in batches:
            compiled, args, _ = compiled_step(config, batch, (1, 1, 1))
            jax.block_until_ready(compiled(*args))
            modules, ops = _profiled_ops(compiled, args, steps, f"{trace_root}/{name}-{batch}")
            longest = sorted(ops.items(), key=lambda item: -item[1])[:8]
            rows[f"{name}-b{batch}"] = {
                "batch": batch,
                "seq": config.seq,
                "tokens": batch * config.seq,
                "device_us": round(statistics.median(modules), 1),
                "operations": len(ops),
                "operations_us": round(sum(ops.values()), 1),
                **{key: round(ops.get(op, 0.0), 2) for key, op in BY_INDEX.items()},
                "longest": [[op, round(us, 2)] for op, us in longest],
            }
    return rows


def _write(path: Path, record: dict, compact: bool = False) -> None:
    text = json.dumps(record, separators=(",", ":")) if compact else json.dumps(record, indent=1)
    path.write_text(text + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=RECORDED)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--table", action="store_true", help="also notebook 10's step at TABLE's sizes")
    parser.add_argument("--compile", action="store_true", help="also notebook 11's programs for v5e 2x4")
    parser.add_argument("--onchip", action="store_true", help="also the on-chip memory's pass rate")
    parser.add_argument("--heldout", action="store_true", help="also the step at HELD_OUT's sizes")
    parser.add_argument("--passes", action="store_true", help="also every table row's compiled operations")
    parser.add_argument("--profile", type=str, metavar="TRACE_DIR", help="also PROFILED's steps, traced in TRACE_DIR")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    prov = provenance(argv) | {"command": "python -m tools.measure_chip " + " ".join(argv)}
    chip = "".join(c if c.isalnum() else "-" for c in prov["chip"].lower()).strip("-")
    record = {"provenance": prov, "rows": dispatch_rows(args.repeats)}
    (args.out / f"dispatch-{chip}.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    if args.compile:
        from tools.compile_anatomy import record_anatomy

        record_anatomy(args.out, argv)
    if args.table:
        step_rows(args.repeats, args.out / f"steps-table-{chip}.json", prov)
    if args.onchip:
        _write(args.out / f"onchip-{chip}.json", {"provenance": prov, "rows": onchip_rows()})
    if args.heldout:
        rows = [measure_step(n, c, b, (1, 1, 1), args.repeats) for n, c, batches in HELD_OUT for b in batches]
        _write(args.out / f"steps-heldout-{chip}.json", {"provenance": prov, "rows": rows})
    if args.passes:
        programs = passes_of(TABLE + HELD_OUT)
        _write(args.out / f"passes-{chip}.json", {"provenance": prov, "programs": programs}, compact=True)
    if args.profile:
        _write(args.out / f"profile-{chip}.json", {"provenance": prov, "rows": profile_rows(args.profile)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
