"""What a student's program does differently from the reference's, as phrases for feedback.

Used by the judge (`autograder.judge.programs`) inside the clean scorer process: its signature
(`signature_matches`, `signature_difference`), its layouts and per-device regions (`layout_difference`,
issue 16), the work one device does (`work_difference`), each said as a `reasons.Phrase` (data; the
words come when publishing). Threat model: the program is hostile data, and so is everything it
names; see the echo rule below.
"""

from __future__ import annotations

import re

from namedaxes.judging import region_difference, split_axes, work_excess
from namedaxes.judging.runs import UNKNOWN_TRIPS

from ..limits import MAX_ECHO_CHARS, MAX_ECHO_ITEMS
from ..reasons import Phrase, Words
from ..reasons import phrase as say
from .compiling import Compiled
from .exported import Layout

__all__ = [
    "cut",
    "echo",
    "name",
    "names",
    "mesh_names",
    "layout_phrase",
    "input_names",
    "layout_difference",
    "work_difference",
    "signature_matches",
    "signature_difference",
]

# Feedback echoes student-controlled names (custom calls, mesh axis names, pytree paths, shapes of a
# recorded signature, error texts): at most MAX_ECHO_ITEMS of them, each at most MAX_ECHO_CHARS long,
# printable. Nothing computed on hidden inputs is ever echoed: a program that fails while it runs on
# them is reported by its error's type alone (`program_failed_hidden`). A verdict's words are the judge's
# (the class's misconception map shows them under its name), so a name the program chose is shown only
# when it is one token of program text (`name`: an identifier, a quoted one, a path like ['w'][0]); any
# other is said by its length ("a name of 57 characters"): no sentence, no markup of the student's.


def cut(text, n: int = MAX_ECHO_CHARS) -> str:
    text = "".join(ch if ch.isprintable() else "?" for ch in str(text))
    return text if len(text) <= n else text[: n - 1] + "…"


_NAME = re.compile(r"[\w\[\]()'\".:=+*/-]+", re.ASCII)


def name(text) -> str | Phrase:
    """A name the program chose (a mesh axis, a pytree path, a custom call), for a verdict: itself when it is
    one token of program text no longer than MAX_ECHO_CHARS, else what it is ("a name of 57 characters")."""
    text = str(text)
    if len(text) <= MAX_ECHO_CHARS and _NAME.fullmatch(text):
        return text
    return say("value_name", n=len(text))


def names(items, sep: str = ", ") -> Words:
    """Names the program chose, each as `name` says it, at most MAX_ECHO_ITEMS of them."""
    items = list(items)
    more = (say("and_more", n=len(items) - MAX_ECHO_ITEMS),) if len(items) > MAX_ECHO_ITEMS else ()
    return Words((Words(tuple(name(i) for i in items[:MAX_ECHO_ITEMS]), sep), *more))


def mesh_names(axes) -> Words:
    """A program's mesh, (names, types), as `'devices': Explicit, ...`, each part as `name` says it."""
    pairs = list(zip(*axes))
    more = (say("and_more", n=len(pairs) - MAX_ECHO_ITEMS),) if len(pairs) > MAX_ECHO_ITEMS else ()
    shown = tuple(Words((name(repr(n)), ": ", name(k))) for n, k in pairs[:MAX_ECHO_ITEMS])
    return Words((Words(shown, ", "), *more))


def echo(items, n: int = MAX_ECHO_CHARS, sep: str = ", ") -> Words:
    """A student-controlled list for feedback, bounded in count and length (see MAX_ECHO_ITEMS)."""
    items = list(items)
    shown = sep.join(cut(i, n).replace(", ", sep) for i in items[:MAX_ECHO_ITEMS])
    more = (say("and_more", n=len(items) - MAX_ECHO_ITEMS),) if len(items) > MAX_ECHO_ITEMS else ()
    return Words((shown, *more))


def layout_phrase(layout: Layout | None) -> Phrase:
    """A layout as a phrase, for feedback ("split along dimension 0 over 'devices'", "replicated")."""
    if layout is None:
        return say("layout_unstated")
    parts = tuple(
        say("layout_dim", dim=d, axes=names((repr(a) for a in axes), sep=" x "))
        for d, axes in enumerate(layout[:MAX_ECHO_ITEMS])
        if axes
    )
    return say("layout_split", dims=Words(parts, ", ")) if parts else say("layout_replicated")


