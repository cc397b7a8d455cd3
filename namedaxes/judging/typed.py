"""What a program's types guarantee about its reductions, read from its exported module (issue 56).

On Explicit mesh axes JAX types every value with its layout, and an exported module keeps those types: each
operation's result is constrained to its type (`sdy.sharding_constraint <@mesh, [{"fsdp_axis"}, {}]>`), and a
value that still holds one partial sum per device says so (`unreduced={"fsdp_axis"}`). A reduction over an axis
is where the types go from partial to whole: a value typed (or made, by a contraction over a dimension split over
the axis) partial whose next type is not unreduced over it, or an explicit `all_reduce` of a per-device region.
The compiler writes an all-reduce for each; a backend may then merge or hoist them (XLA on a TPU v5e turns the m
reductions of a loop into one), so bytes read from one compiled program are a fact about that backend. The
exported module is the same whatever compiles it: `typed_reductions` is the visible check's count and the
grader's (`Work.reduced_bytes`).

Each reduction counts the bytes of its result as often as it runs: a `while` body as often as its counter lets it
run (a counter from a constant, compared less-than with a constant); a loop whose trip count only its data decide
as often as it ran where it was run to count it (`trips`: the module read is then the counted variant's,
`loop_counters.counted`, whose loops carry their tags; `counted_run.counted_reductions`), else `UNKNOWN_TRIPS`
times and said (`Reductions.uncounted`: only loops that hold a reduction, whose count changes the figure); a
conditional's costliest branch; a called function as often as its call runs. The module is hostile data: every
walk is bounded, and a tag that two loops carry (one forged on a loop the rewrite did not reach) counts neither.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

import numpy as np

from . import jax_private
from .hlo import group_axes
from .loop_counters import CONDITION_PREFIX, RECOUNT, TAG
from .module_texts import module_text
from .runs import UNKNOWN_TRIPS
from .stablehlo import STABLEHLO_COLLECTIVES, stablehlo_collective
from .work import Work

__all__ = [
    "Reductions",
    "typed_reductions",
    "exported_reductions",
    "read_reductions",
    "with_reductions",
    "UNREADABLE_REDUCTIONS",
]

_MAX_DEPTH = 32  # calls and regions followed into (a module is hostile data)
_MAX_OPS = 200_000  # operations visited in all
_CONSTRAINTS = ("sdy.sharding_constraint", "sdy.reshard")
_REDUCING = ("stablehlo.all_reduce", "stablehlo.reduce_scatter")


@dataclass(frozen=True)
class Reductions:
    """The reductions a program's types make over its mesh's axes: `nbytes`, the bytes of their results, each
    counted as often as it runs; `in_loop`, whether one runs in a loop's body; `uncounted`, loops holding a
    reduction whose trip count the module does not fix and that were not run to count them (each counted
    `UNKNOWN_TRIPS` times: not a fact about the program); `measured`, such loops counted as often as they ran."""

    nbytes: int = 0
    in_loop: bool = False
    uncounted: int = 0
    measured: int = 0


def _axes_in(braces: str) -> frozenset:
    return frozenset(re.findall(r'"([^"]+)"', braces))


def _sharding(text: str) -> tuple[tuple[frozenset, ...], frozenset] | None:
    """(axes each dimension is split over, axes unreduced over) of a `#sdy.sharding<@mesh, [...], ...>`."""
    m = re.search(r"<@?[\w.\-]*\s*,\s*\[(.*?)\](.*)>", text, re.S)
    if not m:
        return None
    dims = tuple(_axes_in(d) for d in re.findall(r"\{([^{}]*)\}", m.group(1)))
    unreduced = re.search(r"unreduced\s*=\s*\{([^{}]*)\}", m.group(2))
    return dims, _axes_in(unreduced.group(1)) if unreduced else frozenset()


def _ints(attr_text: str, key: str) -> list[int]:
    m = re.search(key + r"\s*=\s*\[([^\]]*)\]", attr_text)
    return [int(v) for v in re.findall(r"\d+", m.group(1))] if m else []


_BITS = {"i1": 8, "pred": 8}


def _nbytes(value) -> int:
    """The bytes of a ranked tensor value (`tensor<32x64xf32>`), 0 for anything else."""
    m = re.fullmatch(r"tensor<((?:\d+x)*)([a-z]+\d*)(?:,.*)?>", str(value.type).strip())
    if not m:
        return 0
    bits = _BITS.get(m.group(2)) or int(re.sub(r"\D", "", m.group(2)) or 32)
    return int(np.prod([int(d) for d in m.group(1).split("x") if d], dtype=np.int64)) * max(bits // 8, 1)


class _Reader:
    """One walk of a module: each value's (split dims, partial axes), the reductions found."""

    def __init__(self, module, names: tuple, sizes: tuple, trips: dict | None = None):
        ir = jax_private.ir()
        self.ir, self.names, self.sizes = ir, names, sizes
        self.trips = _trusted(module, trips or {})
        self.variant = trips is not None  # a counted variant's module: the rewrite's own calls are known
        self.funcs = {}
        for op in module.body.operations:
            if op.operation.name == "func.func":
                self.funcs[ir.StringAttr(op.operation.attributes["sym_name"]).value] = op.operation
        self.types: dict = {}  # value -> (split dims, partial axes)
        self.nbytes, self.in_loop, self.uncounted, self.measured, self.ops = 0.0, False, 0, 0, 0

    def type_of(self, value):
        return self.types.get(value, ((), frozenset()))

    def reduce(self, value, runs: float, in_loop: bool) -> None:
        self.nbytes += runs * _nbytes(value)
        self.in_loop = self.in_loop or in_loop

    def func(self, func, args: list, runs: float, in_loop: bool, depth: int) -> list:
        """Walk `func` with its arguments typed `args`; the types of what it returns."""
        blocks = list(func.regions[0].blocks) if func.regions else []
        if not blocks or depth > _MAX_DEPTH:
            return []
        return self.block(blocks[0], args, runs, in_loop, depth)

    def block(self, block, args: list, runs: float, in_loop: bool, depth: int) -> list:
        for arg, typed in zip(block.arguments, args):
            self.types[arg] = typed
        returned: list = []
        for op in block.operations:
            self.ops += 1
            if self.ops > _MAX_OPS:
                raise ValueError("module too large to read its reductions")
            op = op.operation
            if op.name in ("func.return", "stablehlo.return", "sdy.return"):
                returned = [self.type_of(v) for v in op.operands]
                continue
            self.operation(op, runs, in_loop, depth)
        return returned

    def operation(self, op, runs: float, in_loop: bool, depth: int) -> None:
        name = op.name
        partial = frozenset().union(*(self.type_of(v)[1] for v in op.operands)) if op.operands else frozenset()
        if name in _CONSTRAINTS and op.operands:
            typed = _sharding(str(op.attributes["sharding"])) if "sharding" in op.attributes else None
            dims, unreduced = typed if typed is not None else ((), frozenset())
            if partial - unreduced:
                self.reduce(op.results[0], runs, in_loop)
            self.types[op.results[0]] = (dims, unreduced)
            return
        if name == "func.call":
            symbol = self.ir.FlatSymbolRefAttr(op.attributes["callee"]).value
            callee = self.funcs.get(symbol)
            if self.variant and RECOUNT in op.attributes and symbol.startswith(CONDITION_PREFIX):
                callee = None  # a call the counted variant adds only to count a condition's loops: not the program's
            args = [self.type_of(v) for v in op.operands]
            out = self.func(callee, args, runs, in_loop, depth + 1) if callee is not None else []
            for i, result in enumerate(op.results):
                self.types[result] = out[i] if i < len(out) else ((), partial)
            return
        if name == "stablehlo.while":
            self.loop(op, runs, in_loop, depth)
            return
        if name in ("stablehlo.case", "stablehlo.if"):
            self.branches(op, runs, in_loop, depth)
            return
        if name in STABLEHLO_COLLECTIVES:
            _, _, groups = stablehlo_collective(op, int(np.prod(self.sizes)) if self.sizes else 1)
            if name in _REDUCING and group_axes(groups, self.names, self.sizes):
                self.reduce(op.results[0], runs, in_loop)
        if name == "stablehlo.dot_general" and len(op.operands) >= 2:
            numbers = str(op.attributes["dot_dimension_numbers"]) if "dot_dimension_numbers" in op.attributes else ""
            for operand, key in ((op.operands[0], "lhs_contracting_dimensions"), (op.operands[1], "rhs_contracting")):
                dims = self.type_of(operand)[0]
                partial |= frozenset().union(*(dims[d] for d in _ints(numbers, key + r"\w*") if d < len(dims)))
        if name == "stablehlo.reduce" and op.operands:
            dims = self.type_of(op.operands[0])[0]
            attr = str(op.attributes["dimensions"]) if "dimensions" in op.attributes else ""
            reduced = [int(v) for v in re.findall(r"\d+", attr.split(":", 1)[-1])] if attr else []
            partial |= frozenset().union(*(dims[d] for d in reduced if d < len(dims)))
        for region in op.regions:  # a per-device region's body, a reducer: walked where it sits
            for block in region.blocks:
                self.block(block, [((), frozenset())] * len(block.arguments), runs, in_loop, depth + 1)
        for result in op.results:
            self.types[result] = ((), partial)

    def loop(self, op, runs: float, in_loop: bool, depth: int) -> None:
        fixed, tag = float(_trips(op)), _tag(op)  # fixed < 0: only the loop's data decide its trips
        measured = fixed < 0 and tag in self.trips
        # else unknown: each reduction inside counted UNKNOWN_TRIPS times per run, and said below
        trips = self.trips[tag] if measured else fixed if fixed >= 0 else float(UNKNOWN_TRIPS)
        args = [self.type_of(v) for v in op.operands]
        cond, body = op.regions[0].blocks[0], op.regions[1].blocks[0]
        before = self.nbytes
        self.block(cond, args, runs * (trips + 1), True, depth + 1)
        out = self.block(body, args, runs * trips, True, depth + 1)
        if self.nbytes > before and fixed < 0:  # a reduction inside: its count changes the figure
            self.measured, self.uncounted = self.measured + measured, self.uncounted + (not measured)
        for i, result in enumerate(op.results):
            self.types[result] = out[i] if i < len(out) else ((), frozenset())

    def branches(self, op, runs: float, in_loop: bool, depth: int) -> None:
        before, best, out = (self.nbytes, self.in_loop), None, []
        for region in op.regions:
            self.nbytes, self.in_loop = before
            found = [self.block(b, [], runs, in_loop, depth + 1) for b in region.blocks]
            if best is None or self.nbytes > best[0]:
                best, out = (self.nbytes, self.in_loop), (found[0] if found else [])
        self.nbytes, self.in_loop = best if best is not None else before
        for i, result in enumerate(op.results):
            self.types[result] = out[i] if i < len(out) else ((), frozenset())


