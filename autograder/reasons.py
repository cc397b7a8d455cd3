"""Why a cell or a row scored what it did, as data: the closed set of reason kinds and the phrases made of them.

- `Kind`: what a reason says, a closed set; each kind is the key of its sentence in `messages.TEXT`.
- `Property`: which property of a submission a finding is about (type, shape, dtype, layout, values,
  communication; or the program, its signature, the grader itself).
- `Phrase` (`phrase(...)`), `Words`: a sentence as data, its typed fields (which variable, case or
  cell, what was expected, what was seen, numbers as numbers), and phrases in a row.
- `Verdict`: what the judge decided for one test cell's recording: passed, or the findings.
- `Reason`: any of these, or literal text (what the kernel said).

No words: `publish/words.py` writes them, in the reader's language, when a file is published. Parsed
once at an edge (`Verdict.from_json`, `Phrase.from_json`: the scorer's pipe): kinds outside the
closed set, deep nesting, many fields or long literals are refused. Threat model: a phrase's literal
fields may hold student-controlled text (names, error texts); they are bounded where they are made
and again when parsed, and are only ever inserted into a sentence, never formatted as templates
(`messages.text`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from .limits import MAX_ECHO_CHARS

__all__ = ["Kind", "Property", "Phrase", "Words", "Field", "phrase", "Verdict", "Reason", "MISTAKE_ARG"]

# a known mistake's sentence field, as a field of its finding (`known_mistake`: judge/mistakes.py makes it,
# publish/words.py puts it into the exercise's sentence)
MISTAKE_ARG = "arg_"


class Kind(StrEnum):
    """What a reason says: a closed set, each the key of its sentence in `messages.TEXT`.

    The judge (`autograder/judge/`) says which kind, with its typed fields; the words come from
    `TEXT` only when publishing (`autograder/publish/words.py`), in the reader's language."""

    # a test cell's reasons (judge/score.py)
    NOT_ANSWERED = "not_answered"
    RESULTS_UNREADABLE = "results_unreadable"
    CELL_NOT_RUN = "cell_not_run"
    NOTHING_RECORDED = "nothing_recorded"
    HIDDEN_INPUTS = "hidden_inputs"
    HIDDEN_PART_FAILED = "hidden_part_failed"
    AND_MORE = "and_more"
    NOTEBOOK_UNREADABLE = "notebook_unreadable"
    # a row's reasons (judge/score.py)
    KERNEL_NOT_STARTED = "kernel_not_started"
    ANSWERS_MISSING = "answers_missing"
    FAILED_TESTS = "failed_tests"
    # what the judge found (judge/compare.py, exported.py, compiling.py, programs.py, scorer_process.py)
    NO_PROGRAM = "no_program"
    TOO_MANY_PROGRAMS = "too_many_programs"
    PROGRAM_UNREADABLE = "program_unreadable"
    PROGRAM_NEEDS_DEVICES = "program_needs_devices"
    SIDE_EFFECTS = "side_effects"
    HOST_CALLS = "host_calls"
    WRONG_MESH = "wrong_mesh"
    PROGRAM_FAILED = "program_failed"
    PROGRAM_FAILED_HIDDEN = "program_failed_hidden"
    COMM_OVER = "comm_over"
    NO_COMM = "no_comm"
    COMM_MISSING = "comm_missing"
    COMM_EXTRA_AXES = "comm_extra_axes"
    COMM_SURPLUS = "comm_surplus"
    WORK_FLOPS = "work_flops"
    WORK_ARITHMETIC = "work_arithmetic"
    WORK_REDUCED = "work_reduced"
    WORK_PEAK = "work_peak"
    WORK_LARGEST = "work_largest"
    WORK_OVERLAP = "work_overlap"
    WORK_SENT = "work_sent"
    WORK_LOOPS = "work_loops"
    WORK_LOOPS_RUN = "work_loops_run"
    WORK_FLOPS_RUN = "work_flops_run"
    WORK_SENT_RUN = "work_sent_run"
    WORK_REDUCED_RUN = "work_reduced_run"
    WORK_REDUCED_UNKNOWN = "work_reduced_unknown"
    LAYOUT_INPUT = "layout_input"
    LAYOUT_REGION_INPUT = "layout_region_input"
    LAYOUT_REGIONS = "layout_regions"
    LAYOUT_REGION_DEAD = "layout_region_dead"
    LAYOUT_OUTPUT = "layout_output"
    LAYOUT_INPUT_NAME = "layout_input_name"
    LAYOUT_UNSTATED = "layout_unstated"
    LAYOUT_REPLICATED = "layout_replicated"
    LAYOUT_SPLIT = "layout_split"
    LAYOUT_DIM = "layout_dim"
    LAYOUT_NO_REGION = "layout_no_region"
    SIG_DEVICES = "sig_devices"
    SIG_GLOBAL_VIEW = "sig_global_view"
    SIG_NO_AXIS = "sig_no_axis"
    SIG_PER_DEVICE = "sig_per_device"
    SIG_TAKES = "sig_takes"
    SIG_STRUCTURE = "sig_structure"
    SIG_RETURNS = "sig_returns"
    SIG_TAKES_DTYPES = "sig_takes_dtypes"
    SIG_RETURNS_DTYPES = "sig_returns_dtypes"
    SHAPE_DTYPE = "shape_dtype"
    EXPECTED_GOT = "expected_got"
    VALUES_DIFFER = "values_differ"
    KNOWN_MISTAKE = "known_mistake"
    AXES_NOT_NAMES = "axes_not_names"
    AXES_SEEN = "axes_seen"
    AXES_NONE = "axes_none"
    AXES_MISSING = "axes_missing"
    KEY_MISSING = "key_missing"
    EXPECTED_ARRAY = "expected_array"
    EXPECTED_NOT_ARRAY = "expected_not_array"
    # what kind of value a program recorded, never its text (judge/compare.py `kind_of`)
    VALUE_TEXT = "value_text"
    VALUE_NAME = "value_name"
    VALUE_NUMBER = "value_number"
    VALUE_BOOL = "value_bool"
    VALUE_NONE = "value_none"
    VALUE_LIST = "value_list"
    VALUE_MAPPING = "value_mapping"
    VALUE_OTHER = "value_other"
    SCORER_TIMEOUT = "scorer_timeout"
    SCORER_DIED = "scorer_died"
    SCORER_FAILED = "scorer_failed"
    # what happened while a notebook ran (run/executor.py, run/worker.py, sandbox/cgroups.py,
    # sandbox/workcopy.py): a cell's outcome, the run's events
    CELL_GRADE_ID = "cell_grade_id"
    CELL_ADDED = "cell_added"
    CELL_ID = "cell_id"
    CELL_NUMBER = "cell_number"
    CELLS_DROPPED = "cells_dropped"
    BUDGET_NOTEBOOK = "budget_notebook"
    BUDGET_LEFT = "budget_left"
    BUDGET_RAN_OUT = "budget_ran_out"
    RAN_OUT_OF = "ran_out_of"
    OUTPUT_NOTEBOOK_CAP = "output_notebook_cap"
    OUTPUT_CELL_CAP = "output_cell_cap"
    STOPPED_BUDGET = "stopped_budget"
    RAN_LONGER = "ran_longer"
    THIS_CELL_INTERRUPTED = "this_cell_interrupted"
    CELL_INTERRUPTED = "cell_interrupted"
    THIS_CELL_HUNG = "this_cell_hung"
    CELL_HUNG = "cell_hung"
    THIS_CELL_OVERSIZED = "this_cell_oversized"
    CELL_OVERSIZED = "cell_oversized"
    LIMIT_RESTARTED = "limit_restarted"
    DIED_CPU = "died_cpu"
    DIED_SEGV = "died_segv"
    DIED_KILLED = "died_killed"
    DIED_FSIZE = "died_fsize"
    DIED_SIGNAL = "died_signal"
    DIED_EXIT = "died_exit"
    THIS_CELL_DIED = "this_cell_died"
    CELL_DIED = "cell_died"
    TOO_MANY_RESTARTS = "too_many_restarts"
    NOT_RESTARTED = "not_restarted"
    NOT_RESTARTED_BECAUSE = "not_restarted_because"
    REPLAY_FAILED_REST = "replay_failed_rest"
    REPLAY_FAILED = "replay_failed"
    NOT_RUN_BECAUSE = "not_run_because"
    LIMIT_MEMORY = "limit_memory"
    LIMIT_PROCESSES = "limit_processes"
    LIMIT_DISK = "limit_disk"
    EDITION_MISMATCH = "edition_mismatch"
    # a row the pool answers without a worker's result (run/pool.py)
    BUDGET_SPENT_ELSEWHERE = "budget_spent_elsewhere"
    BUDGET_USED_UP = "budget_used_up"
    NO_REFERENCE = "no_reference"
    NO_REFERENCE_CELL = "no_reference_cell"
    INTERNAL_ERROR = "internal_error"
    INTERNAL_ERROR_CELL = "internal_error_cell"
    WORKER_DIED = "worker_died"
    WORKER_HUNG = "worker_hung"
    LOST_TWICE = "lost_twice"
    NOT_GRADED_BECAUSE = "not_graded_because"


