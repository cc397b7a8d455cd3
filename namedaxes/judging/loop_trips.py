"""How often a `while` loop runs, read from its computations: a TPU's optimized HLO text does not print XLA's
`known_trip_count` (the CPU backend's does), so `runs.py` asks here for the count a loop's counter states.

Only one form is read: a counter (an element of the loop's state) that starts at a constant, goes up by a
constant step in the body, and is compared less-than with a constant in the condition, through copies,
bitcasts and converts and the CPU backend's fusions of the compare and the add. Anything else is unknown (-1),
which the judge counts as `runs.UNKNOWN_TRIPS` runs. The text is a student's program: every walk is bounded.
"""

from __future__ import annotations

import re

from .hlo import INSTRUCTION_RE

__all__ = ["NAME_RE", "loop_trips"]

# `[ROOT ]%name = ...`: group 1 is "ROOT" for a computation's result, group 2 the instruction's name
NAME_RE = re.compile(r"^\s*(ROOT\s+)?%?([\w.\-]+)\s*=")
_VALUE_MOVES = ("copy", "bitcast", "convert")  # an instruction that hands its one operand's value on


def _operation(line: str) -> tuple[str, list[str]]:
    """An instruction's op and the names of its operands."""
    m = INSTRUCTION_RE.match(line)
    if not m:
        return "", []
    depth, args = 0, ""
    for ch in line[m.end() :]:
        if ch == "(":
            depth += 1
        elif ch == ")":
            if depth == 0:
                break
            depth -= 1
        args += ch
    return m.group(2), re.findall(r"%([\w.\-]+)", args)


def _origin(code: dict[str, str], name: str) -> tuple[str, str, list[str]]:
    """(name, op, operands) of the instruction whose value `name` is, through copies, bitcasts and converts."""
    for _ in range(16):
        op, args = _operation(code.get(name, ""))
        if op not in _VALUE_MOVES or len(args) != 1:
            return name, op, args
        name = args[0]
    return name, "", []


def _constant(code: dict[str, str], name: str) -> int | None:
    name, op, _ = _origin(code, name)
    m = re.search(r"\sconstant\((-?\d+)\)", code.get(name, "")) if op == "constant" else None
    return int(m.group(1)) if m else None


def _counter(code: dict[str, str], name: str) -> int | None:
    """The tuple index of the computation's parameter that `name` is an element of, or None."""
    name, op, args = _origin(code, name)
    if op != "get-tuple-element" or len(args) != 1 or _operation(code.get(args[0], ""))[0] != "parameter":
        return None
    m = re.search(r"\bindex=(\d+)", code[name])
    return int(m.group(1)) if m else None


def _binary(code: dict, roots: dict, comp: str, name: str, op: str) -> tuple[list[str], str] | None:
    """The two operands (names in `comp`) and the line of `op` that `name` is, itself or a fusion whose result
    is that op of two of its parameters (the CPU backend wraps a loop's compare and add so)."""
    name, found, args = _origin(code[comp], name)
    line = code[comp].get(name, "")
    if found == op and len(args) == 2:
        return args, line
    called = re.search(r"\bcalls=%?([\w.\-]+)", line) if found == "fusion" else None
    inner = code.get(called.group(1), {}) if called else {}
    root = inner.get(roots.get(called.group(1), "")) if called else None
    if root is None or _operation(root)[0] != op:
        return None
    picked = []
    for param in _operation(root)[1]:
        m = re.search(r"\sparameter\((\d+)\)", inner.get(param, ""))
        if not m or int(m.group(1)) >= len(args):
            return None
        picked.append(args[int(m.group(1))])
    return (picked, root) if len(picked) == 2 else None


def loop_trips(code: dict, roots: dict, caller: str, line: str) -> int:
    """How often a `while` runs, read from its computations where XLA's `known_trip_count` is not printed: a
    counter (an element of the loop's state) that starts at a constant, goes up by a constant step in the body,
    and is compared less-than with a constant in the condition. -1 when the loop is not of that form."""
    cond, body = re.search(r"\bcondition=%?([\w.\-]+)", line), re.search(r"\bbody=%?([\w.\-]+)", line)
    state = _operation(line)[1]
    if not cond or not body or cond.group(1) not in code or body.group(1) not in code or len(state) != 1:
        return -1
    cond, body = cond.group(1), body.group(1)
    compare = _binary(code, roots, cond, roots.get(cond, ""), "compare")
    direction = re.search(r"\bdirection=(\w+)", compare[1]) if compare else None
    if not direction or direction.group(1) not in ("LT", "GT"):
        return -1
    counter, bound = compare[0] if direction.group(1) == "LT" else compare[0][::-1]
    index, limit = _counter(code[cond], counter), _constant(code[cond], bound)
    _, op, init = _origin(code[caller], state[0])
    _, body_op, result = _origin(code[body], roots.get(body, ""))
    if index is None or limit is None or op != "tuple" or body_op != "tuple" or index >= min(len(init), len(result)):
        return -1
    start = _constant(code[caller], init[index])
    step = _binary(code, roots, body, result[index], "add")
    if start is None or step is None:
        return -1
    (a, b), _ = step
    if _counter(code[body], b) == index:
        a, b = b, a
    stride = _constant(code[body], b)
    if _counter(code[body], a) != index or not stride or stride < 0:
        return -1
    return max(0, -(-(limit - start) // stride))
