"""Judge exported programs: run them on the grader's own inputs, read their real communication.

Runs only inside the clean scorer process (`autograder/judge/scorer_process.py`), which never
executes student code. Threat model: a recorded observation is whatever the
student's kernel chose to write, so every byte of it is hostile data. Here it is
only ever *data*:

- a case's program is `jax.export`-serialized StableHLO; it is deserialized,
  its custom calls are checked against a small allow-list (no host callbacks:
  nothing in it can call back into Python), it must have no effects, and its
  signature (input/output pytrees, shapes, dtypes, device count, mesh axes)
  must equal the reference program's;
- its inputs are drawn *here*, from a secret seed the kernel never sees, with
  the distribution the **reference** observation names (a student cannot pick
  easy inputs), so no output can be precomputed;
- it is run the way the **reference** lays out its inputs (issue 16): the grader
  feeds every input with the reference's layout, requires the layouts the
  program's signature states to be the reference's, requires each per-device
  region of the reference (`pmap`'s or `shard_map`'s, read from the module's
  `sdy.manual_computation`s) to have a counterpart that splits each input over
  at least the same mesh axes (so no device is handed more than its shard), and
  requires every result to live where the reference's lives once compiled
  (split or replicated, over which axes; `out_layout=False` in the reference's
  case leaves that open). A layout difference is reported as such, before values;
- it is compiled for the grader's devices and its communication is read from
  the *optimized* HLO (`compiled.as_text()`): a collective whose result is
  unused is gone, `axis_index`, `pvary`/`pcast` and constant folding are not
  communication; replica groups are mapped back to the reference mesh's axis
  names; and a collective earns a point only if the results depend on it
  (`namedaxes.judging.perturbed`: its results changed inside the program, the variant run on
  the same hidden inputs, the outputs must change), so a discarded,
  zero-multiplied or cancelled collective earns nothing;
- outputs and communication are compared with the reference program's on the
  same inputs (`autograder.judge.compare` rules: allclose values, every collective
  of the reference present).

Reference programs come from the solution notebook's run (trusted, stored with
content hashes by the reference cache); their compiled form and outputs are
cached per process, so a batch compiles each reference program once.
Looping forever, crashing or exhausting memory is handled one level up: the
scorer process runs under limits and a timeout and is replaced.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from namedaxes.judging import changed as _changed
from namedaxes.judging import (
    collective_regions,
    describe_collective,
    group_axes,
    hlo_collectives,
    norm_layout,
    perturbed,
    placed_layout,
    region_difference,
    region_takes,
    regions,
    sdy_layouts,
    split_axes,
)

from ..limits import MAX_CASES, MAX_COMPILED, MAX_ECHO_CHARS, MAX_ECHO_ITEMS, MAX_ERROR_CHARS
from ..records import Phrase, Verdict, Words
from ..records import phrase as say
from .compare import compare, load_observations

__all__ = [
    "PROGRAM_PREFIX",
    "PROGRAMS_KEY",
    "PROGRAMS_FORMAT",
    "ALLOWED_CUSTOM_CALLS",
    "is_program_observation",
    "Judge",
    "hlo_collectives",
    "group_axes",
    "describe_collective",
    "describe_layout",
]

PROGRAM_PREFIX = "program:"  # namedaxes.grading.PROGRAM_PREFIX
PROGRAMS_KEY = "programs"  # namedaxes.grading.PROGRAMS_KEY
PROGRAMS_FORMAT = "namedaxes-exported-1"  # namedaxes.grading.PROGRAMS_FORMAT
# Custom calls the course's own programs lower to (sharding annotations, shard_map's
# manual regions, the CPU linear algebra kernels); a host callback is none of these.
ALLOWED_CUSTOM_CALLS = frozenset(
    {
        "Sharding",
        "SPMDFullToShardShape",
        "SPMDShardToFullShape",
        "annotate_device_placement",
        "mhlo.sharding",
        "xla.sdy.FuncResultSharding",
        "xla.sdy.GlobalToLocalShape",
        "xla.sdy.LocalToGlobalShape",
        "xla.sdy.ShardingGroup",
    }
)
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


def is_program_observation(observations: dict) -> bool:
    """Does this (reference) observation grade exported programs?"""
    meta = observations.get(PROGRAMS_KEY)
    return isinstance(meta, dict) and meta.get("format") == PROGRAMS_FORMAT


# ---------------------------------------------------------------- programs
class Rejected(Exception):
    """A recorded program the grader will not run; `finding` says why (student-facing, as data).
    `unreadable`: the bytes are not a program at all (then the communication check says nothing)."""

    def __init__(self, finding: Phrase, unreadable: bool = False):
        super().__init__(finding.kind.value)
        self.finding = finding
        self.unreadable = unreadable


_TEXT: dict[int, tuple[Any, str]] = {}


def _exported(blob: bytes):
    import jax

    try:
        exp = jax.export.deserialize(bytearray(blob))
        text = exp.mlir_module()
    except Exception as err:  # noqa: BLE001 - hostile bytes: any parser failure is "unreadable"
        raise Rejected(say("program_unreadable", error=type(err).__name__), unreadable=True) from None
    if len(_TEXT) > 64:
        _TEXT.clear()
    _TEXT[id(exp)] = (exp, text)
    return exp


def _module_text(exp) -> str:
    """`exp.mlir_module()`, computed once per deserialized program (it costs ~10 ms)."""
    got = _TEXT.get(id(exp))
    if got is not None and got[0] is exp:
        return got[1]
    return exp.mlir_module()


def _custom_calls(exp) -> set[str]:
    text = _module_text(exp)
    return set(re.findall(r"custom_call\s*@([\w.\-]+)", text)) | set(
        re.findall(r'call_target_name\s*=\s*"([^"]+)"', text)
    )


def _mesh_of(exp):
    """(names, sizes, axis types) of the abstract mesh of a program's shardings, or None."""
    for s in tuple(exp._in_named_shardings) + tuple(exp._out_named_shardings):
        mesh = getattr(s, "mesh", None)
        if mesh is not None and mesh.axis_names and int(np.prod(mesh.axis_sizes)) == exp.nr_devices:
            return tuple(mesh.axis_names), tuple(mesh.axis_sizes), tuple(mesh.axis_types)
    return None


