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
"""

from __future__ import annotations

from dataclasses import replace

from namedaxes.judging.counted_run import counted_work

from .compiling import Compiled, judged_work

__all__ = ["COUNTED_FACTS", "judged_pair", "loops_run", "reference_loops_run"]

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

    def run(variant_exp) -> tuple[dict, str]:
        variant, ran = case.compile_variant(variant_exp)
        return case.outputs(variant, ran), ran.compiled.as_text()

    text = compiled.compiled.as_text()
    return replace(compiled, work=counted_work(work, text, program.nr_devices, program.exp, run))


def judged_pair(case, program, compiled: Compiled) -> tuple[Compiled, Compiled]:
    """(the program's, the reference's) compiled work as the case judges it: loops only their data decide counted
    by running them on the hidden inputs (`loops_run`), the reductions the types make read where the case judges
    them (`compiling.judged_work`)."""
    ref, limits = case.ref, case.entry.get("work") or {}
    got = judged_work(loops_run(case, program, compiled), program, ref.names, ref.shape, limits)
    want = judged_work(reference_loops_run(case), ref.program, ref.names, ref.shape, limits)
    return got, want