def input_names(exp) -> list[Words]:
    """How feedback names each flat input: `x`, `batch['y']`, or `input 2` (from the export's locations,
    else positions)."""
    import jax

    leaves = jax.tree_util.tree_unflatten(exp.in_tree, list(range(exp.in_tree.num_leaves)))
    found = []
    for path, _ in jax.tree_util.tree_flatten_with_path(leaves)[0]:
        keys = path[1:] if path and getattr(path[0], "idx", None) == 0 else path  # drop the (args, kwargs) level
        first = getattr(keys[0], "idx", None) if keys else None
        rest = jax.tree_util.keystr(tuple(keys[1:])) if keys else ""
        found.append(Words((say("layout_input_name", n=(first or 0) + 1), name(rest) if rest else "")))
    return found


_WORK_KINDS = {
    "flops": "work_flops",
    "peak_bytes": "work_peak",
    "largest_bytes": "work_largest",
    "overlap": "work_overlap",
    "sent_bytes": "work_sent",
    "arithmetic_flops": "work_arithmetic",
    "reduced_bytes": "work_reduced",
}
# The same facts where a loop was counted by running it on the hidden inputs: its figures are theirs, so unsaid.
_RUN_KINDS = {"flops": "work_flops_run", "sent_bytes": "work_sent_run", "reduced_bytes": "work_reduced_run"}


def work_difference(case: str, got: Compiled, want: Compiled, limits: dict) -> list[Phrase]:
    """Does one device of `got` compute or hold more than the case's factor times the reference's
    (`namedaxes.judging.work_excess`: FLOPs, peak memory, largest array of the optimized per-device program)?
    What it exceeds, and where that is what its loops did, how they were counted (`work_loops`): a loop that
    only a limit of its own stops counts that limit, one whose runs only its data decide as often as it ran on the
    hidden inputs (`work_loops_run`: then the figures are the hidden inputs' and are not said, only the limit
    passed; the visible check shows them on its own inputs), else `UNKNOWN_TRIPS`; reductions in a loop that could
    be neither read nor run to count them are unknown: said so (`work_reduced_unknown`), no figure."""
    excess = None if not limits or got.work is None or want.work is None else work_excess(got.work, want.work, limits)
    if excess is None:
        return []
    fact, ratio, factor = excess
    if fact == "reduced_bytes" and got.work.reductions_uncounted:
        return [say("work_reduced_unknown", case=case, factor=factor, loops=got.work.reductions_uncounted)]
    ran = (lambda w: w.reductions_measured) if fact == "reduced_bytes" else (lambda w: w.measured)
    if fact in _RUN_KINDS and (ran(got.work) or ran(want.work)):  # figures of the hidden inputs: unsaid
        return [say(_RUN_KINDS[fact], case=case, factor=factor), say("work_loops_run", case=case)]
    found = [
        say(
            _WORK_KINDS[fact],
            case=case,
            ratio=round(ratio, 1),
            factor=factor,
            got=getattr(got.work, fact),
            want=getattr(want.work, fact),
        )
    ]
    if fact in ("flops", "sent_bytes") and (got.work.bounded or got.work.uncounted):
        loops = {"bounded": got.work.bounded, "uncounted": got.work.uncounted, "unknown": UNKNOWN_TRIPS}
        found.append(say("work_loops", case=case, **loops))
    return found


