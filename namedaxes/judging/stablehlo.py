"""Reading an exported module once parsed into MLIR: its StableHLO collectives (as `hlo_collectives` reads the
compiled ones), its per-device regions (`sdy.manual_computation`: `shard_map`, `pmap`), where each collective
sits among them, and which regions' results the program returns.

A module is hostile data (a student's exported program): every walk back through it is bounded (`MAX_HOPS`).
"""

from __future__ import annotations

import re

from . import jax_private

__all__ = [
    "STABLEHLO_COLLECTIVES",
    "stablehlo_collective",
    "as_kind",
    "MANUAL_REGION",
    "walk",
    "outermost_region",
    "returned_regions",
]

STABLEHLO_COLLECTIVES = {
    "stablehlo.all_reduce": "all-reduce",
    "stablehlo.all_gather": "all-gather",
    "stablehlo.reduce_scatter": "reduce-scatter",
    "stablehlo.all_to_all": "all-to-all",
    "stablehlo.collective_permute": "collective-permute",
    "stablehlo.collective_broadcast": "collective-broadcast",
}


def _dense_groups(attr_text: str) -> list[list[int]]:
    """`dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>` (or a splat `dense<0>`) as lists of ids."""
    body = re.search(r"dense<(.*)>\s*:", attr_text, re.S)
    if not body:
        return []
    text = body.group(1).strip()
    rows = re.findall(r"\[([^\[\]]*)\]", text)
    if not rows:
        return [[int(v) for v in re.findall(r"-?\d+", text)]]
    return [[int(v) for v in re.findall(r"-?\d+", row)] for row in rows]


def stablehlo_collective(op, n_devices: int) -> tuple[str, str, list[list[int]]]:
    """(HLO op name, reducer, device groups) of one StableHLO collective, as `hlo_collectives` reads them."""
    kind = STABLEHLO_COLLECTIVES[op.name]
    reducer = ""
    if op.regions and len(op.regions) and op.regions[0].blocks:
        inner = [o.name for o in op.regions[0].blocks[0].operations]
        if inner and inner[0].startswith("stablehlo."):
            reducer = inner[0][len("stablehlo.") :]
    attrs = {name: str(op.attributes[name]) for name in op.attributes}
    if "source_target_pairs" in attrs:
        groups = _dense_groups(attrs["source_target_pairs"])
    elif "replica_groups" in attrs:
        groups = [g for g in _dense_groups(attrs["replica_groups"]) if g and min(g) >= 0]
    else:
        groups = []
    return kind, reducer, groups or [list(range(n_devices))]


def as_kind(kind, value):
    """`kind(value)` (an MLIR type cast), or None when `value` is not of that kind."""
    try:
        return kind(value)
    except (ValueError, TypeError):
        return None


MANUAL_REGION = "sdy.manual_computation"  # a per-device region (`shard_map`, `pmap`) in an exported module


def walk(module) -> tuple[list, list]:
    """(collectives, per-device regions) of a parsed module, each in the order the module's text has them
    (pre-order: `regions(text)`'s order)."""
    ir = jax_private.ir()
    found, manual = [], []

    def visit(op):
        if op.name in STABLEHLO_COLLECTIVES:
            found.append(op)
        elif op.name == MANUAL_REGION:
            manual.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found, manual


def outermost_region(op, manual: list) -> int | None:
    """The index (in `manual`) of the outermost per-device region around `op`, None when it is outside all."""
    own = [getattr(m, "operation", m) for m in manual]
    found, parent = None, getattr(op, "operation", op).parent
    while parent is not None:
        parent = getattr(parent, "operation", parent)
        for i, m in enumerate(own):
            if m == parent:
                found = i
        parent = parent.parent
    return found


# Operations that only move or relabel a value: a program result made from a region's result through them
# alone changes whenever that result does.
_MOVES = {"stablehlo.reshape", "stablehlo.transpose", "stablehlo.copy", "sdy.sharding_constraint", "sdy.reshard"}
_MAX_HOPS = 64  # calls and moves followed back from one program result (a module is hostile data)


def returned_regions(module, manual: list) -> frozenset:
    """The indices (in `manual`) of the regions one of whose results the program returns: followed back
    from what `main` returns, through `func.call`s into the callee's return and through `_MOVES`. Changing
    such a region's results changes the program's outputs, so it reaches them with no variant compiled."""
    ir = jax_private.ir()
    funcs = {}
    for op in module.body.operations:
        if op.operation.name == "func.func":
            funcs[ir.StringAttr(op.operation.attributes["sym_name"]).value] = op.operation
    own = [getattr(m, "operation", m) for m in manual]

    def terminator(func):
        blocks = list(func.regions[0].blocks) if func.regions else []
        ops = list(blocks[0].operations) if blocks else []
        return ops[-1].operation if ops else None

    def origin(value) -> int | None:
        for _ in range(_MAX_HOPS):
            owner = value.owner
            if not isinstance(owner, ir.Operation | ir.OpView):
                return None  # an argument of a block: not a region's result
            op = getattr(owner, "operation", owner)
            name = op.name
            if name == "sdy.manual_computation":
                return next((i for i, m in enumerate(own) if m == op), None)
            if name == "func.call":
                callee = funcs.get(ir.FlatSymbolRefAttr(op.attributes["callee"]).value)
                ret = terminator(callee) if callee is not None else None
                index = ir.OpResult(value).result_number
                if ret is None or index >= len(ret.operands):
                    return None
                value = ret.operands[index]
            elif name in _MOVES and len(op.operands) == 1:
                value = op.operands[0]
            else:
                return None
        return None

    def safely(value) -> int | None:
        try:
            return origin(value)
        except Exception:  # noqa: BLE001 - a module it cannot follow: the region is left to the variant
            return None

    main = funcs.get("main")
    ret = terminator(main) if main is not None else None
    found = {safely(v) for v in (ret.operands if ret is not None else ())}
    return frozenset(found - {None})