def _text_mesh(exp) -> tuple[tuple[str, ...], tuple[int, ...]] | None:
    """The first `sdy.mesh` of the module whose size is the device count (pmap programs)."""
    for body in re.findall(r"sdy\.mesh\s+@[\w.\-]+\s*=\s*<\[([^\]]*)\]", _module_text(exp)):
        pairs = re.findall(r'"([^"]+)"\s*=\s*(\d+)', body)
        if pairs and int(np.prod([int(s) for _, s in pairs])) == exp.nr_devices:
            return tuple(n for n, _ in pairs), tuple(int(s) for _, s in pairs)
    return None


def _manual_axes(exp) -> list[str]:
    """Axes some `shard_map`/`pmap` region of the module is written per device over (sorted)."""
    found = set()
    for body in re.findall(r"manual_axes\s*=\s*\{([^}]*)\}", _module_text(exp)):
        found.update(re.findall(r'"([^"]+)"', body))
    return sorted(found)


# ---------------------------------------------------------------- layouts
# A value's layout: per array dimension, the mesh axes it is split over (() = not split), trailing
# unsplit dimensions dropped, so `()` is "replicated on every device". Read by the grader from the
# exported module (where each per-device region takes and gives its values) and from the compiled
# program (where the results live): never from what the kernel says about itself.
Layout = tuple


_norm_layout, _sdy_layouts, _split_axes = norm_layout, sdy_layouts, split_axes  # namedaxes.judging


def _regions(exp) -> tuple:
    """`namedaxes.judging.regions` of the module: where each per-device region takes and gives its values."""
    return regions(_module_text(exp))


def _spec_layout(sharding) -> Layout | None:
    """The layout a (Named) sharding of the export's signature states; None: left to the compiler."""
    spec = getattr(sharding, "spec", None)
    if sharding is None or spec is None:
        return None
    return _norm_layout(() if d is None else (d,) if isinstance(d, str) else tuple(d) for d in spec)


_placed_layout = placed_layout  # namedaxes.judging


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


def _paths(tree) -> list[str]:
    """Leaf paths of a pytree structure: a list and a tuple of the same leaves look the same."""
    import jax

    leaves = jax.tree_util.tree_unflatten(tree, list(range(tree.num_leaves)))
    return [jax.tree_util.keystr(path) for path, _ in jax.tree_util.tree_flatten_with_path(leaves)[0]]


def _signature(exp) -> dict:
    return {
        "in_tree": str(exp.in_tree),
        "out_tree": _paths(exp.out_tree),
        "in": [f"{a.dtype}{list(a.shape)}" for a in exp.in_avals],
        "out": [f"{a.dtype}{list(a.shape)}" for a in exp.out_avals],
        "devices": exp.nr_devices,
        "per_device_over": _manual_axes(exp),
    }


