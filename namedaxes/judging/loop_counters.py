"""A variant of an exported program whose loops count their own runs (`counted`): the judge's way to count a
loop whose trip count only its data decide (a quadratic condition on a value of the data, a bound from a psum of
the data, "until converged") by running it on the hidden inputs.

Every `stablehlo.while` of the module carries two more values: how often its body
ran and how often the loop was entered, each of them `int32` and added up over every run of the loops, branches
and per-device regions around it and of every call of the function it sits in (a function's results
carry its loops' counters out), and the module returns them as extra outputs. A loop inside a per-device region
(`sdy.manual_computation`: `shard_map`, `pmap`) counts on each device: its counters leave the region as one
element per device. A loop in a loop's condition counts every test: the condition becomes a function of its own
(`CONDITION_PREFIX`), called again where the body starts and once after the loop (`RECOUNT` calls, which the
reader of the variant's types skips, `typed.py`), since a condition can hand out nothing but its test.
Each counted loop is tagged (`TAG`, a frontend attribute that XLA keeps on the compiled
`while`), so the compiled variant says which of its loops each pair of outputs counts (`runs.measured_trips`
matches them with the judged program's loops).

The program's values do not change, but for this: a counted loop stops after `MAX_TRIPS` runs of its body per entry,
so the judge's run ends even where the program's would not (its count then reads at most what it runs, and far
more than any exercise's reference). Per-device regions nest: an inner region's counters leave the outer one as
their elements on each of its devices. A loop the rewrite cannot reach (inside a region other than a loop, a
branch or a per-device region) keeps no counters and stays unmeasured. A module is
hostile data: the walk is bounded (`_MAX_LOOPS`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from . import jax_private
from .module_texts import module_text

__all__ = ["TAG", "MAX_TRIPS", "CONDITION_PREFIX", "RECOUNT", "Counted", "counted"]

TAG = "namedaxes_loop"  # the frontend attribute naming a counted loop in the compiled variant
MAX_TRIPS = 1 << 20  # a counted loop stops after this many runs of its body per entry (the judge's time bounded)
_MAX_LOOPS = 256  # loops counted in one program at most (the rest stay unmeasured)
CONDITION_PREFIX = "namedaxes_condition_"  # a loop's condition that holds a loop, made a function of its own
RECOUNT = "namedaxes_recount"  # a call of such a function the rewrite adds only to count its loops


@dataclass(frozen=True)
class Counted:
    """A variant of an exported program (`exp`) whose last `2 * loops` outputs are, for loop k (tagged k), the
    runs of its body (output `first + 2 k`) and the times it was entered (`first + 2 k + 1`), each one value per
    device of the per-device region it sits in (one value where it sits in no region)."""

    exp: object
    first: int
    loops: int


class _Threads:
    """The rewrite's state: the next loop's number, the module's meshes (name -> axis sizes), its functions (name
    -> operation) and the counters each function counted hands out ((slot, type), in order)."""

    def __init__(self, meshes: dict, functions: dict, module=None):
        self.loops, self.meshes, self.functions, self.counted = 0, meshes, functions, {}
        self.module = module

    def scalar(self):
        ir = jax_private.ir()
        return ir.RankedTensorType.get([], ir.IntegerType.get_signless(32))


def _filled(ty, value: int):
    ir, hlo = jax_private.ir(), jax_private.hlo()
    el = ir.IntegerType.get_signless(32)
    return hlo.constant(ir.DenseElementsAttr.get_splat(ty, ir.IntegerAttr.get(el, value)))


def _rebuilt(op, operands: list, types: list, attributes: dict | None = None):
    """A new operation like `op` (same name, attributes, regions moved over) with `operands` and result `types`;
    the old one's results replaced by the new one's first results, the old one erased."""
    ir = jax_private.ir()
    op = getattr(op, "operation", op)
    attrs = {name: op.attributes[name] for name in op.attributes}
    attrs.update(attributes or {})
    with ir.InsertionPoint(op), op.location:
        new = ir.Operation.create(op.name, results=types, operands=operands, attributes=attrs, regions=len(op.regions))
    for old_region, new_region in zip(op.regions, new.regions):
        for block in list(old_region.blocks):
            block.append_to(new_region)
    for old, fresh in zip(op.results, new.results):
        old.replace_all_uses_with(fresh)
    op.erase()
    return new


def _terminator(block):
    return list(block.operations)[-1]


def _extend_terminator(block, values: list) -> None:
    """The block's terminator given `values` as further operands (rebuilt: operands cannot be appended)."""
    end = getattr(_terminator(block), "operation", _terminator(block))
    _rebuilt(end, list(end.operands) + values, [r.type for r in end.results])


