"""How often one call of a program runs each of its computations, and what it does in all: the FLOPs of every
instruction and the bytes every collective delivers, each counted as often as its computation runs
(`program_totals`), and each kind of collective's schedule (`collective_sends`).

A `while` runs its body as often as it loops (its trip count) and its condition once more; a `conditional` runs
the branch the program fixes (a constant predicate or index) and otherwise one branch, whichever: its totals
are its costliest branch's, fact by fact, never the sum. A loop's trip count is the one XLA printed
(`known_trip_count`), else the one its counter's pattern states (`loop_trips.loop_trips`), else the one its
control computes from constants (`loop_trips.simulated_trips`: a quadratic condition, a bound from a psum of
constants), or else at most the limit of its own that stops it whatever its data (a counter's bound `and`ed
with a test of its data: `Totals.bounded`). A loop whose count only its data decide is counted as often as it
ran on the hidden inputs where the judge ran it so (`measured`: `measured_trips`, its trips per entry on the
busiest device; `Totals.measured` lists them), else `UNKNOWN_TRIPS` times (`Totals.uncounted` says how many such
loops there are).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .hlo import collectives_where, describe_collective, group_axes, result_bytes
from .instructions import Instruction, Module, arithmetic_flops, own_flops, parse_module
from .loop_trips import branch_taken, loop_trips, simulated_trips

__all__ = [
    "Sends",
    "Totals",
    "collective_sends",
    "UNKNOWN_TRIPS",
    "runs_of",
    "sent_bytes",
    "program_totals",
    "trip_counts",
]


@dataclass(frozen=True)
class Sends:
    """How one device runs one kind of collective (`collective_sends`): `runs`, the times it runs in one
    call of the program (a loop's body counted as often as its trip count says, a conditional's costliest
    branch; 0 where a loop's count is unknown), and `largest`, the bytes the largest single instance of it
    delivers to the device."""

    runs: int
    largest: int


@dataclass(frozen=True)
class Totals:
    """What one call of a program does on one device (`program_totals`): `flops` (every instruction as often as
    it runs), `xla_style` (the same count as XLA's cost analysis makes it: each loop's body and condition once,
    a conditional's costliest branch), `sent_bytes`, each kind of collective's runs (`runs`), and `uncounted`,
    the loops whose trip count the program does not fix (each counted `unknown` times)."""

    flops: float
    xla_style: float
    sent_bytes: int
    runs: dict = field(default_factory=dict)
    uncounted: int = 0
    bounded: int = 0  # loops counted by their own limit, which their data may cut short
    measured: tuple = ()  # each loop counted by running it on the hidden inputs: its trips per entry
    arithmetic: float = 0.0  # the FLOPs of arithmetic on floats alone, matmuls too (`Work.arithmetic_flops`)


UNKNOWN_TRIPS = 1 << 10  # how often `Work` counts a loop's body whose trip count only its data decide
_MAX_RUNS = 1 << 40
_TRIPS_RE = re.compile(r'"known_trip_count":\{"n":"(\d+)"\}')


def trip_counts(module: Module, measured: dict | None = None) -> tuple[dict[tuple[str, str], float], int, tuple]:
    """(computation, while instruction) -> its trip count (see above), `measured`'s where only its data decide it
    and it was measured, else -1; how many counts are the loop's own limit where its data may stop it sooner
    (`loop_trips.simulated_trips`); and the measured counts used (`Totals.measured`)."""
    code = {c: {i.name: i.line for i in ins} for c, ins in module.computations.items()}
    roots = {c: r.name for c in module.computations if (r := module.root(c)) is not None}
    out, bounded, ran = {}, 0, []
    for comp, instructions in module.computations.items():
        for ins in instructions:
            if ins.op != "while":
                continue
            known = _TRIPS_RE.search(ins.line)
            trips = int(known.group(1)) if known else loop_trips(code, roots, comp, ins.line)
            if trips < 0:
                trips, exact = simulated_trips(module, comp, ins)
                bounded += trips >= 0 and not exact
            if trips < 0 and measured and (comp, ins.name) in measured:
                trips = measured[(comp, ins.name)]
                ran.append(round(trips, 2))
            out[(comp, ins.name)] = trips
    return out, bounded, tuple(ran)


def _callees(module: Module, comp: str, ins: Instruction, trips: dict, unknown: int) -> list[tuple[str, int]]:
    """(computation, runs per run of `ins`) of what `ins` runs; a conditional's not fixed: each branch once."""
    if ins.op == "while":
        n = trips.get((comp, ins.name), -1)
        n = unknown if n < 0 else n
        return [(c, n) for c in ins.calls.get("body", [])] + [(c, n + 1) for c in ins.calls.get("condition", [])]
    if ins.op == "conditional":
        branches = ins.calls.get("branches", [])
        taken = branch_taken(module, comp, ins, len(branches))
        return [(b, 1) for i, b in enumerate(branches) if taken is None or i == taken]
    return [(c, 1) for key, names in ins.calls.items() if key not in ("branches",) for c in names]


def runs_of(text: str, unknown: int = UNKNOWN_TRIPS) -> dict[str, int]:
    """computation name -> how often one call of the program runs it: the entry once, a loop's body its trip
    count times per run of the loop and its condition once more (`unknown` times where only its data decide
    it), the branch a conditional's constant selects, and each branch of one not fixed as often as the
    conditional runs (at most that often), anything else once per run of its caller. Summed over callers with
    memory, so a program whose computations share callees costs one pass, whatever its shape."""
    module = parse_module(text)
    trips, _, _ = trip_counts(module)
    callers: dict[str, list[tuple[str, int]]] = {}
    for comp, instructions in module.computations.items():
        for ins in instructions:
            for callee, n in _callees(module, comp, ins, trips, unknown):
                callers.setdefault(callee, []).append((comp, n))
    memo: dict[str, int] = {}

    def runs(name: str, depth: int = 0) -> int:
        if name == module.entry:
            return 1
        if name in memo or depth > 64:
            return memo.get(name, 0)
        memo[name] = 0  # a cycle (none in valid HLO) adds nothing
        memo[name] = min(sum(runs(c, depth + 1) * n for c, n in callers.get(name, [])), _MAX_RUNS)
        return memo[name]

    return {name: runs(name) for name in module.computations}


def _collective_facts(text: str, n_devices: int, names: tuple, sizes: tuple) -> dict[tuple[str, str], tuple]:
    """(computation, instruction) -> (bytes it delivers to one device, the kinds it is) of every collective
    (`hlo.collectives_where`: a TPU's copies of one collective in the fusions that continue it are one). A
    collective whose every group is one device sends nothing."""
    out = {}
    for op, reducer, groups, line, where in collectives_where(text, n_devices):
        name = re.match(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=", line)
        sends = any(len(set(g)) > 1 for g in groups)
        kinds = tuple(describe_collective(op, reducer, a) for a in group_axes(groups, names, sizes)) if names else ()
        if name:
            out[(where, name.group(1))] = (result_bytes(line) if sends else 0, kinds)
    return out


def _merge(into: dict, add: dict, times: float) -> None:
    for key, value in add.items():
        into[key] = into.get(key, 0.0) + value * times


def program_totals(
    text: str,
    n_devices: int,
    names: tuple = (),
    sizes: tuple = (),
    unknown: int = UNKNOWN_TRIPS,
    measured: dict | None = None,
) -> Totals:
    """What one call of an optimized HLO module does on one device (`Totals`; see above), each computation
    evaluated once (with memory: a program whose computations share callees costs one pass). `measured`:
    (computation, while) -> trips per entry of the loops whose count only their data decide, run on the hidden
    inputs (`measured_trips`)."""
    module = parse_module(text)
    trips, bounded, ran = trip_counts(module, measured)
    sends = _collective_facts(text, n_devices, names, sizes)
    memo: dict[tuple[str, bool], dict] = {}

    def total(comp: str, xla: bool, depth: int = 0) -> dict:
        """comp's facts: "flops", "bytes" and ("runs", kind) -> count; `xla`: as XLA's cost analysis counts."""
        if (comp, xla) in memo or depth > 64:
            return memo.get((comp, xla), {})
        memo[(comp, xla)] = {}  # a cycle (none in valid HLO) adds nothing
        out: dict = {}
        types = module.types(comp)
        for ins in module.computations.get(comp, []):
            out["flops"] = out.get("flops", 0.0) + own_flops(
                ins, types, lambda c: total(c, xla, depth + 1).get("flops", 0.0)
            )
            # a reducer's or a sort's comparator is not reached here: its FLOPs are its caller's own
            out["arithmetic"] = out.get("arithmetic", 0.0) + arithmetic_flops(ins, types)
            sent, kinds = sends.get((comp, ins.name), (0, ()))
            out["bytes"] = out.get("bytes", 0.0) + sent
            for kind in kinds:
                out[("runs", kind)] = out.get(("runs", kind), 0.0) + 1
            _merge(out, _called(module, comp, ins, trips, unknown, xla, lambda c: total(c, xla, depth + 1)), 1)
        memo[(comp, xla)] = out
        return out

    entry = module.entry or ""
    true, xla = total(entry, False), total(entry, True)
    runs = {k[1]: int(round(v)) for k, v in true.items() if isinstance(k, tuple)}
    uncounted = sum(1 for n in trips.values() if n < 0)
    flops, xla_flops, sent = true.get("flops", 0.0), xla.get("flops", 0.0), int(round(true.get("bytes", 0)))
    return Totals(flops, xla_flops, sent, runs, uncounted, bounded, ran, true.get("arithmetic", 0.0))


def _called(module: Module, comp: str, ins: Instruction, trips: dict, unknown: int, xla: bool, total) -> dict:
    """The facts of what `ins` runs through the computations it calls (not its reducers, whose FLOPs are its
    own, per element): a loop's body `trips` times and its condition once more (once each, `xla`); a
    conditional's fixed branch, else its costliest branch fact by fact (XLA's cost analysis takes the maximum of
    its branches too); a fusion's, call's or async operation's computation once."""
    out: dict = {}
    if ins.op == "while":
        n = trips.get((comp, ins.name), -1)
        n = 1 if xla else (unknown if n < 0 else n)
        for body in ins.calls.get("body", []):
            _merge(out, total(body), n)
        for cond in ins.calls.get("condition", []):
            _merge(out, total(cond), 1 if xla else n + 1)
        return out
    if ins.op == "conditional":
        branches = ins.calls.get("branches", [])
        taken = None if xla else branch_taken(module, comp, ins, len(branches))
        for i, branch in enumerate(branches):
            if taken is None or i == taken:
                for key, value in total(branch).items():
                    out[key] = max(out.get(key, 0.0), value)
        return out
    if ins.op in ("fusion", "call", "async-start") or ins.op.endswith("-start") and "calls" in ins.calls:
        for callee in ins.calls.get("calls", []) + ins.calls.get("to_apply", []) * (ins.op == "call"):
            _merge(out, total(callee), 1)
    return out


def sent_bytes(text: str, n_devices: int) -> int:
    """The bytes every collective of an optimized HLO module delivers to one device in one call of the program,
    each counted as often as its computation runs (`Work.sent_bytes`, `program_totals`). A collective whose
    every group is one device (a psum over an axis of size 1, which the CPU backend keeps and a TPU's compiler
    drops) sends nothing."""
    return program_totals(text, n_devices).sent_bytes


def collective_sends(text: str, names: tuple, sizes: tuple, n_devices: int) -> dict[str, Sends]:
    """Each kind of collective of an optimized HLO module ("ppermute over 'stage_axis'") with how often one
    call of the program runs it (`program_totals`: a conditional's costliest branch) and the bytes its largest
    instance delivers (`Sends`): the schedule of a pipeline (m + k - 2 ppermutes of one microbatch each) or of a
    ring (k - 1 sends of one block), read from the program. A loop whose trip count only its data decide counts
    its body's collectives 0 times here (`Work.sent_bytes` counts them as often as the loop ran where the judge
    ran it to count it, `measured`, else `UNKNOWN_TRIPS` times)."""
    runs = program_totals(text, n_devices, names, sizes, unknown=0).runs
    largest: dict[str, int] = {}
    for op, reducer, groups, line, _ in collectives_where(text, n_devices):
        for axis in group_axes(groups, names, sizes):
            desc = describe_collective(op, reducer, axis)
            largest[desc] = max(largest.get(desc, 0), result_bytes(line))
    return {desc: Sends(runs.get(desc, 0), b) for desc, b in sorted(largest.items())}