class Property(StrEnum):
    """Which property of a submission a finding is about (checked in this order: type, shape,
    dtype, layout, values, communication)."""

    RESULTS = "results"  # nothing (readable) recorded, or the wrong kind of value
    PROGRAM = "program"  # the recorded program itself: unreadable, not allowed, failed to run
    SIGNATURE = "signature"  # the program's inputs, outputs, devices, mesh
    SHAPE = "shape"
    DTYPE = "dtype"
    LAYOUT = "layout"
    VALUES = "values"
    COMMUNICATION = "communication"
    WORK = "work"  # what one device computes and holds (FLOPs, memory), against the reference's
    GRADER = "grader"  # the grader could not judge it (scorer timeout, crash)


_PROPERTY = {
    Kind.RESULTS_UNREADABLE: Property.RESULTS,
    Kind.KEY_MISSING: Property.RESULTS,
    Kind.EXPECTED_ARRAY: Property.RESULTS,
    Kind.EXPECTED_NOT_ARRAY: Property.RESULTS,
    Kind.NO_PROGRAM: Property.PROGRAM,
    Kind.TOO_MANY_PROGRAMS: Property.PROGRAM,
    Kind.PROGRAM_UNREADABLE: Property.PROGRAM,
    Kind.PROGRAM_NEEDS_DEVICES: Property.PROGRAM,
    Kind.SIDE_EFFECTS: Property.PROGRAM,
    Kind.HOST_CALLS: Property.PROGRAM,
    Kind.PROGRAM_FAILED: Property.PROGRAM,
    Kind.PROGRAM_FAILED_HIDDEN: Property.PROGRAM,
    Kind.WRONG_MESH: Property.SIGNATURE,
    Kind.SIG_DEVICES: Property.SIGNATURE,
    Kind.SIG_PER_DEVICE: Property.SIGNATURE,
    Kind.SIG_TAKES: Property.SIGNATURE,
    Kind.SIG_STRUCTURE: Property.SIGNATURE,
    Kind.SIG_RETURNS: Property.SIGNATURE,
    Kind.SIG_TAKES_DTYPES: Property.SIGNATURE,
    Kind.SIG_RETURNS_DTYPES: Property.SIGNATURE,
    Kind.LAYOUT_INPUT: Property.LAYOUT,
    Kind.LAYOUT_REGION_INPUT: Property.LAYOUT,
    Kind.LAYOUT_REGIONS: Property.LAYOUT,
    Kind.LAYOUT_REGION_DEAD: Property.LAYOUT,
    Kind.LAYOUT_OUTPUT: Property.LAYOUT,
    Kind.VALUES_DIFFER: Property.VALUES,
    Kind.KNOWN_MISTAKE: Property.VALUES,
    Kind.AXES_NOT_NAMES: Property.COMMUNICATION,
    Kind.AXES_MISSING: Property.COMMUNICATION,
    Kind.COMM_MISSING: Property.COMMUNICATION,
    Kind.COMM_EXTRA_AXES: Property.COMMUNICATION,
    Kind.COMM_SURPLUS: Property.COMMUNICATION,
    Kind.WORK_FLOPS: Property.WORK,
    Kind.WORK_ARITHMETIC: Property.WORK,
    Kind.WORK_REDUCED: Property.WORK,
    Kind.WORK_PEAK: Property.WORK,
    Kind.WORK_LARGEST: Property.WORK,
    Kind.WORK_OVERLAP: Property.WORK,
    Kind.WORK_SENT: Property.WORK,
    Kind.WORK_LOOPS: Property.WORK,
    Kind.WORK_LOOPS_RUN: Property.WORK,
    Kind.WORK_FLOPS_RUN: Property.WORK,
    Kind.WORK_SENT_RUN: Property.WORK,
    Kind.WORK_REDUCED_RUN: Property.WORK,
    Kind.WORK_REDUCED_UNKNOWN: Property.WORK,
    Kind.SCORER_TIMEOUT: Property.GRADER,
    Kind.SCORER_DIED: Property.GRADER,
    Kind.SCORER_FAILED: Property.GRADER,
}


