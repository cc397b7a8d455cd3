"""Export every notebook's reference programs for a TPU, with what the course's readers find in them compiled
for the CPU: the input of `python -m tools.compile_for_topology --references` on a machine with libtpu.

    python -m tools.export_references [--out build/topology-exports] [--record solutions/recorded]

1. Each solution notebook runs top to bottom in a fresh kernel, as the grader's reference run runs it: its
   hidden test parts included, in the environment the grader gives a kernel (`NAMEDAXES_OBSERVE_DIR`, English
   messages, `NBGRADER_EXECUTION=autograde`, the grading XLA flags). One cell is added before the first:
   `namedaxes.grading.export_also_for(("tpu",), PRECISION)`, so every case's program is exported a second
   time, lowered for a TPU (which needs no TPU) at the matmul precision the course sets on real accelerators
   (`namedaxes.devices`). The grader's own export of each case (for the CPU) stays as it is.
   For the TPU alone, not ("cpu", "tpu"): a program exported for two platforms holds both platforms' lowering
   of a collective whose lowering depends on the platform (`all_gather`, `psum_scatter`: 11 of the course's
   reference programs) in a `conditional` on the platform, which XLA keeps, so the readers would count it twice.
2. Each case's reference program (the grader's own export) is compiled as the grader compiles a reference
   (`autograder.judge.compiling.compiled_for`: the 8 CPU devices, `COMPILER_OPTIONS`, the reference's input
   layouts), and the course's readers read its optimized HLO (`compile_for_topology.reference_facts`).

Output:
- OUT/exports.npz (`tpu/<program id>`: the TPU's export; `cpu/<program id>`: the grader's own, which
  `compile_for_topology --references --attached` compiles; a program id is `<notebook>/<test cell>/<case>`) and
  OUT/manifest.json (the program ids, how they were exported), and OUT/pylib (a copy of `flatbuffers`, which
  deserializing needs): what the TPU machine compiles (`carry` OUT);
- RECORD/references-cpu.json (per program: the reading mesh, what the readers find, the compiler's FLOPs and
  peak bytes, what the case's grading judges) and RECORD/references-hlo-cpu.json.xz (every optimized HLO text):
  what tests/namedaxes/test_recorded_programs.py compares a TPU's programs with.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import numpy as np
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell

from autograder.course import SourceNotebook
from autograder.judge import load_observations
from autograder.sandbox import grading_xla_flags
from courseinfo.course import BUILD, SOLUTIONS, notebook_ids
from namedaxes.grading import ARRAYS_SUFFIX, PLATFORMS_PREFIX, PROGRAM_PREFIX, PROGRAMS_KEY, VALUES_SUFFIX
from tools import compile_for_topology as cft

OUT = BUILD / "topology-exports"
PLATFORMS = ("tpu",)  # the second export's (the module's docstring says why not ("cpu", "tpu"))
PRECISION = "highest"  # namedaxes.devices sets it where the course runs on real accelerators
EXPORT_CELL = "from namedaxes.grading import export_also_for\nexport_also_for({platforms!r}, {precision!r})"
CELL_TIMEOUT_S = 600
_NOT_JUDGED = ("draw", "rtol", "atol")  # a case's entry: how its inputs are drawn and compared, not its program


def run_reference(notebook: str, observe: Path, precision: str, platforms: tuple[str, ...] = PLATFORMS) -> float:
    """Run `solutions/<notebook>.ipynb` as the grader's reference run does, its programs also exported for
    `platforms` (none: only the grader's own export); its observations land in `observe`. The seconds it took."""
    nb = nbformat.read(SOLUTIONS / f"{notebook}.ipynb", as_version=4)
    if platforms:
        nb.cells.insert(0, new_code_cell(EXPORT_CELL.format(platforms=platforms, precision=precision or None)))
    env = dict(os.environ)
    env.update(
        {
            "NAMEDAXES_OBSERVE_DIR": str(observe),
            "NAMEDAXES_LANG": "en",
            "NBGRADER_EXECUTION": "autograde",
            "XLA_FLAGS": grading_xla_flags(os.environ.get("XLA_FLAGS", "")),
        }
    )
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="export-references-") as cwd:
        NotebookClient(
            nb,
            timeout=CELL_TIMEOUT_S,
            kernel_name="python3",
            extra_arguments=["--IPKernelApp.log_level=ERROR"],
            resources={"metadata": {"path": cwd}},
        ).execute(env=env)
    return time.monotonic() - t0


