"""A variant of an exported program in which the collectives of one kind send other data (`perturbed`).

A collective counts only if what the devices send through it reaches the results. XLA keeps
`0.0 * lax.psum(x, ...)` for floats, a collective can feed a value that is later discarded by arithmetic,
and a collective can carry no data at all (`total + lax.psum(x * 0.0, ...)`, a psum of a constant, the same
in a `cond` branch or a `while_loop`): "present in the optimized HLO" is not "used", and neither is "its
result reaches the outputs" (adding a psum of zeros to a total makes the total depend on the psum's result).
The grader therefore builds a variant of the student's exported program in which every collective of one
kind (say, every psum over 'devices') is sent *other data*: its operands computed again, inside the
program, from shifted inputs (every block argument the operands are made from, the region's, the loop's or
the function's, mapped through a -> c * a + c / 2, c drawn from the secret; integers 3 a + 1, booleans
negated), everything else of the program left as it was. It recompiles that variant and runs it on the same
hidden inputs: if no result changes beyond the comparison's tolerance, those collectives carry nothing that
reaches the results and earn nothing. A psum of zeros, of a constant or of `x - x` sends the same data
either way; `psum(x) * 0.0` changes nothing downstream; sending all collectives of a kind the same other
data defeats `psum(x) - psum(x)` and `2 * psum(x) - psum(2 * x)`-style cancellation.
"""

from __future__ import annotations

import dataclasses

from . import jax_private
from .hlo import describe_collective, group_axes
from .module_texts import module_text
from .stablehlo import as_kind, stablehlo_collective, walk

__all__ = ["perturbed"]


def _perturb_results(op, factor: float) -> bool:
    """Map every result of `op` through r -> factor * r + factor / 2 (integers 3 r + 1, booleans negated)
    for all its users; False when none of its results could be changed (complex numbers, tokens)."""
    ir, hlo = jax_private.ir(), jax_private.hlo()
    hit = False
    for result in op.results:
        ty = as_kind(ir.RankedTensorType, result.type)
        if ty is None:
            continue
        el = ty.element_type
        integer = as_kind(ir.IntegerType, el)
        with ir.InsertionPoint.after(op):
            if integer is not None and integer.width == 1:
                new = user = hlo.not_(result)
            elif integer is not None:
                scale = ir.DenseElementsAttr.get_splat(ty, ir.IntegerAttr.get(el, 3))
                shift = ir.DenseElementsAttr.get_splat(ty, ir.IntegerAttr.get(el, 1))
                user = hlo.multiply(result, hlo.constant(scale))
                new = hlo.add(user, hlo.constant(shift))
            elif as_kind(ir.ComplexType, el) is not None:
                continue
            else:
                scale = ir.DenseElementsAttr.get_splat(ty, ir.FloatAttr.get(el, factor))
                shift = ir.DenseElementsAttr.get_splat(ty, ir.FloatAttr.get(el, factor / 2))
                user = hlo.multiply(result, hlo.constant(scale))
                new = hlo.add(user, hlo.constant(shift))
        owner = user.owner
        result.replace_all_uses_except(new, owner.operation if hasattr(owner, "operation") else owner)
        hit = True
    return hit


_MAX_SLICE = 20000  # values followed back from one collective's operands (a module is hostile data)


def _shifted(value, factor: float):
    """`value` (a block argument) mapped through a -> factor * a + factor / 2 (integers 3 a + 1, booleans
    negated), built at the current insertion point; None when it cannot be (tokens, tuples, complex)."""
    ir, hlo = jax_private.ir(), jax_private.hlo()
    ty = as_kind(ir.RankedTensorType, value.type)
    if ty is None:
        return None
    el = ty.element_type
    integer = as_kind(ir.IntegerType, el)
    if integer is not None and integer.width == 1:
        return hlo.not_(value)
    if integer is not None:
        scale, shift = ir.IntegerAttr.get(el, 3), ir.IntegerAttr.get(el, 1)
    elif as_kind(ir.ComplexType, el) is not None:
        return None
    else:
        scale, shift = ir.FloatAttr.get(el, factor), ir.FloatAttr.get(el, factor / 2)
    scaled = hlo.multiply(value, hlo.constant(ir.DenseElementsAttr.get_splat(ty, scale)))
    return hlo.add(scaled, hlo.constant(ir.DenseElementsAttr.get_splat(ty, shift)))


