"""How often a `while` loop runs and which branch a `conditional` runs, read from their computations: a TPU's
optimized HLO text does not print XLA's `known_trip_count` (the CPU backend's does), and XLA counts only loops
of one form, so `runs.py` asks here.

`loop_trips` reads one form: a counter (an element of the loop's state) that starts at a constant, goes up by a
constant step in the body, and is compared less-than with a constant in the condition, through copies,
bitcasts and converts and the CPU backend's fusions of the compare and the add. `simulated_trips` runs any
other loop's control on what the program fixes (below), and `branch_taken` evaluates a conditional's predicate
or index so. Anything that depends on the program's data is unknown (-1, None). The text is a student's
program: every walk is bounded.
"""

from __future__ import annotations

import re

import numpy as np

from .hlo import INSTRUCTION_RE, device_groups

__all__ = ["loop_trips", "simulated_trips", "branch_taken"]

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


# ---------------------------------------------------------------- a loop's control, run on its constants
# Where the counter's pattern is not met (a quadratic condition, a bound computed before the loop, a counter
# that goes down or doubles), the loop's control is run here: its state's scalars that follow from constants,
# through the condition and the body, until the condition says stop. Only what the program fixes is computed
# (constants, arithmetic, comparisons, selects, a psum of a value every device holds); any value that depends
# on the program's inputs, its arrays or the device it runs on is unknown, and so is the count then.

_UNKNOWN = None
_MAX_SIMULATED = 1 << 17  # loop runs simulated at most (a student's program: bounded work)
_MAX_STEPS = 1 << 17  # instructions evaluated at most, over all of one program's loops and conditionals
_NUMPY = {"pred": "bool", "s8": "int8", "s16": "int16", "s32": "int32", "s64": "int64", "u8": "uint8"}
_NUMPY.update({"u16": "uint16", "u32": "uint32", "u64": "uint64", "f16": "float16", "bf16": "float32"})
_NUMPY.update({"f32": "float32", "f64": "float64"})
_SCALAR_TYPE = re.compile(r"^(\w+)\[([1,]*)\]")
_BINARY = {
    "add": lambda a, b: a + b,
    "subtract": lambda a, b: a - b,
    "multiply": lambda a, b: a * b,
    "maximum": lambda a, b: max(a, b),
    "minimum": lambda a, b: min(a, b),
    "and": lambda a, b: a & b,
    "or": lambda a, b: a | b,
    "xor": lambda a, b: a ^ b,
}
_COMPARE = {"LT": "__lt__", "LE": "__le__", "GT": "__gt__", "GE": "__ge__", "EQ": "__eq__", "NE": "__ne__"}


def _partly_known(op: str, values: list, dtype):
    """What an operation of some unknown operands still fixes: false and anything is false, true or anything is
    true, a select of two equal values is that value. None otherwise."""
    known = [v for v in values if v is not None]
    if op == "and" and dtype == np.bool_ and any(not v for v in known):
        return dtype.type(False)
    if op == "or" and dtype == np.bool_ and any(bool(v) for v in known):
        return dtype.type(True)
    if op == "select" and len(values) == 3 and values[1] is not None and values[1] == values[2]:
        return dtype.type(values[1])
    return None


def _constant_of(ins, dtype):
    """The value of a scalar `constant` instruction, None for anything else."""
    m = re.search(r"\sconstant\(\{?\s*([^)}]*?)\s*\}?\)", ins.line) if ins.op == "constant" and dtype else None
    text = m.group(1) if m else ""
    try:
        if dtype == np.bool_:
            return dtype.type(text == "true") if text in ("true", "false") else None
        return dtype.type(float(text) if "." in text or "e" in text or "n" in text else int(text)) if m else None
    except ValueError:
        return None


class _OverBudget(Exception):
    """The simulation went over `_MAX_STEPS`: the count is unknown."""