def observations(notebook: str, observe: Path) -> dict[str, dict]:
    """grade id -> the observation its hidden test recorded (the grader's reader, `load_observations`)."""
    source = SourceNotebook.load(notebook, SOLUTIONS / f"{notebook}.ipynb")
    out = {}
    for gid in source.test_ids():
        npz, values = observe / f"{gid}{ARRAYS_SUFFIX}", observe / f"{gid}{VALUES_SUFFIX}"
        if not npz.exists() and not values.exists():
            raise RuntimeError(f"{notebook}: test cell {gid!r} recorded nothing")
        out[gid] = load_observations(
            npz.read_bytes() if npz.exists() else None, values.read_bytes() if values.exists() else None
        )
    return out


def cpu_facts(blob: bytes) -> tuple[dict, str]:
    """A reference program as the grader compiles it, and what the readers find in it: (facts, HLO text)."""
    from autograder.judge import compiled_for, read_program

    program = read_program(blob)
    names, sizes = cft.reading_mesh(program)
    t0 = time.monotonic()
    compiled = compiled_for(program, names, sizes, kind="reference")
    seconds = time.monotonic() - t0
    text = compiled.compiled.as_text()
    return cft.program_record(program, compiled.compiled, text, seconds), text


def carry_flatbuffers(out: Path) -> None:
    """A copy of the `flatbuffers` package (pure Python, 0.3 MiB) in OUT/pylib: `jax.export.deserialize` needs it,
    and a TPU machine without network may not have it (the command then puts OUT/pylib on PYTHONPATH)."""
    import flatbuffers

    target = out / "pylib" / "flatbuffers"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(Path(flatbuffers.__file__).parent, target, ignore=shutil.ignore_patterns("__pycache__"))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT, help="the exports' folder (what the TPU machine compiles)")
    parser.add_argument("--record", type=Path, default=cft.REFERENCES, help="the folder of the CPU's record")
    parser.add_argument(
        "--precision", default=PRECISION, help="matmul precision of the TPU export ('default': JAX's own)"
    )
    args = parser.parse_args(argv)
    os.environ["XLA_FLAGS"] = grading_xla_flags(os.environ.get("XLA_FLAGS", ""))  # as the scorer compiles
    from namedaxes.devices import setup_devices

    setup_devices(quiet=True)
    precision = "" if args.precision == "default" else args.precision
    exports: dict[str, np.ndarray] = {}
    programs, texts, seconds = {}, {}, {}
    started = time.monotonic()
    for notebook in notebook_ids():  # every one: the record is the whole course's
        with tempfile.TemporaryDirectory(prefix="observe-") as observe:
            run_s = run_reference(notebook, Path(observe), precision)
            recorded = observations(notebook, Path(observe))
        t0 = time.monotonic()
        for gid, obs in recorded.items():
            meta = obs.get(PROGRAMS_KEY)
            if not isinstance(meta, dict):
                continue  # a formula exercise: no program
            for case, entry in meta["cases"].items():
                pid = f"{notebook}/{gid}/{case}"
                exports[f"tpu/{pid}"] = np.asarray(obs[PLATFORMS_PREFIX + case], np.uint8)
                exports[f"cpu/{pid}"] = np.asarray(obs[PROGRAM_PREFIX + case], np.uint8)
                facts, texts[pid] = cpu_facts(exports[f"cpu/{pid}"].tobytes())
                programs[pid] = facts | {"judged": {k: v for k, v in entry.items() if k not in _NOT_JUDGED}}
        seconds[notebook] = {"reference_run_s": round(run_s, 1), "cpu_compiles_s": round(time.monotonic() - t0, 1)}
        print(f"{notebook}: {sum(p.startswith(notebook) for p in programs)} programs {seconds[notebook]}", flush=True)
    provenance = {
        "platform": "cpu",
        "devices": 8,
        "jax": cft.jax.__version__,
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d"),
        "command": cft.command("tools.export_references", argv),
        "export_platforms": list(PLATFORMS),
        "export_precision": precision or "default",
        "seconds": seconds,
        "total_s": round(time.monotonic() - started, 1),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "exports.npz", "wb") as fh:
        np.savez_compressed(fh, **exports)
    manifest = {"provenance": provenance, "programs": sorted(programs)}
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    cft.write_references(args.record, "cpu", {"provenance": provenance, "programs": programs}, texts)
    carry_flatbuffers(args.out)
    size = (args.out / "exports.npz").stat().st_size
    print(f"{len(programs)} programs; exports {size / 2**20:.1f} MiB; {provenance['total_s']} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
