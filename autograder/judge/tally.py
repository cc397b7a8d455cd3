"""What the cases of one test cell found, and the cell's verdict from it: values compared (a known mistake named
where the values are one, said once for several cases), then the cell's communication against the reference's.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ..reasons import Kind, Phrase, Verdict, Words
from ..reasons import phrase as say
from .compare import compare
from .judged_cases import CellReference
from .mistakes import named

__all__ = ["Tally"]


@dataclass
class Tally:
    """What the cases of one test cell found, for the verdict."""

    cases: dict
    exact: bool  # structure cells: the reference's collectives themselves
    ref_comm: set[str]
    ref_axes: set[str]
    diffs: list[Phrase] = field(default_factory=list)
    unreadable: bool = False  # a case recorded no readable program: its communication is unknown
    want: dict[str, Any] = field(default_factory=dict)
    got: dict[str, Any] = field(default_factory=dict)
    tolerances: dict = field(default_factory=dict)
    got_comm: set[str] = field(default_factory=set)
    got_axes: set[str] = field(default_factory=set)
    verified: set[str] = field(default_factory=set)  # collectives shown to reach the results (`_matters`)
    mistakes: dict[str, tuple[Phrase, ...]] = field(default_factory=dict)  # "<case><path>" -> mistakes its values are
    shown: dict[str, Phrase] = field(default_factory=dict)  # case -> the known mistake its program's text shows
    read_comm: set[str] = field(default_factory=set)  # the reference's collectives of the cases read and counted
    read_axes: set[str] = field(default_factory=set)  # and their axes

    @classmethod
    def of(cls, ref: CellReference) -> Tally:
        cases = ref.meta["cases"]
        exact = any(
            entry.get("structure") == "collectives" or not entry.get("values", True) for entry in cases.values()
        )
        comm, axes = set(), set()
        for case in cases:
            comm.update(ref.programs[case].compiled.communication)
            axes.update(ref.programs[case].compiled.axes)
        return cls(cases, exact, comm, axes)

    @property
    def only_axes(self) -> bool:
        """Communication over an axis the reference does not use loses the cell."""
        return any(entry.get("only_axes") for entry in self.cases.values())

    @property
    def only_collectives(self) -> bool:
        """A collective the reference does not perform loses the cell."""
        return any(entry.get("only_collectives") for entry in self.cases.values())

    def lost(self, finding: Phrase, unreadable: bool = False) -> None:
        """A case that earns nothing: what was found (and whether its communication is unknown now)."""
        self.diffs.append(finding)
        self.unreadable = self.unreadable or unreadable

    def values(self, case: str, entry: dict, ref_out: dict, out: dict) -> None:
        for path, value in ref_out.items():
            key = f"{case}{path}"
            self.want[key] = value
            self.tolerances[key] = (entry.get("rtol"), entry.get("atol"))
            if path in out:
                self.got[key] = out[path]

    def verdict(self) -> Verdict:
        compared = compare(self.want, self.got, tolerances=self.tolerances).differences
        differ = {str(d.get("key")) for d in compared if d.kind is Kind.VALUES_DIFFER}
        mistakes = named({key: found for key, found in self.mistakes.items() if key in differ})
        found = [mistakes.get(str(d.get("key")), d) if d.kind is Kind.VALUES_DIFFER else d for d in compared]
        shown = {c: p for c, p in self.shown.items() if any(_of_case(k, c) for k in differ)}
        if shown:  # a case whose program shows a known mistake: that finding for all its wrong values, said once
            found = [*shown.values(), *(d for d in found if not any(_of_case(str(d.get("key")), c) for c in shown))]
        diffs = self.diffs + _merged(found)
        if not self.unreadable:
            diffs += self.communication(self.ref_comm, self.ref_axes)
        elif self.read_comm:  # some cases' communication is unknown: what the others lack is said first
            diffs = self.communication(self.read_comm, self.read_axes)[:1] + diffs
        return Verdict(not diffs, tuple(diffs))

    def communication(self, ref_comm: set[str], ref_axes: set[str]) -> list[Phrase]:
        """Structure cells need the reference's collectives themselves (a psum, not an all_gather);
        value cells only need real communication over the reference's axes (any equivalent collective)."""
        diffs = []
        if self.exact:
            missing = sorted(ref_comm - self.got_comm)
        else:
            missing = [say("comm_over", axis=a) for a in sorted(ref_axes - self.got_axes)]
        if missing:
            seen = ", ".join(sorted(self.got_comm)) if self.got_comm else say("no_comm")
            diffs.append(say("comm_missing", missing=Words(tuple(missing), ", "), seen=seen))
        extra = sorted(self.got_axes - ref_axes)
        if extra and self.only_axes:
            diffs.append(say("comm_extra_axes", axes=", ".join(repr(a) for a in extra)))
        surplus = sorted(self.got_comm - ref_comm)
        if surplus and self.only_collectives:
            diffs.append(say("comm_surplus", ops=", ".join(surplus)))
        return diffs


def _of_case(key: str, case: str) -> bool:
    """Is `key` (`<case><path>`) one of `case`'s outputs?"""
    return key.startswith(case) and not key[len(case) : len(case) + 1].isalnum()


def _merged(diffs: list[Phrase]) -> list[Phrase]:
    """The same known mistake seen on several cases said once, its cases listed ("pmap_2, pmap_8: ...")."""
    out: list[Phrase] = []
    for d in diffs:
        same = next(
            (
                i
                for i, o in enumerate(out)
                if d.kind is o.kind is Kind.KNOWN_MISTAKE
                and [f for f in o.fields if f[0] != "key"] == [f for f in d.fields if f[0] != "key"]
            ),
            None,
        )
        if same is None:
            out.append(d)
            continue
        keys = f"{out[same].get('key')}, {d.get('key')}"
        out[same] = replace(
            out[same], fields=tuple(("key", keys) if n == "key" else (n, v) for n, v in out[same].fields)
        )
    return out