class _Control:
    """Evaluates scalar instructions of one module (see above)."""

    def __init__(self, module):
        self.module, self.steps = module, 0
        self.code = {c: {i.name: i for i in ins} for c, ins in module.computations.items()}
        self.roots = {c: i.name for c, ins in module.computations.items() for i in ins if i.root}
        self.static: dict[int, tuple] = {}  # id(instruction) -> what its line fixes (`_static`), read once
        self.sites: dict[str, list] = {}  # computation -> (caller, instruction) of each call or fusion of it
        for c, instructions in module.computations.items():
            for i in instructions:
                if i.op in ("call", "fusion"):
                    for callee in i.calls.get("to_apply", []) + i.calls.get("calls", []):
                        self.sites.setdefault(callee, []).append((c, i))

    def value(self, comp: str, name: str, params: dict | None, memo: dict):
        """The value of instruction `name` of `comp`, its parameters `params` (number -> value or a tuple; None:
        what its one call site passes it, unknown where it has another number of call sites)."""
        if name in memo:
            return memo[name]
        self.steps += 1
        if self.steps > _MAX_STEPS:
            raise _OverBudget
        ins = self.code.get(comp, {}).get(name)
        memo[name] = _UNKNOWN
        memo[name] = None if ins is None else self._evaluate(comp, ins, params, memo)
        return memo[name]

    def call(self, comp: str, args: list):
        root = self.roots.get(comp)
        return None if root is None else self.value(comp, root, dict(enumerate(args)), {})

    def _static(self, ins) -> tuple:
        """(parameter number or tuple index, the scalar's dtype or None, a constant's value) of `ins`'s line."""
        found = self.static.get(id(ins))
        if found is None:
            number = re.search(r"\s(?:parameter\(|.*\bindex=)(\d+)", ins.line)
            kind = _SCALAR_TYPE.match(ins.type)
            dtype = np.dtype(_NUMPY[kind.group(1)]) if kind and kind.group(1) in _NUMPY else None
            found = self.static[id(ins)] = (int(number.group(1)) if number else None, dtype, _constant_of(ins, dtype))
        return found

    def _evaluate(self, comp: str, ins, params: dict, memo: dict):
        op = ins.op
        number, dtype, constant = self._static(ins)
        args = lambda: [self.value(comp, a, params, memo) for a in ins.operands]  # noqa: E731
        if op == "parameter":
            if number is not None and params is None:
                sites = self.sites.get(comp, [])
                if len(sites) != 1 or number >= len(sites[0][1].operands):
                    return None
                caller, site = sites[0]
                return self.value(caller, site.operands[number], None, {})
            return params.get(number) if number is not None else None
        if op == "tuple":
            return tuple(args())
        if op == "get-tuple-element":
            whole = args()
            t = whole[0] if whole else None
            return t[number] if isinstance(t, tuple) and number is not None and number < len(t) else None
        if op in ("fusion", "call"):
            callee = (ins.calls.get("calls") or ins.calls.get("to_apply") or [None])[0]
            return self.call(callee, args()) if callee else None
        if dtype is None:
            return None  # an array, a tuple of arrays, a token: not the loop's control
        if op == "constant":
            return constant
        values = args()
        if any(isinstance(v, tuple) for v in values):
            return None
        if any(v is None for v in values):
            return _partly_known(op, values, dtype)
        return self._arithmetic(ins, op, values, dtype)

    def _arithmetic(self, ins, op: str, values: list, dtype):
        if op in ("copy", "bitcast", "reshape", "broadcast", "convert") and len(values) == 1:
            return dtype.type(values[0])
        if op in _BINARY and len(values) == 2:
            return dtype.type(_BINARY[op](values[0], values[1]))
        if op in ("divide", "remainder") and len(values) == 2:
            if values[1] == 0:
                return None
            if np.issubdtype(dtype, np.integer):  # C's truncation, as XLA divides integers
                q = int(values[0] / values[1]) if op == "divide" else int(np.fmod(values[0], values[1]))
                return dtype.type(q)
            return dtype.type(values[0] / values[1] if op == "divide" else np.fmod(values[0], values[1]))
        if op == "compare" and len(values) == 2:
            d = re.search(r"\bdirection=(\w+)", ins.line)
            return (
                np.bool_(getattr(values[0], _COMPARE[d.group(1)])(values[1])) if d and d.group(1) in _COMPARE else None
            )
        if op == "select" and len(values) == 3:
            return dtype.type(values[1] if values[0] else values[2])
        if op == "clamp" and len(values) == 3:
            return dtype.type(min(max(values[1], values[0]), values[2]))
        if op in ("negate", "not", "abs") and len(values) == 1:
            return dtype.type({"negate": lambda v: -v, "not": lambda v: ~v, "abs": abs}[op](values[0]))
        if op == "all-reduce" and len(values) == 1:
            return self._psum(ins, values[0], dtype)
        return None

    def _psum(self, ins, value, dtype):
        """A reduction over devices of a value every device holds (it follows from constants): its reducer
        applied over one group's size."""
        try:
            groups = device_groups(ins.line, 0)  # 0: "all devices" (no groups written) is unknown here
        except ValueError:
            return None
        reducer = (ins.calls.get("to_apply") or [None])[0]
        root = self.module.root(reducer) if reducer else None
        size = len(groups[0]) if groups and all(len(g) == len(groups[0]) for g in groups) else 0
        if not size or root is None or root.op not in ("add", "maximum", "minimum", "multiply", "and", "or"):
            return None
        if root.op == "add":
            return dtype.type(value * size)
        if root.op == "multiply":
            return dtype.type(value**size)
        return dtype.type(value)