@dataclass
class _Compiled:
    compiled: Any
    in_shardings: list
    signature: dict
    communication: list[str]
    axes: list[str]
    mesh_axes: tuple
    comm_axes: tuple = ()  # (description, axis) of each collective of `communication`
    entry_in: tuple = ()  # the layout the program's signature states for each input (None: unstated)
    regions: tuple = ()  # `_regions`: where each per-device region takes its inputs
    out_layouts: tuple = ()  # where each result lives once compiled (`_placed_layout`)


_LOC_RE = re.compile(r"\s*loc\((?:[^()]|\([^()]*\))*\)|^#loc\d*\s*=.*$", re.M)
_COMPILED: dict[str, _Compiled] = {}
# What this process compiled (fresh compiles and their seconds, by kind: reference, student, variant),
# reported with each verdict (scorer.py) for the grader's timings: where the scorer's time goes.
COMPILE_STATS: dict[str, float] = {}


def fingerprint(exp) -> str:
    """What decides a program's behaviour: its module without source locations, shardings, signature."""
    text = _LOC_RE.sub("", _module_text(exp))
    h = hashlib.sha256(text.encode())
    h.update(
        repr(
            (
                _signature(exp),
                exp._in_named_shardings,
                exp._out_named_shardings,
                exp.in_shardings_hlo,
                exp.out_shardings_hlo,
                exp.platforms,
            )
        ).encode()
    )
    return h.hexdigest()


def _compile(
    exp, names: tuple[str, ...], sizes: tuple[int, ...], feed: tuple | None = None, kind: str = "student"
) -> _Compiled:
    """Compiled for the grader's devices; identical programs (e.g. a student's that equals the
    reference's up to source locations) are compiled once per process.

    `feed`: the input layouts to run it with (the reference's, for a student's program: each device
    is handed only the shard the reference's layout gives it); None: the program's own."""
    if feed is None:  # the key names the layouts it runs with: a student's program identical to the
        feed = _entry_in(exp)  # reference's, fed the reference's layouts, reuses the reference's compile
    key = fingerprint(exp) + repr((names, sizes, feed))
    if key not in _COMPILED:
        if len(_COMPILED) >= MAX_COMPILED:
            _COMPILED.pop(next(iter(_COMPILED)))
        t0 = time.monotonic()
        _COMPILED[key] = _compile_fresh(exp, names, sizes, feed)
        COMPILE_STATS[kind] = COMPILE_STATS.get(kind, 0) + 1
        COMPILE_STATS[kind + "_s"] = COMPILE_STATS.get(kind + "_s", 0.0) + time.monotonic() - t0
    return _COMPILED[key]


def _entry_in(exp) -> tuple:
    """The layout the program's signature states for each input (None: unstated)."""
    return tuple(
        _spec_layout(s) if s is not None and getattr(s, "mesh", None) is not None and s.mesh.axis_names else None
        for s in exp._in_named_shardings
    )


def _pspec(layout: Layout | None):
    from jax.sharding import PartitionSpec as P

    if not layout:
        return P()
    return P(*[None if not axes else axes[0] if len(axes) == 1 else tuple(axes) for axes in layout])


def _compile_fresh(exp, names: tuple[str, ...], sizes: tuple[int, ...], feed: tuple | None = None) -> _Compiled:
    import jax
    from jax.sharding import Mesh

    devices = jax.devices()
    if exp.nr_devices > len(devices):
        raise Rejected(say("program_needs_devices", n=exp.nr_devices))
    from jax.sharding import NamedSharding

    own = _mesh_of(exp)
    if own is not None:
        mesh = Mesh(np.array(devices[: exp.nr_devices]).reshape(own[1]), own[0], axis_types=own[2])
    else:
        text = _text_mesh(exp) or (("_grader",), (exp.nr_devices,))
        mesh = Mesh(np.array(devices[: exp.nr_devices]).reshape(text[1]), text[0])
    entry_in = _entry_in(exp)
    if feed is None:
        feed = entry_in
    # unstated: replicated (the program's own slicing, e.g. pmap's or shard_map's, is then local work)
    shardings = [NamedSharding(mesh, _pspec(layout)) for layout in feed]
    args = [jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=s) for a, s in zip(exp.in_avals, shardings)]

    def flat_call(*leaves):
        args, kwargs = jax.tree_util.tree_unflatten(exp.in_tree, leaves)
        return exp.call(*args, **kwargs)

    compiled = jax.jit(flat_call).lower(*args).compile()
    found = hlo_collectives(compiled.as_text(), exp.nr_devices)
    communication, axes, pairs = set(), set(), set()
    for op, reducer, groups in found:
        for axis in group_axes(groups, names, sizes):
            communication.add(describe_collective(op, reducer, axis))
            axes.add(axis)
            pairs.add((describe_collective(op, reducer, axis), axis))
    out_layouts = tuple(
        _placed_layout(sh, aval.shape, tuple(mesh.axis_names), tuple(mesh.devices.shape))
        for sh, aval in zip(jax.tree_util.tree_leaves(compiled.output_shardings), exp.out_avals)
    )
    return _Compiled(
        compiled,
        shardings,
        _signature(exp),
        sorted(communication),
        sorted(axes),
        own[:2] if own else None,
        tuple(sorted(pairs)),
        entry_in,
        _regions(exp),
        out_layouts,
    )