def _tag(op) -> int | None:
    """The counted variant's number of a loop (`loop_counters.TAG`), None where it has none."""
    key = "mhlo.frontend_attributes"
    attrs = op.attributes[key] if key in op.attributes else None  # noqa: SIM401 - MLIR attributes have no .get
    found = re.search(TAG + r'\s*=\s*"(\d+)"', str(attrs)) if attrs is not None else None
    return int(found.group(1)) if found else None


def _trusted(module, trips: dict) -> dict:
    """`trips` of the tags exactly one `while` of the module carries (a tag on two is forged on one of them)."""
    if not trips:
        return {}
    seen: dict = {}
    stack, visited = [module.operation], 0
    while stack and visited < _MAX_OPS:
        op = stack.pop()
        visited += 1
        if op.name == "stablehlo.while":
            seen[_tag(op)] = seen.get(_tag(op), 0) + 1
        stack += [o.operation for region in op.regions for block in region.blocks for o in block.operations]
    return {k: float(t) for k, t in trips.items() if seen.get(k) == 1}


def _through_constraints(value, ir):
    """The value a chain of sharding constraints starts from."""
    for _ in range(16):
        owner = value.owner
        if not isinstance(owner, ir.Operation | ir.OpView):
            return value
        op = getattr(owner, "operation", owner)
        if op.name not in _CONSTRAINTS or not op.operands:
            return value
        value = op.operands[0]
    return value