def _thread(block, state: _Threads) -> list:
    """Count every loop of `block` (and of the loops, branches and regions in it): its counters' values at the
    block's end, as (slot, value), slot 2 k the runs of loop k's body and 2 k + 1 the times it was entered."""
    out: list = []
    for op in list(block.operations):
        name = getattr(op, "operation", op).name
        if state.loops >= _MAX_LOOPS:
            break
        if name == "stablehlo.while":
            out += _while(op, state)
        elif name in ("stablehlo.if", "stablehlo.case"):
            out += _branches(op, state)
        elif name == "sdy.manual_computation":
            out += _region(op, state)
        elif name in ("func.call", "call"):
            out += _call(op, state)
    return _merged(block, out)


def _merged(block, pairs: list) -> list:
    """One value per slot: a loop counted twice in the block (a function called twice) adds its counts up."""
    hlo, ir = jax_private.hlo(), jax_private.ir()
    by_slot: dict = {}
    for slot, value in pairs:
        by_slot.setdefault(slot, []).append(value)
    if all(len(v) == 1 for v in by_slot.values()):
        return pairs
    end = _terminator(block)
    out = []
    for slot, values in by_slot.items():
        total = values[0]
        with ir.InsertionPoint(end), getattr(end, "operation", end).location:
            for value in values[1:]:
                total = hlo.add(total, value)
        out.append((slot, total))
    return out


def _call(op, state: _Threads) -> list:
    """A function's loops counted once in its body: every call of it hands their counters out."""
    op = getattr(op, "operation", op)
    callee = str(op.attributes["callee"]).lstrip("@") if "callee" in op.attributes else ""
    if callee not in state.counted:
        func = state.functions.get(callee)
        state.counted[callee] = []  # while it is counted (a cycle, which valid modules lack, counts nothing)
        if func is None or not func.regions or not func.regions[0].blocks:
            return []
        body = func.regions[0].blocks[0]
        found = _thread(body, state)
        if found:
            _extend_terminator(body, [v for _, v in found])
            _retype(func, [v.type for _, v in found])
        state.counted[callee] = [(s, v.type) for s, v in found]
    slots = state.counted[callee]
    if not slots:
        return []
    n = len(op.results)
    new = _rebuilt(op, list(op.operands), [r.type for r in op.results] + [t for _, t in slots])
    return [(s, r) for (s, _), r in zip(slots, list(new.results)[n:])]