def _factor(secret: bytes, grade_id: str, case: str) -> float:
    """A scale for `perturbed` the student cannot know: in [1.5, 3.5), drawn from the secret."""
    return float(1.5 + 2.0 * _seed(secret, grade_id, "perturb\0" + case).random())


def _seed(secret: bytes, grade_id: str, case: str) -> np.random.Generator:
    digest = hmac.new(secret, f"{grade_id}\0{case}".encode(), hashlib.sha256).digest()
    return np.random.default_rng(int.from_bytes(digest[:16], "little"))


def _draw(aval, draw: dict, r: np.random.Generator) -> np.ndarray:
    shape, dtype = tuple(aval.shape), np.dtype(aval.dtype)
    kind = draw.get("kind", "normal")
    if dtype == np.bool_:
        return r.integers(0, 2, size=shape).astype(bool)
    if dtype.kind in "iu" or kind == "integers":
        return r.integers(int(draw.get("low", 0)), int(draw.get("high", 10)), size=shape).astype(dtype)
    if kind == "uniform":
        values = r.uniform(float(draw.get("low", 0.0)), float(draw.get("high", 1.0)), size=shape)
    elif kind == "quarters":
        values = r.integers(int(draw.get("low", -12)), int(draw.get("high", 13)), size=shape) / 4
    else:
        values = r.normal(float(draw.get("mean", 0.0)), float(draw.get("scale", 1.0)), size=shape)
    return np.asarray(values).astype(dtype)


def _outputs(prog: _Compiled, exp, draw: dict, r: np.random.Generator) -> dict[str, np.ndarray]:
    import jax

    leaves = [jax.device_put(_draw(a, draw, r), s) for a, s in zip(exp.in_avals, prog.in_shardings)]
    out = prog.compiled(*leaves)
    flat, _ = jax.tree_util.tree_flatten_with_path(out)
    return {jax.tree_util.keystr(path): np.asarray(v) for path, v in flat}