def layout_difference(case: str, ref_exp, want: Compiled, got: Compiled, out_layout: bool) -> Phrase | None:
    """Does the student's program take its inputs and leave its results where the reference does?

    Inputs: a layout the signature states for an input must split it over at least the reference's mesh
    axes (an unstated one takes what the grader feeds, the reference's layout), and each per-device
    region (`shard_map`/`pmap`) of the reference must have a counterpart over the same axes that splits
    each input over at least the reference's mesh axes (a region that takes a split input whole makes
    every device hold all of it; one that splits it along another dimension is fine). Results: where
    each output lives once compiled must be where the reference's lives, unless the exercise leaves it
    open (`out_layout=False`)."""
    names = input_names(ref_exp)
    for i, (w, g) in enumerate(zip(want.entry_in, got.entry_in)):
        # unstated: it takes what it is fed (the reference's layout); stated: split over at least those axes
        if g is not None and not split_axes(w or ()) <= split_axes(g):
            return say(
                "layout_input",
                case=case,
                input=names[i] if i < len(names) else i + 1,
                got=layout_phrase(g),
                want=layout_phrase(w),
            )
    found = region_difference(want.regions, got.regions)  # namedaxes.judging: the visible checks' step too
    if found is not None and found.kind == "input":
        return say(
            "layout_region_input",
            case=case,
            n=found.n,
            axes=", ".join(repr(a) for a in found.axes),
            got=layout_phrase(found.got),
            want=layout_phrase(found.want),
        )
    if found is not None:

        def words(regions) -> Words | Phrase:
            each = tuple(Words(tuple(layout_phrase(one) for one in i), ", ") for _, i, _ in regions)
            return Words(each, "; ") if each else say("layout_no_region")

        return say("layout_regions", case=case, got=words(got.regions), want=words(want.regions))
    if out_layout:
        for i, (w, g) in enumerate(zip(want.out_layouts, got.out_layouts)):
            if w != g:
                return say("layout_output", case=case, n=i + 1, got=layout_phrase(g), want=layout_phrase(w))
    return None


def signature_matches(want: dict, got: dict) -> bool:
    """Same inputs, outputs and devices; per-device regions over (at least) the reference's named axes,
    or none at all where the reference is a global-view program (`jit` with shardings)."""
    same = all(want[k] == got[k] for k in want if k != "per_device_over")
    named = {a for a in got["per_device_over"] if not a.startswith("_")}
    if not want["per_device_over"]:
        return same and not got["per_device_over"]
    return same and set(want["per_device_over"]) <= named


def signature_difference(want: dict, got: dict) -> Phrase:
    if want["devices"] != got["devices"]:
        return say("sig_devices", got=got["devices"], want=want["devices"])
    if want["per_device_over"] != got["per_device_over"]:
        seen = names(repr(a) for a in got["per_device_over"]) if got["per_device_over"] else say("sig_global_view")
        return say(
            "sig_per_device", got=seen, want=", ".join(repr(a) for a in want["per_device_over"]) or say("sig_no_axis")
        )
    if want["in_tree"] != got["in_tree"] or want["in"] != got["in"]:
        same_tree = want["in_tree"] == got["in_tree"]
        return (same_tree and _dtypes_only("sig_takes_dtypes", got["in"], want["in"])) or say(
            "sig_takes", got=echo(got["in"]), want=echo(want["in"])
        )
    if want["out_tree"] != got["out_tree"]:
        return say("sig_structure", got=names(got["out_tree"]), want=", ".join(want["out_tree"]))
    return _dtypes_only("sig_returns_dtypes", got["out"], want["out"]) or say(
        "sig_returns", got=echo(got["out"]), want=echo(want["out"])
    )


_AVAL = re.compile(r"([A-Za-z0-9_]+)(\[.*\])")  # "bfloat16[1, 64, 16]": dtype, shape


def _dtypes_only(kind: str, got: list, want: list) -> Phrase | None:
    """Where only dtypes differ (same count, same shapes: bf16 master weights), a summary instead of two lists
    of every array: how many of them, which dtypes they have and which they should have."""
    if len(got) != len(want):
        return None
    pairs = [(_AVAL.fullmatch(str(g)), _AVAL.fullmatch(str(w))) for g, w in zip(got, want)]
    if not all(g and w and g.group(2) == w.group(2) for g, w in pairs):
        return None
    changed = [(g.group(1), w.group(1)) for g, w in pairs if g.group(1) != w.group(1)]
    if not changed:
        return None
    seen, expected = sorted({g for g, _ in changed}), sorted({w for _, w in changed})
    return say(kind, changed=len(changed), total=len(got), got=names(seen, " / "), want=names(expected, " / "))