def _control_of(module) -> _Control:
    """The module's one evaluator: its step budget (`_MAX_STEPS`) holds for the whole program."""
    if not isinstance(getattr(module, "control", None), _Control):
        module.control = _Control(module)
    return module.control


def simulated_trips(module, caller: str, ins) -> tuple[int, bool]:
    """How often the `while` `ins` (in `caller`) runs, its control run on the constants it follows from (see
    above), and whether that is exact: where a test depends on the program's data but the loop's own limit
    (a counter's bound, `and`ed with that test) stops it, the count is at most that limit (False). (-1, False)
    when nothing the program fixes stops it within `_MAX_SIMULATED` runs."""
    control = _control_of(module)
    cond, body = ins.calls.get("condition", [None])[0], ins.calls.get("body", [None])[0]
    if not cond or not body or len(ins.operands) != 1:
        return -1, False
    with np.errstate(all="ignore"):
        return _simulate(control, caller, ins, cond, body)


def _simulate(control, caller: str, ins, cond: str, body: str) -> tuple[int, bool]:
    exact = True
    try:
        state = control.value(caller, ins.operands[0], None, {})
        for trips in range(_MAX_SIMULATED + 1):
            go = control.call(cond, [state])
            if isinstance(go, tuple):
                return -1, False
            if go is not None and not go:
                return trips, exact
            exact = exact and go is not None
            state, before = control.call(body, [state]), state
            if go is None and _same(state, before):
                return -1, False  # nothing it fixes changes: no limit of its own
    except (_OverBudget, RecursionError):
        return -1, False
    return -1, False


def _same(a, b) -> bool:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return (a is None and b is None) or (a is not None and b is not None and bool(a == b))


def branch_taken(module, comp: str, ins, n_branches: int) -> int | None:
    """The branch a `conditional` runs where the program fixes it (its predicate or index follows from
    constants, `simulated_trips`' evaluation): a predicate's true is branch 0; an index out of range runs the
    last branch. None where it is not fixed."""
    if not ins.operands or not n_branches:
        return None
    try:
        with np.errstate(all="ignore"):
            picked = _control_of(module).value(comp, ins.operands[0], None, {})
    except (_OverBudget, RecursionError):
        return None
    if picked is None or isinstance(picked, tuple):
        return None
    if "true_computation" in ins.calls or str(getattr(picked, "dtype", "")) == "bool":
        return 0 if bool(picked) else 1
    index = int(picked)
    return index if 0 <= index < n_branches else n_branches - 1
