"""An optimized HLO module's text read into its computations and instructions (`parse_module`), and the FLOPs
each instruction does by itself (`own_flops`), counted as XLA's cost analysis counts them: an elementwise
operation one per element of its result (transcendental ones none: XLA counts those apart), a reduction its
reducer's FLOPs once per element folded, a matmul or convolution two per multiply-add, an all-reduce one per
element, a sort n log n. What an instruction runs through the computations it calls (a fusion's inside, a
loop's body, a branch) is not its own: `runs.py` adds each computation as often as it runs.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from .hlo import ARRAY_RE, HEAD_RE, INSTRUCTION_RE, NAME_RE

__all__ = ["Instruction", "Module", "parse_module", "own_flops", "elements", "ELEMENTWISE", "arithmetic_flops"]

ELEMENTWISE = frozenset(  # one FLOP per element of the result (transcendental operations: none, XLA counts apart)
    (
        *("add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum", "and", "or", "xor", "not"),
        *("negate", "abs", "sign", "floor", "ceil", "round-nearest-afz", "round-nearest-even", "shift-left"),
        *("shift-right-arithmetic", "shift-right-logical", "is-finite", "popcnt", "count-leading-zeros", "clz"),
        *("real", "imag", "complex", "compare", "clamp", "select", "convert", "reduce-precision"),
    )
)
# The arithmetic on the data (`arithmetic_flops`): of the elementwise operations those that compute new numbers,
# not the ones that test, pick, convert or combine bits (compare, select, convert, and, ...).
_ARITHMETIC = frozenset(
    ("add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum", "negate", "abs", "clamp")
)
_FLOAT_RESULT_RE = re.compile(r"^\(?(bf16|f16|f32|f64|f8\w*)\[")


def arithmetic_flops(ins: Instruction, types: dict) -> float:
    """The FLOPs of `ins` if it is arithmetic on floating-point numbers (a float result): elementwise
    (`_ARITHMETIC`) one per element of its result, a matmul or a convolution two per multiply-add, as
    `own_flops` counts them (a centring written as a product, `[x, 1] @ [[I], [-m]]`, is arithmetic too);
    else 0. `types`: the result types of its computation's instructions, by name."""
    if not _FLOAT_RESULT_RE.match(ins.type):
        return 0.0
    if ins.op in ("dot", "scaled-dot"):
        return _dot(ins, types)
    if ins.op == "convolution":
        return _convolution(ins, types)
    return float(elements(ins.type)) if ins.op in _ARITHMETIC else 0.0


_CALLS_RE = re.compile(
    r"\b(calls|to_apply|body|condition|true_computation|false_computation|select|scatter)=%?([\w.\-]+)"
)


@dataclass(frozen=True)
class Instruction:
    """One instruction: its name, result type (text), op, operands' names, what it calls (attribute ->
    computation names) and its whole line."""

    name: str
    type: str
    op: str
    operands: tuple[str, ...]
    calls: dict = field(default_factory=dict)
    line: str = ""
    root: bool = False


@dataclass
class Module:
    """The computations of an optimized HLO module (name -> its instructions, in order) and its entry's name."""

    computations: dict[str, list[Instruction]]
    entry: str | None
    control: object = None  # the evaluator of its loops' control (`loop_trips`), made once

    def types(self, computation: str) -> dict[str, str]:
        return {i.name: i.type for i in self.computations.get(computation, [])}

    def root(self, computation: str) -> Instruction | None:
        found = [i for i in self.computations.get(computation, []) if i.root]
        return found[0] if found else None


def _operands(line: str, start: int) -> tuple[str, ...]:
    """The names of the operands in the parenthesis that opens just before `start`."""
    depth, args = 0, []
    for ch in line[start:]:
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            if depth == 0:
                break
            depth -= 1
        args.append(ch)
    return tuple(re.findall(r"%([\w.\-]+)", "".join(args))) or tuple(
        a.strip().split()[-1] for a in "".join(args).split(",") if a.strip() and "[" not in a.strip().split()[-1]
    )