def _while(op, state: _Threads) -> list:
    ir, hlo = jax_private.ir(), jax_private.hlo()
    op = getattr(op, "operation", op)
    tested, captured = _condition_function(op, state)
    cond, body = op.regions[0].blocks[0], op.regions[1].blocks[0]
    if tested is not None:  # the condition's loops: counted where the body starts, and once more after the loop
        _thread(cond, state)  # its own call retyped; what it counts there is counted again by the two below
        with ir.InsertionPoint.at_block_begin(body), op.location:
            _recount(tested, list(body.arguments) + captured)
    inner = _thread(body, state)
    k, state.loops = state.loops, state.loops + 1
    scalar = state.scalar()
    with ir.InsertionPoint(op), op.location:
        zeros = [_filled(scalar, 0)] + [_filled(v.type, 0) for _, v in inner]
    types = [scalar] + [v.type for _, v in inner]
    for t in types:
        cond.add_argument(t, op.location)
        body.add_argument(t, op.location)
    args = list(body.arguments)[-len(types) :]
    with ir.InsertionPoint(_terminator(body)), op.location:
        more = [hlo.add(args[0], _filled(scalar, 1))] + [hlo.add(a, v) for a, (_, v) in zip(args[1:], inner)]
    _extend_terminator(body, more)
    _capped(cond, list(cond.arguments)[-len(types)], op.location)
    n = len(op.results)
    tag = {"mhlo.frontend_attributes": ir.DictAttr.get({TAG: ir.StringAttr.get(str(k))})}
    new = _rebuilt(op, list(op.operands) + zeros, [r.type for r in op.results] + types, tag)
    with ir.InsertionPoint.after(new), new.location:
        entered = _filled(scalar, 1)
        last = _call(_recount(tested, list(new.results)[:n] + captured), state) if tested is not None else []
    results = list(new.results)[n:]
    return [(2 * k, results[0]), (2 * k + 1, entered)] + [(s, r) for (s, _), r in zip(inner, results[1:])] + last


def _holds_loop(block, functions: dict, depth: int = 0, seen: set | None = None) -> bool:
    """Does `block` hold a loop, in any region inside it or any function it calls (each function looked into once:
    a module is hostile data)?"""
    seen = set() if seen is None else seen
    for op in block.operations:
        op = getattr(op, "operation", op)
        if op.name == "stablehlo.while":
            return True
        if depth >= 32:
            continue
        inside = [b for region in op.regions for b in region.blocks]
        if op.name in ("func.call", "call") and "callee" in op.attributes:
            name = str(op.attributes["callee"]).lstrip("@")
            callee = None if name in seen else functions.get(name)
            seen.add(name)
            inside += list(callee.regions[0].blocks) if callee is not None and callee.regions else []
        if any(_holds_loop(b, functions, depth + 1, seen) for b in inside):
            return True
    return False


def _captured(block) -> list:
    """The values the operations of `block` (in any region inside it) use but that are made outside it, in order."""
    made, used, stack = set(), [], [block]
    while stack:
        b = stack.pop()
        made.update(b.arguments)
        for o in b.operations:
            o = getattr(o, "operation", o)
            made.update(o.results)
            used += list(o.operands)
            stack += [inner for region in o.regions for inner in region.blocks]
    out: list = []
    for v in used:
        if v not in made and v not in out:
            out.append(v)
    return out


def _as_arguments(block, values: list) -> None:
    """Every use of `values` inside `block` (any depth) replaced by a new argument of `block`, in order."""
    loc = jax_private.ir().Location.unknown()
    args = {v: block.add_argument(v.type, loc) for v in values}
    stack = [block]
    while stack:
        b = stack.pop()
        for o in b.operations:
            o = getattr(o, "operation", o)
            for i, v in enumerate(list(o.operands)):
                if v in args:
                    o.operands[i] = args[v]
            stack += [inner for region in o.regions for inner in region.blocks]