def _constant(value, ir) -> int | None:
    value = _through_constraints(value, ir)
    owner = value.owner
    if not isinstance(owner, ir.Operation | ir.OpView):
        return None
    op = getattr(owner, "operation", owner)
    if op.name != "stablehlo.constant":
        return None
    m = re.fullmatch(r"dense<(-?\d+)>\s*:.*", str(op.attributes["value"]).strip())
    return int(m.group(1)) if m else None


def _trips(op) -> int:
    """A `stablehlo.while`'s trip count: its condition compares a counter (an argument that starts at a constant
    and that its body returns plus 1) less-than with a constant; -1 for any other loop."""
    ir = jax_private.ir()
    cond, body = op.regions[0].blocks[0], op.regions[1].blocks[0]
    ops = [o.operation for o in cond.operations]
    if len(ops) < 2 or ops[-1].name != "stablehlo.return" or not ops[-1].operands:
        return -1
    test = ops[-1].operands[0].owner
    test = getattr(test, "operation", test)
    if getattr(test, "name", "") != "stablehlo.compare" or "LT" not in str(test.attributes["comparison_direction"]):
        return -1
    counter, limit = (_through_constraints(v, ir) for v in test.operands)
    bound = _constant(limit, ir)
    index = next((i for i, a in enumerate(cond.arguments) if a == counter), None)
    if bound is None or index is None or index >= len(op.operands):
        return -1
    start = _constant(op.operands[index], ir)
    step = _step(body, index, ir)
    if start is None or step != 1:
        return -1
    return max(bound - start, 0)