def _instruction(line: str) -> Instruction | None:
    named, typed = NAME_RE.match(line), INSTRUCTION_RE.match(line)
    if not named or not typed:
        return None
    calls: dict[str, list[str]] = {}
    for key, callee in _CALLS_RE.findall(line):
        calls.setdefault(key, []).append(callee)
    for group in re.findall(r"branch_computations=\{([^}]*)\}", line):
        calls["branches"] = [c.strip().lstrip("%") for c in group.split(",") if c.strip()]
    for key in ("true_computation", "false_computation"):  # an older text's two-way conditional
        if key in calls:
            calls.setdefault("branches", [])
    if "true_computation" in calls or "false_computation" in calls:  # branch 0 runs on true, as the index 0
        calls["branches"] = calls.get("true_computation", []) + calls.get("false_computation", [])
    operands = _operands(line, typed.end())
    return Instruction(named.group(2), typed.group(1), typed.group(2), operands, calls, line, bool(named.group(1)))


def parse_module(text: str) -> Module:
    """The computations of an optimized HLO module's text, each instruction read once."""
    comps: dict[str, list[Instruction]] = {}
    current, entry = None, None
    for line in text.splitlines():
        head = HEAD_RE.match(line)
        if head:
            current = head.group(2)
            comps[current] = []
            entry = current if head.group(1) else entry
            continue
        found = _instruction(line) if current is not None else None
        if found is not None:
            comps[current].append(found)
    return Module(comps, entry)


def _dims(type_text: str) -> list[int]:
    m = ARRAY_RE.search(type_text)
    return [int(d) for d in m.group(2).split(",") if d] if m else []


def elements(type_text: str) -> int:
    """The elements of the first array of a type ("f32[16,8]{1,0}" -> 128; a scalar 1; no array 0)."""
    m = ARRAY_RE.search(type_text)
    return int(math.prod(int(d) for d in m.group(2).split(",") if d)) if m else 0


def _all_elements(type_text: str) -> int:
    return sum(int(math.prod(int(d) for d in dims.split(",") if d)) for _, dims in ARRAY_RE.findall(type_text))


def _dot(ins: Instruction, types: dict) -> float:
    lhs = _dims(types.get(ins.operands[0], "")) if ins.operands else []
    found = re.search(r"lhs_contracting_dims=\{([\d,]*)\}", ins.line)
    width = math.prod(lhs[int(d)] for d in (found.group(1).split(",") if found else []) if d and int(d) < len(lhs))
    return 2.0 * elements(ins.type) * width


def _window(line: str) -> list[dict]:
    """The dimensions of a `window={size=3x3 stride=.. pad=1_1x1_1 lhs_dilate=.. rhs_dilate=..}` attribute."""
    found = re.search(r"window=\{([^}]*)\}", line)
    if not found:
        return []
    parts = dict(p.split("=", 1) for p in found.group(1).split() if "=" in p)
    sizes = [int(s) for s in parts.get("size", "").split("x") if s]
    n = len(sizes)

    def each(key: str, default: str) -> list[str]:
        values = parts.get(key, "").split("x") if key in parts else [default] * n
        return values if len(values) == n else [default] * n

    pads = [p.split("_") for p in each("pad", "0_0")]
    return [
        {"size": s, "stride": int(st), "low": int(p[0]), "high": int(p[1]), "base": int(b), "dilation": int(d)}
        for s, st, p, b, d in zip(sizes, each("stride", "1"), pads, each("lhs_dilate", "1"), each("rhs_dilate", "1"))
    ]


