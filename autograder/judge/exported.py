"""Reading an exported program: the recorded bytes as a `jax.export` program, and what it states.

Used by the judge (`autograder.judge.programs`) inside the clean scorer process, which never
executes student code. Threat model: a recorded observation is whatever the student's kernel chose
to write, so every byte of it is hostile data; here it is only ever *data*:

- a case's program is `jax.export`-serialized StableHLO; it is deserialized (bytes that are not a
  program at all are `Rejected` as unreadable), its custom calls are read from the parsed module (never
  matched in its text, where MLIR may quote a target) for the judge's check
  against a small allow-list (`ALLOWED_CUSTOM_CALLS`: no host callbacks, nothing in it can call back
  into Python), it must have no effects, and its signature (input/output pytrees, shapes, dtypes,
  device count, mesh axes) must equal the reference program's;
- its layouts, its mesh and its per-device regions (`pmap`'s or `shard_map`'s, read from the module's
  `sdy.manual_computation`s) are read by the grader from the exported module, never from what the
  kernel says about itself;
- `read_program` reads the bytes once into one `Program` (the program, its module text, mesh, stated
  input layouts, signature, per-device regions, custom calls, effects and fingerprint); the judge and the
  compiler read its fields and never ask about the program again;
- `fingerprint` is what decides a program's behaviour (its module without source locations, its signature
  and every other field of the export but its name, e.g. which inputs the module keeps): a student's
  program equal to the reference's is the reference's own, and the compile cache never runs one program
  for another.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from namedaxes.judging import jax_private, mesh_of, module_text, regions, signature_mesh, stated_layouts

from ..reasons import Phrase
from ..reasons import phrase as say

__all__ = [
    "PROGRAM_PREFIX",
    "PROGRAMS_KEY",
    "PROGRAMS_FORMAT",
    "ALLOWED_CUSTOM_CALLS",
    "is_program_observation",
    "Rejected",
    "Layout",
    "Program",
    "read_program",
    "load_program",
    "module_text",
    "custom_calls",
    "manual_axes",
    "program_regions",
    "signature",
    "fingerprint",
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


def is_program_observation(observations: dict) -> bool:
    """Does this (reference) observation grade exported programs?"""
    meta = observations.get(PROGRAMS_KEY)
    return isinstance(meta, dict) and meta.get("format") == PROGRAMS_FORMAT


class Rejected(Exception):
    """A recorded program the grader will not run; `finding` says why (student-facing, as data).
    `unreadable`: the bytes are not a program at all (then the communication check says nothing)."""

    def __init__(self, finding: Phrase, unreadable: bool = False):
        super().__init__(finding.kind.value)
        self.finding = finding
        self.unreadable = unreadable


def load_program(blob: bytes):
    """The deserialized `jax.export` program of recorded bytes; `Rejected` (unreadable) if they are none."""
    import jax

    try:
        exp = jax.export.deserialize(bytearray(blob))
        module_text(exp)  # its module must parse too (and the judging steps read its text from the memo)
    except Exception as err:  # noqa: BLE001 - hostile bytes: any parser failure is "unreadable"
        raise Rejected(say("program_unreadable", error=type(err).__name__), unreadable=True) from None
    return exp


def custom_calls(exp) -> set[str]:
    """The target of every custom call of the module, nested regions and private functions included, read
    from the parsed module (its `call_target_name` attribute): a target MLIR prints quoted (`@"a.b-c"`) is
    read like any other. A custom call whose target cannot be read is named `?` (never allowed)."""
    ir = jax_private.ir()
    found: set[str] = set()

    def visit(op):
        if op.name == "stablehlo.custom_call":
            try:
                found.add(ir.StringAttr(op.attributes["call_target_name"]).value)
            except (KeyError, ValueError, TypeError):
                found.add("?")
        return ir.WalkResult.ADVANCE

    with jax_private.ir_context(), ir.Location.unknown():
        ir.Module.parse(module_text(exp)).operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


def manual_axes(exp) -> list[str]:
    """Axes some `shard_map`/`pmap` region of the module is written per device over (sorted)."""
    found = set()
    for body in re.findall(r"manual_axes\s*=\s*\{([^}]*)\}", module_text(exp)):
        found.update(re.findall(r'"([^"]+)"', body))
    return sorted(found)


# ---------------------------------------------------------------- layouts
# A value's layout: per array dimension, the mesh axes it is split over (() = not split), trailing
# unsplit dimensions dropped, so `()` is "replicated on every device". Read by the grader from the
# exported module (where each per-device region takes and gives its values) and from the compiled
# program (where the results live): never from what the kernel says about itself.
Layout = tuple


def program_regions(exp) -> tuple:
    """`namedaxes.judging.regions` of the module: where each per-device region takes and gives its values."""
    return regions(module_text(exp))


# ---------------------------------------------------------------- signature
def _paths(tree) -> list[str]:
    """Leaf paths of a pytree structure: a list and a tuple of the same leaves look the same."""
    import jax

    leaves = jax.tree_util.tree_unflatten(tree, list(range(tree.num_leaves)))
    return [jax.tree_util.keystr(path) for path, _ in jax.tree_util.tree_flatten_with_path(leaves)[0]]


def signature(exp) -> dict:
    """What the program takes and gives: pytrees, dtypes and shapes, devices, per-device axes."""
    return {
        "in_tree": str(exp.in_tree),
        "out_tree": _paths(exp.out_tree),
        "in": [f"{a.dtype}{list(a.shape)}" for a in exp.in_avals],
        "out": [f"{a.dtype}{list(a.shape)}" for a in exp.out_avals],
        "devices": exp.nr_devices,
        "per_device_over": manual_axes(exp),
    }


_LOC_RE = re.compile(r"\s*loc\((?:[^()]|\([^()]*\))*\)|^#loc\d*\s*=.*$", re.M)
# The fields of an exported program that do not change what it computes: its name (for messages), its
# serialized module (hashed as text without source locations instead) and the function that makes its
# derivative (never called by the grader). Every other field, present and future, is in the fingerprint:
# which inputs the module keeps (`module_kept_var_idx`: `lambda x, y: 2 * x` and `lambda x, y: 2 * y` have
# one module), the calling convention, global constants, effects, the safety checks it disables.
_NOT_BEHAVIOUR = frozenset({"fun_name", "mlir_module_serialized", "_get_vjp"})


def fingerprint(exp) -> str:
    """What decides a program's behaviour: its module without source locations, its signature and every
    field of the exported program but `_NOT_BEHAVIOUR` (fail closed: a field JAX adds is covered)."""
    return _fingerprint(exp, module_text(exp), signature(exp))


def _fingerprint(exp, text: str, sig: dict) -> str:
    import dataclasses

    h = hashlib.sha256(_LOC_RE.sub("", text).encode())
    fields = [(f.name, getattr(exp, f.name)) for f in dataclasses.fields(exp) if f.name not in _NOT_BEHAVIOUR]
    h.update(repr((sig, fields)).encode())
    return h.hexdigest()


# ---------------------------------------------------------------- the program, read once
@dataclass(frozen=True)
class Program:
    """One exported program read once (`Program.of`): the judge and the compiler read these fields."""

    exp: Any  # the deserialized `jax.export.Exported`
    text: str  # its module's text (`module_text`)
    mesh: tuple | None  # (names, sizes, axis types) of its shardings' mesh (`signature_mesh`), or None
    run_mesh: tuple  # (names, sizes, axis types or None) of the mesh it runs on (`namedaxes.judging.mesh_of`)
    entry_layouts: tuple  # the layout its signature states for each input (None: unstated; `stated_layouts`)
    signature: dict  # what it takes and gives (`signature`)
    regions: tuple  # where each per-device region takes and gives its values (`program_regions`)
    custom_calls: frozenset  # the target of every custom call (`custom_calls`)
    effects: bool  # it has ordered or unordered effects
    fingerprint: str  # what decides its behaviour (`fingerprint`)

    @classmethod
    def of(cls, exp) -> Program:
        text = module_text(exp)
        sig = signature(exp)
        return cls(
            exp=exp,
            text=text,
            mesh=signature_mesh(exp),
            run_mesh=mesh_of(exp),
            entry_layouts=stated_layouts(exp),
            signature=sig,
            regions=regions(text),
            custom_calls=frozenset(custom_calls(exp)),
            effects=bool(exp.ordered_effects or exp.unordered_effects),
            fingerprint=_fingerprint(exp, text, sig),
        )

    @property
    def nr_devices(self) -> int:
        return self.exp.nr_devices


def read_program(blob: bytes) -> Program:
    """The `Program` of recorded bytes; `Rejected` (unreadable) if they are none."""
    return Program.of(load_program(blob))
