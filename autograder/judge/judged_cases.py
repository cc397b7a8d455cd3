"""What the judge holds of one test cell while it judges it: the reference's program of each case (compiled, on
its mesh), the cell's reference with its outputs on the hidden inputs, one case as the judge runs it, and a
student's program of a case that ran (`autograder.judge.programs` judges with them).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from namedaxes.judging import changed

from .compiling import Compiled, compiled_for
from .exported import Program
from .hidden_inputs import hidden_outputs, hidden_rng

__all__ = ["ReferenceCase", "CellReference", "JudgedCase", "StudentRun"]


@dataclass(frozen=True)
class ReferenceCase:
    """One case of a reference: its program, compiled, and the mesh it runs on (names, sizes)."""

    program: Program
    compiled: Compiled
    names: tuple
    shape: tuple


@dataclass
class CellReference:
    meta: dict
    programs: dict[str, ReferenceCase] = field(default_factory=dict)  # case -> its reference program
    outputs: dict = field(default_factory=dict)  # (grade id, case) -> outputs on the hidden inputs


@dataclass(frozen=True)
class JudgedCase:
    """One case of one test cell, as the judge runs it: the exercise's entry, the reference's program."""

    grade_id: str
    name: str
    entry: dict
    ref: ReferenceCase
    secret: bytes

    @property
    def values(self) -> bool:
        return self.entry.get("values", True)

    def seed(self) -> np.random.Generator:
        """The hidden inputs' generator (the same for every program of this case, and for its variants)."""
        return hidden_rng(self.secret, self.grade_id, str(self.entry["draw"].get("share", self.name)))

    def outputs(self, program: Program, compiled: Compiled) -> dict:
        return hidden_outputs(compiled, program.exp, self.entry["draw"], self.seed())

    def changed(self, base: dict, moved: dict) -> bool:
        return changed(base, moved, self.entry.get("rtol"), self.entry.get("atol"))

    def compile_variant(self, exp) -> tuple[Program, Compiled]:
        variant = Program.of(exp)
        feed = self.ref.compiled.entry_in
        return variant, compiled_for(variant, self.ref.names, self.ref.shape, feed=feed, kind="variant")


@dataclass(frozen=True)
class StudentRun:
    """A student's program of one case that passed the reading, layout and running steps."""

    program: Program
    compiled: Compiled
    out: dict  # its outputs on the hidden inputs ({} where the case judges no values)