def _convolution(ins: Instruction, types: dict) -> float:
    """XLA's count: 2 x input features per group x output features x batch per group x the valid positions of
    the kernel over the output, per spatial dimension."""
    labels = re.search(r"dim_labels=(\w+)_(\w+)->(\w+)", ins.line)
    if not labels or len(ins.operands) < 2:
        return 0.0
    lhs, rhs, out = _dims(types.get(ins.operands[0], "")), _dims(types.get(ins.operands[1], "")), _dims(ins.type)
    lhs_l, rhs_l, out_l = labels.groups()
    if len(lhs) != len(lhs_l) or len(rhs) != len(rhs_l) or len(out) != len(out_l):
        return 0.0
    groups = re.search(r"feature_group_count=(\d+)", ins.line)
    batches = re.search(r"batch_group_count=(\d+)", ins.line)
    fma = (lhs[lhs_l.index("f")] // int(groups.group(1) if groups else 1)) * out[out_l.index("f")]
    fma *= lhs[lhs_l.index("b")] // int(batches.group(1) if batches else 1)
    spatial = [c for c in lhs_l if c.isdigit()]
    for c, w in zip(spatial, _window(ins.line) or [None] * len(spatial)):
        fma *= _positions(lhs[lhs_l.index(c)], rhs[rhs_l.index(c)], out[out_l.index(c)], w)
    return 2.0 * fma


def _positions(inp: int, kernel: int, out: int, w: dict | None) -> int:
    """The (kernel point, output point) pairs of one spatial dimension that read an input element."""
    if w is None:
        return 1
    same = inp == out and kernel == out and inp == w["base"] and w["dilation"] == 1
    if same and max(1, inp - 1) == w["stride"] and w["low"] == 0 and w["high"] == 0:
        return inp
    count = 0
    for k in range(kernel):
        for o in range(out):
            at = o * w["stride"] - w["low"] + k * w["dilation"]
            if at % w["base"] == 0 and 0 <= at // w["base"] < inp:
                count += 1
    return count


def _reduce_window(ins: Instruction, types: dict, reducer: float) -> float:
    window = _window(ins.line)
    size = math.prod(w["size"] for w in window) if window else 1
    out = elements(ins.type)
    count = (size - 1) * out
    reduced = [w for w in window if w["size"] != 1]
    padded = [w for w in window if w["low"] or w["high"]]
    dims = _dims(ins.type)
    if len(reduced) == 1 and len(padded) == 1 and not ins.type.startswith("("):
        i = window.index(reduced[0])
        w = reduced[0]
        centred = w["low"] and w["low"] == w["high"] and w["size"] == 2 * w["low"] + 1
        if centred and i < len(dims) and w["low"] == dims[i] - 1:  # a reduce broadcast back along one dimension
            count = out // dims[i] + dims[i] - 1
    return count * reducer


def own_flops(ins: Instruction, types: dict, flops_of) -> float:
    """The FLOPs `ins` does itself, as XLA's cost analysis counts them (see above). `types`: the result types of
    its computation's instructions, by name; `flops_of(name)`: the FLOPs of one run of a computation (a
    reducer's, applied per element)."""
    op = ins.op
    if op in ELEMENTWISE:
        return float(elements(ins.type))
    if op in ("dot", "scaled-dot"):
        return _dot(ins, types)
    if op == "convolution":
        return _convolution(ins, types)
    if op in ("all-reduce", "all-reduce-start"):
        return float(_all_elements(ins.type))
    applied = ins.calls.get("to_apply", [])
    reducer = flops_of(applied[0]) if applied else 0.0
    if op == "reduce" and ins.operands:
        out = ins.type[1:].split(")")[0] if ins.type.startswith("(") else ins.type
        return (elements(types.get(ins.operands[0], "")) - elements(out)) * reducer
    if op == "reduce-window":
        return _reduce_window(ins, types, reducer)
    if op == "map":
        return elements(ins.type) * reducer
    if op == "scatter" and len(ins.operands) >= 3:
        return elements(types.get(ins.operands[(len(ins.operands) - 1) // 2 + 1], "")) * reducer
    if op == "select-and-scatter" and len(ins.operands) >= 2:
        source = elements(types.get(ins.operands[1], ""))
        window = _window(ins.line)
        size = math.prod(w["size"] for w in window) if window else 1
        select, scatter = ins.calls.get("select", []), ins.calls.get("scatter", [])
        return source * (size - 1) * (flops_of(select[0]) if select else 0.0) + source * (
            flops_of(scatter[0]) if scatter else 0.0
        )
    if op == "sort" and ins.operands:
        n = elements(types.get(ins.operands[0], ""))
        return float(n * math.ceil(math.log2(n))) if n > 1 else 0.0
    if op == "triangular-solve" and len(ins.operands) >= 2:
        a = _dims(types.get(ins.operands[0], ""))
        return 2.0 * (a[-1] if a else 0) * elements(types.get(ins.operands[1], ""))
    if op == "cholesky" and ins.operands:
        a = _dims(types.get(ins.operands[0], ""))
        return float(((a[-1] if a else 0) * elements(types.get(ins.operands[0], ""))) // 3)
    return 0.0
