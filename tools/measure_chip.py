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

Run it where only one program holds the chip.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp

from namedaxes import transformer as tm
from tools.measure_step import RECORDED, measure_step, provenance

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


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=RECORDED)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--table", action="store_true", help="also notebook 10's step at TABLE's sizes")
    parser.add_argument("--compile", action="store_true", help="also notebook 11's programs for v5e 2x4")
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
