"""How notebook 07's checks run an answer: JAX's errors in this notebook's words, the program compiled
once, the grader's judging steps on the visible inputs, and the graded observations.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from namedaxes import meshes
from namedaxes.checking import TEXT as checking_text
from namedaxes.checking import (
    answer_work,
    examined,
    exercises_for,
    explained,
    fail,
    first_line,
    regions,
    unbound_axis_name,
)
from namedaxes.checking.regions import expect_own_shard, judge_regions
from namedaxes.grading import Case, programs
from namedaxes.meshes import with_mesh

from . import text
from .text import say

exercise = exercises_for(__package__, text)  # the notebook's Exercise maker: exercise(name, check, observe=...)

# ---------------------------------------------------------------- running answers


def rule_varying(err, name, mesh):
    text = str(err)
    if isinstance(err, ValueError) and "out_specs" in text and ("replicat" in text or "varying" in text):
        return say("varying_output", name=name, first=first_line(err))
    return None


def rule_divisible(err, name, mesh, extra=""):
    text = str(err)
    if isinstance(err, ValueError) and "must be divisible by shard_count" in text:
        return say("not_divisible", name=name, first=first_line(err), extra=extra)
    if isinstance(err, ValueError) and "must match shard count" in text:
        return say("not_shard_count", name=name, first=first_line(err))
    if isinstance(err, ValueError) and "scatter_dimension" in text and "non-negative" in text:
        return say("negative_scatter_dimension", name=name)
    return None


def rule_permutation(err, name, mesh):
    text = str(err)
    if isinstance(err, ValueError) and "sources and destinations must be unique" in text:
        return say("not_a_permutation", name=name, first=first_line(err))
    if isinstance(err, IndexError) and mesh is not None and "index out of range" in text:
        k = mesh.devices.size
        return say("bad_device_index", name=name, k=k, last=k - 1)
    return None


def rule_in_specs(err, name, mesh):
    text = str(err)
    if isinstance(err, ValueError) and "does not match the specs of the input" in text:
        return say("in_specs", name=name, first=first_line(err))
    if isinstance(err, ValueError) and "out_specs entry which is too long" in text:
        return say("out_specs_too_long", name=name, first=first_line(err))
    return None


def rule_global_sharding(err, name, mesh):
    # jax raises its own ShardingTypeError (not exported under jax.errors on these versions)
    if type(err).__name__ == "ShardingTypeError":
        return say("global_sharding", name=name, first=first_line(err))
    return None


COMMON_RULES = (rule_varying, rule_divisible, rule_in_specs, rule_global_sharding)


def _rule_axis_names(err, name, mesh):
    axes = say("mesh_axes", axes=tuple(mesh.axis_names)) if mesh is not None else ""
    if type(err) is AssertionError and not str(err):
        return say("empty_assertion", name=name, axes=axes)
    axis = unbound_axis_name(err)
    if axis is not None:
        return say("unbound", name=name, axis=axis, first=first_line(err), axes=axes)
    return None


def explained_here(name: str, mesh=None, rules=COMMON_RULES):
    """Run an answer; its crashes become `CheckFailed` messages (`checking.explained`).

    `rules` are this notebook's own translations, each `rule(err, name, mesh) -> message | None`,
    tried first; the core translates the rest (not written yet, traced values, errors in the
    student's own code).
    """
    bound = [functools.partial(rule, name=name, mesh=mesh) for rule in (*rules, _rule_axis_names)]
    return explained(name, rules=[lambda err, rule=rule: rule(err) for rule in bound])


def run_answer(name: str, fn: Callable, mesh, *args, rules=COMMON_RULES):
    with explained_here(name, mesh, rules):
        return meshes.program(fn, mesh)(*args)


def work_here(name: str, fn: Callable, mesh, *args, rules=COMMON_RULES):
    """What one device of `fn(*args, mesh)` does, read from its compiled per-device program as the grader reads it
    (`checking.answer_work`); its crashes in this notebook's words."""
    with explained_here(name, mesh, rules):
        return answer_work(lambda *a: fn(*a, mesh), *args)


def _examined_here(name: str, fn: Callable, mesh, *args, ins: tuple, axis: str, rules=COMMON_RULES):
    """`fn(*args, mesh)` exported, compiled and examined once, the grader's way (`namedaxes.judging.examine`):
    the collectives of its optimized program (`present`, named as "all_gather over 'devices'"), those that
    reach the results (`matters`) and its live per-device regions; every step of the check reads these.
    Layout first, as the grader judges: a live region over `axis` taking each input split as `ins` says."""
    with explained_here(name, mesh, rules):
        facts = examined(lambda *a: fn(*a, mesh), *args)
    expect_own_shard(name, facts, ((axis,), ins), regions.TEXT["values_word"])
    return facts


def judged(
    name: str,
    fn: Callable,
    mesh,
    *args,
    ins: tuple,
    axis: str,
    uses: tuple[tuple[str, str], ...],
    rules=COMMON_RULES,
    screen: Callable | None = None,
):
    """The grader's judging of `fn(*args, mesh)` on the visible inputs, compiled once (`_examined_here`), in the
    check's order: a live per-device region over `axis` taking each input split as `ins` says (the reference's
    `in_specs`); then `screen(facts)`, an exercise's own test of what the program performs (the ring's forbidden
    collectives), if any; then each collective of `uses`, `(primitive, why)`, performed over `axis`
    (`_expect_uses`); then each reaching the result (`checking.regions.judge_regions`; a region with no collective
    reaching it is told the last one's `why`, the collective whose result the answer returns), one that does not
    told its own `why`. Returns what was read (`Examined`), for the checks that read more of it (the result's
    layout)."""
    facts = _examined_here(name, fn, mesh, *args, ins=ins, axis=axis, rules=rules)
    if screen is not None:
        screen(facts)
    for primitive, why in uses:
        _expect_uses(name, facts, primitive, axis, why)
    got = judge_regions(name, fn, mesh, *args, ins=ins, axis=axis, why=uses[-1][1], facts=facts)
    for primitive, why in uses:
        collective = f"{primitive} over '{axis}'"
        if collective not in got.matters:
            fail(checking_text["collective_unused"].format(name=name, collective=collective, hint=why))
    return facts


def _expect_uses(name: str, facts, primitive: str, axis: str, why: str) -> None:
    """The compiled program performs `primitive` over `axis` (present; `judged` asks that it matters), else
    the answer is told what it performs instead and why the exercise asks for it (`why`, in words)."""
    if f"{primitive} over '{axis}'" not in facts.present:
        fail(say("right_values_no_collective", name=name, seen=seen_words(facts.present), axis=axis, why=why))


def seen_words(descriptions) -> str:
    """Collectives read from the compiled program ("psum over 'devices'"), in words."""
    return say("seen_join").join(sorted(descriptions)) or say("no_collective_at_all")


# ---------------------------------------------------------------- graded observations
def observe_programs(
    fn: Callable, cases: dict, *, structure: str, only: bool = False, out_layout: bool = True, work=None
) -> dict:
    """The hidden observation of one test cell: exported programs of `fn` (`namedaxes.grading.programs`).

    `cases` maps a name to (mesh, abstract inputs), or (mesh, abstract inputs, work) for a case that judges its
    own work. The grader draws the inputs itself and compares each program's outputs with the reference's.
    The extra case `collectives` (the `structure` case again, with `values=False`) makes the grader require
    every collective the reference performs, by kind and axis, read from the optimized HLO: `ppermute`, not a
    `psum`; a `psum_scatter`, not a `psum` and a slice. With `only`, that case also rejects every collective
    the reference does not perform (a `psum` beside the required `ppermute`). `work` (`Case(work=...)`) judges
    how each value case's work is split against the reference's.
    """
    graded = {  # a case (mesh, inputs, work) judges its own work
        name: Case(with_mesh(fn, case[0]), *case[1], out_layout=out_layout, work=case[2] if len(case) > 2 else work)
        for name, case in cases.items()
    }
    mesh, inputs = cases[structure]
    graded["collectives"] = Case(
        with_mesh(fn, mesh), *inputs, values=False, only_collectives=only, out_layout=out_layout
    )
    return programs(graded)