@dataclass(frozen=True)
class Phrase:
    """A sentence as data: its `kind` and the values of its fields (literal text, numbers, or other
    phrases). `case`: the program case it is about (the words say "<case>: ..." ahead of the sentence
    when the sentence does not name it itself). `prop`: which property failed, where the kind alone
    does not say (shape or dtype); see `failed`.

    Literal fields are bounded where they are made (`limits.MAX_ECHO_*`, `MAX_ERROR_CHARS`) and
    again where a phrase crosses a pipe (`from_json`)."""

    kind: Kind
    fields: tuple[tuple[str, Field], ...] = ()
    case: str = ""
    prop: Property | None = None

    def get(self, name: str, default: Field = "") -> Field:
        return next((v for k, v in self.fields if k == name), default)

    @property
    def failed(self) -> Property | None:
        """Which property this finding says failed (None: words inside another sentence)."""
        return self.prop or _PROPERTY.get(self.kind)

    @property
    def variable(self) -> str:
        """The observation key or program case it is about ('' if none)."""
        return str(self.get("key", "")) or self.case

    @property
    def expected(self) -> Field:
        return self.get("want")

    @property
    def seen(self) -> Field:
        return self.get("got")

    def to_json(self, depth: int = 0) -> dict:
        """What `from_json` reads back, whatever the judge put in the fields (issue 34: a verdict for every
        program): at most `_MAX_FIELDS` fields, each text, a number, a phrase or words (`_field_json`)."""
        fields = [[str(k)[:40], _field_json(v, depth + 1)] for k, v in self.fields[:_MAX_FIELDS]]
        out: dict[str, Any] = {"kind": self.kind.value, "fields": fields}
        if self.case:
            out["case"] = self.case
        if self.prop is not None:
            out["prop"] = self.prop.value
        return out

    @classmethod
    def from_json(cls, data: Any, depth: int = 0) -> Phrase:
        """Parsed at the edge (the scorer's pipe): a closed set of kinds, bounded fields; raises ValueError."""
        if not isinstance(data, dict) or depth > _MAX_DEPTH:
            raise ValueError("a phrase is a JSON object")
        fields = data.get("fields") or []
        if not isinstance(fields, list) or len(fields) > _MAX_FIELDS:
            raise ValueError("a phrase's fields are a short list")
        parsed = []
        for item in fields:
            if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)):
                raise ValueError("a phrase's field is a [name, value] pair")
            parsed.append((item[0][:40], _field_from_json(item[1], depth + 1)))
        prop = data.get("prop")
        return cls(
            Kind(data.get("kind")),
            tuple(parsed),
            case=str(data.get("case", ""))[:MAX_ECHO_CHARS],
            prop=Property(prop) if prop is not None else None,
        )


