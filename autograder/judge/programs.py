"""Judge exported programs: run them on the grader's own inputs, read their real communication.

Runs only inside the clean scorer process (`autograder/judge/scorer_process.py`), which never executes student
code. Threat model: a recorded observation is whatever the student's kernel chose to write, so every byte of it
is hostile data. Here it is only ever *data*. The judge's steps, one module each:

- reading (`autograder.judge.exported`): a case's program is deserialized once into one
  `exported.Program` (text, mesh, layouts, signature, regions, custom calls, fingerprint) whose
  fields every later step reads; its custom calls are checked against a small allow-list (no host
  callbacks), it must have no effects, and its signature must equal the reference program's;
- its inputs are drawn from a secret seed the kernel never sees, with the distribution the
  **reference** observation names (`autograder.judge.hidden_inputs`);
- it is run the way the **reference** lays out its inputs (issue 16): the grader feeds every input with the
  reference's layout (`autograder.judge.compiling`), requires the layouts the program's signature states to be
  the reference's, requires each per-device region of the reference (`pmap`'s or `shard_map`'s, read from the
  module's `sdy.manual_computation`s) to have a counterpart that splits each input over at least the same mesh
  axes (so no device is handed more than its shard), and requires every result to live where the reference's
  lives once compiled (split or replicated, over which axes; `out_layout=False` in the reference's case leaves
  that open). A layout difference is reported as such, before values;
- it is compiled for the grader's devices and its communication is read from the *optimized* HLO
  (`autograder.judge.compiling`); a collective earns a point only if what it sends reaches the results
  (`autograder.judge.liveness`, `namedaxes.judging.perturbed`: its operands made again from shifted inputs
  inside the program, the variant run on the same hidden inputs, the outputs must change), so a discarded,
  zero-multiplied or cancelled collective, and one that sends zeros or a constant, earns nothing;
- outputs and communication are compared with the reference program's on the
  same inputs (`autograder.judge.compare` rules: allclose values, every collective
  of the reference present); each difference is said as a phrase (`autograder.judge.differences`,
  which bounds every student-controlled name it echoes);
- values that differ are named where they are a known mistake of the exercise (`autograder.judge.mistakes`:
  the results of the usual mistakes its visible check diagnoses, computed on the same hidden inputs by the
  exercise module the reference names), so the class's map groups different mistakes apart; a case whose
  program shows a known mistake in its own text (float32 matmuls where bf16 is asked) is said by it once;
- a cell some of whose cases could not be read says first what the others' communication lacks.

What the judge holds of a cell while it judges it (the reference's cases, one case as it runs, a student's
program that ran) is `autograder.judge.judged_cases`; what the cases found, and the cell's verdict from it,
`autograder.judge.tally`.

Nothing computed on hidden inputs is ever echoed: a program that fails while it runs on them is
reported by its error's type alone (`program_failed_hidden`).

Reference programs come from the solution notebook's run (trusted, stored with
content hashes by the reference cache); their compiled form (`compiling`) and outputs (`Judge`) are
cached per process, so a batch compiles each reference program once.
Looping forever, crashing or exhausting memory is handled one level up: the
scorer process runs under limits and a timeout and is replaced.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from namedaxes.judging import module_text

from ..limits import MAX_CASES, MAX_ERROR_CHARS
from ..reasons import Phrase, Verdict
from ..reasons import phrase as say
from .compare import load_observations
from .compiling import compiled_for
from .differences import (
    cut,
    echo,
    layout_difference,
    layout_phrase,
    mesh_names,
    names,
    signature_difference,
    signature_matches,
    work_difference,
)
from .exported import (
    ALLOWED_CUSTOM_CALLS,
    PROGRAM_PREFIX,
    PROGRAMS_KEY,
    Program,
    Rejected,
    is_program_observation,
    read_program,
)
from .hidden_inputs import draw_inputs
from .judged_cases import CellReference, JudgedCase, ReferenceCase, StudentRun
from .liveness import count_communication, dead_region
from .loop_runs import judged_pair
from .mistakes import diagnose, diagnose_program, mistake_source
from .tally import Tally

__all__ = ["Judge", "Required", "layout_phrase"]


@dataclass(frozen=True)
class Required:
    """What the judge requires of one test cell, read from its reference observation (`Judge.required`): each
    case's entry (its draw, tolerances, `values`, `out_layout`, `work`...) and the reference's program compiled
    as the judge compiles it (`programs`: `program`, `compiled`, the mesh's `names` and `shape`), and the
    cell's communication as `_Tally.communication` judges it: a structure cell (`structure`) needs the
    reference's `collectives` themselves, a value cell real communication over its `axes`."""

    cases: dict
    programs: dict
    structure: bool
    collectives: tuple[str, ...]
    axes: tuple[str, ...]
    only_axes: bool
    only_collectives: bool


class Judge:
    """Compares a student's recorded programs with the reference's; caches reference work."""

    def __init__(self, secret: bytes):
        if not secret:
            raise ValueError("the scorer needs a non-empty secret")
        self.secret = secret
        self._refs: dict[str, CellReference] = {}

    def _reference(self, obs: dict, key: str) -> CellReference:
        if key not in self._refs:
            if not is_program_observation(obs):
                raise ValueError("the reference observation has no exported programs")
            ref = CellReference(obs[PROGRAMS_KEY])
            for case in ref.meta["cases"]:
                blob = obs.get(PROGRAM_PREFIX + case)
                if blob is None or not np.asarray(blob).size:
                    raise ValueError(f"the reference program of case {case!r} is missing or empty")
                program = read_program(np.asarray(blob, np.uint8).tobytes())
                names, shape = program.run_mesh[:2]
                ref.programs[case] = ReferenceCase(
                    program, compiled_for(program, names, shape, kind="reference"), names, shape
                )
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
            rc = ref.programs[case]
            axes.update(rc.compiled.axes)
            comm.update(rc.compiled.communication)
            for path, value in (
                JudgedCase(grade_id, case, entry, rc, self.secret).outputs(rc.program, rc.compiled).items()
            ):
                out[f"{case}{path}"] = value
        out["axes"], out["communication"] = sorted(axes), sorted(comm)
        return out

    def required(self, reference: dict) -> Required:
        """What the judge requires of a test cell whose (trusted) reference observation is `reference`: the
        table of what each exercise judges (`tools/judged_table/`) reads it."""
        ref = self._reference(reference, _reference_key(reference))
        tally = Tally.of(ref)
        return Required(
            dict(ref.meta["cases"]),
            dict(ref.programs),
            tally.exact,
            tuple(sorted(tally.ref_comm)),
            tuple(sorted(tally.ref_axes)),
            tally.only_axes,
            tally.only_collectives,
        )

    def judge_observations(self, grade_id: str, reference: dict, observed: dict, key: str | None = None) -> Verdict:
        """`judge` on loaded observations (dicts as `compare.load_observations` returns them): each case's
        program read, run and compared (`_judge_case`), then the cell's communication (`Tally.verdict`)."""
        ref = self._reference(reference, key if key is not None else _reference_key(reference))
        student_cases = [k[len(PROGRAM_PREFIX) :] for k in observed if k.startswith(PROGRAM_PREFIX)]
        if len(student_cases) > MAX_CASES:
            return Verdict(False, (say("too_many_programs", n=len(student_cases)),))
        tally = Tally.of(ref)
        for name, entry in ref.meta["cases"].items():
            case = JudgedCase(grade_id, name, entry, ref.programs[name], self.secret)
            self._judge_case(case, ref, observed.get(PROGRAM_PREFIX + name), tally)
        return tally.verdict()

    def _judge_case(self, case: JudgedCase, ref: CellReference, blob, tally: Tally) -> None:
        """One case: the reference's outputs on the hidden inputs (once per grade id), the student's program
        read and run, its communication counted, its per-device regions shown live, its values kept."""
        seed_key = (case.grade_id, case.name)
        if seed_key not in ref.outputs and case.values:
            ref.outputs[seed_key] = case.outputs(case.ref.program, case.ref.compiled)
        student = self._run(case, blob, tally)
        if student is None:
            return
        identical = student.program.fingerprint == case.ref.program.fingerprint  # the reference's own: trusted
        shown = count_communication(self.secret, case, student, identical, tally)
        tally.read_comm.update(case.ref.compiled.communication)
        tally.read_axes.update(case.ref.compiled.axes)
        if case.ref.compiled.regions and not identical:
            dead = dead_region(self.secret, case, student, shown)
            if dead is not None:
                axes = ", ".join(repr(a) for a in dead)
                tally.lost(say("layout_region_dead", case=case.name, axes=axes), unreadable=True)
                return
        if case.values:
            tally.values(case.name, case.entry, ref.outputs.get(seed_key, {}), student.out)
            self._known_mistake(case, ref, student, tally)

    def _run(self, case: JudgedCase, blob, tally: Tally) -> StudentRun | None:
        """The student's program of the case read, checked, compiled with the reference's input layouts and
        run on the hidden inputs; None (with what was found in `tally`) when it earns nothing."""
        if not isinstance(blob, np.ndarray) or blob.dtype != np.uint8 or blob.ndim != 1 or not blob.size:
            tally.lost(say("no_program", case=case.name), unreadable=True)
            return None
        try:
            program = read_program(blob.tobytes())
            found = _admission(case, program)
            if found is not None:
                tally.lost(found)
                return None
            ref = case.ref
            compiled = compiled_for(program, ref.names, ref.shape, feed=ref.compiled.entry_in)
            layout = layout_difference(
                case.name, ref.program.exp, ref.compiled, compiled, case.entry.get("out_layout", True)
            )
            if layout:
                tally.lost(layout, unreadable=True)  # its communication was not read: say nothing about it
                return None
            got, want = judged_pair(case, program, compiled)  # data-decided loops run, the types' reductions read
            tally.diffs.extend(work_difference(case.name, got, want, case.entry.get("work") or {}))
            try:
                out = case.outputs(program, compiled) if case.values else {}
            except Exception as err:  # noqa: BLE001 - it ran on hidden inputs: its words are not shown
                tally.lost(say("program_failed_hidden", case=case.name, error=cut(type(err).__name__)))
                return None
        except Rejected as err:
            tally.lost(replace(err.finding, case=case.name), err.unreadable)
            return None
        except Exception as err:  # noqa: BLE001 - a program that fails to compile or run scores 0
            said = f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
            tally.lost(say("program_failed", case=case.name, error=cut(said, MAX_ERROR_CHARS)))
            return None
        return StudentRun(program, compiled, out)

    @staticmethod
    def _known_mistake(case: JudgedCase, ref: CellReference, student: StudentRun, tally: Tally) -> None:
        """Which known mistake of the exercise the case's wrong values are (`mistakes.diagnose`: the reference
        names the exercise module that lists them), kept to name them in the verdict."""
        source = mistake_source(ref.meta)
        want = ref.outputs.get((case.grade_id, case.name), {})
        if source is None or not student.out or not case.changed(want, student.out):
            return
        try:
            inputs = draw_inputs(student.program.exp, case.entry["draw"], case.seed())
            found = diagnose(source, case.name, inputs, student.out, case.entry.get("rtol"), case.entry.get("atol"))
        except Exception:  # noqa: BLE001 - the exercise's list failed on these values: the values just differ
            found = {}
        tally.mistakes.update(found)
        try:
            shown = diagnose_program(source, case.name, module_text(student.program.exp))
        except Exception:  # noqa: BLE001 - the exercise's reading failed on this program: the values just differ
            shown = None
        if shown is not None:
            tally.shown[case.name] = shown


def _reference_key(reference: dict) -> str:
    """The cache key of a loaded reference observation (its programs' metadata and bytes)."""
    h = hashlib.sha256(json.dumps(reference.get(PROGRAMS_KEY), sort_keys=True).encode())
    for k in sorted(reference):
        if k.startswith(PROGRAM_PREFIX):
            h.update(k.encode() + b"\0" + np.asarray(reference[k], np.uint8).tobytes())
    return h.hexdigest()


def _admission(case: JudgedCase, program: Program) -> Phrase | None:
    """Why the grader will not run the program (effects, host calls: `Rejected`), or what its signature or mesh
    has that the reference's has not; None: it may run."""
    if program.effects:
        raise Rejected(say("side_effects"))
    bad = sorted(program.custom_calls - ALLOWED_CUSTOM_CALLS)
    if bad:
        raise Rejected(say("host_calls", calls=names(bad)))
    ref = case.ref.compiled
    sig, want_sig = program.signature, ref.signature
    if signature_matches(want_sig, sig):
        sig = want_sig
    if sig != want_sig:
        return replace(signature_difference(want_sig, sig), case=case.name)
    own = program.mesh
    if own is not None and ref.mesh_axes is not None and own[:2] != ref.mesh_axes:
        return say(
            "wrong_mesh",
            case=case.name,
            got=mesh_names(own[:2]),
            want=echo(f"{n!r}: {k}" for n, k in zip(*ref.mesh_axes)),
        )
    return None
