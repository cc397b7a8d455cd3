"""What notebook 09's checks share: its meshes, how an answer runs, and the work, layouts and collectives its
compiled program must show; and how one exercise is judged on its meshes (`judged_on_meshes` for the check,
`mesh_programs` for the grader), each exercise giving its inputs, right values and known mistakes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import jax
import numpy as np
from jax.sharding import AxisType

from namedaxes import EXPERTS, SEQUENCE, STAGES
from namedaxes.checking import (
    exercises_for,
    expect_result,
    explained,
    fail,
    fail_values,
    first_line,
    layout_error,
    same_values,
    unbound_axis_name,
)
from namedaxes.checking.compiled import compiled_once
from namedaxes.checking.sources import carried
from namedaxes.grading import Case, programs
from namedaxes.judging import COMPILER_OPTIONS, Work, collective_sends, work_excess, work_of
from namedaxes.meshes import describe, line_mesh, with_mesh

from . import text
from .reference_work import REFERENCE_WORK
from .text import TEXT, say

exercise = exercises_for(__package__, text)  # the notebook's Exercise maker: exercise(name, check, observe=...)

MICROBATCHES = 4  # exercise 1: the batch is split into this many microbatches
CAPACITY = 2  # exercise 2: how many tokens of one device each expert takes, at most


# ---------------------------------------------------------------- meshes
def stage_line_mesh(k: int):
    """A 1-D Explicit mesh of the first `k` devices, axis STAGES (one pipeline stage per device)."""
    return line_mesh(k, STAGES, AxisType.Explicit)


def expert_line_mesh(k: int):
    """A 1-D Explicit mesh of the first `k` devices, axis EXPERTS (one expert per device)."""
    return line_mesh(k, EXPERTS, AxisType.Explicit)


def sequence_line_mesh(k: int):
    """A 1-D Explicit mesh of the first `k` devices, axis SEQUENCE (one block of the sequence per device)."""
    return line_mesh(k, SEQUENCE, AxisType.Explicit)


# ---------------------------------------------------------------- running answers


# The mesh each exercise's section of the notebook made, which an answer may use by mistake for its `mesh`.
_MESH_GLOBALS = {"pipeline_loss": "stage_mesh", "moe_layer": "expert_mesh", "causal_ring_attention": "seq_mesh"}
_OTHER_MESH = (
    "Received incompatible devices for jitted computation",
    "not evenly divisible by the corresponding mesh axis",
    "should match the mesh passed to shard_map",
)


def answer_rules(name: str):
    def rule(err: BaseException) -> str | None:
        text, first = str(err), first_line(err)
        if isinstance(err, ValueError) and any(s in text for s in _OTHER_MESH):
            return say("mesh_global", name=name, first=first, mesh_global=_MESH_GLOBALS.get(name, "mesh_8"))
        if kind := layout_error(err):
            return say(kind, name=name, first=first)
        if isinstance(err, TypeError) and "carry" in text and "to='varying'" in text:
            return say("carry_varying", name=name, first=first)
        axis = unbound_axis_name(err)
        return None if axis is None else say("unbound", name=name, axis=axis, first=first)

    return (rule,)


@dataclass(frozen=True)
class Ran:
    """One mesh's run of an answer, read the grader's way from the optimized per-device program: its `Work`
    (`namedaxes.judging.work_of`) and how often it runs each kind of collective, of which largest size
    (`namedaxes.judging.collective_sends`)."""

    k: int
    mesh: object
    work: Work
    sends: dict
    text: str = field(default="", repr=False)  # the optimized HLO module
    program: Callable | None = field(default=None, repr=False)  # the answer on this mesh, and its arguments:
    args: tuple = field(default=(), repr=False)  # what its collectives carry (`carried_by`)

    @property
    def moved(self) -> list[str]:
        """The kinds of collective it performs: "ppermute over 'stage_axis'"."""
        return sorted(d for d, _ in self.work.moved)

    def carried_by(self, primitive: str) -> list[frozenset[int]]:
        """For each `primitive` ("all_to_all", "ppermute") of the answer's traced program, the positions of the
        arguments it carries data from (`namedaxes.checking.sources.carried`)."""
        return carried(self.program, *self.args, primitive=primitive)


def run_answer(name: str, program: Callable, *args, mesh=None):
    """`jax.jit(program)` compiled for `args` as the grader compiles (`COMPILER_OPTIONS`) and run: (its
    result, what one device does in it, `Ran`)."""
    with explained(name, rules=answer_rules(name)):
        compiled = compiled_once(jax.jit(program).lower(*args), COMPILER_OPTIONS)
        out = compiled(*args)
    names = tuple(mesh.axis_names)
    sizes = tuple(mesh.shape[a] for a in names)
    text = compiled.as_text()
    work = work_of(compiled, names, sizes, mesh.size, text=text)
    return out, Ran(mesh.size, mesh, work, collective_sends(text, names, sizes, mesh.size), text, program, args)


_WORK_KEYS = (("largest_bytes", "work_largest"), ("flops", "work_flops"), ("sent_bytes", "work_sent"))


def _expect_work(name: str, ran: list, reference: dict, limits: dict, why: Callable) -> None:
    """Each device's share of the work on every mesh (the grader's `Case(work=...)`): the largest array one
    device materializes and its FLOPs, each at most `limits[fact]` times the reference's (`reference[k]`);
    `why(fact, ran)` says what the excess means."""
    for run in ran:
        for fact, key in _WORK_KEYS:
            if fact not in limits:
                continue
            excess = work_excess(run.work, reference[run.k], {fact: limits[fact]})
            if excess is None:
                continue
            got, want = getattr(run.work, fact), getattr(reference[run.k], fact)
            fail(
                say(
                    key,
                    name=name,
                    mesh=describe(run.mesh),
                    got=f"{got:g}",
                    want=f"{want:g}",
                    ratio=f"{excess[1]:.1f}",
                    factor=f"{excess[2]:g}",
                    why=why(fact, run),
                )
            )


def _expect_collectives(name: str, ran: Ran, need: str, refused_key: str, why_key: str, also_allowed=()) -> None:
    """The compiled program's collectives: no all_gather (`refused_key` says what it gathers), one `need` (`why_key`
    says why), nothing but `need` and `also_allowed`."""
    seen, mesh = ran.moved, ran.mesh
    listed = say("seen_join").join(seen) or say("seen_nothing")
    refused = [d for d in seen if d.startswith("all_gather")]
    if refused:
        fail(say(refused_key, name=name, mesh=describe(mesh), seen=say("seen_join").join(refused)))
    if need not in seen:
        fail(say("no_collective", name=name, mesh=describe(mesh), want=need, seen=listed, why=say(why_key)))
    allowed = (need, *also_allowed)
    others = [d for d in seen if d not in allowed]
    if others:
        fail(
            say(
                "other_collectives",
                name=name,
                mesh=describe(mesh),
                seen=say("seen_join").join(others),
                allowed=say("seen_join").join(allowed),
            )
        )


def _fail_rows(name: str, where: str, want, got, hint: str) -> None:
    """A wrong matrix, shown by its first row that differs (a corner of a long array may all be right)."""
    bad = ~np.all(np.isclose(got, want, rtol=1e-4, atol=1e-4), axis=1)
    row = int(np.argmax(bad))
    fail_values(
        say, "values_row", want[row], got[row], dtype=float, threshold=12, name=name, where=where, row=row, hint=hint
    )


def diagnosed(got, wrongs: list) -> str:
    """The hint of the first known mistake (`(values, key, fields)`) whose values `got` has."""
    return next((say(key, **fields) for values, key, fields in wrongs if same_values(got, values, 1e-4)), "")


# ---------------------------------------------------------------- one exercise on its meshes
# The notebook's globals that an answer may read the number of devices from instead of its mesh: (name, value,
# the mesh axis's name in the notebook).
_COUNT_GLOBALS = {
    "pipeline_loss": ("k", 4, "STAGES"),
    "moe_layer": ("n_experts", 8, "EXPERTS"),
    "causal_ring_attention": ("n_blocks", 8, "SEQUENCE"),
}


@dataclass(frozen=True)
class Inputs:
    """An exercise's inputs on one mesh: on the host and placed on the mesh, the right result (its values, shape
    and layout), and the inputs' shapes, for messages."""

    mesh: object
    host: tuple
    args: tuple
    want: object
    result: tuple  # (shape, layout)
    shapes: str