@dataclass(frozen=True)
class Words:
    """Parts written one after another with `sep` between them (a list of names, "a; b; and 2 more")."""

    parts: tuple[Field, ...]
    sep: str = ""


Field = str | int | float | Phrase | Words
_MAX_DEPTH = 6
_MAX_FIELDS = 12
_MAX_PARTS = 64
_MAX_LITERAL = 400


def _field_json(value: Field, depth: int = 0) -> Any:
    """A field as `_field_from_json` reads it back: a phrase or words nested deeper than `_MAX_DEPTH` become
    text, words keep their first `_MAX_PARTS - 1` parts and "…", a number stays a Python number (a NumPy
    scalar too), anything else (a flag, None, a tuple) becomes its text, bounded."""
    if isinstance(value, Phrase):
        if depth + 1 > _MAX_DEPTH:
            return "…"
        return {"phrase": value.to_json(depth + 1)}
    if isinstance(value, Words):
        if depth + 1 > _MAX_DEPTH:
            return "…"
        parts = list(value.parts)
        if len(parts) > _MAX_PARTS:
            parts = parts[: _MAX_PARTS - 1] + ["…"]
        return {"words": [_field_json(p, depth + 1) for p in parts], "sep": str(value.sep)[:8]}
    if isinstance(value, str):
        return value[:_MAX_LITERAL]
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, (int, float)):
        return value
    if hasattr(value, "item") and callable(value.item):  # a NumPy scalar
        try:
            item = value.item()
        except (TypeError, ValueError):
            item = None
        if isinstance(item, (int, float)) and not isinstance(item, bool):
            return item
    return str(value)[:_MAX_LITERAL]


