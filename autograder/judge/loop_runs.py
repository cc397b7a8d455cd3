"""Loops whose trip count only their data decide, counted by running them on the hidden inputs (issue 56).

Used by the judge (`autograder.judge.programs`) inside the clean scorer process, for a case that judges FLOPs or
bytes sent. A compiled program whose work reads a loop the program does not count (a quadratic condition on a
value of its data, a bound from a psum of its data, "until converged": `Work.uncounted`) is counted again: its
counted variant (`namedaxes.judging.loop_counters.counted`: every loop carries how often its body ran and how
often it was entered, per device) is compiled with the reference's input layouts and run on the case's hidden
inputs, and each loop of the judged program is counted as often as it ran on the busiest device
(`namedaxes.judging.counted_run.counted_work`, the visible checks' step too). Where that cannot be done (no loop
the rewrite reaches, a variant that fails to compile or run) the work stays as read, `UNKNOWN_TRIPS` runs for each
such loop, and the finding says so.

The reductions the program's types make (`Work.reduced_bytes`, where a case judges them), read once
(`compiling.judged_work`, `Compiled.reductions`), are counted the same way (`reductions_run`): a loop holding a
reduction whose trip count only its data decide is counted as often as it ran on the case's hidden inputs
(`namedaxes.judging.counted_run.counted_reductions`, given that reading); one that could not be run to count it
leaves the figure unknown, and the case refuses it with a finding that says why.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from namedaxes.judging import UNREADABLE_REDUCTIONS
from namedaxes.judging.counted_run import counted_reductions, counted_work

from .compiling import Compiled, judged_work

__all__ = ["COUNTED_FACTS", "judged_pair", "loops_run", "reductions_run", "reference_loops_run"]

COUNTED_FACTS = ("flops", "sent_bytes")  # the work facts a loop's runs change
_MAX_REFERENCES = 64  # references' counted work kept (a batch judges each reference case again and again)
_REFERENCES: dict = {}


def reference_loops_run(case) -> Compiled:
    """`loops_run` of the case's reference program, once per reference, grade id and case (its hidden inputs)."""
    key = (case.ref.program.fingerprint, case.grade_id, case.name, case.secret)
    if key not in _REFERENCES:
        if len(_REFERENCES) >= _MAX_REFERENCES:
            _REFERENCES.pop(next(iter(_REFERENCES)))
        _REFERENCES[key] = loops_run(case, case.ref.program, case.ref.compiled)
    return _REFERENCES[key]


def loops_run(case, program, compiled: Compiled) -> Compiled:
    """`compiled` with its work's loops whose count only their data decide counted by running the program on the
    case's hidden inputs (see above); `compiled` itself where there are none or the case judges neither fact."""
    limits = case.entry.get("work") or {}
    work = compiled.work
    if work is None or not work.uncounted or not any(f in limits for f in COUNTED_FACTS):
        return compiled

    text = compiled.compiled.as_text()
    return replace(compiled, work=counted_work(work, text, program.nr_devices, program.exp, _variant_run(case)))


def _variant_run(case) -> Callable:
    """Compile and run a counted variant as the case compiles and runs its programs, on its hidden inputs."""

    def run(variant_exp) -> tuple[dict, str]:
        variant, ran = case.compile_variant(variant_exp)
        return case.outputs(variant, ran), ran.compiled.as_text()

    return run


def reductions_run(case, program, compiled: Compiled) -> Compiled:
    """`compiled` (its reductions read once, `compiling.judged_work`: `Compiled.reductions`) with a loop holding a
    reduction whose trip count only its data decide counted as often as it ran on the case's hidden inputs (see
    above); `compiled` itself where the case does not judge reductions, their module could not be read (its
    `Work.reduced_bytes` says so) or the reading holds no such loop."""
    limits, work, read = case.entry.get("work") or {}, compiled.work, compiled.reductions
    if work is None or "reduced_bytes" not in limits or read is None or not read.uncounted:
        return compiled
    try:
        found = counted_reductions(read, program.exp, case.ref.names, case.ref.shape, _variant_run(case))
        facts = {"reductions_measured": found.measured, "reductions_uncounted": found.uncounted}
        work = replace(work, reduced_bytes=found.nbytes, **facts)
    except Exception:  # noqa: BLE001 - a hostile module: judged as reducing more than any case allows
        work = replace(work, reduced_bytes=UNREADABLE_REDUCTIONS)
    return replace(compiled, work=work)


def judged_pair(case, program, compiled: Compiled) -> tuple[Compiled, Compiled]:
    """(the program's, the reference's) compiled work as the case judges it: loops only their data decide counted
    by running them on the hidden inputs (`loops_run`), the reductions the types make read where the case judges
    them (`compiling.judged_work`), their loops counted the same way (`reductions_run`)."""
    ref, limits = case.ref, case.entry.get("work") or {}
    got = judged_work(loops_run(case, program, compiled), program, ref.names, ref.shape, limits)
    want = judged_work(reference_loops_run(case), ref.program, ref.names, ref.shape, limits)
    return reductions_run(case, program, got), reductions_run(case, ref.program, want)
