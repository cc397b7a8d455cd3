"""Judge exported programs: run them on the grader's own inputs, read their real communication.

Runs only inside the clean scorer process (`autograder/judge/scorer_process.py`), which never
executes student code. Threat model: a recorded observation is whatever the
student's kernel chose to write, so every byte of it is hostile data. Here it is
only ever *data*. The judge's steps, one module each:

- reading (`autograder.judge.exported`): a case's program is deserialized, its custom calls are
  checked against a small allow-list (no host callbacks), it must have no effects, and its
  signature must equal the reference program's;
- its inputs are drawn from a secret seed the kernel never sees, with the distribution the
  **reference** observation names (`autograder.judge.hidden_inputs`);
- it is run the way the **reference** lays out its inputs (issue 16): the grader
  feeds every input with the reference's layout (`autograder.judge.compiling`), requires the layouts the
  program's signature states to be the reference's, requires each per-device
  region of the reference (`pmap`'s or `shard_map`'s, read from the module's
  `sdy.manual_computation`s) to have a counterpart that splits each input over
  at least the same mesh axes (so no device is handed more than its shard), and
  requires every result to live where the reference's lives once compiled
  (split or replicated, over which axes; `out_layout=False` in the reference's
  case leaves that open). A layout difference is reported as such, before values;
- it is compiled for the grader's devices and its communication is read from the *optimized* HLO
  (`autograder.judge.compiling`); a collective earns a point only if what it sends reaches the results
  (`namedaxes.judging.perturbed`: its operands made again from shifted inputs inside the program, the
  variant run on the same hidden inputs, the outputs must change), so a discarded, zero-multiplied or
  cancelled collective, and one that sends zeros or a constant, earns nothing;
- outputs and communication are compared with the reference program's on the
  same inputs (`autograder.judge.compare` rules: allclose values, every collective
  of the reference present).

Reference programs come from the solution notebook's run (trusted, stored with
content hashes by the reference cache); their compiled form (`compiling`) and outputs (`Judge`) are
cached per process, so a batch compiles each reference program once.
Looping forever, crashing or exhausting memory is handled one level up: the
scorer process runs under limits and a timeout and is replaced.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from namedaxes.judging import (
    changed,
    perturbed,
    proven_regions,
    region_difference,
    region_facts,
    region_takes,
    split_axes,
    text_mesh,
    work_excess,
)

from ..limits import MAX_CASES, MAX_ECHO_CHARS, MAX_ECHO_ITEMS, MAX_ERROR_CHARS
from ..reasons import Phrase, Verdict, Words
from ..reasons import phrase as say
from .compare import compare, load_observations
from .compiling import Compiled, compiled_for
from .exported import (
    ALLOWED_CUSTOM_CALLS,
    PROGRAM_PREFIX,
    PROGRAMS_KEY,
    Layout,
    Rejected,
    custom_calls,
    fingerprint,
    is_program_observation,
    load_program,
    mesh_of,
    module_text,
    signature,
)
from .hidden_inputs import hidden_outputs, hidden_rng, perturb_factor

__all__ = ["Judge", "describe_layout"]

# Feedback echoes student-controlled names (custom calls, mesh axis names, pytree paths, shapes of a
# recorded signature, error texts): at most MAX_ECHO_ITEMS of them, each at most MAX_ECHO_CHARS long,
# printable. Nothing computed on hidden inputs is ever echoed: a program that fails while it runs on
# them is reported by its error's type alone (`program_failed_hidden`).


def _cut(text, n: int = MAX_ECHO_CHARS) -> str:
    text = "".join(ch if ch.isprintable() else "?" for ch in str(text))
    return text if len(text) <= n else text[: n - 1] + "…"


def _echo(items, n: int = MAX_ECHO_CHARS, sep: str = ", ") -> Words:
    """A student-controlled list for feedback, bounded in count and length (see MAX_ECHO_ITEMS)."""
    items = list(items)
    shown = sep.join(_cut(i, n).replace(", ", sep) for i in items[:MAX_ECHO_ITEMS])
    more = (say("and_more", n=len(items) - MAX_ECHO_ITEMS),) if len(items) > MAX_ECHO_ITEMS else ()
    return Words((shown, *more))


def describe_layout(layout: Layout | None) -> Phrase:
    """A layout as a phrase, for feedback ("split along dimension 0 over 'devices'", "replicated")."""
    if layout is None:
        return say("layout_unstated")
    parts = tuple(
        say("layout_dim", dim=d, axes=_echo((repr(a) for a in axes), sep=" x "))
        for d, axes in enumerate(layout[:MAX_ECHO_ITEMS])
        if axes
    )
    return say("layout_split", dims=Words(parts, ", ")) if parts else say("layout_replicated")


# ---------------------------------------------------------------- the judge
@dataclass
class _Reference:
    meta: dict
    programs: dict = field(default_factory=dict)  # case -> (exp, Compiled)
    outputs: dict = field(default_factory=dict)  # (seed id, case) -> outputs


class Judge:
    """Compares a student's recorded programs with the reference's; caches reference work."""

    def __init__(self, secret: bytes):
        if not secret:
            raise ValueError("the scorer needs a non-empty secret")
        self.secret = secret
        self._refs: dict[str, _Reference] = {}

    def _reference(self, obs: dict, key: str) -> _Reference:
        if key not in self._refs:
            if not is_program_observation(obs):
                raise ValueError("the reference observation has no exported programs")
            ref = _Reference(obs[PROGRAMS_KEY])
            for case in ref.meta["cases"]:
                blob = obs.get(PROGRAM_PREFIX + case)
                if blob is None or not np.asarray(blob).size:
                    raise ValueError(f"the reference program of case {case!r} is missing or empty")
                exp = load_program(np.asarray(blob, np.uint8).tobytes())
                names, shape = (mesh_of(exp) or text_mesh(exp) or (("devices",), (exp.nr_devices,)))[:2]
                ref.programs[case] = (exp, compiled_for(exp, names, shape, kind="reference"), (names, shape))
            self._refs[key] = ref
        return self._refs[key]

    @staticmethod
    def _pair_key(ref_pair) -> str:
        return hashlib.sha256((ref_pair[0] or b"") + b"\0" + (ref_pair[1] or b"")).hexdigest()

    def check_reference(self, ref_pair) -> None:
        """Load and compile one reference observation; raises if it is unusable."""
        key = self._pair_key(ref_pair)
        if key not in self._refs:
            self._reference(load_observations(*ref_pair), key)

    def judge(self, grade_id: str, ref_pair, student_pair) -> Verdict:
        """The verdict for one test cell from the recorded bytes ((npz, json) pairs).

        Raises only when the *reference* is unusable (the caller stops grading the assignment).
        """
        key = self._pair_key(ref_pair)
        reference = load_observations(*ref_pair) if key not in self._refs else {}
        try:
            observed = load_observations(*student_pair)
        except Exception:  # noqa: BLE001 - hostile bytes
            self._reference(reference, key)
            return Verdict(False, (say("results_unreadable"),))
        return self.judge_observations(grade_id, reference, observed, key)

    def derive(self, grade_id: str, observation: dict) -> dict:
        """What the grader computes from a (trusted) observation: every case's outputs on the hidden
        inputs (`"<case><path>"`), the axes it communicates over and its collectives (for tests)."""
        key = (
            "derive:"
            + hashlib.sha256(
                repr(
                    sorted(
                        (k, np.asarray(v).tobytes() if k.startswith(PROGRAM_PREFIX) else json.dumps(v, sort_keys=True))
                        for k, v in observation.items()
                    )
                ).encode()
            ).hexdigest()
        )
        ref = self._reference(observation, key)
        out: dict[str, Any] = {}
        axes, comm = set(), set()
        for case, entry in ref.meta["cases"].items():
            exp, prog, _ = ref.programs[case]
            axes.update(prog.axes)
            comm.update(prog.communication)
            for path, value in hidden_outputs(
                prog, exp, entry["draw"], hidden_rng(self.secret, grade_id, str(entry["draw"].get("share", case)))
            ).items():
                out[f"{case}{path}"] = value
        out["axes"], out["communication"] = sorted(axes), sorted(comm)
        return out

    def _matters(
        self,
        grade_id: str,
        case: str,
        entry: dict,
        exp,
        prog: Compiled,
        ref_prog: Compiled,
        desc: str,
        names,
        shape,
        out: dict,
    ) -> bool:
        """Do `exp`'s results on the hidden inputs change when its collectives described `desc` are sent other
        data (`perturbed`: their operands made from shifted inputs)?"""
        variant = perturbed(
            exp, desc, tuple(names), tuple(shape), perturb_factor(self.secret, grade_id, case), text=module_text(exp)
        )
        if variant is None:
            return True  # the optimizer made it (e.g. from a global-view program's resharding): keep it
        if variant is exp:
            return False  # its collectives of this kind send no data made from an input (a psum of zeros)
        seed = lambda: hidden_rng(self.secret, grade_id, str(entry["draw"].get("share", case)))  # noqa: E731
        base = out or hidden_outputs(prog, exp, entry["draw"], seed())
        moved = hidden_outputs(
            compiled_for(variant, names, shape, feed=ref_prog.entry_in, kind="variant"), variant, entry["draw"], seed()
        )
        return changed(base, moved, entry.get("rtol"), entry.get("atol"))

    def _dead_region(
        self, grade_id: str, case: str, entry: dict, exp, prog: Compiled, ref_prog: Compiled, names, shape, out, shown
    ) -> tuple | None:
        """The manual axes of a reference region whose only counterparts in `exp` (regions that take each input
        split as the reference's does, which the layout step found) do not reach the results on the hidden
        inputs: a region multiplied by zero or otherwise discarded, with the results computed elsewhere. None
        when every reference region has a live counterpart. A counterpart is live when a collective of this
        case shown to reach the results (`shown`) sits in it alone, or the program returns its results
        (`region_facts`), else when changing its results (`perturbed(..., region=i)`) changes the outputs."""
        text = module_text(exp)
        proven = proven_regions(region_facts(exp, tuple(names), tuple(shape), text=text), shown)
        factor = perturb_factor(self.secret, grade_id, "region\0" + case)
        seed = lambda: hidden_rng(self.secret, grade_id, str(entry["draw"].get("share", case)))  # noqa: E731

        def reaches(i: int) -> bool:
            try:
                variant = perturbed(exp, None, tuple(names), tuple(shape), factor, text=text, region=i)
                if variant is None:
                    return True  # nothing of it could be changed (no float or integer results): keep it
                base = out or hidden_outputs(prog, exp, entry["draw"], seed())
                again = compiled_for(variant, names, shape, feed=ref_prog.entry_in, kind="variant")
                moved = hidden_outputs(again, variant, entry["draw"], seed())
            except Exception:  # noqa: BLE001 - a variant that fails to build or run: not shown to matter
                return False
            return changed(base, moved, entry.get("rtol"), entry.get("atol"))

        # One live region may stand for several of the reference's (a step run in a loop): a counterpart
        # already shown live is taken first, so five steps of one shape cost one variant, not five.
        used: set[int] = set()  # counterparts shown live
        for axes, ins, *_ in ref_prog.regions:
            mine = [i for i, r in enumerate(prog.regions) if region_takes((r,), axes, ins)]
            hit = next((i for i in mine if i in used or i in proven), None)
            if hit is None:
                hit = next((i for i in mine if reaches(i)), None)
            if hit is None:
                return axes
            used.add(hit)
        return None

    def judge_observations(self, grade_id: str, reference: dict, observed: dict, key: str | None = None) -> Verdict:
        """`judge` on loaded observations (dicts as `compare.load_observations` returns them)."""
        if key is None:
            h = hashlib.sha256(json.dumps(reference.get(PROGRAMS_KEY), sort_keys=True).encode())
            for k in sorted(reference):
                if k.startswith(PROGRAM_PREFIX):
                    h.update(k.encode() + b"\0" + np.asarray(reference[k], np.uint8).tobytes())
            key = h.hexdigest()
        ref = self._reference(reference, key)
        cases = ref.meta["cases"]
        student_cases = [k[len(PROGRAM_PREFIX) :] for k in observed if k.startswith(PROGRAM_PREFIX)]
        if len(student_cases) > MAX_CASES:
            return Verdict(False, (say("too_many_programs", n=len(student_cases)),))
        diffs: list[Phrase] = []
        unreadable = False  # a case recorded no readable program: its communication is unknown
        want: dict[str, Any] = {}
        got: dict[str, Any] = {}
        ref_comm: set[str] = set()
        got_comm: set[str] = set()
        ref_axes: set[str] = set()
        got_axes: set[str] = set()
        exact = any(
            entry.get("structure") == "collectives" or not entry.get("values", True) for entry in cases.values()
        )
        tolerances = {}
        for case in cases:
            ref_comm.update(ref.programs[case][1].communication)
            ref_axes.update(ref.programs[case][1].axes)
        verified: set[str] = set()  # collectives shown to reach the results (`_matters`)
        for case, entry in cases.items():
            ref_exp, ref_prog, (names, shape) = ref.programs[case]
            seed_key = (grade_id, case)
            if seed_key not in ref.outputs and entry.get("values", True):
                ref.outputs[seed_key] = hidden_outputs(
                    ref_prog,
                    ref_exp,
                    entry["draw"],
                    hidden_rng(self.secret, grade_id, str(entry["draw"].get("share", case))),
                )
            ref_out = ref.outputs.get(seed_key, {})
            blob = observed.get(PROGRAM_PREFIX + case)
            if not isinstance(blob, np.ndarray) or blob.dtype != np.uint8 or blob.ndim != 1 or not blob.size:
                diffs.append(say("no_program", case=case))
                unreadable = True
                continue
            try:
                exp = load_program(blob.tobytes())
                if exp.ordered_effects or exp.unordered_effects:
                    raise Rejected(say("side_effects"))
                bad = sorted(custom_calls(exp) - ALLOWED_CUSTOM_CALLS)
                if bad:
                    raise Rejected(say("host_calls", calls=_echo(bad)))
                sig, want_sig = signature(exp), ref_prog.signature
                if _signature_matches(want_sig, sig):
                    sig = want_sig
                if sig != want_sig:
                    diffs.append(replace(_signature_difference(want_sig, sig), case=case))
                    continue
                own = mesh_of(exp)
                if own is not None and ref_prog.mesh_axes is not None and own[:2] != ref_prog.mesh_axes:
                    diffs.append(
                        say(
                            "wrong_mesh",
                            case=case,
                            got=_echo(f"{n!r}: {k}" for n, k in zip(*own[:2])),
                            want=_echo(f"{n!r}: {k}" for n, k in zip(*ref_prog.mesh_axes)),
                        )
                    )
                    continue
                prog = compiled_for(exp, names, shape, feed=ref_prog.entry_in)
                layout = _layout_difference(case, ref_exp, ref_prog, prog, entry.get("out_layout", True))
                if layout:
                    diffs.append(layout)
                    unreadable = True  # its communication was not read: say nothing about it
                    continue
                heavier = _work_difference(case, prog, ref_prog, entry.get("work") or {})
                if heavier is not None:
                    diffs.append(heavier)
                try:
                    out = (
                        hidden_outputs(
                            prog,
                            exp,
                            entry["draw"],
                            hidden_rng(self.secret, grade_id, str(entry["draw"].get("share", case))),
                        )
                        if entry.get("values", True)
                        else {}
                    )
                except Exception as err:  # noqa: BLE001 - it ran on hidden inputs: its words are not shown
                    diffs.append(say("program_failed_hidden", case=case, error=_cut(type(err).__name__)))
                    continue
            except Rejected as err:
                diffs.append(replace(err.finding, case=case))
                unreadable = unreadable or err.unreadable
                continue
            except Exception as err:  # noqa: BLE001 - a program that fails to compile or run scores 0
                diffs.append(
                    say(
                        "program_failed",
                        case=case,
                        error=_cut(
                            f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}", MAX_ERROR_CHARS
                        ),
                    )
                )
                continue
            identical = fingerprint(exp) == fingerprint(ref_exp)  # the reference's own program: trusted
            shown: set[str] = set()  # collectives of this case shown to reach its results
            for desc, axis in prog.comm_axes:
                earns = desc in ref_comm or (not exact and axis in ref_axes)
                if not earns or identical or desc in verified:
                    got_comm.add(desc)  # a surplus collective counts against, present is enough
                    got_axes.add(axis)
                    continue
                try:
                    matters = self._matters(grade_id, case, entry, exp, prog, ref_prog, desc, names, shape, out)
                except Exception:  # noqa: BLE001 - a variant that fails to build or run: not shown to matter
                    matters = False
                if matters:
                    verified.add(desc)
                    shown.add(desc)
                    got_comm.add(desc)
                    got_axes.add(axis)
            if ref_prog.regions and not identical:
                dead = self._dead_region(grade_id, case, entry, exp, prog, ref_prog, names, shape, out, shown)
                if dead is not None:
                    diffs.append(say("layout_region_dead", case=case, axes=", ".join(repr(a) for a in dead)))
                    unreadable = True
                    continue
            if not entry.get("values", True):
                continue
            for path, value in ref_out.items():
                key = f"{case}{path}"
                want[key] = value
                tolerances[key] = (entry.get("rtol"), entry.get("atol"))
                if path in out:
                    got[key] = out[path]
        verdict = compare(want, got, tolerances=tolerances)
        diffs += verdict.differences
        # Structure cells need the reference's collectives themselves (a psum, not an all_gather);
        # value cells only need real communication over the reference's axes (any equivalent collective).
        if exact:
            missing = sorted(ref_comm - got_comm)
        else:
            missing = [say("comm_over", axis=a) for a in sorted(ref_axes - got_axes)]
        if missing and not unreadable:
            seen = ", ".join(sorted(got_comm)) if got_comm else say("no_comm")
            diffs.append(say("comm_missing", missing=Words(tuple(missing), ", "), seen=seen))
        extra = sorted(got_axes - ref_axes)
        if extra and not unreadable and any(entry.get("only_axes") for entry in cases.values()):
            diffs.append(say("comm_extra_axes", axes=", ".join(repr(a) for a in extra)))
        surplus = sorted(got_comm - ref_comm)
        if surplus and not unreadable and any(entry.get("only_collectives") for entry in cases.values()):
            diffs.append(say("comm_surplus", ops=", ".join(surplus)))
        return Verdict(not diffs, tuple(diffs))


def _input_names(exp) -> list[Words]:
    """How feedback names each flat input: `x`, `batch['y']`, or `input 2` (from the export's locations,
    else positions)."""
    import jax

    leaves = jax.tree_util.tree_unflatten(exp.in_tree, list(range(exp.in_tree.num_leaves)))
    names = []
    for path, _ in jax.tree_util.tree_flatten_with_path(leaves)[0]:
        keys = path[1:] if path and getattr(path[0], "idx", None) == 0 else path  # drop the (args, kwargs) level
        first = getattr(keys[0], "idx", None) if keys else None
        rest = jax.tree_util.keystr(tuple(keys[1:])) if keys else ""
        names.append(Words((say("layout_input_name", n=(first or 0) + 1), rest)))
    return names


_WORK_KINDS = {
    "flops": "work_flops",
    "peak_bytes": "work_peak",
    "largest_bytes": "work_largest",
    "overlap": "work_overlap",
}


def _work_difference(case: str, got: Compiled, want: Compiled, limits: dict) -> Phrase | None:
    """Does one device of `got` compute or hold more than the case's factor times the reference's
    (`namedaxes.judging.work_excess`: FLOPs, peak memory, largest array of the optimized per-device program)?"""
    if not limits or got.work is None or want.work is None:
        return None
    excess = work_excess(got.work, want.work, limits)
    if excess is None:
        return None
    fact, ratio, factor = excess
    return say(
        _WORK_KINDS[fact],
        case=case,
        ratio=round(ratio, 1),
        factor=factor,
        got=getattr(got.work, fact),
        want=getattr(want.work, fact),
    )


def _layout_difference(case: str, ref_exp, want: Compiled, got: Compiled, out_layout: bool) -> Phrase | None:
    """Does the student's program take its inputs and leave its results where the reference does?

    Inputs: a layout the signature states for an input must split it over at least the reference's mesh
    axes (an unstated one takes what the grader feeds, the reference's layout), and each per-device
    region (`shard_map`/`pmap`) of the reference must have a counterpart over the same axes that splits
    each input over at least the reference's mesh axes (a region that takes a split input whole makes
    every device hold all of it; one that splits it along another dimension is fine). Results: where
    each output lives once compiled must be where the reference's lives, unless the exercise leaves it
    open (`out_layout=False`)."""
    names = _input_names(ref_exp)
    for i, (w, g) in enumerate(zip(want.entry_in, got.entry_in)):
        # unstated: it takes what it is fed (the reference's layout); stated: split over at least those axes
        if g is not None and not split_axes(w or ()) <= split_axes(g):
            return say(
                "layout_input",
                case=case,
                input=names[i] if i < len(names) else i + 1,
                got=describe_layout(g),
                want=describe_layout(w),
            )
    found = region_difference(want.regions, got.regions)  # namedaxes.judging: the visible checks' step too
    if found is not None and found.kind == "input":
        return say(
            "layout_region_input",
            case=case,
            n=found.n,
            axes=", ".join(repr(a) for a in found.axes),
            got=describe_layout(found.got),
            want=describe_layout(found.want),
        )
    if found is not None:

        def words(regions) -> Words | Phrase:
            each = tuple(Words(tuple(describe_layout(one) for one in i), ", ") for _, i, _ in regions)
            return Words(each, "; ") if each else say("layout_no_region")

        return say("layout_regions", case=case, got=words(got.regions), want=words(want.regions))
    if out_layout:
        for i, (w, g) in enumerate(zip(want.out_layouts, got.out_layouts)):
            if w != g:
                return say("layout_output", case=case, n=i + 1, got=describe_layout(g), want=describe_layout(w))
    return None


def _signature_matches(want: dict, got: dict) -> bool:
    """Same inputs, outputs and devices; per-device regions over (at least) the reference's named axes,
    or none at all where the reference is a global-view program (`jit` with shardings)."""
    same = all(want[k] == got[k] for k in want if k != "per_device_over")
    named = {a for a in got["per_device_over"] if not a.startswith("_")}
    if not want["per_device_over"]:
        return same and not got["per_device_over"]
    return same and set(want["per_device_over"]) <= named


def _signature_difference(want: dict, got: dict) -> Phrase:
    if want["devices"] != got["devices"]:
        return say("sig_devices", got=got["devices"], want=want["devices"])
    if want["per_device_over"] != got["per_device_over"]:
        seen = _echo(repr(a) for a in got["per_device_over"]) if got["per_device_over"] else say("sig_global_view")
        return say(
            "sig_per_device", got=seen, want=", ".join(repr(a) for a in want["per_device_over"]) or say("sig_no_axis")
        )
    if want["in_tree"] != got["in_tree"] or want["in"] != got["in"]:
        return say("sig_takes", got=_echo(got["in"]), want=", ".join(want["in"]))
    if want["out_tree"] != got["out_tree"]:
        return say("sig_structure", got=_echo(got["out_tree"]), want=", ".join(want["out_tree"]))
    return say("sig_returns", got=_echo(got["out"]), want=", ".join(want["out"]))