def _condition_function(op, state: _Threads) -> tuple:
    """A `while` whose condition holds a loop: the condition's block moved into a function of its own
    (`CONDITION_PREFIX`), which the condition now calls; that function, None where the condition holds none. A
    condition returns only its test, so its loops' counters cannot leave it: the function is called again (a
    `RECOUNT` call, `_recount`) where the body starts, on the values the test saw, and once after the loop, so that
    its loops count each of the trips + 1 tests. The values the condition uses from outside it become the
    function's last arguments: (the function, those values), (None, []) where the condition holds no loop."""
    ir = jax_private.ir()
    cond = op.regions[0].blocks[0]
    if state.module is None or not _holds_loop(cond, state.functions):
        return None, []
    captured = _captured(cond)
    n = len(cond.arguments)
    _as_arguments(cond, captured)
    types, end = [a.type for a in cond.arguments], getattr(_terminator(cond), "operation", _terminator(cond))
    results = [v.type for v in end.operands]
    name = f"{CONDITION_PREFIX}{len(state.functions)}"
    attrs = {
        "sym_name": ir.StringAttr.get(name),
        "function_type": ir.TypeAttr.get(ir.FunctionType.get(types, results)),
        "sym_visibility": ir.StringAttr.get("private"),
    }
    with ir.InsertionPoint(state.module.body), op.location:
        func = ir.Operation.create("func.func", attributes=attrs, regions=1)
    cond.append_to(func.regions[0])
    with ir.InsertionPoint(end), op.location:
        ir.Operation.create("func.return", operands=list(end.operands))
    end.erase()
    fresh = op.regions[0].blocks.append(*types[:n], arg_locs=[op.location] * n)
    with ir.InsertionPoint(fresh), op.location:
        operands = list(fresh.arguments) + captured
        call = ir.Operation.create("func.call", results=results, operands=operands, attributes=_callee(name))
        ir.Operation.create("stablehlo.return", operands=list(call.results))
    state.functions[name] = func
    return func, captured


def _callee(name: str, recount: bool = False) -> dict:
    ir = jax_private.ir()
    return {"callee": ir.FlatSymbolRefAttr.get(name), **({RECOUNT: ir.UnitAttr.get()} if recount else {})}


def _recount(func, operands: list):
    """A call of a condition's function (`_condition_function`) that only counts its loops (`RECOUNT`)."""
    ir = jax_private.ir()
    name = _symbol(func)
    results = list(ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value).results)[:1]
    return ir.Operation.create("func.call", results=results, operands=operands, attributes=_callee(name, True))


def _capped(cond, runs, location) -> None:
    """The loop's test `and`ed with `runs < MAX_TRIPS`: a loop that would run longer stops there, and its count
    reads `MAX_TRIPS`, at most what it runs (the judge's own time is bounded; the program itself, run for its
    values, is not)."""
    ir, hlo = jax_private.ir(), jax_private.hlo()
    end = getattr(_terminator(cond), "operation", _terminator(cond))
    with ir.InsertionPoint(end), location:
        limit = _filled(ir.RankedTensorType(runs.type), MAX_TRIPS)
        below = hlo.compare(
            runs, limit, hlo.ComparisonDirectionAttr.get("LT"), compare_type=hlo.ComparisonTypeAttr.get("SIGNED")
        )
        go = hlo.and_(end.operands[0], below)
    _rebuilt(end, [go], [])


def _branches(op, state: _Threads) -> list:
    """A conditional's branches each hand out the counters of every branch's loops (zero where not its own)."""
    ir = jax_private.ir()
    op = getattr(op, "operation", op)
    found = [dict(_thread(region.blocks[0], state)) for region in op.regions]
    slots = sorted({s for f in found for s in f})
    if not slots:
        return []
    types = {s: v.type for f in found for s, v in f.items()}
    for region, own in zip(op.regions, found):
        block = region.blocks[0]
        with ir.InsertionPoint(_terminator(block)), op.location:
            values = [own[s] if s in own else _filled(types[s], 0) for s in slots]
        _extend_terminator(block, values)
    n = len(op.results)
    new = _rebuilt(op, list(op.operands), [r.type for r in op.results] + [types[s] for s in slots])
    return list(zip(slots, list(new.results)[n:]))