def _send_other_data(op, factor: float) -> bool:
    """Give `op` (a collective) other operands: each computed again, just before it, from shifted block
    arguments (`_shifted`): the operations between the block arguments and its operands are cloned with
    their operands replaced, so only what this collective sends changes. False when none of its operands
    depends on a block argument (a collective of a constant sends the same data either way) or when the
    operands' history is longer than `_MAX_SLICE` values."""
    ir = jax_private.ir()
    own = getattr(op, "operation", op)
    # the values the operands are made from, in an order where each comes after what it is made from
    order, seen, depends = [], set(), {}
    stack = [(v, False) for v in own.operands]
    while stack:
        value, expanded = stack.pop()
        if expanded:
            owner = getattr(value.owner, "operation", value.owner)
            depends[value] = any(depends.get(v, False) for v in owner.operands)
            order.append(value)
            continue
        if value in seen:
            continue
        seen.add(value)
        if len(seen) > _MAX_SLICE:
            return False
        if isinstance(value.owner, ir.Block):
            depends[value] = True
            order.append(value)
            continue
        stack.append((value, True))
        stack.extend((v, False) for v in getattr(value.owner, "operation", value.owner).operands if v not in seen)
    if not any(depends.get(v, False) for v in own.operands):
        return False
    new: dict = {}
    with ir.InsertionPoint(own):
        for value in order:
            if not depends[value] or value in new:
                continue
            if isinstance(value.owner, ir.Block):
                new[value] = _shifted(value, factor) or value
                continue
            source = getattr(value.owner, "operation", value.owner)
            copy = source.clone()
            for i, operand in enumerate(source.operands):
                if operand in new:
                    copy.operands[i] = new[operand]
            for old, fresh in zip(source.results, copy.results):
                new[old] = fresh
    changed_any = False
    for i, operand in enumerate(own.operands):
        if operand in new and new[operand] != operand:
            own.operands[i] = new[operand]
            changed_any = True
    return changed_any


def perturbed(
    exp,
    wanted: str | None,
    names: tuple[str, ...],
    sizes: tuple[int, ...],
    factor: float,
    text: str | None = None,
    region: int | None = None,
):
    """`exp` with every collective described as `wanted` sent other data (`_send_other_data`: its operands
    computed from inputs mapped through a -> factor * a + factor / 2, integers 3 a + 1, booleans negated);
    with `region` (an index into `regions(text)`), the results of that per-device region mapped so instead.
    None when nothing of the module is described so; the program itself (`exp`, unchanged) when such
    collectives exist but none of them sends data made from an input."""
    ir = jax_private.ir()
    with jax_private.ir_context(), ir.Location.unknown():
        module = ir.Module.parse(text if text is not None else module_text(exp))
        found, manual = walk(module)
        hit = False
        if region is not None:
            hit = region < len(manual) and _perturb_results(manual[region], factor)
        else:
            sends = False
            for op in found:
                kind, reducer, groups = stablehlo_collective(op, exp.nr_devices)
                if wanted in {describe_collective(kind, reducer, a) for a in group_axes(groups, names, sizes)}:
                    hit = True
                    sends = _send_other_data(op, factor) or sends
            if hit and not sends:
                return exp  # its collectives send no data made from an input: nothing it sends can matter
        if not hit:
            return None
        blob = jax_private.module_to_bytecode(module)
    return dataclasses.replace(exp, mlir_module_serialized=blob)
