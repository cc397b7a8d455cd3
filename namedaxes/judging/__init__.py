"""Reading and probing compiled programs: the judging steps the visible checks and the grader share.

One place for what decides, from a program alone, which collectives it performs and whether they
matter (issue 16, "one judge"): the collectives of an optimized HLO module and the mesh axes their
device groups connect (`hlo_collectives`, `group_axes`, `describe_collective`), and a variant of an
exported program whose collectives of one kind have their results changed (`perturbed`), which tells
communication that reaches the outputs from communication that does not (`changed`,
`communication_that_matters`).

Imported by the kernel's visible checks (`namedaxes.checking`) and by the grader's clean scorer
process (`autograder.judge.programs`). It imports nothing of the course but JAX and NumPy, so
importing it in the scorer brings in nothing a student's code could have touched; the kernel's copy is
the student's to rebind, which is why the grader's verdict never comes from it. Its only state is a memo
of module texts (`module_text`): a pure function of a module's bytes, bounded in characters, so a
program's text is made once however many judging steps read it.

A package along its steps, each module importing only those above it:

    module_texts.py  an exported module's text, made once (the memo)
    hlo.py           reading an optimized HLO module: collectives, device groups, mesh axes
    instructions.py  its computations and instructions, and each instruction's FLOPs as XLA counts them
    loop_trips.py    how often a loop runs and which branch a conditional runs, where the program fixes it
    runs.py          how often each computation runs, and the FLOPs, bytes and sends that follow
    work.py          the work of one device: FLOPs, memory, largest array, bytes moved, the schedule
    jax_private.py   the adapter: every reach into JAX's private modules and attributes
    stablehlo.py     reading an exported module parsed into MLIR: collectives, per-device regions
    typed.py         the reductions an exported module's types make, the same on every backend (`read_reductions`)
    variants.py      a variant whose collectives of one kind send other data (`perturbed`)
    loop_counters.py a variant whose loops count their own runs, per device (`counted`)
    measured_trips.py  those counts matched with the judged program's loops
    matters.py       the regions proven to matter, and whether two runs' outputs differ (`changed`)
    layouts.py       where values live: layouts, per-device regions, and how two programs' regions differ
    compiled_run.py  the judge's one compile: an exported program's mesh (`mesh_of`), compiled as the grader
                     compiles it (`compile_exported`) and run (`run_exported`, the grader's scorer)
    counted_run.py   its work, loops only its data count counted by running it (`counted_work`, `exported_work`)
    examined.py      one program examined the grader's way (`examine`)

What this face exports (`__all__`) is the judge's whole public surface; the names its modules share with
each other are public in their own module and not repeated here.
"""

from __future__ import annotations

from .compiled_run import (
    COMPILER_OPTIONS,
    FALLBACK_AXIS,
    compile_exported,
    device_mesh,
    mesh_of,
    signature_mesh,
    spec_layout,
    stated_layouts,
    text_mesh,
)
from .counted_run import counted_reductions, draw_input, exported_work, reductions_on
from .examined import Examined, communication_that_matters, examine
from .hlo import describe_collective, group_axes, hlo_collectives
from .layouts import (
    RegionDifference,
    norm_layout,
    placed_layout,
    region_difference,
    region_takes,
    regions,
    sdy_layouts,
    split_axes,
)
from .matters import ATOL, RTOL, RegionFacts, changed, proven_regions, region_facts
from .module_texts import TEXT_MEMO_CHARS, module_text
from .runs import Sends, collective_sends
from .typed import UNREADABLE_REDUCTIONS, Reductions, exported_reductions, read_reductions, with_reductions
from .variants import perturbed
from .work import WORK_FACTS, Work, largest_array, moved_of, work_excess, work_of

__all__ = [
    "hlo_collectives",
    "group_axes",
    "describe_collective",
    "perturbed",
    "changed",
    "mesh_of",
    "signature_mesh",
    "text_mesh",
    "device_mesh",
    "FALLBACK_AXIS",
    "spec_layout",
    "stated_layouts",
    "compile_exported",
    "communication_that_matters",
    "RTOL",
    "ATOL",
    "norm_layout",
    "sdy_layouts",
    "regions",
    "placed_layout",
    "split_axes",
    "RegionDifference",
    "region_difference",
    "Examined",
    "examine",
    "region_takes",
    "region_facts",
    "RegionFacts",
    "proven_regions",
    "module_text",
    "TEXT_MEMO_CHARS",
    "COMPILER_OPTIONS",
    "Work",
    "work_of",
    "WORK_FACTS",
    "work_excess",
    "draw_input",
    "exported_work",
    "counted_reductions",
    "reductions_on",
    "read_reductions",
    "with_reductions",
    "UNREADABLE_REDUCTIONS",
    "Reductions",
    "exported_reductions",
    "moved_of",
    "largest_array",
    "Sends",
    "collective_sends",
]
