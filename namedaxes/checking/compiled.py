"""Communication and layouts read from the compiled program, as the grader reads them (issue 16).

`examined` exports the answer with `jax.jit` and hands it to `namedaxes.judging.examine`: compiled,
run, its collectives read from the optimized HLO, each kind perturbed to see whether it reaches the
outputs, its per-device regions and where its results live. The `expect_*` here are the grader's
judging steps as visible checks, worded for the student.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections import OrderedDict
from collections.abc import Callable

import numpy as np

from .explaining import quoted_names
from .failures import fail, fail_paragraph
from .text import TEXT

__all__ = [
    "answer_work",
    "expect_case_work",
    "expect_work_within",
    "reaching_communication",
    "expect_reaching_collective",
    "examined",
    "describe_layout",
    "expect_communication",
    "expect_regions",
    "expect_output_layouts",
    "compiled_once",
    "COMPILED_MEMO",
]


def reaching_communication(fn: Callable, *args) -> list[str]:
    """The collectives of `jax.jit(fn)(*args)` whose results reach its outputs, read the grader's way
    (`examined`). Descriptions such as "psum over 'devices'"."""
    return list(examined(fn, *args).matters)


def examined(fn: Callable, *args, rtol: float | None = None, atol: float | None = None):
    """`jax.jit(fn)(*args)` exported and examined as the grader examines a program (`namedaxes.judging.examine`:
    compiled, run on `args`, its collectives read from the optimized HLO, each kind perturbed to see whether
    it reaches the outputs, its per-device regions and where its results live)."""
    import jax

    from ..grading import EXPORT, JIT
    from ..judging import examine

    leaves, tree = jax.tree_util.tree_flatten(args)
    abstract = [
        jax.ShapeDtypeStruct(
            v.shape,
            v.dtype,
            sharding=getattr(v, "sharding", None)
            if getattr(getattr(v, "sharding", None), "mesh", None) is not None
            else None,
        )
        for v in leaves
    ]
    exp = EXPORT(JIT(fn))(*jax.tree_util.tree_unflatten(tree, abstract))
    return examine(exp, [np.asarray(v) for v in leaves], rtol=rtol, atol=atol)


def describe_layout(layout: tuple) -> str:
    """A layout (`namedaxes.judging`: per dimension, the mesh axes it is split over) in words."""
    parts = [
        TEXT["layout_dim"].format(dim=d, axes=" x ".join(repr(a) for a in axes))
        for d, axes in enumerate(layout)
        if axes
    ]
    return TEXT["layout_split"].format(dims=TEXT["list_sep"].join(parts)) if parts else TEXT["layout_replicated"]


def expect_communication(
    name: str, facts, axis_name: str, primitive: str | None = None, hint: str = "", reaching: bool = True
) -> None:
    """The examined program (`examined`) performs a collective over `axis_name` (a `primitive` such as "psum",
    as the compiled program names it: a pmean is a psum there) whose result reaches its outputs
    (`reaching=False`: present is enough, for a check that looks at other things in between)."""

    def wanted(desc: str) -> bool:
        return desc.endswith(f" over '{axis_name}'") and (primitive is None or desc.startswith(f"{primitive} over"))

    if not any(wanted(d) for d in facts.present):
        seen = TEXT["list_sep"].join(facts.present)
        want = f"`{primitive}`" if primitive else TEXT["a_collective"]
        template = TEXT["collective_missing"] if seen else TEXT["collective_missing_none"]  # whole sentences
        fail_paragraph(template.format(name=name, axis=axis_name, want=want, seen=seen, hint=hint))
    if reaching and not any(wanted(d) for d in facts.matters):
        dead = next(d for d in facts.present if wanted(d))
        fail_paragraph(TEXT["collective_unused"].format(name=name, collective=dead, hint=hint))


def expect_regions(name: str, facts, want: tuple, hint: str = "") -> None:
    """Every per-device region of `want` ((manual axes, input layouts), as `namedaxes.judging.regions` reads
    them) has a counterpart in the examined program that splits each input over at least those mesh axes:
    the grader's layout step (`namedaxes.judging.region_difference`)."""
    from ..judging import region_difference

    if all(facts.takes(axes, ins) for axes, ins, *_ in want):  # stops at the first live region that fits
        return
    found = region_difference(want, facts.regions)  # not None: some wanted region has no live counterpart
    if region_difference(want, facts.regions + facts.dead_regions) is None:  # only dead regions match
        fail_paragraph(
            TEXT["layout_region_dead"].format(
                name=name,
                axes=quoted_names(want[0][0]),
                hint=hint,
                want=TEXT["list_sep"].join(describe_layout(i) for i in want[0][1]),
            )
        )
    if found.kind == "input":
        fail_paragraph(
            TEXT["layout_region_input"].format(
                name=name,
                axes=quoted_names(found.axes),
                n=found.n,
                got=describe_layout(found.got),
                want=describe_layout(found.want),
                hint=hint,
            )
        )
    axes, ins = want[0][0], want[0][1]
    fail_paragraph(
        TEXT["layout_no_region"].format(
            name=name, axes=quoted_names(axes), hint=hint, want=TEXT["list_sep"].join(describe_layout(i) for i in ins)
        )
    )


