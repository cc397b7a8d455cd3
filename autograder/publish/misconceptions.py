"""What went wrong in a test cell, as data to group a class by: the misconception map's unit.

    finding(cell_reason) -> {"property", "kind", "key", "en", "zh"} | None

The judge says why a cell failed as a `Verdict` of `Phrase`s (kinds from a closed set, typed fields,
in the judge's order: type, shape, layout, values, communication, work). This module makes its
differences a **group key** from their kinds and non-numeric fields: which collective was expected and
which was performed, which layout was seen, which property. Values that differ *and* a `pmean` where a
`psum` was expected is one misconception; values that differ with no collective at all is another.
Numbers (sizes, ratios, hidden-input values), where a difference was seen (the hidden case, the output) and
the text an error carried (`QUOTED_FIELDS`: the map shows only the judge's words; what a program recorded is
never quoted, judge/compare.py says its kind) are left out of the key, so "computes 4.5× the FLOPs" and
"computes 8× the FLOPs" are one group, and values that differ on four hidden cases are one difference; a
layout's input or result number and dimension are the program's structure, not a measurement, and stay
(`STRUCTURE_FIELDS`: "takes input 2['w1'] whole", "split along dimension 0 over 'fsdp_axis'"). A program's
cost is one difference however many ways it shows (`WORK_KINDS`: a reduction per microbatch costs bytes on
one case and peak memory on another: one group with the one whose reduction sits in a `lax.scan`). The
labels are the differences' sentences in English and Chinese (`words.say`), their numbers and case names left
out; `property` is the first one's. A difference that is a known mistake of the exercise (`known_mistake`,
judge/mistakes.py: the values are what that mistake gives, as the visible check found) is its own group, its
label the check's own sentence for it, and `mistake` names it (its exercise names the hint that addresses it).

Grouping reads these records, never the words: `publish/report.py` draws the map from results.json's
`finding` of each cell. Findings that say the cell was not answered or could not run are kept (the
report shows them) but are not misconceptions (`NOT_MISCONCEPTIONS`).
"""

from __future__ import annotations

from dataclasses import replace

from ..reasons import Kind, Phrase, Reason, Verdict, Words
from .words import say

__all__ = ["finding", "NOT_MISCONCEPTIONS"]

NOT_MISCONCEPTIONS = {
    Kind.NOT_ANSWERED.value,
    Kind.CELL_NOT_RUN.value,
    Kind.NOTHING_RECORDED.value,
    Kind.RESULTS_UNREADABLE.value,
    Kind.SCORER_TIMEOUT.value,
    Kind.SCORER_DIED.value,
    Kind.SCORER_FAILED.value,
    Kind.HIDDEN_PART_FAILED.value,
}
_DROPPED = "…"
KEY_DIFFERENCES = 4  # the differences a group key is made of (a verdict's first ones: the most basic)
LABELLED = 2  # of which the label says
WHERE_FIELDS = ("case", "key")  # where a difference was seen (which hidden case or output), not what it is
# text an error carried (a compile error's first line may quote names the program chose): the student's feedback
# shows it, the map does not (it shows only the judge's words); left out like the numbers
QUOTED_FIELDS = ("error",)
# numbers that say where in the program's structure, not what was measured: the layout phrases' input or result
# number and dimension ("takes input 2['w1'] whole", "split along dimension 0"), kept in the key and the label
STRUCTURE_FIELDS = ("n", "dim")
STRUCTURE_KINDS = frozenset(k for k in Kind if k.value.startswith("layout_"))
# what one device computes, holds or receives: a program's cost shows first where it is largest (its bytes sent on
# one hidden case, its peak memory on another), so only a verdict's first such difference is part of its key
WORK_KINDS = frozenset(
    {
        *(Kind.WORK_FLOPS, Kind.WORK_ARITHMETIC, Kind.WORK_REDUCED, Kind.WORK_PEAK, Kind.WORK_SENT),
        *(Kind.WORK_OVERLAP, Kind.WORK_LARGEST),
    }
)


def _differences(reason: Reason) -> tuple[Phrase, ...]:
    """The verdict's first `KEY_DIFFERENCES` *distinct* differences: the same mistake seen on several hidden
    cases (or outputs) is one difference, so a later one of another kind (the collective) still counts."""
    if isinstance(reason, Phrase):
        return (reason,)
    if not isinstance(reason, Verdict) or reason.passed:
        return ()
    distinct: dict[str, Phrase] = {}
    for d in reason.differences:
        if d.kind in WORK_KINDS and any(seen.kind in WORK_KINDS for seen in distinct.values()):
            continue  # the same program's cost, seen again on another case: one misconception
        distinct.setdefault(_key(d), d)
    return tuple(distinct.values())[:KEY_DIFFERENCES]


def _structural(phrase: Phrase, field: str, value) -> bool:
    return phrase.kind in STRUCTURE_KINDS and field in STRUCTURE_FIELDS and isinstance(value, int)


def _key(value) -> str:
    """A field's part of the group key: text and nested phrases as they are, numbers (but `STRUCTURE_FIELDS`)
    and where it was seen (`WHERE_FIELDS`: the hidden case, the output) left out."""
    if isinstance(value, Phrase):
        inner = ",".join(
            f"{n}={v if _structural(value, n, v) else _key(v)}"
            for n, v in value.fields
            if n not in WHERE_FIELDS + QUOTED_FIELDS
        )
        return f"{value.kind.value}({inner})"
    if isinstance(value, Words):
        return "+".join(_key(p) for p in value.parts)
    if isinstance(value, int | float):
        return "#"
    return str(value)[:80]


def _without_numbers(value):
    if isinstance(value, Phrase):
        fields = tuple(
            (
                n,
                v
                if _structural(value, n, v)
                else _DROPPED
                if n in WHERE_FIELDS + QUOTED_FIELDS
                else _without_numbers(v),
            )
            for n, v in value.fields
        )
        return replace(value, fields=fields, case="")
    if isinstance(value, Words):
        return Words(tuple(_without_numbers(p) for p in value.parts), value.sep)
    if isinstance(value, int | float):
        return _DROPPED
    return value


def finding(reason: Reason) -> dict | None:
    """What the judge found wrong in a cell, as a group key and its labels (None: it passed, or the reason is
    the kernel's own text)."""
    found = _differences(reason)
    if not found:
        return None
    labels = [_without_numbers(d) for d in found[:LABELLED]]
    prop = found[0].failed
    out = {
        "property": prop.value if prop is not None else "",
        "kind": found[0].kind.value,
        "key": "|".join(_key(d) for d in found),
        "en": "; ".join(say(d, "en").removeprefix(": ") for d in labels),
        "zh": "；".join(say(d, "zh").removeprefix(": ").removeprefix("：") for d in labels),
    }
    mistake = next((str(d.get("mistake")) for d in found if d.kind is Kind.KNOWN_MISTAKE), "")
    if mistake:  # the known mistake the visible check names too: its exercise names the hint for it
        out["mistake"] = mistake
    return out