@dataclass(frozen=True)
class Answered:
    """An answer run on one mesh, its result's type, shape and layout checked: the result, its inputs
    (`Inputs`), the run (`Ran`), and where (the mesh and the shapes, for messages)."""

    out: object
    inputs: Inputs
    ran: Ran
    where: str

    @property
    def values(self) -> np.ndarray:
        return np.asarray(self.out, np.float64)


@dataclass(frozen=True)
class Collectives:
    """The collectives an exercise's compiled program performs on its first mesh: `need` (the key `why` says
    why it is needed), no all_gather (the key `gathers` says what it gathers, or `gathers(ran)` picks that key),
    nothing but `need` and `also`."""

    need: str
    why: str
    gathers: str | Callable
    also: tuple = ()


def judged_on_meshes(name: str, fn: Callable, shapes, case, known, generic, collectives, work, why, first=None) -> None:
    """An exercise's check, in the checks' order: its values on each mesh of `shapes` in turn (`case(*shape)`, a
    `Inputs`; wrong ones with the hint of a known mistake, `known(values, host, k)`, else of a device count read
    from the notebook's global, else the key `generic`), `first(name, answer)` more on the first mesh; then
    its `Collectives` on the first mesh; then each device's work on every mesh, within `work`'s factors of the
    reference's (`REFERENCE_WORK`), `why(fact, ran)` saying what the excess means."""
    ran = []
    for shape in shapes:
        answer = _answered(name, fn, case(*shape))
        if not same_values(answer.values, answer.inputs.want, 1e-4):
            hint = known(answer.values, answer.inputs.host, shape[0])
            hint = hint or _global_count(name, shape[0], lambda count: _right_on(name, fn, case, shapes, count))
            _fail_answer(name, answer, hint or say(generic))
        if first is not None and shape == shapes[0]:
            first(name, answer)
        ran.append(answer.ran)
    gathers = collectives.gathers(ran[0]) if callable(collectives.gathers) else collectives.gathers
    _expect_collectives(name, ran[0], collectives.need, gathers, collectives.why, collectives.also)
    _expect_work(name, ran, REFERENCE_WORK[name], work, why)


