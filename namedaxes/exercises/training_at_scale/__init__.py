"""Exercises of notebook 10 (`10_training_at_scale`): one transformer on all the axes, and what a layout costs.

The notebook trains `namedaxes.transformer` on a mesh (DATA_PARALLEL, FSDP, MODEL_PARALLEL) of Explicit
axes. Each exercise asks for something the notebook did not show verbatim:

1. `swiglu_block(x, gate, up, down, mesh)`: the notebook's MLP had one matrix before its activation; a
   SwiGLU block (Shazeer, 2020) has two, `silu(x @ gate) * (x @ up)`, then `down`. The answer gathers
   the FSDP shards of its three matrices and keeps the hidden columns split over MODEL_PARALLEL (Megatron),
   so its compiled program performs exactly an all_gather over FSDP and one psum over MODEL_PARALLEL.
2. `step_costs(config, layout, batch)`: the cost model, as formulas: per-device bytes of parameters and
   Adam state, the bytes each kind of collective moves per step, and the matmul FLOPs per device. The
   notebook measured these on the compiled step; the answer predicts them for any size and layout (the
   tests prove the solution's formulas equal the compiled program's figures).
3. `choose_layout(config, batch, budget)`: the layout (data, fsdp, tensor) of 8 devices whose parameters
   and Adam state fit `budget` bytes per device and that moves the fewest bytes per step.
4. `step_time(config, layout, batch, chip)`: a step's time in four terms on any chip (timing.py).

Grading contract (`namedaxes.grading.programs`): exercise 1 exports the answer on three meshes (values,
layouts, and a structure case: the reference's collectives and nothing else, and no larger array on a
device than twice the reference's). Exercises 2 and 3 are formulas, judged by their values: the hidden
test records plain numbers (the five figures on 16 cost cases; the layouts chosen for 8 budget cases, each
with one cheapest layout that fits, so any right answer chooses it) on the cases the grader drew for the
run, and the grader compares them with the solution's figures on the same cases, which it computes itself.

Threat model of the formula exercises: an answer must not be able to call the right formula, so the
kernel package holds none. The visible checks compare with `training_at_scale.json`, the visible cases'
figures (and the usual mistakes' values, for the hints) computed by the solution notebook's answers
(`tools.answer_tables`, checked for drift by `make check-notebooks`). A lookup table of the visible cases
passes the visible check and scores 0. Nor does the package list the hidden cases: this module only
describes how they are drawn (`draw_hidden_cases`, with a cost model passed in); the grader draws them from
the run's secret (`autograder.judge.formulas`), hands them to the kernel (`namedaxes.grading.hidden_cases`),
and computes the solution's observation on them (`observation_on`), and the usual mistakes' figures
(`mistakes_on`: a wrong figure that is one of them is named as the check names it). A table of right
figures, filled once and circulated, holds no figure of a fresh run's cases; a kernel that swaps the cases
scores 0, because the grader judges on the cases it drew. Outside the grader the visible cases stand in.

Its words (every message, hint and known mistake's hint) are data in its `text.py`.
"""

from __future__ import annotations

from namedaxes.exercises import notebook_face

notebook_face(
    __name__,
    {
        ".cases": ("COST_KEYS", "LAYOUTS", "expected_figures"),
        ".choice": ("choose_layout",),
        ".costs": ("step_costs",),
        ".hidden": ("HIDDEN_COST_CASES", "HIDDEN_LAYOUT_CASES", "draw_hidden_cases", "mistakes_on", "observation_on"),
        ".swiglu": ("swiglu_block",),
        ".timing": ("step_time",),
    },
)
