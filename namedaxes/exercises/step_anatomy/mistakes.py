"""The grader's side of the checks' diagnoses: the known mistakes a wrong program's values are, on one graded
case's inputs, and those it shows in its own text."""

from __future__ import annotations

from .accumulation import accumulate_mistakes
from .mixed import matmul_mistake


def known_mistakes(exercise: str, case: str, inputs: list) -> list[tuple]:
    """The known mistakes' results `(values, key, fields)` on one graded case's inputs (its arguments' leaves in
    order: `w1`, `w2`, `xs`, `ys` for `accumulate_grads`): what the grader's judge compares a wrong program's
    values with, on its hidden inputs, to name the mistake as the check names it (`autograder/judge/mistakes.py`)."""
    if exercise == "accumulate_grads" and len(inputs) == 4:
        return accumulate_mistakes(*inputs)
    return []


def program_mistakes(exercise: str, case: str, text: str) -> list[tuple[str, dict]]:
    """The known mistakes `(key, fields)` a graded case's program shows in its StableHLO `text`, as the
    exercise's visible check reads them from the program it compiles: `mixed_train_step`'s matmuls in float32
    or another type than bf16. What the grader's judge says of that case's values in place of "values differ"
    (`autograder/judge/mistakes.py`); [] for the other exercises and cases."""
    if exercise != "mixed_train_step":
        return []
    found = matmul_mistake(exercise, text)
    return [found] if found is not None else []