def _region(op, state: _Threads) -> list:
    """A per-device region hands its loops' counters out as one element per device of its manual axes (a counter
    that is already one element per device of a region nested in it, n of them, as n elements per device)."""
    ir, hlo = jax_private.ir(), jax_private.hlo()
    op = getattr(op, "operation", op)
    attrs = {name: str(op.attributes[name]) for name in op.attributes}
    mesh = re.search(r"<@([\w.\-]+)", attrs.get("in_shardings", "") + attrs.get("out_shardings", ""))
    axes = re.findall(r'"([^"]+)"', attrs.get("manual_axes", ""))
    sizes = state.meshes.get(mesh.group(1), {}) if mesh else {}
    if not mesh or not axes or any(a not in sizes for a in axes):
        return []
    body = op.regions[0].blocks[0]
    inner = _thread(body, state)
    if not inner:
        return []
    i32 = ir.IntegerType.get_signless(32)
    local = [_elements(v) for _, v in inner]  # each counter flat: its elements on one device of this region
    with ir.InsertionPoint(_terminator(body)), op.location:
        _extend_terminator(body, [hlo.reshape(ir.RankedTensorType.get([k], i32), v) for k, (_, v) in zip(local, inner)])
    count = 1
    for a in axes:
        count *= sizes[a]
    spread = "<@{}, [{{{}}}]>".format(mesh.group(1), ", ".join(f'"{a}"' for a in axes))
    old = attrs["out_shardings"]
    joined = old[: old.rindex("]")] + (", " if "<@" in old else "") + ", ".join([spread] * len(inner)) + "]>"
    n = len(op.results)
    every = [ir.RankedTensorType.get([count * k], i32) for k in local]
    new = _rebuilt(op, list(op.operands), [r.type for r in op.results] + every, {"out_shardings": _attr(joined)})
    return [(s, r) for (s, _), r in zip(inner, list(new.results)[n:])]


def _elements(value) -> int:
    count = 1
    for d in jax_private.ir().RankedTensorType(value.type).shape:
        count *= d
    return count


def _attr(text: str):
    return jax_private.ir().Attribute.parse(text)


def _meshes(text: str) -> dict:
    """Mesh name -> {axis: size} of every `sdy.mesh` of the module's text."""
    out = {}
    for name, body in re.findall(r"sdy\.mesh\s+@([\w.\-]+)\s*=\s*<\[([^\]]*)\]", text):
        out[name] = {a: int(s) for a, s in re.findall(r'"([^"]+)"\s*=\s*(\d+)', body)}
    return out


def counted(exp) -> Counted | None:
    """`exp` with its loops counting their own runs (see above); None when it has no loop the rewrite reaches."""
    ir = jax_private.ir()
    text = module_text(exp)
    if "stablehlo.while" not in text:
        return None
    with jax_private.ir_context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        functions = {_symbol(op): getattr(op, "operation", op) for op in module.body.operations if _symbol(op)}
        main = functions.get("main")
        if main is None:
            return None
        if any(name.startswith(CONDITION_PREFIX) for name in functions):
            return None  # a module's own function of the rewrite's name: its calls could pass for the rewrite's
        state = _Threads(_meshes(text), functions, module)
        state.counted["main"] = []  # main is never called
        slots = _thread(main.regions[0].blocks[0], state)
        if not state.loops:
            return None
        every = dict(slots)
        values = [every[s] for s in range(2 * state.loops) if s in every]
        if len(values) != 2 * state.loops:
            return None  # a loop whose counters did not reach the function's end: nothing is measured
        block = main.regions[0].blocks[0]
        _extend_terminator(block, values)
        _retype(main, [v.type for v in values])
        blob = jax_private.module_to_bytecode(module)
        avals = [tuple(ir.RankedTensorType(v.type).shape) for v in values]
    return Counted(jax_private.with_more_outputs(exp, blob, avals), len(exp.out_avals), state.loops)


def _symbol(op) -> str:
    op = getattr(op, "operation", op)
    return str(op.attributes["sym_name"]).strip('"') if "sym_name" in op.attributes else ""


def _retype(func, more: list) -> None:
    """`func`'s type and result attributes given `more` results."""
    ir = jax_private.ir()
    old = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    func.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(old.inputs, list(old.results) + more))
    if "res_attrs" in func.attributes:
        attrs = list(ir.ArrayAttr(func.attributes["res_attrs"]))
        func.attributes["res_attrs"] = ir.ArrayAttr.get(attrs + [ir.DictAttr.get({})] * len(more))