# ---------------------------------------------------------------- the judge
@dataclass
class _Reference:
    meta: dict
    programs: dict = field(default_factory=dict)  # case -> (exp, _Compiled)
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
                exp = _exported(np.asarray(blob, np.uint8).tobytes())
                names, shape = (_mesh_of(exp) or _text_mesh(exp) or (("devices",), (exp.nr_devices,)))[:2]
                ref.programs[case] = (exp, _compile(exp, names, shape, kind="reference"), (names, shape))
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
            for path, value in _outputs(
                prog, exp, entry["draw"], _seed(self.secret, grade_id, str(entry["draw"].get("share", case)))
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
        prog: _Compiled,
        ref_prog: _Compiled,
        desc: str,
        names,
        shape,
        out: dict,
    ) -> bool:
        """Do `exp`'s results on the hidden inputs change when its collectives described `desc` are changed
        (`perturbed`)?"""
        variant = perturbed(
            exp, desc, tuple(names), tuple(shape), _factor(self.secret, grade_id, case), text=_module_text(exp)
        )
        if variant is None:
            return True  # the optimizer made it (e.g. from a global-view program's resharding): keep it
        seed = lambda: _seed(self.secret, grade_id, str(entry["draw"].get("share", case)))  # noqa: E731
        base = out or _outputs(prog, exp, entry["draw"], seed())
        changed = _outputs(
            _compile(variant, names, shape, feed=ref_prog.entry_in, kind="variant"), variant, entry["draw"], seed()
        )
        return _changed(base, changed, entry.get("rtol"), entry.get("atol"))

    def _dead_region(
        self, grade_id: str, case: str, entry: dict, exp, prog: _Compiled, ref_prog: _Compiled, names, shape, out, shown
    ) -> tuple | None:
        """The manual axes of a reference region whose only counterparts in `exp` (regions that take each input
        split as the reference's does, which the layout step found) do not reach the results on the hidden
        inputs: a region multiplied by zero or otherwise discarded, with the results computed elsewhere. None
        when every reference region has a live counterpart. A counterpart is live when a collective of this
        case shown to reach the results (`shown`) sits in it alone (`collective_regions`), else when
        changing its results (`perturbed(..., region=i)`) changes the outputs."""
        text = _module_text(exp)
        by_region = collective_regions(exp, tuple(names), tuple(shape), text=text)
        proven = {next(iter(by_region[d])) for d in shown if len(by_region.get(d, ())) == 1} - {None}
        factor = _factor(self.secret, grade_id, "region\0" + case)
        seed = lambda: _seed(self.secret, grade_id, str(entry["draw"].get("share", case)))  # noqa: E731

        def reaches(i: int) -> bool:
            try:
                variant = perturbed(exp, None, tuple(names), tuple(shape), factor, text=text, region=i)
                if variant is None:
                    return True  # nothing of it could be changed (no float or integer results): keep it
                base = out or _outputs(prog, exp, entry["draw"], seed())
                again = _compile(variant, names, shape, feed=ref_prog.entry_in, kind="variant")
                moved = _outputs(again, variant, entry["draw"], seed())
            except Exception:  # noqa: BLE001 - a variant that fails to build or run: not shown to matter
                return False
            return _changed(base, moved, entry.get("rtol"), entry.get("atol"))

        used: set[int] = set()  # counterparts already shown live
        for axes, ins, *_ in ref_prog.regions:
            mine = [i for i, r in enumerate(prog.regions) if region_takes((r,), axes, ins)]
            fresh = [i for i in mine if i not in used]
            hit = next((i for i in fresh if i in proven), None)
            if hit is None:
                hit = next((i for i in fresh if reaches(i)), None)
            if hit is None:  # one live region may stand for several of the reference's (a step run in a loop)
                hit = next((i for i in mine if i in used), None)
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
                ref.outputs[seed_key] = _outputs(
                    ref_prog,
                    ref_exp,
                    entry["draw"],
                    _seed(self.secret, grade_id, str(entry["draw"].get("share", case))),
                )
            ref_out = ref.outputs.get(seed_key, {})
            blob = observed.get(PROGRAM_PREFIX + case)
            if not isinstance(blob, np.ndarray) or blob.dtype != np.uint8 or blob.ndim != 1 or not blob.size:
                diffs.append(say("no_program", case=case))
                unreadable = True
                continue
            try:
                exp = _exported(blob.tobytes())
                if exp.ordered_effects or exp.unordered_effects:
                    raise Rejected(say("side_effects"))
                bad = sorted(_custom_calls(exp) - ALLOWED_CUSTOM_CALLS)
                if bad:
                    raise Rejected(say("host_calls", calls=_echo(bad)))
                sig, want_sig = _signature(exp), ref_prog.signature
                if _signature_matches(want_sig, sig):
                    sig = want_sig
                if sig != want_sig:
                    diffs.append(replace(_signature_difference(want_sig, sig), case=case))
                    continue
                own = _mesh_of(exp)
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
                prog = _compile(exp, names, shape, feed=ref_prog.entry_in)
                layout = _layout_difference(case, ref_exp, ref_prog, prog, entry.get("out_layout", True))
                if layout:
                    diffs.append(layout)
                    unreadable = True  # its communication was not read: say nothing about it
                    continue
                try:
                    out = (
                        _outputs(
                            prog,
                            exp,
                            entry["draw"],
                            _seed(self.secret, grade_id, str(entry["draw"].get("share", case))),
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


def _layout_difference(case: str, ref_exp, want: _Compiled, got: _Compiled, out_layout: bool) -> Phrase | None:
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
        if g is not None and not _split_axes(w or ()) <= _split_axes(g):
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


def summary(observations: dict) -> str:
    """One line about an observation (for logs)."""
    meta = observations.get(PROGRAMS_KEY) or {}
    return json.dumps({"cases": sorted(meta.get("cases") or {})})
