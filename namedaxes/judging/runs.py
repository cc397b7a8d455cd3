"""How often one call of a program runs each of its computations (a loop's body as often as the loop runs), and
what follows from it: the bytes every collective delivers, the matmul FLOPs XLA's cost analysis leaves out (it
counts a loop's body once), and each kind of collective's schedule (`collective_sends`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .hlo import ARRAY_RE, HEAD_RE, collectives_where, describe_collective, group_axes, result_bytes
from .loop_trips import NAME_RE, loop_trips

__all__ = ["Sends", "collective_sends", "UNKNOWN_TRIPS", "runs_of", "sent_bytes", "loop_dot_flops"]


@dataclass(frozen=True)
class Sends:
    """How one device runs one kind of collective (`collective_sends`): `runs`, the times it runs in one
    call of the program (a loop's body counted as often as its known trip count says; 0 where a loop's
    count is unknown), and `largest`, the bytes the largest single instance of it delivers to the device."""

    runs: int
    largest: int


UNKNOWN_TRIPS = 1 << 10  # how often `Work` counts a loop's body whose trip count XLA does not know
_MAX_RUNS = 1 << 40


def _trip_counts(text: str) -> tuple[dict[str, list[tuple[str, int]]], str | None]:
    """computation name -> the computations it runs and how often per run of it (a `while` body: its
    `known_trip_count`, else the count its condition and counter state (`loop_trips.loop_trips`: a TPU's text
    does not print XLA's), -1 when unknown; anything else it calls: once), and the entry computation's name."""
    calls: dict[str, list[tuple[str, int]]] = {}
    code: dict[str, dict[str, str]] = {}  # computation -> instruction name -> its line (`loop_trips`)
    roots: dict[str, str] = {}
    loops: list[tuple[str, int, str]] = []  # (computation, position in its calls, the while's line)
    current, entry = None, None
    for line in text.splitlines():
        head = HEAD_RE.match(line)
        if head:
            current = head.group(2)
            calls[current], code[current] = [], {}
            entry = current if head.group(1) else entry
            continue
        if current is None:
            continue
        named = NAME_RE.match(line)
        if named:
            code[current][named.group(2)] = line
            if named.group(1):
                roots[current] = named.group(2)
        body = re.search(r"\bbody=%?([\w.\-]+)", line)
        if body and " while(" in line:
            trips = re.search(r'"known_trip_count":\{"n":"(\d+)"\}', line)
            if not trips:
                loops.append((current, len(calls[current]), line))
            calls[current].append((body.group(1), int(trips.group(1)) if trips else -1))
            continue
        for callee in re.findall(r"(?:calls|to_apply|true_computation|false_computation)=%?([\w.\-]+)", line):
            calls[current].append((callee, 1))
        for group in re.findall(r"branch_computations=\{([^}]*)\}", line):
            calls[current].extend((c.strip().lstrip("%"), 1) for c in group.split(",") if c.strip())
    for caller, i, line in loops:
        calls[caller][i] = (calls[caller][i][0], loop_trips(code, roots, caller, line))
    return calls, entry


def runs_of(text: str, unknown: int = UNKNOWN_TRIPS) -> dict[str, int]:
    """computation name -> how often one call of the program runs it: the entry once, a loop's body its
    known trip count times per run of the loop (`unknown` times where XLA does not know it), anything else
    once per run of its caller. Summed over callers with memory, so a program whose computations share
    callees costs one pass, whatever its shape (the text is a student's program: bounded work)."""
    calls, entry = _trip_counts(text)
    callers: dict[str, list[tuple[str, int]]] = {}
    for caller, callees in calls.items():
        for callee, n in callees:
            callers.setdefault(callee, []).append((caller, unknown if n < 0 else n))
    memo: dict[str, int] = {}

    def runs(name: str, depth: int = 0) -> int:
        if name == entry:
            return 1
        if name in memo or depth > 64:
            return memo.get(name, 0)
        memo[name] = 0  # a cycle (none in valid HLO) adds nothing
        memo[name] = min(sum(runs(c, depth + 1) * n for c, n in callers.get(name, [])), _MAX_RUNS)
        return memo[name]

    return {name: runs(name) for name in calls}


def sent_bytes(text: str, n_devices: int, runs: dict[str, int]) -> int:
    """The bytes every collective of an optimized HLO module delivers to one device in one call of the
    program, each counted as often as its computation runs (`Work.sent_bytes`). A collective whose every group is
    one device (a psum over an axis of size 1, which the CPU backend keeps and a TPU's compiler drops) sends
    nothing."""
    lines = collectives_where(text, n_devices)
    return sum(
        result_bytes(line) * runs.get(where, 0)
        for _, _, groups, line, where in lines
        if any(len(set(group)) > 1 for group in groups)
    )


_DOT_RE = re.compile(r"^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*(\S+)\s+dot\(%?([\w.\-]+)")
_TYPE_RE = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(\w+\[[\d,]*\])")


def loop_dot_flops(text: str, runs: dict[str, int]) -> float:
    """The FLOPs of the matmuls (`dot`) in computations that run more than once per call, beyond their
    first run: what XLA's cost analysis, which counts a loop's body once, leaves out. 2 x the result's
    elements x the left operand's contracted elements per `dot`."""
    extra, current, types = 0.0, None, {}
    for line in text.splitlines():
        head = HEAD_RE.match(line)
        if head:
            current, types = head.group(2), {}
            continue
        typed = _TYPE_RE.match(line)
        if typed:
            types[typed.group(1)] = typed.group(2)
        dot = _DOT_RE.match(line)
        if not dot or runs.get(current, 0) <= 1:
            continue
        lhs = _shape(types.get(dot.group(2), ""))
        contracted = re.search(r"lhs_contracting_dims=\{([\d,]*)\}", line)
        dims = [int(d) for d in contracted.group(1).split(",") if d] if contracted else []
        k = int(np.prod([lhs[d] for d in dims if d < len(lhs)] or [1]))
        extra += 2.0 * int(np.prod(_shape(dot.group(1)) or [1])) * k * (runs[current] - 1)
    return extra


def _shape(type_text: str) -> list[int]:
    """The dimensions of the first array type in `type_text` ("f32[16,8]{1,0}" -> [16, 8])."""
    m = ARRAY_RE.search(type_text)
    return [int(d) for d in m.group(2).split(",") if d] if m else []


def collective_sends(text: str, names: tuple, sizes: tuple, n_devices: int) -> dict[str, Sends]:
    """Each kind of collective of an optimized HLO module ("ppermute over 'stage_axis'") with how often one
    call of the program runs it and the bytes its largest instance delivers (`Sends`): the schedule of a
    pipeline (m + k - 2 ppermutes of one microbatch each) or of a ring (k - 1 sends of one block), read from
    the program. A loop whose trip count XLA does not know counts its body's collectives 0 times here
    (`Work.sent_bytes` counts them `UNKNOWN_TRIPS` times)."""
    runs = runs_of(text, unknown=0)
    out: dict[str, list[int]] = {}
    for op, reducer, groups, line, where in collectives_where(text, n_devices):
        for axis in group_axes(groups, names, sizes):
            seen = out.setdefault(describe_collective(op, reducer, axis), [0, 0])
            seen[0] += runs.get(where, 0)
            seen[1] = max(seen[1], result_bytes(line))
    return {desc: Sends(r, b) for desc, (r, b) in sorted(out.items())}