def _field_from_json(value: Any, depth: int) -> Field:
    if isinstance(value, bool) or value is None:
        raise ValueError("a field is text, a number, a phrase or words")
    if isinstance(value, str):
        return value[:_MAX_LITERAL]
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, dict) and depth <= _MAX_DEPTH:
        if "phrase" in value:
            return Phrase.from_json(value["phrase"], depth + 1)
        parts = value.get("words")
        if isinstance(parts, list) and len(parts) <= _MAX_PARTS:
            return Words(tuple(_field_from_json(p, depth + 1) for p in parts), str(value.get("sep", ""))[:8])
    raise ValueError("a field is text, a number, a phrase or words")


def phrase(kind: str | Kind, /, case: str = "", prop: Property | None = None, **fields: Field) -> Phrase:
    """`Phrase(Kind(kind), fields)`: how the judge says what it found (no words: those come at publishing)."""
    return Phrase(Kind(kind), tuple(fields.items()), case=case, prop=prop)


@dataclass(frozen=True)
class Verdict:
    """What the judge decided for one test cell's recording: passed, or the findings that failed it.
    `on_hidden_inputs`: the findings are introduced as results that differ on hidden inputs (False:
    the findings say it themselves, e.g. the grader could not judge it)."""

    passed: bool
    differences: tuple[Phrase, ...] = ()
    on_hidden_inputs: bool = True

    def to_json(self) -> dict:
        return {
            "passed": self.passed,
            "differences": [d.to_json() for d in self.differences],
            "on_hidden_inputs": self.on_hidden_inputs,
        }

    @classmethod
    def from_json(cls, data: Any, limit: int = 50) -> Verdict:
        """Parsed at the edge (the scorer's pipe); raises ValueError on anything else."""
        if not isinstance(data, dict) or not isinstance(data.get("differences", []), list):
            raise ValueError("a verdict is a JSON object")
        diffs = tuple(Phrase.from_json(d) for d in data.get("differences", [])[:limit])
        return cls(data.get("passed") is True and not diffs, diffs, data.get("on_hidden_inputs", True) is not False)


Reason = str | Phrase | Words | Verdict
"""Why a cell or a row scored what it did: literal text (what the kernel said), a phrase (the judge's
findings, what happened while the notebook ran, why the pool did not run it), phrases in a row, or
the judge's verdict. Made into words by `autograder/publish/words.py` only."""
