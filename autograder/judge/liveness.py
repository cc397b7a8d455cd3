"""Does what a student's program sends, and what each of its per-device regions computes, reach its results?

A collective counts for the cell only when the data it sends reaches the results on the hidden inputs
(`namedaxes.judging.perturbed`: its operands made again from shifted inputs inside the program, the variant
run on the same hidden inputs, the outputs must change), so a discarded, zero-multiplied or cancelled
collective, and one that sends zeros or a constant, earns nothing; a per-device region of the reference needs
a live counterpart in the student's program. Each variant's shift is drawn from the run's secret
(`perturb_factor`). Used by the judge (`autograder.judge.programs`) inside the clean scorer process.
"""

from __future__ import annotations

from namedaxes.judging import perturbed, proven_regions, region_facts, region_takes

from .hidden_inputs import perturb_factor
from .judged_cases import JudgedCase, StudentRun
from .tally import Tally

__all__ = ["count_communication", "dead_region"]


def count_communication(
    secret: bytes, case: JudgedCase, student: StudentRun, identical: bool, tally: Tally
) -> set[str]:
    """Count the student's collectives of the case: one the reference has (or, for value cells, over one of
    its axes) counts only when what it sends reaches the results (`_matters`); a surplus collective
    counts against, present is enough. The collectives shown to reach the results."""
    shown: set[str] = set()
    for desc, axis in student.compiled.comm_axes:
        earns = desc in tally.ref_comm or (not tally.exact and axis in tally.ref_axes)
        if not earns or identical or desc in tally.verified:
            tally.got_comm.add(desc)
            tally.got_axes.add(axis)
            continue
        try:
            matters = _matters(secret, case, student, desc)
        except Exception:  # noqa: BLE001 - a variant that fails to build or run: not shown to matter
            matters = False
        if matters:
            tally.verified.add(desc)
            shown.add(desc)
            tally.got_comm.add(desc)
            tally.got_axes.add(axis)
    return shown


def _matters(secret: bytes, case: JudgedCase, student: StudentRun, desc: str) -> bool:
    """Do the student's results on the hidden inputs change when its collectives described `desc` are sent
    other data (`perturbed`: their operands made from shifted inputs)?"""
    program = student.program
    factor = perturb_factor(secret, case.grade_id, case.name)
    variant = perturbed(program.exp, desc, tuple(case.ref.names), tuple(case.ref.shape), factor, text=program.text)
    if variant is None:
        return True  # the optimizer made it (e.g. from a global-view program's resharding): keep it
    if variant is program.exp:
        return False  # its collectives of this kind send no data made from an input (a psum of zeros)
    base = student.out or case.outputs(program, student.compiled)
    return case.changed(base, case.outputs(*case.compile_variant(variant)))


def dead_region(secret: bytes, case: JudgedCase, student: StudentRun, shown: set[str]) -> tuple | None:
    """The manual axes of a reference region whose only counterparts in the student's program (regions that
    take each input split as the reference's does, which the layout step found) do not reach the results
    on the hidden inputs: a region multiplied by zero or otherwise discarded, with the results computed
    elsewhere. None when every reference region has a live counterpart. A counterpart is live when a
    collective of this case shown to reach the results (`shown`) sits in it alone, or the program returns
    its results (`region_facts`), else when changing its results (`perturbed(..., region=i)`) changes
    the outputs."""
    program, names, shape = student.program, tuple(case.ref.names), tuple(case.ref.shape)
    proven = proven_regions(region_facts(program.exp, names, shape, text=program.text), shown)
    factor = perturb_factor(secret, case.grade_id, "region\0" + case.name)

    def reaches(i: int) -> bool:
        try:
            variant = perturbed(program.exp, None, names, shape, factor, text=program.text, region=i)
            if variant is None:
                return True  # nothing of it could be changed (no float or integer results): keep it
            base = student.out or case.outputs(program, student.compiled)
            moved = case.outputs(*case.compile_variant(variant))
        except Exception:  # noqa: BLE001 - a variant that fails to build or run: not shown to matter
            return False
        return case.changed(base, moved)

    # One live region may stand for several of the reference's (a step run in a loop): a counterpart
    # already shown live is taken first, so five steps of one shape cost one variant, not five.
    used: set[int] = set()  # counterparts shown live
    for axes, ins, *_ in case.ref.compiled.regions:
        mine = [i for i, r in enumerate(student.compiled.regions) if region_takes((r,), axes, ins)]
        hit = next((i for i in mine if i in used or i in proven), None)
        if hit is None:
            hit = next((i for i in mine if reaches(i)), None)
        if hit is None:
            return axes
        used.add(hit)
    return None