def _step(body, index: int, ir) -> int | None:
    """What the body adds to its argument `index` (a constant added to it), or None."""
    ops = [o.operation for o in body.operations]
    if not ops or ops[-1].name != "stablehlo.return" or index >= len(ops[-1].operands):
        return None
    value = _through_constraints(ops[-1].operands[index], ir)
    owner = value.owner
    op = getattr(owner, "operation", owner)
    if getattr(op, "name", "") != "stablehlo.add" or len(op.operands) != 2:
        return None
    a, b = (_through_constraints(v, ir) for v in op.operands)
    arg = body.arguments[index]
    if a == arg:
        return _constant(b, ir)
    return _constant(a, ir) if b == arg else None


def typed_reductions(text: str, names: tuple, sizes: tuple, trips: dict | None = None) -> Reductions:
    """The reductions over the mesh's axes (`names`, `sizes`) that an exported module's types make; `trips`: the
    trips per entry of the counted variant's loops by tag, measured (`measured_trips.tag_trips`), where `text` is
    that variant's module."""
    ir = jax_private.ir()
    with jax_private.ir_context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        reader = _Reader(module, names, sizes, trips)
        main = reader.funcs.get("main")
        if main is None:
            return Reductions()
        args = []
        attrs = main.attributes["arg_attrs"] if "arg_attrs" in main.attributes else None  # noqa: SIM401 - no .get
        for i in range(len(main.regions[0].blocks[0].arguments)):
            found = _sharding(str(attrs[i])) if attrs is not None and i < len(attrs) else None
            args.append(found if found is not None else ((), frozenset()))
        reader.func(main, args, 1, False, 0)
        nbytes = int(round(reader.nbytes))
        return Reductions(nbytes, reader.in_loop, reader.uncounted, reader.measured)


def exported_reductions(exp, names: tuple, sizes: tuple, trips: dict | None = None) -> Reductions:
    """`typed_reductions` of an exported program's module (`trips`: of its loops by tag, where it is a counted
    variant)."""
    return typed_reductions(module_text(exp), names, sizes, trips)


# `Work.reduced_bytes` of a module the reader cannot walk (too many operations): more than any case allows
UNREADABLE_REDUCTIONS = 1 << 40


def read_reductions(exp, names: tuple, sizes: tuple) -> Reductions | None:
    """The judge's one reading of the reductions an exported program's types make (`exported_reductions`); None
    where its module cannot be read. Where a case judges them only: walking a training step's module costs about
    0.15 s, so the reading is passed on (`with_reductions`, then `counted_run.counted_reductions`), not repeated."""
    try:
        return exported_reductions(exp, names, sizes)
    except Exception:  # noqa: BLE001 - a hostile module: judged as reducing more than any case allows
        return None


def with_reductions(work: Work, read: Reductions | None) -> Work:
    """`work` with the reductions its exported program's types make as `read_reductions` read them
    (`Work.reduced_bytes`, read from its module, not from the compile: the same on every backend);
    `UNREADABLE_REDUCTIONS` where the module could not be read (`read` None)."""
    return dataclasses.replace(work, reduced_bytes=UNREADABLE_REDUCTIONS if read is None else read.nbytes)
