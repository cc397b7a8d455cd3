"""Which collectives of a compiled program run while it computes: a reader of an optimized, scheduled HLO text.

An optimized module's entry computation lists its instructions in the order the device runs them
(`is_scheduled=true`). A collective that runs alone is one instruction: nothing runs beside it. A TPU splits
an asynchronous collective over several instructions of the entry computation: it starts in one (an
`AsyncCollectiveStart`), moves its data inside fusions that also compute (XLA for TPU's "async collective
fusions") and is done in a later one; every instruction between its first and its last runs while the data
moves. `collective_spans` lists, for each collective of the entry (by its `channel_id`), its kind, the
element type and bytes of its result on one device, where it starts and ends in the entry's order, and how
many of the instructions in that span hold a matmul (a `dot` or `convolution`, in the instruction or in the
computations it calls): the compute it can hide behind. Notebook 10 reads the recorded v5e 2 x 4 programs
with it; the collective matmul of notebook 08 is the same idea written by hand.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .judging.hlo import array_bytes
from .judging.instructions import parse_module

__all__ = ["Span", "collective_spans"]

_KINDS = ("all-gather", "all-reduce", "reduce-scatter", "collective-permute", "all-to-all")
_CHANNEL_RE = re.compile(r"channel_id=(\d+)")
_CALLEE_RE = re.compile(r"(?:calls|to_apply|body|condition)=%?([\w.\-]+)")


@dataclass(frozen=True)
class Span:
    """One collective of the entry computation, in its scheduled order."""

    kind: str  # all-gather, all-reduce, reduce-scatter, collective-permute, all-to-all
    dtype: str  # its result's element type (the first, for a tuple)
    nbytes: int  # its result's bytes on one device
    first: int  # the index, in the entry's order, of the first instruction that carries it
    last: int  # ... and of the last
    matmuls: int  # instructions from first to last that hold a matmul: the compute it runs beside

    @property
    def hidden(self) -> bool:
        return self.matmuls > 0


def _collective(op: str, line: str) -> tuple[str, str, str, int] | None:
    """(channel, kind, dtype, bytes) of a collective instruction line, or None."""
    kind = next((k for k in _KINDS if op == k or op == f"{k}-start"), None)
    channel = _CHANNEL_RE.search(line)
    if kind is None or channel is None:
        return None
    result = line.split("=", 1)[1].split(f" {op}(", 1)[0]
    dtype = re.search(r"([a-z]+\d+)\[", result)
    return channel.group(1), kind, dtype.group(1) if dtype else "?", sum(array_bytes(result))


def _name(line: str) -> str:
    return line.split("=", 1)[0].replace("ROOT", "").strip().lstrip("%")


def _operand(line: str, op: str) -> str:
    return line.split(f" {op}(", 1)[1].split(")", 1)[0].split(",")[0].strip().lstrip("%")


def collective_spans(text: str) -> list[Span]:
    """The entry computation's collectives, each with its span and the matmuls inside it (module docstring)."""
    module = parse_module(text)
    bodies, entry = module.computations, module.entry
    memo: dict[str, tuple[bool, frozenset]] = {}

    def holds(name: str, depth: int = 0) -> tuple[bool, frozenset]:
        """(has a matmul, the collectives' channels), through the computations it calls."""
        if name in memo or depth > 32 or name not in bodies:
            return memo.get(name, (False, frozenset()))
        memo[name] = (False, frozenset())
        dot, channels = False, set()
        for op, line in ((i.op, i.line) for i in bodies[name]):
            dot = dot or op in ("dot", "convolution")
            found = _collective(op, line)
            channels |= {found[0]} if found else set()
            for callee in _CALLEE_RE.findall(line):
                d, c = holds(callee, depth + 1)
                dot, channels = dot or d, channels | c
        memo[name] = (dot, frozenset(channels))
        return memo[name]

    facts: dict[str, tuple[str, str, int]] = {}
    for body in bodies.values():
        for op, line in ((i.op, i.line) for i in body):
            found = _collective(op, line)
            if found and found[0] not in facts:
                facts[found[0]] = found[1:]
    order, named = [], {}
    for op, line in ((i.op, i.line) for i in bodies.get(entry, [])):
        dot = op in ("dot", "convolution")
        found = _collective(op, line)
        channels = {found[0]} if found else set()
        if op.endswith("-done"):  # a start's done names the start, not its channel
            channels |= named.get(_operand(line, op), set())
        for callee in _CALLEE_RE.findall(line):
            d, c = holds(callee)
            dot, channels = dot or d, channels | c
        named[_name(line)] = channels
        order.append((dot, channels))
    spans = []
    for channel, (kind, dtype, nbytes) in facts.items():
        at = [i for i, (_, channels) in enumerate(order) if channel in channels]
        if at:
            matmuls = sum(dot for dot, _ in order[at[0] : at[-1] + 1])
            spans.append(Span(kind, dtype, nbytes, at[0], at[-1], matmuls))
    return sorted(spans, key=lambda s: (s.first, s.last))
