"""How often a loop whose trip count only its data decide runs, measured: the counted variant of the program
(`loop_counters.counted`) run on the hidden inputs says, per loop and per device, how often its body ran and how
often the loop was entered; here those counts are matched with the loops of the judged program's optimized HLO
(`measured_trips`), which `runs.program_totals` then counts that often.

A loop of the judged program and a loop of the variant are the same loop when their `while` instructions come
from the same operation of the module: the same op name (its name stack) and the same innermost source position
(the module's locations, which the rewrite keeps). Several loops of one origin (a helper called twice) are one
group, and each of them is counted as often as the group's busiest: never fewer times than it runs; a group with
a loop the variant does not count (one the rewrite cannot reach, given the origin of a counted one by a hostile
module) is not measured at all. A loop's
trips are its body's runs divided by the times it was entered, on the device where that is largest: nested loops
multiply (an inner loop's trips per entry, times the runs of the outer loop's body that enter it).
"""

from __future__ import annotations

import re

import numpy as np

from .instructions import parse_module
from .loop_counters import TAG

__all__ = ["loop_origins", "measured_trips", "tag_trips"]

_OP_NAME = re.compile(r'\bop_name="([^"]*)"')
_FRAME = re.compile(r"\bstack_frame_id=(\d+)")
_TAGGED = re.compile(TAG + r'="(\d+)"')
_SECTION = re.compile(r"^(FileNames|FunctionNames|FileLocations|StackFrames)\s*$")


def _tables(text: str) -> dict[str, dict[int, str]]:
    """The module's header tables (file names, function names, file locations, stack frames): id -> its text."""
    tables: dict[str, dict[int, str]] = {}
    section = None
    for line in text.splitlines()[:100000]:
        head = _SECTION.match(line.strip())
        if head:
            section = tables.setdefault(head.group(1), {})
            continue
        row = re.match(r"^\s*(\d+)\s+(.*)$", line) if section is not None else None
        if row is None:
            if section is not None and line.strip():
                section = None
            continue
        section[int(row.group(1))] = row.group(2)
    return tables


def _position(tables: dict, frame: int) -> tuple:
    """(file, function, line, column) of a stack frame's own location; () when the tables do not say."""
    found = re.search(r"file_location_id=(\d+)", tables.get("StackFrames", {}).get(frame, ""))
    where = tables.get("FileLocations", {}).get(int(found.group(1)), "") if found else ""
    fields = dict(re.findall(r"(\w+)=(\d+)", where))
    if not fields:
        return ()
    file = tables.get("FileNames", {}).get(int(fields.get("file_name_id", -1)), "")
    function = tables.get("FunctionNames", {}).get(int(fields.get("function_name_id", -1)), "")
    return file, function, fields.get("line"), fields.get("column")


def loop_origins(text: str) -> dict[tuple[str, str], tuple]:
    """(computation, while instruction) -> its origin: its op name after the grader's own prefix (up to
    `call_exported/`) and its innermost source position, and the counted variant's tag (None if untagged)."""
    tables = _tables(text)
    out = {}
    for comp, instructions in parse_module(text).computations.items():
        for ins in instructions:
            if ins.op != "while":
                continue
            name = _OP_NAME.search(ins.line)
            op_name = name.group(1).rsplit("call_exported/", 1)[-1] if name else ""
            frame = _FRAME.search(ins.line)
            position = _position(tables, int(frame.group(1))) if frame else ()
            tag = _TAGGED.search(ins.line)
            out[(comp, ins.name)] = ((op_name, position), int(tag.group(1)) if tag else None)
    return out


def _per_entry(body: np.ndarray, entered: np.ndarray) -> float:
    """The largest, over devices, of a loop's body runs per entry (0 where it was never entered)."""
    body, entered = np.atleast_1d(np.asarray(body, np.float64)), np.atleast_1d(np.asarray(entered, np.float64))
    if body.shape != entered.shape or not body.size:
        return -1.0
    return float(np.max(np.where(entered > 0, body / np.maximum(entered, 1), 0.0)))


def tag_trips(counts: list) -> dict[int, float]:
    """Loop k of a counted variant (its tag) -> its trips per entry on the busiest device, from the variant's extra
    outputs `counts` (for loop k, its body's runs at 2 k and its entries at 2 k + 1); a loop whose counts do not
    read (shapes apart) is left out."""
    found = {k: _per_entry(counts[2 * k], counts[2 * k + 1]) for k in range(len(counts) // 2)}
    return {k: t for k, t in found.items() if t >= 0}


def measured_trips(text: str, counted_text: str, counts: list) -> dict[tuple[str, str], float]:
    """(computation, while) of the judged program's HLO `text` -> its trips per entry on the busiest device,
    measured (see above): `counted_text` is the counted variant's optimized HLO, `counts` its extra outputs (for
    loop k, its body's runs at 2 k and its entries at 2 k + 1). A loop with no counted loop of its origin is
    left out (its count stays unknown)."""
    by_origin: dict[tuple, float] = {}
    uncounted = set()  # origins of a loop the variant does not count: no loop of theirs is measured
    for origin, tag in loop_origins(counted_text).values():
        trips = -1.0 if tag is None or 2 * tag + 1 >= len(counts) else _per_entry(counts[2 * tag], counts[2 * tag + 1])
        if trips < 0:
            uncounted.add(origin)
        else:
            by_origin[origin] = max(by_origin.get(origin, 0.0), trips)
    measured = {o: t for o, t in by_origin.items() if o not in uncounted}
    return {key: measured[origin] for key, (origin, _) in loop_origins(text).items() if origin in measured}
