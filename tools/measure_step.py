"""Measure notebook 10's training step on the accelerator this machine has, and record it with its provenance.

    python -m tools.measure_step [--out FILE] [--repeats N] [--quick]

What it measures, on whatever JAX finds (a TPU, a GPU, or the CPU when nothing else is there):

- **The chip's own roofs**, so that the time model's terms are read off this chip and not off a data sheet:
  a bfloat16 and a float32 matrix product (FLOP/s), an element-wise pass over a large array (HBM bytes
  read plus written per second), and a chain of dependent small matrix products timed per product
  (`small_op_us`, kept for the record's history: XLA fuses such a chain, 200 products into 102 operations,
  so it is no operation's cost).
- **The course's step** (`namedaxes.transformer.train_step`, Optax's Adam included) for several model sizes,
  from the notebook's own `Config()` up to a configuration of over 50 M parameters, at several batches, on
  every layout (data, fsdp, tensor) whose product is the number of devices present and which the model's
  sizes divide. Each row gives the step's time in training's steady state (`--repeats` steps back to back,
  each fed the last one's parameters, only the last waited for: `step_us`), and the median and best time of a
  step waited for on its own (`synced_us`, which adds the host's round trip), the compiled program's FLOPs
  and "bytes accessed" (`cost_analysis`), its memory (`memory_analysis`: arguments, outputs, temporaries),
  the number of operations in its entry computation, the host's dispatch of one call (`call_us`: the call's
  return, nothing queued) and the arrays the call takes, and the compile time. A small step's time is the
  host's dispatch, not its operations (a profile on a v5e ran the notebook's 178 in about 40 µs):
  `tools.measure_chip` measures dispatch against the arrays a call takes.

The record is one JSON file (default `namedaxes/recorded/steps-<chip>.json`): a `provenance` block (chip,
platform, device count, JAX and jaxlib versions, the date, the command line) and the rows. The notebook and
the course's tests read the recorded file; nothing in CI measures, since CI has no accelerator.

Run it where only one program holds the chip (a TPU admits one process at a time).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import math
import statistics
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from namedaxes import transformer as tm

REPO = Path(__file__).resolve().parents[1]
RECORDED = REPO / "namedaxes" / "recorded"

# The model sizes measured, from the notebook's own up to one of about 51 M parameters, each with its batches.
SIZES = {
    "notebook": (tm.Config(), (16, 512, 4096)),
    "d256": (tm.Config(d_model=256, heads=4, layers=4, seq=128), (8, 32, 128)),
    "d1024": (tm.Config(d_model=1024, heads=8, layers=4, seq=512), (8, 16, 32)),
}
QUICK = {"notebook": (tm.Config(), (16,))}


@dataclasses.dataclass(frozen=True)
class Timing:
    median_us: float
    best_us: float


def _time(fn, *args, repeats: int) -> Timing:
    """Median and best wall time of `fn(*args)`, each call waited for, after one warm-up call."""
    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append((time.perf_counter() - start) * 1e6)
    return Timing(statistics.median(times), min(times))


def chip_roofs(repeats: int) -> dict:
    """The chip's matrix-product rate (bf16 and f32), its memory bandwidth and one small operation's cost."""
    n = 8192 if jax.default_backend() != "cpu" else 1024
    roofs = {}
    for dtype in (jnp.bfloat16, jnp.float32):
        a = jnp.ones((n, n), dtype)
        t = _time(jax.jit(lambda x, y: x @ y), a, a, repeats=repeats)
        roofs[f"matmul_{jnp.dtype(dtype).name}_tflops"] = 2 * n**3 / (t.median_us * 1e-6) / 1e12
    roofs["hbm_gbytes_per_s"] = _memory_gbytes_per_s(repeats)
    roofs["small_op_us"] = _small_op_us(repeats)
    return roofs


def _memory_gbytes_per_s(repeats: int) -> float:
    """Bytes read plus written per second by an element-wise pass over a 1 GiB array (128 MiB on a CPU), each
    pass writing over its input (donated), passes back to back, only the last waited for."""
    n = (1 << 28) if jax.default_backend() != "cpu" else (1 << 25)
    double = jax.jit(lambda x: x * 1.0001, donate_argnums=0)
    x = jax.block_until_ready(double(jnp.ones((n,), jnp.float32)))
    start = time.perf_counter()
    for _ in range(repeats):
        x = double(x)
    jax.block_until_ready(x)
    return 2 * 4 * n * repeats / (time.perf_counter() - start) / 1e9  # each pass reads and writes every byte


def _small_op_us(repeats: int, chain: int = 200) -> float:
    """A chain of `chain` dependent 128 x 128 products, timed per product (XLA fuses the chain: not one
    operation's cost)."""

    def chained(x, w):
        for _ in range(chain):
            x = jnp.tanh(x @ w)  # each product needs the last one's result: no two run at once
        return x

    x = jnp.ones((128, 128), jnp.float32) / 128
    return _time(jax.jit(chained), x, x, repeats=repeats).median_us / chain


def layouts(config: tm.Config, batch: int, n_devices: int) -> list[tuple[int, int, int]]:
    """Every (data, fsdp, tensor) over `n_devices` devices that the model's sizes and the batch divide."""
    found = []
    for data in range(1, n_devices + 1):
        for fsdp in range(1, n_devices // data + 1):
            tensor = n_devices // (data * fsdp)
            if data * fsdp * tensor != n_devices or batch % (data * fsdp) or config.heads % tensor:
                continue
            if config.d_model % fsdp or config.vocab % fsdp or (config.mlp * config.d_model) % tensor:
                continue
            found.append((data, fsdp, tensor))
    return found


def entry_ops(hlo_text: str) -> int:
    """Operations of the compiled entry computation, less parameters, tuples and constants: each is a launch."""
    entry = hlo_text.split("ENTRY", 1)[-1].split("\n}", 1)[0]
    skip = ("parameter(", "get-tuple-element(", "tuple(", "constant(", "bitcast(")
    return sum(1 for line in entry.splitlines() if " = " in line and not any(s in line for s in skip))


def _chained_us(compiled, args, repeats: int, rounds: int = 3) -> float:
    """Per-step wall time of `repeats` steps run back to back (each step's parameters and Adam state feed the
    next, as in training; only the last is waited for), the median of `rounds` rounds: the steady state."""
    params, state, window = args
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(repeats):
            params, state, loss = compiled(params, state, window)
        jax.block_until_ready(loss)
        times.append((time.perf_counter() - start) * 1e6 / repeats)
    return statistics.median(times)


def compiled_step(config: tm.Config, batch: int, layout: tuple[int, int, int]):
    """The step compiled for `layout`, with placed parameters, Adam state and one batch of windows."""
    mesh = tm.layout_mesh(*layout)
    params = tm.place(tm.init_params(config), mesh)
    window = jax.device_put(tm.batches(config, batch, 1)[0], NamedSharding(mesh, P(tm.BATCH)))
    with jax.set_mesh(mesh):
        state = jax.jit(tm.OPTIMIZER.init)(params)
        start = time.perf_counter()
        compiled = jax.jit(tm.train_step).lower(params, state, window).compile()
    return compiled, (params, state, window), time.perf_counter() - start


def measure_step(name: str, config: tm.Config, batch: int, layout, repeats: int) -> dict:
    """One row: the step of `config` at `batch` on `layout`, timed and read."""
    compiled, args, compile_s = compiled_step(config, batch, layout)
    timing = _time(lambda p, s, w: compiled(p, s, w), *args, repeats=repeats)
    chained = _chained_us(compiled, args, repeats)
    calls = []  # the host's dispatch: the call's return, nothing queued
    for _ in range(repeats):
        start = time.perf_counter()
        out = compiled(*args)
        calls.append((time.perf_counter() - start) * 1e6)
        jax.block_until_ready(out)
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, (list, tuple)) else cost
    memory = compiled.memory_analysis()
    n_params = sum(math.prod(s) for s in tm.shapes(config).values())
    return {
        "size": name,
        "config": dataclasses.asdict(config),
        "params": n_params,
        "batch": batch,
        "layout": list(layout),
        "step_us": chained,
        "synced_us": timing.median_us,
        "synced_best_us": timing.best_us,
        "call_us": statistics.median(calls),
        "arguments": len(jax.tree.leaves(args)),
        "flops": float(cost.get("flops", 0.0)),
        "bytes_accessed": float(cost.get("bytes accessed", 0.0)),
        "argument_bytes": int(memory.argument_size_in_bytes),
        "output_bytes": int(memory.output_size_in_bytes),
        "temp_bytes": int(memory.temp_size_in_bytes),
        "entry_ops": entry_ops(compiled.as_text()),
        "compile_s": compile_s,
    }


def provenance(argv: list[str]) -> dict:
    device = jax.devices()[0]
    return {
        "chip": device.device_kind,
        "platform": device.platform,
        "devices": jax.device_count(),
        "jax": jax.__version__,
        "jaxlib": jax.lib.__version__ if hasattr(jax.lib, "__version__") else jax.__version__,
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d"),
        "command": "python -m tools.measure_step " + " ".join(argv),
    }


def _out_path(chip: str) -> Path:
    return RECORDED / ("steps-" + "".join(c if c.isalnum() else "-" for c in chip.lower()).strip("-") + ".json")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="the recorded table (default: namedaxes/recorded/steps-<chip>.json)")
    parser.add_argument("--repeats", type=int, default=20, help="timed steps per row (after two warm-up steps)")
    parser.add_argument("--quick", action="store_true", help="the notebook's model at one batch only (a smoke run)")
    args = parser.parse_args(argv)
    record = {"provenance": provenance(argv), "roofs": chip_roofs(args.repeats), "rows": []}
    print(json.dumps(record, indent=1), flush=True)
    for name, (config, batches) in (QUICK if args.quick else SIZES).items():
        for batch in batches:
            for layout in layouts(config, batch, jax.device_count()):
                row = measure_step(name, config, batch, layout, args.repeats)
                record["rows"].append(row)
                print(json.dumps(row), flush=True)
    out = args.out or _out_path(record["provenance"]["chip"])
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print("recorded:", out.relative_to(REPO) if out.is_relative_to(REPO) else out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