def _answered(name: str, fn: Callable, inputs: Inputs) -> Answered:
    """`fn(*args, mesh)` run as the grader compiles it (`run_answer`), its result's type, shape and layout checked."""
    where = say("where_mesh", mesh=describe(inputs.mesh), shapes=inputs.shapes)
    out, ran = run_answer(name, with_mesh(fn, inputs.mesh), *inputs.args, mesh=inputs.mesh)
    expect_result(name, out, *inputs.result, TEXT, where=where)
    return Answered(out, inputs, ran, where)


def _right_on(name: str, fn: Callable, case: Callable, shapes, count: int) -> bool:
    answer = _answered(name, fn, case(*next(s for s in shapes if s[0] == count)))
    return same_values(answer.values, answer.inputs.want, 1e-4)


def _global_count(name: str, k: int, right_there: Callable[[int], bool]) -> str:
    """The hint for values wrong on `k` devices that are right on as many devices as the notebook's global
    count (`_COUNT_GLOBALS`); "" otherwise. `right_there(count)` runs the answer on that mesh."""
    glob, count, axis = _COUNT_GLOBALS[name]
    if k == count:
        return ""
    try:
        right = right_there(count)
    except Exception:  # noqa: BLE001 - any failure there: no such hint
        right = False
    return say("global_count", right=count, k=k, glob=glob, axis=axis) if right else ""


def _fail_answer(name: str, answer: Answered, hint: str) -> None:
    """Wrong values: a matrix by its first row that differs, a scalar whole."""
    want, where = answer.inputs.want, answer.where
    if answer.values.ndim == 2:
        _fail_rows(name, where, want, answer.values, hint)
    fail_values(say, "values", want, answer.out, dtype=float, threshold=12, name=name, where=where, hint=hint)


def mesh_programs(fn: Callable, shapes, mesh_for: Callable, abstract: Callable, work: dict, more=None) -> dict:
    """Exported programs of `fn` on each mesh of `shapes` (`mesh_for(k)`, its inputs `abstract(mesh, *shape)`;
    values, layouts and each device's `work`), on the first mesh the cases of `more(program, inputs)`, and a
    structure case there: the reference's collectives and nothing else."""
    cases = {}
    for shape in shapes:
        mesh = mesh_for(shape[0])
        cases[f"k{shape[0]}"] = Case(with_mesh(fn, mesh), *abstract(mesh, *shape), rtol=1e-4, atol=1e-4, work=work)
    mesh = mesh_for(shapes[0][0])
    if more is not None:
        cases.update(more(with_mesh(fn, mesh), abstract(mesh, *shapes[0])))
    cases["structure"] = Case(with_mesh(fn, mesh), *abstract(mesh, *shapes[0]), values=False, only_collectives=True)
    return programs(cases)
