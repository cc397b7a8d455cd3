"""The grader's region and communication steps on visible inputs, shared by the notebooks whose answers are
per-device functions (05 shard_map, 06 multi_process, 07 collectives).

    expect_own_shard(name, facts, region, what)   # a live per-device region taking each input split as stated
    judge_regions(name, fn, mesh, *args, ins=..., axis=..., why=..., context=..., what=..., over=...)

Both read what `compiled.examined` found in the exported and compiled program, the way the grader's judge
(`autograder.judge.programs`) reads it: a `jax.shard_map` over `region[0]` that takes each input split over at
least the mesh axes of `region[1]` (the reference's `in_specs`) and reaches the result, then a collective over
`axis` whose result reaches it. Their sentences are this module's `TEXT`; each notebook passes only its own
rules (`what` it returns, `why` the collective is needed, and the `context` that translates JAX's errors in
its own words).
"""

from __future__ import annotations

from collections.abc import Callable

from ..i18n import Messages
from ..judging import region_takes
from .compiled import examined
from .failures import fail
from .text import TEXT as CORE_TEXT

__all__ = ["TEXT", "expect_own_shard", "judge_regions"]

TEXT = {
    "values_word": "values",
    "not_own_shard": (
        "`{name}` returns the right {what}, but no `jax.shard_map` over {axes} in it gives each device only "
        "its own shard of the inputs ({want}); read from the exported program, it has {got}. The grader runs "
        "your program with each device holding only its shard: keep the inputs split as they are placed "
        "(the same `in_specs`), and do not gather them or make them replicated first."
    ),
    "layout_whole": "the whole value on every device",
    "layout_split": "split over {axes} along dimension {dim}",
    "layout_input": "input {n} {layout}",
    "regions_got": "a `jax.shard_map` over {axes} that takes {inputs}",
    "regions_none": "no `jax.shard_map` at all",
    "region_dead": (
        "`{name}` returns the right {what}, but the `jax.shard_map` over {axes} in it that gives each device "
        "its own shard ({want}) does not reach the result: changing what it returns leaves the result as it "
        "is (read from the exported program, the way the grader reads it): what it returns is discarded "
        "(multiplied by zero, say) and the result is computed elsewhere. Compute the {what} from what the "
        "`jax.shard_map` returns."
    ),
    "not_reaching": (
        "`{name}` returns the right {what}, but no collective over '{axis}' reaches its result (read from the "
        "compiled program, the way the grader reads it: {seen}). Communication that is discarded or "
        "multiplied by zero counts for nothing, and a total computed outside the per-device function needs "
        "no collective of yours. {why}"
    ),
    "reaching_seen": "{ops} reach the result",
    "reaching_none": "no collective reaches the result",
}
TEXT = Messages(TEXT)  # the table above, each lookup in the kernel's language

_say = TEXT.say


def _layout_words(layout) -> str:
    parts = [
        _say("layout_split", axes=" x ".join(repr(a) for a in axes), dim=d) for d, axes in enumerate(layout) if axes
    ]
    return CORE_TEXT["list_sep"].join(parts) if parts else _say("layout_whole")


def _inputs_words(ins) -> str:
    return CORE_TEXT["list_sep"].join(
        _say("layout_input", n=n + 1, layout=_layout_words(layout)) for n, layout in enumerate(ins)
    )


def _axes_words(axes) -> str:
    return " x ".join(repr(a) for a in axes)


def expect_own_shard(name: str, got, region: tuple, what: str) -> None:
    """The grader's layout step on examined facts (`got`): a live per-device region over `region[0]` that
    takes each input split over at least the mesh axes of `region[1]` (the reference's `in_specs`)."""
    axes, ins = region
    if got.takes(axes, ins):
        return
    if region_takes(got.dead_regions, axes, ins):
        fail(_say("region_dead", name=name, what=what, axes=_axes_words(axes), want=_inputs_words(ins)))
    seen = CORE_TEXT["list_sep"].join(
        _say("regions_got", axes=_axes_words(a), inputs=_inputs_words(i)) for a, i, _ in got.regions
    ) or _say("regions_none")
    fail(_say("not_own_shard", name=name, what=what, axes=_axes_words(axes), want=_inputs_words(ins), got=seen))


def judge_regions(
    name: str,
    fn: Callable,
    mesh,
    *args,
    ins: tuple,
    axis: str,
    why: str,
    context=None,
    facts=None,
    what: str | None = None,
    over: tuple | None = None,
):
    """The grader's judging steps on the visible inputs: `fn(*args, mesh)` exported and compiled (in
    `context`, the notebook's translation of JAX's errors); a per-device region over the mesh axes `over` (the
    collective's `axis` alone, unless said) must take each input split over at least the mesh axes of `ins` (the
    reference's `in_specs`), and some collective over `axis` must reach the result. Returns what was read
    (`Examined`). `facts`: what `examined` already read of this very program (then nothing is compiled again,
    and `context` is not needed). `what`: what the region computes ("values", in the kernel's language, unless
    said)."""
    what = TEXT["values_word"] if what is None else what
    region = (tuple(over) if over is not None else (axis,), ins)
    got = facts
    if got is None:
        with context:
            got = examined(lambda *a: fn(*a, mesh), *args)
    expect_own_shard(name, got, region, what)
    reaching = [c for c in got.matters if c.endswith(f" over '{axis}'")]
    if not reaching:
        seen = (
            _say("reaching_seen", ops=CORE_TEXT["list_sep"].join(got.matters)) if got.matters else _say("reaching_none")
        )
        fail(_say("not_reaching", name=name, what=what, axis=axis, seen=seen, why=why))
    return got