def expect_output_layouts(name: str, facts, want: tuple, hint: str = "") -> None:
    """Each result of the examined program lives where `want` says once compiled (the grader's output layout
    step: split or replicated, over which mesh axes)."""
    for n, (w, g) in enumerate(zip(want, facts.out_layouts)):
        if tuple(w) != tuple(g):
            fail_paragraph(
                TEXT["layout_output"].format(
                    name=name, n=n + 1, got=describe_layout(g), want=describe_layout(w), hint=hint
                )
            )


def expect_reaching_collective(name: str, fn: Callable, *args, collective: str, hint: str = "") -> None:
    """`jax.jit(fn)(*args)` performs `collective` (a description such as "psum over 'devices'") and its
    result reaches the outputs (`reaching_communication`)."""
    if collective not in reaching_communication(fn, *args):
        fail_paragraph(TEXT["collective_unused"].format(name=name, collective=collective, hint=hint))


# ---------------------------------------------------------------- one compile per program (issue 46)
COMPILED_MEMO = 16  # the compiled programs `compiled_once` keeps, at most (the least recently used go first)
_COMPILED: OrderedDict = OrderedDict()  # fingerprint -> jax.stages.Compiled


def _fingerprint(lowered, options: dict) -> str | None:
    """The digest of everything a compile of `lowered` depends on: its module's bytecode, the constants it
    takes as arguments, its devices and the compiler options; None when JAX does not say one of them."""
    from jax._src.interpreters import mlir

    lowering = getattr(lowered, "_lowering", None)
    consts = getattr(lowering, "const_args", None)
    devices = getattr(lowering, "_device_list", None)
    own = getattr(lowering, "_compiler_options_kvs", None)
    if consts is None or devices is None or own is None:
        return None
    digest = hashlib.sha256(mlir.module_to_bytecode(lowered.compiler_ir("stablehlo")))
    for const in consts:
        value = np.asarray(const)
        digest.update(f"{value.dtype}{value.shape}".encode() + value.tobytes())
    digest.update(repr([getattr(d, "id", d) for d in devices]).encode())
    digest.update(repr((tuple(own), sorted(options.items()))).encode())
    return digest.hexdigest()


def compiled_once(lowered, options: dict | None = None):
    """`lowered.compile(options)`, made once per program: a check run again on an unchanged answer (the same
    lowered module, constants, devices and options, `_fingerprint`) compiles nothing. The memo is the visible
    checks' alone (the grader compiles every program itself) and holds at most `COMPILED_MEMO` programs."""
    options = dict(options or {})
    key = _fingerprint(lowered, options)
    if key is not None and key in _COMPILED:
        _COMPILED.move_to_end(key)
        return _COMPILED[key]
    compiled = lowered.compile(options)
    if key is not None:
        _COMPILED[key] = compiled
        while len(_COMPILED) > COMPILED_MEMO:
            _COMPILED.popitem(last=False)
    return compiled


def answer_work(fn: Callable, *args):
    """One device's work (`namedaxes.judging.Work`) in the program of `jax.jit(fn)` on `args` (abstract or
    placed inputs), exported and compiled as the grader compiles it (`namedaxes.judging.exported_work`): what
    `expect_work_within` judges."""
    import jax

    from ..judging import exported_work

    return exported_work(jax.export.export(jax.jit(fn))(*args))


def expect_case_work(case, fact: str, want: float, say: Callable[..., str], key: str, context=None, **fields) -> None:
    """The visible side of a graded case's work rule (`namedaxes.grading.Case(work={fact: factor})`): one device's
    `fact` of the case's program (`answer_work`, exported in `context`, the notebook's translation of JAX's
    errors, and in the case's own context) at most the case's factor times the reference's `want`
    (`expect_work_within`, which words the failure `say(key, **fields)`): one factor for the check and the grader."""
    with context or contextlib.nullcontext(), (case.context or contextlib.nullcontext)():
        work = answer_work(case.fn, *case.args)
    expect_work_within(work, fact, want, case.work[fact], say, key, **fields)


def expect_work_within(
    work, fact: str, want: float, factor: float, say: Callable[..., str], key: str, **fields
) -> None:
    """One device's `fact` of `work` (a fact of `namedaxes.judging.WORK_FACTS`, read from the compiled program as
    the grader reads it) at most `factor` times the reference's `want`; else a failure with the message
    `say(key, **fields)`, to which this adds `ratio`, `got`, `want` and `factor` (FLOPs as `1.5e+04`, bytes
    as they are): the answer does more than its share of the work on one device."""
    import dataclasses

    from ..judging import Work, work_excess

    excess = work_excess(work, dataclasses.replace(Work(0.0, 0, 0), **{fact: want}), {fact: factor})
    if excess is None:
        return
    shown = (lambda value: f"{value:g}") if fact in ("flops", "arithmetic_flops") else (lambda value: value)
    got = shown(getattr(work, fact))
    fail(say(key, ratio=f"{excess[1]:.1f}", got=got, want=shown(want), factor=f"{factor:g}", **fields))
